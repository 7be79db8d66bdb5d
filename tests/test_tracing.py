"""A turn's LangSmith trace holds recall and write steps with ids, scores, signals and decisions, never raw PII.

Runs are captured by a tiny local HTTP server speaking LangSmith's ingest API (``/info``, ``/runs/batch``):
nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langsmith import Client
from langsmith.run_helpers import tracing_context

from mneme import MnemeStore, build_graph
from mneme.clock import FixedClock
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.testing import FakeEmbeddings

NOW = 1_750_000_000.0
PHONE = "13812345678"


class Collector:
    """What the fake LangSmith endpoint received: run creations and updates merged by run id."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()

    def runs(self) -> dict[str, dict[str, Any]]:
        merged: dict[str, dict[str, Any]] = {}
        with self.lock:
            bodies = list(self.bodies)
        for body in bodies:
            payload = json.loads(body)
            for run in payload.get("post", []) + payload.get("patch", []):
                merged.setdefault(str(run["id"]), {}).update({k: v for k, v in run.items() if v is not None})
        return merged

    def named(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.runs().values() if r.get("name") == name]


@pytest.fixture
def langsmith() -> Iterator[tuple[Client, Collector]]:
    collector = Collector()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, data: dict[str, Any]) -> None:
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            self._reply({"version": "0.10.0", "instance_flags": {},
                         "batch_ingest_config": {"use_multipart_endpoint": False, "size_limit": 100,
                                                 "size_limit_bytes": 20_971_520, "scale_up_qsize_trigger": 1000,
                                                 "scale_up_nthreads_limit": 1, "scale_down_nempty_trigger": 4}})

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.endswith("/runs/batch"):
                with collector.lock:
                    collector.bodies.append(body)
            self._reply({})

        do_PATCH = do_POST  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = Client(api_url=f"http://127.0.0.1:{server.server_address[1]}", api_key="local-test-key")
    try:
        yield client, collector
    finally:
        client.flush()
        server.shutdown()


@pytest.fixture
def service() -> MemoryService:
    svc = MemoryService(InProcessStore(FakeEmbeddings()), clock=FixedClock(NOW))
    svc.remember_turn("alice", user_text="我养了一只猫，名字叫豆豆")
    return svc


def test_a_turns_trace_holds_recall_and_the_write_decision(langsmith: tuple[Client, Collector],
                                                           service: MemoryService) -> None:
    client, collector = langsmith
    graph = build_graph(service=service)
    with tracing_context(enabled=True, client=client, project_name="mneme-test"):
        out = graph.invoke({"messages": [("user", f"我的猫豆豆今天生病了，我的电话是{PHONE}")]},
                           context={"user_id": "alice"})
        thanks = graph.invoke({"messages": [("user", "谢谢！")]}, context={"user_id": "alice"})
    client.flush()

    recalls = collector.named("mneme.recall")
    assert len(recalls) == 2
    recall = next(r for r in recalls if r["outputs"]["recalled"])
    assert recall["run_type"] == "retriever"
    assert recall["extra"]["metadata"]["user_id"] == "alice"
    traced = recall["outputs"]["recalled"]
    assert [t["id"] for t in traced] == [r["id"] for r in out["recalled"]]
    assert [t["score"] for t in traced] == [r["score"] for r in out["recalled"]]
    assert {"dense", "keyword", "relevance"} <= set(traced[0]["signals"])
    # the step sits inside the turn's trace, under the graph's run
    root = next(r for r in collector.runs().values() if r.get("name") == "mneme" and r["id"] == recall["trace_id"])
    assert root["trace_id"] == recall["trace_id"]

    writes = collector.named("mneme.write")
    kept = next(w for w in writes if w["outputs"]["decision"] == "kept")
    assert kept["outputs"]["stored"] == out["memory_report"]["stored"]
    assert kept["outputs"]["redactions"] == {"phone": 1}
    assert kept["extra"]["metadata"]["user_id"] == "alice"
    skipped = next(w for w in writes if w["outputs"]["decision"] == "skipped")
    assert skipped["outputs"]["reason"] == thanks["memory_report"]["skipped"] and skipped["outputs"]["reason"]
    # Mneme's own steps never carry the raw phone number (the query is traced redacted, the turn by length)
    for run in recalls + writes:
        assert PHONE not in json.dumps(run, ensure_ascii=False)
    assert kept["inputs"]["user_chars"] > 0


def test_tool_and_store_recalls_are_traced_with_their_source(langsmith: tuple[Client, Collector],
                                                             service: MemoryService) -> None:
    from mneme.tools import create_memory_tools

    client, collector = langsmith
    search = next(t for t in create_memory_tools(service=service) if t.name == "search_memory")
    with tracing_context(enabled=True, client=client, project_name="mneme-test"):
        search.invoke({"query": "豆豆"}, config={"configurable": {"user_id": "alice"}})
        MnemeStore(service).search(("memories", "alice"), query="豆豆")
    client.flush()
    sources = sorted(r["extra"]["metadata"]["mneme_source"] for r in collector.named("mneme.recall"))
    assert sources == ["store", "tool"]


def test_nothing_is_sent_with_tracing_off(langsmith: tuple[Client, Collector], service: MemoryService) -> None:
    client, collector = langsmith
    with tracing_context(enabled=False, client=client):
        build_graph(service=service).invoke({"messages": [("user", "豆豆怎么样？")]}, context={"user_id": "alice"})
    client.flush()
    assert collector.runs() == {}
