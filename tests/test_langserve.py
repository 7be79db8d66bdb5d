"""The LangServe app over a real uvicorn server: OpenAI-style input, identity headers, playground."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from langgraph.checkpoint.memory import InMemorySaver

from mneme.graph import build_graph
from mneme.memory.inprocess import InProcessStore
from mneme.serve import create_app
from mneme.testing import FakeChatModel, FakeEmbeddings

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(app: Any) -> Iterator[str]:
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    graph = build_graph(store=InProcessStore(FakeEmbeddings()), checkpointer=InMemorySaver())
    yield from _serve(create_app(graph=graph))


def ask(
    base_url: str, text: str, *, user: str | None, thread: str | None = None, **body: Any
) -> httpx.Response:
    headers = {k: v for k, v in (("X-User-Id", user), ("X-Thread-Id", thread)) if v}
    payload = {"input": {"messages": [{"role": "user", "content": text}]}, **body}
    return httpx.post(f"{base_url}/agent/invoke", json=payload, headers=headers, timeout=60)


def test_openai_style_messages_are_answered(base_url: str) -> None:
    r = ask(base_url, "我住在杭州，我养了一只叫豆豆的猫", user="alice", thread="t1")
    assert r.status_code == 200, r.text
    out = r.json()["output"]
    assert [m["type"] for m in out["messages"]] == ["ai"] and out["messages"][0]["content"] == out["answer"]
    assert out["thread_id"] == "t1"
    assert out["answer"].startswith("[仅记忆模式")
    assert out["memory_report"]["stored"]


def test_memory_crosses_threads_but_not_users(base_url: str) -> None:
    assert ask(base_url, "My favourite tea is oolong", user="alice", thread="t1").status_code == 200
    answer = ask(base_url, "Which tea is my favourite?", user="alice", thread="t2").json()["output"]["answer"]
    assert "oolong" in answer
    # bob cannot borrow alice's identity through the request body: the header decides
    r = ask(
        base_url,
        "Which tea is my favourite?",
        user="bob",
        thread="t3",
        config={"configurable": {"user_id": "alice"}},
    )
    assert r.status_code == 200 and "oolong" not in r.json()["output"]["answer"]


def test_a_thread_keeps_its_short_term_history() -> None:
    model = FakeChatModel(responses=["noted"], structured_responses=[{}])
    graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()), checkpointer=InMemorySaver())
    for url in _serve(create_app(graph=graph)):
        ask(url, "first message in this thread", user="carol", thread="keep")
        out = ask(url, "second message", user="carol", thread="keep").json()["output"]
        assert [m["type"] for m in out["messages"]] == ["ai"]  # the response is this turn only
        # but the model's prompt carries the thread's earlier turn as conversation
        assert [m.content for m in model.calls[-1] if m.type == "human"] == [
            "first message in this thread", "second message"]


def test_langchain_style_messages_are_accepted(base_url: str) -> None:
    payload = {"input": {"messages": [{"type": "human", "content": "hello there"}]}}
    r = httpx.post(f"{base_url}/agent/invoke", json=payload, headers={"X-User-Id": "dave"}, timeout=60)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(("user", "status"), [(None, 400), ("bad user/id", 400)])
def test_a_missing_or_bad_user_header_is_a_client_error(base_url: str, user: str | None, status: int) -> None:
    r = ask(base_url, "hi", user=user)
    assert r.status_code == status
    assert "X-User-Id" in r.json()["detail"]


def test_malformed_input_is_rejected(base_url: str) -> None:
    bad = {"input": {"messages": [{"role": "wizard", "content": "hi"}]}}
    assert httpx.post(f"{base_url}/agent/invoke", json=bad, headers={"X-User-Id": "a"}).status_code == 422
    empty = {"input": {"messages": []}}
    assert httpx.post(f"{base_url}/agent/invoke", json=empty, headers={"X-User-Id": "a"}).status_code == 422


def test_stream_and_batch_work(base_url: str) -> None:
    payload = {"input": {"messages": [{"role": "user", "content": "streaming hello"}]}}
    with httpx.stream(
        "POST", f"{base_url}/agent/stream", json=payload, headers={"X-User-Id": "erin"}, timeout=60
    ) as r:
        body = "".join(r.iter_text())
    assert r.status_code == 200 and "event: data" in body and '"answer"' in body and '"thread_id"' in body
    batch = {"inputs": [payload["input"], payload["input"]]}
    r2 = httpx.post(f"{base_url}/agent/batch", json=batch, headers={"X-User-Id": "erin"}, timeout=60)
    assert r2.status_code == 200 and len(r2.json()["output"]) == 2


def test_playground_serves_html(base_url: str) -> None:
    r = httpx.get(f"{base_url}/agent/playground/", timeout=30)
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert "<html" in r.text.lower() and 'id="message"' in r.text


def test_a_chat_model_answers_with_recalled_memory() -> None:
    model = FakeChatModel(handler=lambda msgs: "记得" if "豆豆" in str(msgs[0].content) else "不知道")
    graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()), checkpointer=InMemorySaver())
    for url in _serve(create_app(graph=graph)):
        ask(url, "我养了一只叫豆豆的猫", user="alice", thread="1")
        assert ask(url, "我的猫叫什么名字？", user="alice", thread="2").json()["output"]["answer"] == "记得"
        assert ask(url, "我的猫叫什么名字？", user="bob", thread="3").json()["output"]["answer"] == "不知道"


def _mneme_serve(data_dir: Path, **extra_env: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``mneme serve`` (real defaults: use-m3, no key) on a free port; return it and its URL once healthy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(MNEME_DATA_DIR=str(data_dir), **extra_env)
    port = _free_port()
    mneme = str(Path(sys.executable).with_name("mneme"))
    proc = subprocess.Popen([mneme, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read() if proc.stderr else "mneme serve exited")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise AssertionError("mneme serve did not start")
        time.sleep(0.5)


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """True once ``check()`` is; False if it never is within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.slow
def test_two_app_processes_on_one_chroma_server_answer_from_the_same_memory(tmp_path: Path, chroma_server) -> None:
    """Two ``mneme serve`` processes (separate data dirs, as on two machines) behind one ``chroma run``."""
    import uuid

    shared = {"MNEME_CHROMA_URL": chroma_server.url, "MNEME_COLLECTION_PREFIX": f"two{uuid.uuid4().hex[:8]}"}
    procs = []
    try:
        a, url_a = _mneme_serve(tmp_path / "a", **shared)
        procs.append(a)
        b, url_b = _mneme_serve(tmp_path / "b", **shared)
        procs.append(b)
        question = "我的猫叫什么名字？"
        assert "豆豆" not in ask(url_a, question, user="alice", thread="1").json()["output"]["answer"]  # a caches
        # b acknowledges the turn once journaled and stores it in a background batch: a sees it once stored
        ask(url_b, "我养了一只叫豆豆的猫，它是橘猫", user="alice", thread="2")
        assert _eventually(lambda: "豆豆" in ask(url_a, question, user="alice", thread="3").json()["output"]["answer"])
        ask(url_a, "我们下个月搬去成都住", user="alice", thread="4")  # and the other way round
        assert _eventually(lambda: "成都" in ask(url_b, "我们要搬去哪里？", user="alice",
                                               thread="5").json()["output"]["answer"])
        assert "豆豆" not in ask(url_b, question, user="bob", thread="6").json()["output"]["answer"]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.mark.slow
def test_mneme_serve_runs_the_default_app(tmp_path: Path) -> None:
    """``mneme serve`` with the real defaults (embedded Chroma, use-m3, no key)."""
    proc, url = _mneme_serve(tmp_path / "data")
    try:
        ask(url, "我住在杭州，我养了一只叫豆豆的猫", user="alice", thread="1")
        assert "豆豆" in ask(url, "我的猫叫什么名字？", user="alice", thread="2").json()["output"]["answer"]
        assert "豆豆" not in ask(url, "我的猫叫什么名字？", user="bob", thread="3").json()["output"]["answer"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_langserve_client_names_its_thread_in_config_configurable() -> None:
    # RemoteRunnable's way (LangServe's and LangGraph's convention): config={"configurable": {"thread_id": ...}}
    from langserve import RemoteRunnable

    model = FakeChatModel(responses=["noted"], structured_responses=[{}])
    graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()), checkpointer=InMemorySaver())
    for url in _serve(create_app(graph=graph)):
        erin = RemoteRunnable(f"{url}/agent", headers={"X-User-Id": "erin"})
        config: Any = {"configurable": {"thread_id": "chat-1"}}
        erin.invoke({"messages": [{"role": "user", "content": "我下周要去成都出差"}]}, config=config)
        out = erin.invoke({"messages": [{"role": "user", "content": "那边天气怎么样"}]}, config=config)
        assert out["thread_id"] == "chat-1"
        assert [m.content for m in model.calls[-1] if m.type == "human"] == ["我下周要去成都出差", "那边天气怎么样"]
        # the same name from another user is another, empty thread
        frank = RemoteRunnable(f"{url}/agent", headers={"X-User-Id": "frank"})
        frank.invoke({"messages": [{"role": "user", "content": "hello"}]}, config=config)
        assert [m.content for m in model.calls[-1] if m.type == "human"] == ["hello"]


@pytest.mark.parametrize(("header", "configured", "status"), [
    ("t9", "t9", 200), ("t9", "other", 422), (None, 7, 422), (None, "bad thread/id", 422)])
def test_the_header_and_config_must_name_the_same_thread(base_url: str, header: str | None, configured: Any,
                                                        status: int) -> None:
    r = ask(base_url, "hi", user="gina", thread=header, config={"configurable": {"thread_id": configured}})
    assert r.status_code == status, r.text
    if status == 200:
        assert r.json()["output"]["thread_id"] == header
    else:
        assert "thread" in r.text
        assert header == "t9" or "config.configurable.thread_id" in r.text  # the field at fault is named
