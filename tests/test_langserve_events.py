"""A served turn's graph runs without LangServe's unread event log; other callback handlers stay."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langserve.callbacks import AsyncEventAggregatorCallback

from mneme.graph import build_graph
from mneme.langserve_events import without_event_log
from mneme.memory.inprocess import InProcessStore
from mneme.serve import create_app
from mneme.testing import FakeEmbeddings
from tests.test_langserve import _free_port


class Recorder(BaseCallbackHandler):
    """A handler someone wants (a tracer, say)."""


def test_the_event_log_is_taken_out_and_other_handlers_kept() -> None:
    log, kept = AsyncEventAggregatorCallback(), Recorder()
    out = without_event_log({"callbacks": [kept, log], "tags": ["x"]})
    assert out is not None and out["callbacks"] == [kept] and out["tags"] == ["x"]
    manager = AsyncCallbackManager(handlers=[kept, log], inheritable_handlers=[kept, log], tags=["t"])
    out = without_event_log({"callbacks": manager})
    assert out is not None
    stripped = out["callbacks"]
    assert isinstance(stripped, AsyncCallbackManager)
    assert stripped.handlers == [kept] and stripped.inheritable_handlers == [kept] and stripped.tags == ["t"]
    assert manager.handlers == [kept, log]  # the caller's manager is not changed
    plain: dict[str, Any] = {"callbacks": [kept]}
    assert without_event_log(plain) is plain and without_event_log(None) is None


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def on_chain_start(self: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(str(kwargs.get("name")))

    monkeypatch.setattr(AsyncEventAggregatorCallback, "on_chain_start", on_chain_start)
    graph = build_graph(store=InProcessStore(FakeEmbeddings()), checkpointer=InMemorySaver())
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(graph=graph), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_invoke_stream_and_batch_feed_nothing_to_the_event_log(served: tuple[str, list[str]]) -> None:
    url, seen = served
    payload = {"input": {"messages": [{"role": "user", "content": "我养了一只叫豆豆的猫"}]}}
    headers = {"X-User-Id": "alice", "X-Thread-Id": "t1"}
    r = httpx.post(f"{url}/agent/invoke", json=payload, headers=headers, timeout=60)
    assert r.status_code == 200 and r.json()["output"]["memory_report"]["stored"]
    with httpx.stream("POST", f"{url}/agent/stream", json={"input": {"messages": [
            {"role": "user", "content": "I keep bees on my roof"}]}}, headers=headers, timeout=60) as s:
        assert s.status_code == 200 and "event: end" in s.read().decode()
    r = httpx.post(f"{url}/agent/batch", json={"inputs": [payload["input"]] * 2}, headers={"X-User-Id": "bob"},
                   timeout=60)
    assert r.status_code == 200 and len(r.json()["output"]) == 2
    assert seen == []  # the turn, the graph and its nodes all ran without it
