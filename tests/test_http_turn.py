"""One HTTP turn over a real uvicorn server: limits (413, nothing stored), this-turn-only responses, run
settings honoured or refused, threads scoped to their user."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from mneme.config import Settings
from mneme.evaluation.bench_store import free_port
from mneme.graph import build_graph
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.serve import create_app
from mneme.testing import FakeChatModel, FakeEmbeddings
from mneme.threads import THREAD_ID_MAX, scoped_thread_id, threads_of

pytestmark = pytest.mark.server


class App:
    """A served app with its model, memory and checkpointer in reach of the test."""

    def __init__(self, url: str, model: FakeChatModel, service: MemoryService, saver: InMemorySaver) -> None:
        self.url, self.model, self.service, self.saver = url, model, service, saver

    def ask(self, text: str, *, user: str = "alice", thread: str | None = None, **body: Any) -> httpx.Response:
        headers = {"X-User-Id": user, **({"X-Thread-Id": thread} if thread else {})}
        payload = {"input": {"messages": [{"role": "user", "content": text}]}, **body}
        return httpx.post(f"{self.url}/agent/invoke", json=payload, headers=headers, timeout=60)

    def prompts_seen(self) -> str:
        return "\n".join(str(m.content) for call in self.model.calls for m in call)


def _answer(messages: list[BaseMessage]) -> str:
    return f"reply to: {str(messages[-1].content)[:40]}"


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    model = FakeChatModel(handler=_answer, structured_responses=[{}])
    service = MemoryService(InProcessStore(FakeEmbeddings()))
    saver = InMemorySaver()
    graph = build_graph(model=model, service=service, checkpointer=saver)
    settings = Settings(max_message_chars=32_000, max_request_messages=5, max_body_bytes=1_000_000)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(graph=graph, settings=settings), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield App(f"http://127.0.0.1:{port}", model, service, saver)
    server.should_exit = True
    thread.join(timeout=10)


def test_a_message_of_100000_characters_is_413_and_nothing_is_stored(app: App) -> None:
    r = app.ask("长" * 100_000, user="huge", thread="big")
    assert r.status_code == 413
    assert "100,000 characters" in r.json()["detail"] and "MNEME_MAX_MESSAGE_CHARS" in r.json()["detail"]
    assert threads_of(app.saver, "huge") == []
    assert app.service.store.count("huge", archived=None) == 0
    assert "长长长长" not in app.prompts_seen()


@pytest.mark.slow
def test_a_message_at_the_limit_is_answered(app: App) -> None:
    r = app.ask("好" * 32_000, user="edge", thread="ok")
    assert r.status_code == 200, r.text
    assert threads_of(app.saver, "edge") == ["ok"]


def test_a_10mb_body_is_refused_before_it_is_parsed(app: App) -> None:
    body = b'{"input": {"messages": [{"role": "user", "content": "' + b"x" * 10_000_000 + b'"}]}}'
    started = time.monotonic()
    r = httpx.post(f"{app.url}/agent/invoke", content=body, timeout=60,
                   headers={"X-User-Id": "alice", "content-type": "application/json"})
    assert r.status_code == 413 and "MNEME_MAX_BODY_BYTES" in r.json()["detail"]
    assert time.monotonic() - started < 30


def test_a_chunked_body_over_the_limit_is_refused(app: App) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"input": {"messages": [{"role": "user", "content": "'
        for _ in range(40):
            yield b"y" * 50_000
        yield b'"}]}}'

    r = httpx.post(f"{app.url}/agent/invoke", content=chunks(), timeout=60,
                   headers={"X-User-Id": "chunky", "content-type": "application/json"})
    assert r.status_code == 413
    assert threads_of(app.saver, "chunky") == []


def test_too_many_messages_in_one_request_is_413(app: App) -> None:
    messages = [{"role": "user", "content": f"m{i}"} for i in range(6)]
    r = httpx.post(f"{app.url}/agent/invoke", json={"input": {"messages": messages}},
                   headers={"X-User-Id": "many"}, timeout=60)
    assert r.status_code == 413 and "MNEME_MAX_REQUEST_MESSAGES" in r.json()["detail"]
    assert threads_of(app.saver, "many") == []


def test_stream_and_batch_refuse_an_over_long_message_too(app: App) -> None:
    payload = {"input": {"messages": [{"role": "user", "content": "z" * 40_000}]}}
    r = httpx.post(f"{app.url}/agent/stream", json=payload, headers={"X-User-Id": "streamer"}, timeout=60)
    assert r.status_code == 413
    r = httpx.post(f"{app.url}/agent/batch", json={"inputs": [payload["input"]]},
                   headers={"X-User-Id": "streamer"}, timeout=60)
    assert r.status_code == 413
    assert threads_of(app.saver, "streamer") == []


@pytest.mark.slow
def test_the_response_carries_this_turn_only(app: App) -> None:
    sizes = {}
    for turn in range(1, 26):
        r = app.ask(f"turn {turn}: 我今天读了第{turn}章，讲的是记忆和遗忘", user="long", thread="t")
        assert r.status_code == 200, r.text
        sizes[turn] = len(r.content)
        out = r.json()["output"]
        assert set(out) == {"answer", "thread_id", "recalled", "memory_report", "degraded", "messages"}
        assert [m["type"] for m in out["messages"]] == ["ai"] and out["thread_id"] == "t"
        assert out["answer"] == f"reply to: turn {turn}: 我今天读了第{turn}章，讲的是记忆和遗忘"[:50]
    assert sizes[25] <= 2 * sizes[5], sizes


def test_run_settings_in_config_configurable_are_honoured(app: App) -> None:
    for fact in ("I like green tea", "I like black coffee", "I like red wine"):
        assert app.ask(fact, user="settings", thread="a").status_code == 200
    many = app.ask("what do I like to drink?", user="settings", thread="b").json()["output"]
    few = app.ask("what do I like to drink?", user="settings", thread="c",
                  config={"configurable": {"k": 1}}).json()["output"]
    assert len(many["recalled"]) > 1 and len(few["recalled"]) == 1
    before = app.service.store.count("settings", archived=None)
    off = app.ask("I like oolong as well", user="settings", thread="d",
                  config={"configurable": {"write_memory": False}}).json()["output"]
    assert off["memory_report"]["skipped"] == "disabled"
    assert app.service.store.count("settings", archived=None) == before


@pytest.mark.parametrize(("body", "needle"), [
    ({"config": {"configurable": {"kk": 1}}}, "unknown run setting"),
    ({"config": {"configurable": {"k": 0}}}, "k must be between"),
    ({"config": {"configurable": {"k": "lots"}}}, "k="),
    ({"k": 1}, "unknown field"),
])
def test_run_settings_that_cannot_be_honoured_are_refused(app: App, body: dict[str, Any], needle: str) -> None:
    r = app.ask("hello", user="refused", thread="x", **body)
    assert r.status_code == 422 and needle in r.json()["detail"], r.text
    assert threads_of(app.saver, "refused") == []


def test_another_user_naming_a_thread_gets_a_different_thread(app: App) -> None:
    app.ask("my locker code is 4711", user="owner", thread="shared-name")
    app.model.calls.clear()
    r = app.ask("what did I say before?", user="intruder", thread="shared-name")
    assert r.status_code == 200 and r.json()["output"]["thread_id"] == "shared-name"
    assert "4711" not in app.prompts_seen()
    owner = app.saver.get_tuple({"configurable": {"thread_id": scoped_thread_id("owner", "shared-name")}})
    assert owner is not None
    assert not any("what did I say" in str(m.content) for m in owner.checkpoint["channel_values"]["messages"])


@pytest.mark.parametrize("thread", ["x" * (THREAD_ID_MAX + 1), "a/b", "two words"])
def test_a_bad_thread_id_is_a_client_error_never_truncated(app: App, thread: str) -> None:
    r = app.ask("hi", user="ids", thread=thread)
    assert r.status_code == 422 and "X-Thread-Id" in r.json()["detail"]
    assert threads_of(app.saver, "ids") == []


def test_a_new_thread_id_is_returned_and_continues_the_thread(app: App) -> None:
    first = app.ask("I am planning a trip to 成都", user="newthread").json()["output"]
    app.model.calls.clear()
    app.ask("what about the food there?", user="newthread", thread=first["thread_id"])
    assert "I am planning a trip to 成都" in app.prompts_seen()
    assert threads_of(app.saver, "newthread") == [first["thread_id"]]


def test_stream_yields_this_turn(app: App) -> None:
    payload = {"input": {"messages": [{"role": "user", "content": "stream me"}]}}
    with httpx.stream("POST", f"{app.url}/agent/stream", json=payload, timeout=60,
                      headers={"X-User-Id": "streamer2", "X-Thread-Id": "s"}) as r:
        events = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    outputs = [json.loads(e) for e in events if e.startswith("{")]
    assert outputs and outputs[-1]["answer"] == "reply to: stream me" and outputs[-1]["thread_id"] == "s"


def test_a_batch_shares_one_thread_unless_given_one_config_per_input(app: App) -> None:
    inputs = [{"messages": [{"role": "user", "content": f"batch item {i}"}]} for i in range(2)]
    shared = httpx.post(f"{app.url}/agent/batch", json={"inputs": inputs}, headers={"X-User-Id": "batcher"},
                        timeout=60).json()["output"]
    assert shared[0]["thread_id"] == shared[1]["thread_id"]
    apart = httpx.post(f"{app.url}/agent/batch", json={"inputs": inputs, "config": [{}, {}]},
                       headers={"X-User-Id": "batcher"}, timeout=60).json()["output"]
    assert apart[0]["thread_id"] != apart[1]["thread_id"]
    assert len(threads_of(app.saver, "batcher")) == 3


def test_stream_sends_the_reply_as_it_is_written_then_the_turn(app: App) -> None:
    payload = {"input": {"messages": [{"role": "user", "content": "please stream a longer reply for me"}]}}
    with httpx.stream("POST", f"{app.url}/agent/stream", json=payload, timeout=60,
                      headers={"X-User-Id": "streamer3", "X-Thread-Id": "s"}) as r:
        data = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    deltas = [d["delta"] for d in data if "delta" in d]
    final = data[-1]
    assert len(deltas) > 1 and "".join(deltas) == final["answer"] == "reply to: please stream a longer reply for me"
    assert [m["type"] for m in final["messages"]] == ["ai"] and final["thread_id"] == "s"
