"""The HTTP memory API over a real uvicorn server, with API keys: each caller sees and changes only their own."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from langgraph.checkpoint.memory import InMemorySaver

from mneme.auth import Authenticator
from mneme.graph import build_graph
from mneme.keys import KeyStore
from mneme.memory.base import Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.serve import create_app
from mneme.testing import FakeEmbeddings

pytestmark = pytest.mark.server


@dataclass
class Api:
    url: str
    service: MemoryService
    headers: dict[str, dict[str, str]]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    keys = KeyStore(tmp_path / "keys.sqlite3")
    headers = {user: {"Authorization": f"Bearer {keys.create(user)[1]}"} for user in ("alice", "bob")}
    headers["admin"] = {"Authorization": f"Bearer {keys.create('ops', admin=True)[1]}"}
    service = MemoryService(InProcessStore(FakeEmbeddings()))
    graph = build_graph(service=service, checkpointer=InMemorySaver())
    app = create_app(graph=graph, service=service, authenticator=Authenticator(keys=keys))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield Api(f"http://127.0.0.1:{port}", service, headers)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def tell(api: Api, user: str, text: str) -> None:
    r = httpx.post(f"{api.url}/agent/invoke", headers=api.headers[user], timeout=60,
                   json={"input": {"messages": [{"role": "user", "content": text}]}})
    assert r.status_code == 200, r.text


def texts(api: Api, user: str, **params: object) -> list[str]:
    r = httpx.get(f"{api.url}/memories", headers=api.headers[user], params=params)  # type: ignore[arg-type]
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["memories"]]


@pytest.mark.slow
def test_list_search_export_and_delete_are_the_callers_own(api: Api) -> None:
    tell(api, "alice", "我住在杭州，我养了一只叫豆豆的猫")
    tell(api, "bob", "I live in Lisbon and I play the cello")
    assert any("豆豆" in t for t in texts(api, "alice")) and not any("Lisbon" in t for t in texts(api, "alice"))
    assert any("Lisbon" in t for t in texts(api, "bob")) and not any("豆豆" in t for t in texts(api, "bob"))
    facts = texts(api, "alice", kind="fact")
    assert facts and all(t != "" for t in facts) and len(facts) < len(texts(api, "alice"))
    assert len(texts(api, "alice", limit=1)) == 1

    found = httpx.post(f"{api.url}/memories/search", json={"query": "猫叫什么", "k": 3}, headers=api.headers["alice"])
    assert any("豆豆" in m["text"] for m in found.json()["results"]) and "score" in found.json()["results"][0]
    assert httpx.post(f"{api.url}/memories/search", json={"query": ""}, headers=api.headers["alice"]).status_code == 422

    lines = httpx.get(f"{api.url}/memories/export", headers=api.headers["alice"]).text.splitlines()
    everything = [json.loads(line) for line in lines]
    exported = [e for e in everything if e.get("type") != "thread"]
    assert {e["user_id"] for e in everything} == {"alice"} and len(exported) == len(texts(api, "alice"))
    (thread,) = [e for e in everything if e.get("type") == "thread"]  # the conversation itself is exported too
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]
    assert thread["messages"][0]["content"] == "我住在杭州，我养了一只叫豆豆的猫"

    one = exported[0]["id"]
    assert httpx.delete(f"{api.url}/memories/{one}", headers=api.headers["bob"]).status_code == 404
    assert httpx.delete(f"{api.url}/memories/{one}", headers=api.headers["alice"]).status_code == 200
    assert httpx.delete(f"{api.url}/memories/{one}", headers=api.headers["alice"]).status_code == 404
    gone = httpx.delete(f"{api.url}/memories", headers=api.headers["alice"]).json()
    assert gone["deleted"] == len(exported) - 1 and texts(api, "alice") == []
    assert gone["erased"]["threads"] == 1  # erasing a user takes their threads too
    assert httpx.get(f"{api.url}/memories/export", headers=api.headers["alice"]).text == ""
    assert any("Lisbon" in t for t in texts(api, "bob"))


def test_restore_brings_an_archived_memory_back_into_recall(api: Api) -> None:
    tell(api, "alice", "我最喜欢的茶是乌龙茶")
    records = list(api.service.store.scan("alice", kinds=[Kind.EPISODIC]))
    api.service.indexed.archive("alice", [r.id for r in records])

    def recalled() -> bool:
        r = httpx.post(f"{api.url}/memories/search", json={"query": "乌龙茶"}, headers=api.headers["alice"])
        return any(m["id"] == records[0].id for m in r.json()["results"])

    assert not recalled()
    assert httpx.post(f"{api.url}/memories/{records[0].id}/restore", headers=api.headers["bob"]).status_code == 404
    assert httpx.post(f"{api.url}/memories/{records[0].id}/restore", headers=api.headers["alice"]).status_code == 200
    assert recalled()
    again = httpx.post(f"{api.url}/memories/{records[0].id}/restore", headers=api.headers["alice"])
    assert again.status_code == 404  # live already: nothing to restore


def test_documents_are_for_admins_and_shared_with_everyone(api: Api) -> None:
    doc = {"text": "Returns are accepted within thirty days of purchase.", "source": "returns.md"}
    assert httpx.post(f"{api.url}/documents", json=doc, headers=api.headers["alice"]).status_code == 403
    assert httpx.post(f"{api.url}/documents", json=doc).status_code == 401
    added = httpx.post(f"{api.url}/documents", json=doc, headers=api.headers["admin"], timeout=60)
    assert added.status_code == 200, added.text
    found = httpx.post(f"{api.url}/memories/search", json={"query": "returns thirty days"}, headers=api.headers["bob"])
    assert any(m["kind"] == "document" for m in found.json()["results"])
    listed = httpx.get(f"{api.url}/documents", headers=api.headers["admin"]).json()["documents"]
    assert [(d["source"], d["chunks"]) for d in listed] == [("returns.md", 1)]
    missing = httpx.delete(f"{api.url}/documents", params={"source": "nope.md"}, headers=api.headers["admin"])
    assert missing.status_code == 404
    assert httpx.delete(f"{api.url}/documents", params={"source": "returns.md"},
                        headers=api.headers["admin"]).json()["deleted"] == 1
    assert httpx.get(f"{api.url}/documents", headers=api.headers["admin"]).json()["documents"] == []
