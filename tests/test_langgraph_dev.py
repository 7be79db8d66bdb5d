"""``langgraph dev`` serves ``langgraph.json``'s ``agent`` for real: memory across threads, per user.

Runs the CLI next to the test interpreter with no API key (memory-only mode), the offline use-m3
embedder and embedded Chroma in a temporary MNEME_DATA_DIR.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = str(Path(sys.executable).with_name("langgraph"))

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("langgraph-dev")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGSMITH_TRACING="false",
        MNEME_DATA_DIR=str(tmp / "data"),
    )
    port = _free_port()
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [LANGGRAPH, "dev", "--port", str(port), "--no-browser", "--no-reload", "--config", "langgraph.json"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
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
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def run(url: str, text: str, **who: Any) -> dict[str, Any]:
    """A new thread with one message; ``who`` is ``context=...`` or ``config=...``."""
    thread = httpx.post(f"{url}/threads", json={}, timeout=30).json()["thread_id"]
    body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": text}]}, **who}
    r = httpx.post(f"{url}/threads/{thread}/runs/wait", json=body, timeout=300)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_agent_recalls_across_threads_for_its_user_only(server: str) -> None:
    told = run(server, "我住在杭州，我养了一只叫豆豆的猫", context={"user_id": "alice"})
    assert told["answer"].startswith("[仅记忆模式")
    assert told["memory_report"].get("queued") or told["memory_report"]["stored"]  # journaled, then stored
    asked = run(server, "我的猫叫什么名字？", context={"user_id": "alice"})
    assert "豆豆" in asked["answer"]
    # config.configurable.user_id works too (older clients, LangServe-style callers)
    by_config = run(server, "我的猫叫什么名字？", config={"configurable": {"user_id": "alice"}})
    assert "豆豆" in by_config["answer"]
    other = run(server, "我的猫叫什么名字？", context={"user_id": "bob"})
    assert "豆豆" not in other["answer"]


def test_a_run_without_a_user_is_an_error_not_a_reply(server: str) -> None:
    thread = httpx.post(f"{server}/threads", json={}, timeout=30).json()["thread_id"]
    body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    r = httpx.post(f"{server}/threads/{thread}/runs/wait", json=body, timeout=300)
    text = r.text
    assert "user id" in text or "user_id" in text
    assert "answer" not in r.json() or not r.json().get("answer")


def test_the_agent_publishes_its_context_schema(server: str) -> None:
    found = httpx.post(f"{server}/assistants/search", json={"graph_id": "agent"}, timeout=30).json()
    schemas = httpx.get(f"{server}/assistants/{found[0]['assistant_id']}/schemas", timeout=60).json()
    props = schemas["context_schema"]["properties"]
    assert {"user_id", "k", "recent_turns", "write_memory"} <= set(props)
    assert props["k"]["description"]


def test_the_servers_store_is_mnemes_memory(server: str) -> None:
    """langgraph.json names MnemeStore: /store shows what the agent remembered; the agent reads /store's writes."""
    told = run(server, "我在苏州工作，我的狗叫旺财", context={"user_id": "carol"})
    assert told["memory_report"].get("queued")  # acknowledged once journaled, stored by a background batch
    deadline = time.monotonic() + 30
    while True:
        found = httpx.post(f"{server}/store/items/search", timeout=60,
                           json={"namespace_prefix": ["memories", "carol"], "limit": 50}).json()["items"]
        if any("旺财" in str(it["value"]) for it in found) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert any("旺财" in str(it["value"]) for it in found)
    assert all(it["namespace"][:2] == ["memories", "carol"] for it in found)
    ranked = httpx.post(f"{server}/store/items/search", json={"namespace_prefix": ["memories", "carol"],
                                                              "query": "旺财"}, timeout=60).json()["items"]
    assert "旺财" in ranked[0]["value"]["text"] and ranked[0]["score"] >= ranked[-1]["score"]
    listed = httpx.post(f"{server}/store/namespaces", json={"prefix": ["memories", "carol"]}, timeout=60).json()
    assert ["memories", "carol", "episodic"] in listed["namespaces"]
    one = httpx.get(f"{server}/store/items", params={"namespace": ".".join(ranked[0]["namespace"]),
                                                     "key": ranked[0]["key"]}, timeout=60).json()
    assert one["value"]["text"] == ranked[0]["value"]["text"]
    others = httpx.post(f"{server}/store/items/search", json={"namespace_prefix": ["memories", "dave"]},
                        timeout=60).json()["items"]
    assert not any("旺财" in str(it["value"]) for it in others)
    put = httpx.put(f"{server}/store/items", json={"namespace": ["memories", "carol", "preference"],
                                                   "key": "tea", "value": {"text": "用户最喜欢喝乌龙茶"}}, timeout=60)
    assert put.status_code in (200, 204), put.text
    asked = run(server, "我喜欢喝什么茶？", context={"user_id": "carol"})
    assert "乌龙茶" in asked["answer"]
    assert "乌龙茶" not in run(server, "我喜欢喝什么茶？", context={"user_id": "dave"})["answer"]
