"""Threads outlive processes: ``mneme serve`` and ``mneme chat`` restarted, and two ``mneme serve`` processes on
one Chroma server and one PostgreSQL, with the real ``ChatOpenAI`` path against a fake OpenAI-compatible server.

Each turn runs with ``write_memory`` off, so the only way turn 1 can reach turn 2's prompt is the thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.config import Settings
from mneme.evaluation.bench_store import free_port
from mneme.testing import FakeOpenAIServer
from mneme.threads import open_checkpointer, threads_of

pytestmark = [pytest.mark.server, pytest.mark.slow]
MNEME = str(Path(sys.executable).with_name("mneme"))


@pytest.fixture
def llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=lambda body: "好的，我记住了。") as server:
        yield server


def _env(data_dir: Path, llm: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(MNEME_DATA_DIR=str(data_dir), OPENAI_BASE_URL=llm.url, MNEME_CHAT_MODEL="fake-model",
               LANGSMITH_TRACING="false", **extra)
    return env


class Serve:
    """A ``mneme serve`` subprocess on a free port."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = log.open("w")
        self.proc = subprocess.Popen([MNEME, "serve", "--port", str(self.port)], env=env,
                                     stdout=self._log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 180
        while True:
            assert self.proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "mneme serve did not start"
            time.sleep(0.3)

    def say(self, text: str, *, user: str = "alice", thread: str = "kept") -> dict[str, Any]:
        body = {"input": {"messages": [{"role": "user", "content": text}]},
                "config": {"configurable": {"write_memory": False}}}
        r = httpx.post(f"{self.url}/agent/invoke", json=body, timeout=120,
                       headers={"X-User-Id": user, "X-Thread-Id": thread})
        assert r.status_code == 200, r.text
        return dict(r.json()["output"])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self._log.close()


def _answer_prompts(llm: FakeOpenAIServer) -> list[list[dict[str, Any]]]:
    """The message lists of the answer requests (their system prompt is Mneme's), oldest first."""
    return [body["messages"] for body in llm.chat_requests()
            if body["messages"] and "You are Mneme" in str(body["messages"][0].get("content"))]


def _conversation(prompt: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], str(m["content"])) for m in prompt if m["role"] in ("user", "assistant")]


def test_a_thread_survives_a_restart_of_mneme_serve(tmp_path: Path, llm: FakeOpenAIServer) -> None:
    env = _env(tmp_path / "data", llm)
    first = Serve(env, tmp_path / "serve1.log")
    try:
        assert first.say("我的猫叫豆豆，它三岁了")["thread_id"] == "kept"
    finally:
        first.stop()
    second = Serve(env, tmp_path / "serve2.log")
    try:
        second.say("它几岁了？")
        second.say("它几岁了？", user="bob")  # the same thread id of another user is another thread
    finally:
        second.stop()
    alice, bob = _answer_prompts(llm)[-2:]
    assert _conversation(alice) == [("user", "我的猫叫豆豆，它三岁了"), ("assistant", "好的，我记住了。"),
                                    ("user", "它几岁了？")]
    assert _conversation(bob) == [("user", "它几岁了？")]
    assert (tmp_path / "data" / "threads.sqlite3").exists()


def test_a_thread_survives_a_restart_of_mneme_chat(tmp_path: Path, llm: FakeOpenAIServer) -> None:
    env = _env(tmp_path / "data", llm)
    for line in ("I parked on level 3, spot 42", "where did I park?"):
        proc = subprocess.run([MNEME, "chat", "--user", "alice", "--thread", "car", "--no-write"], input=line + "\n",
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and "好的，我记住了。" in proc.stdout, proc.stderr
    assert _conversation(_answer_prompts(llm)[-1]) == [
        ("user", "I parked on level 3, spot 42"), ("assistant", "好的，我记住了。"), ("user", "where did I park?")]


def test_a_bad_thread_id_is_refused_by_mneme_chat(tmp_path: Path, llm: FakeOpenAIServer) -> None:
    proc = subprocess.run([MNEME, "chat", "--user", "alice", "--thread", "x" * 200], input="hi\n",
                          env=_env(tmp_path / "data", llm), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "never truncated" in proc.stderr


def test_two_servers_on_one_chroma_and_one_postgres_share_a_thread(
        tmp_path: Path, llm: FakeOpenAIServer, chroma_server: Any, postgres_server: Any) -> None:
    database = postgres_server.database()
    shared = {"MNEME_CHROMA_URL": chroma_server.url, "MNEME_COLLECTION_PREFIX": f"thr{uuid.uuid4().hex[:8]}",
              "MNEME_POSTGRES_URL": database}
    a = Serve(_env(tmp_path / "a", llm, **shared), tmp_path / "a.log")
    try:
        b = Serve(_env(tmp_path / "b", llm, **shared), tmp_path / "b.log")
        try:
            a.say("明天下午三点我要去看牙医")
            b.say("那是几点来着？")
            a.say("谢谢，那我两点出发")
        finally:
            b.stop()
    finally:
        a.stop()
    on_b, last_on_a = _answer_prompts(llm)[-2:]
    assert _conversation(on_b) == [("user", "明天下午三点我要去看牙医"), ("assistant", "好的，我记住了。"),
                                   ("user", "那是几点来着？")]
    assert [text for role, text in _conversation(last_on_a) if role == "user"] == [
        "明天下午三点我要去看牙医", "那是几点来着？", "谢谢，那我两点出发"]
    with open_checkpointer(Settings(data_dir=tmp_path / "x", postgres_url=database)) as saver:
        assert threads_of(saver, "alice") == ["kept"]
    assert not (tmp_path / "a" / "threads.sqlite3").exists()
