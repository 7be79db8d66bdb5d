"""``langgraph dev`` with API keys configured (``mneme.langgraph_auth``): owner-only threads, runs and store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from mneme.keys import KeyStore

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = str(Path(sys.executable).with_name("langgraph"))
SECRET = "langgraph-dev-test-secret-0123456789abcdef"

pytestmark = [pytest.mark.server, pytest.mark.slow]


@dataclass
class Dev:
    url: str
    headers: dict[str, dict[str, str]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    tmp = tmp_path_factory.mktemp("langgraph-auth")
    store = KeyStore(tmp / "data" / "keys.sqlite3")
    headers = {user: {"Authorization": f"Bearer {store.create(user)[1]}"} for user in ("alice", "bob")}
    headers["ops"] = {"Authorization": f"Bearer {store.create('ops', admin=True)[1]}"}
    carol = jwt.encode({"sub": "carol", "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")
    headers["carol"] = {"Authorization": f"Bearer {carol}"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(LANGGRAPH_CLI_NO_ANALYTICS="1", LANGGRAPH_NO_VERSION_CHECK="true", LANGSMITH_TRACING="false",
               MNEME_DATA_DIR=str(tmp / "data"), MNEME_EMBEDDINGS="fake", MNEME_JWT_SECRET=SECRET)
    port = _free_port()
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [LANGGRAPH, "dev", "--port", str(port), "--no-browser", "--no-reload", "--config", "langgraph.json"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"langgraph dev exited: {(tmp / 'server.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"langgraph dev did not start: {(tmp / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield Dev(url, headers)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def new_thread(dev: Dev, user: str) -> str:
    r = httpx.post(f"{dev.url}/threads", json={}, headers=dev.headers[user], timeout=30)
    assert r.status_code == 200, r.text
    return str(r.json()["thread_id"])


def run(dev: Dev, user: str, text: str, thread: str | None = None, **body: Any) -> httpx.Response:
    thread = thread or new_thread(dev, user)
    payload = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": text}]}, **body}
    return httpx.post(f"{dev.url}/threads/{thread}/runs/wait", json=payload, headers=dev.headers[user], timeout=300)


def answer(r: httpx.Response) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["answer"])


def test_without_valid_credentials_nothing_is_served(dev: Dev) -> None:
    for headers in ({}, {"Authorization": "Bearer mneme_000000000000_nope"}, {"X-User-Id": "alice"},
                    {"x-auth-scheme": "langsmith"}):
        assert httpx.post(f"{dev.url}/threads", json={}, headers=headers, timeout=30).status_code in (401, 403)
        assert httpx.post(f"{dev.url}/threads/search", json={}, headers=headers, timeout=30).status_code in (401, 403)


def test_the_authenticated_user_recalls_and_no_context_user_can_borrow_it(dev: Dev) -> None:
    assert run(dev, "alice", "我住在杭州，我养了一只叫豆豆的猫").status_code == 200
    assert "豆豆" in answer(run(dev, "alice", "我的猫叫什么名字？"))
    stolen = run(dev, "bob", "我的猫叫什么名字？", context={"user_id": "alice"})
    assert "豆豆" not in answer(stolen)
    by_config = run(dev, "bob", "我的猫叫什么名字？", config={"configurable": {"user_id": "alice"}})
    assert "豆豆" not in answer(by_config)
    forged = run(dev, "bob", "我的猫叫什么名字？", context={"user_id": "alice", "langgraph_auth_user_id": "alice"})
    assert "豆豆" not in forged.text  # refused or answered as bob, never as alice
    # a JWT user is served the same way
    assert "豆豆" not in answer(run(dev, "carol", "我的猫叫什么名字？", context={"user_id": "alice"}))


def test_a_thread_is_visible_to_its_owner_only(dev: Dev) -> None:
    thread = new_thread(dev, "alice")
    assert run(dev, "alice", "secret plans for the weekend", thread=thread).status_code == 200
    assert httpx.get(f"{dev.url}/threads/{thread}", headers=dev.headers["alice"]).status_code == 200
    assert httpx.get(f"{dev.url}/threads/{thread}", headers=dev.headers["bob"]).status_code == 404
    assert httpx.get(f"{dev.url}/threads/{thread}/state", headers=dev.headers["bob"]).status_code == 404
    mine = httpx.post(f"{dev.url}/threads/search", json={"limit": 100}, headers=dev.headers["alice"]).json()
    theirs = httpx.post(f"{dev.url}/threads/search", json={"limit": 100}, headers=dev.headers["bob"]).json()
    assert thread in {t["thread_id"] for t in mine}
    assert thread not in {t["thread_id"] for t in theirs}
    assert all(t["metadata"].get("owner") == "bob" for t in theirs)
    assert run(dev, "bob", "let me in", thread=thread).status_code == 404
    assert httpx.delete(f"{dev.url}/threads/{thread}", headers=dev.headers["bob"]).status_code == 404
    assert httpx.get(f"{dev.url}/threads/{thread}", headers=dev.headers["alice"]).status_code == 200


def test_store_namespaces_belong_to_their_user(dev: Dev) -> None:
    put = {"namespace": ["memories", "alice"], "key": "k1", "value": {"text": "乌龙茶"}}
    assert httpx.put(f"{dev.url}/store/items", json=put, headers=dev.headers["alice"]).status_code in (200, 204)
    assert httpx.put(f"{dev.url}/store/items", json=put, headers=dev.headers["bob"]).status_code == 403
    got = httpx.get(f"{dev.url}/store/items", params={"namespace": "memories.alice", "key": "k1"},
                    headers=dev.headers["bob"])
    assert got.status_code == 403
    found = httpx.post(f"{dev.url}/store/items/search", json={"namespace_prefix": ["memories"]},
                       headers=dev.headers["bob"]).json()
    assert all(item["namespace"][:2] == ["memories", "bob"] for item in found["items"])
    mine = httpx.post(f"{dev.url}/store/items/search", json={"namespace_prefix": ["memories"]},
                      headers=dev.headers["alice"]).json()
    doc = {"namespace": ["documents"], "key": "d1", "value": {"text": "公司规定：周五下午四点下班。"}}
    assert httpx.put(f"{dev.url}/store/items", json=doc, headers=dev.headers["bob"]).status_code == 403
    assert httpx.put(f"{dev.url}/store/items", json=doc, headers=dev.headers["ops"]).status_code in (200, 204)
    shared = httpx.post(f"{dev.url}/store/items/search", json={"namespace_prefix": ["documents"], "query": "下班"},
                        headers=dev.headers["bob"])
    assert shared.status_code == 200 and any("四点" in str(i["value"]) for i in shared.json()["items"])
    assert "k1" in [item["key"] for item in mine["items"]]  # with alice's memories, if the store serves them
    assert all(item["namespace"][:2] == ["memories", "alice"] for item in mine["items"])
