"""A real ``mneme serve`` with its dependencies failing: the model (``FakeOpenAIServer``), a ``chroma run``
server stopped or frozen (SIGSTOP). Turns answer 200 with ``degraded``, ``/readyz`` names what is down,
``/healthz`` stays ok, and ``mneme doctor`` says the same with its exit code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.graph import degraded as labels
from mneme.testing import FakeOpenAIServer, Hang, Status

MNEME = str(Path(sys.executable).with_name("mneme"))
LABEL_EN = "[model unavailable: answering from memory]"

pytestmark = pytest.mark.slow


def say(url: str, text: str, user: str = "eve", thread: str = "t1") -> dict[str, Any]:
    response = httpx.post(f"{url}/agent/invoke", headers={"X-User-Id": user, "X-Thread-Id": thread}, timeout=120,
                          json={"input": {"messages": [{"role": "user", "content": text}]}})
    assert response.status_code == 200, response.text
    return response.json()["output"]  # type: ignore[no-any-return]


def stored(url: str, user: str = "eve", *, wanted: str, within: float = 20.0) -> list[str]:
    """The user's memory texts, once ``wanted`` is among them (the journal stores turns in the background)."""
    deadline = time.monotonic() + within
    while True:
        texts = [m["text"] for m in httpx.get(f"{url}/memories", headers={"X-User-Id": user}, timeout=30)
                 .json()["memories"]]
        if wanted in texts or time.monotonic() > deadline:
            return texts
        time.sleep(0.3)


@pytest.mark.parametrize("failure", [Status(500), Hang(600)], ids=["500", "hang"])
def test_model_failures_answer_200_degraded_and_keep_the_turn(
    spawn_mneme_serve: Callable[..., Any], fake_openai: FakeOpenAIServer, failure: Any
) -> None:
    fake_openai.fail(failure)
    server = spawn_mneme_serve({"OPENAI_BASE_URL": fake_openai.url, "MNEME_MODEL_TIMEOUT": "3"})
    started = time.monotonic()
    first = say(server.url, "I like oolong tea")
    second = say(server.url, "what tea do I like?")
    assert time.monotonic() - started < 30
    for out in (first, second):
        assert labels.MODEL_UNAVAILABLE in out["degraded"] and out["answer"].startswith(LABEL_EN)
    assert "oolong" in second["answer"]  # recalled (queued or stored) while the model is down
    assert "user: I like oolong tea" in stored(server.url, wanted="user: I like oolong tea")
    ready = httpx.get(f"{server.url}/readyz", timeout=30)
    assert ready.status_code == 200  # the model is not a readiness dependency: turns still answer
    assert "Traceback" not in server.log_text()


def test_chroma_stopped_then_back(spawn_mneme_serve: Callable[..., Any], spawn_chroma_server: Any,
                                  tmp_path: Path) -> None:
    chroma = spawn_chroma_server()
    env = {"MNEME_CHROMA_URL": chroma.url, "MNEME_CHROMA_TIMEOUT": "3"}
    server = spawn_mneme_serve(env)
    assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200
    chroma.stop()
    ready = httpx.get(f"{server.url}/readyz", timeout=30)
    assert ready.status_code == 503 and ready.json()["failed"] == ["memory_store"]
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    out = say(server.url, "I live in Hangzhou")
    assert labels.STORE_UNAVAILABLE in out["degraded"]
    assert out["answer"].startswith("[memory store unavailable: answering without recall]")

    doctor = subprocess.run([MNEME, "doctor"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, **env, "MNEME_DATA_DIR": str(tmp_path / "doctor"),
                                 "MNEME_EMBEDDINGS": "fake"})
    assert doctor.returncode == 1 and "FAIL  memory_store" in doctor.stdout and "cannot reach" in doctor.stdout

    chroma.start()
    assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200
    assert "user: I live in Hangzhou" in stored(server.url, wanted="user: I live in Hangzhou", within=60)


def test_frozen_chroma_is_a_bounded_wait(spawn_mneme_serve: Callable[..., Any], spawn_chroma_server: Any) -> None:
    chroma = spawn_chroma_server()
    server = spawn_mneme_serve({"MNEME_CHROMA_URL": chroma.url, "MNEME_CHROMA_TIMEOUT": "2"})
    say(server.url, "I live in Hangzhou")
    pid = chroma._proc.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        ready = httpx.get(f"{server.url}/readyz", timeout=60)
        assert ready.status_code == 503 and "memory_store" in ready.json()["failed"]
        out = say(server.url, "where do I live?", user="frank")  # a user whose rows are not cached
        elapsed = time.monotonic() - started
        assert labels.STORE_UNAVAILABLE in out["degraded"] and elapsed < 30
    finally:
        os.kill(pid, signal.SIGCONT)
    assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200


def test_doctor_all_ok_and_bad_settings(tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    env.update(MNEME_DATA_DIR=str(tmp_path / "data"), MNEME_EMBEDDINGS="fake", OPENAI_BASE_URL=fake_openai.url,
               MNEME_CHAT_MODEL="fake-model")
    ok = subprocess.run([MNEME, "doctor"], capture_output=True, text=True, timeout=120, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    names = [line.split()[1] for line in ok.stdout.splitlines() if line.startswith("ok")]
    assert names == ["settings", "memory_store", "embedder", "checkpointer", "journal", "model"]
    assert "model fake-model listed" in ok.stdout
    fake_openai.fail(Status(503))
    down = subprocess.run([MNEME, "doctor", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert down.returncode == 1 and '"ok": false' in down.stdout and "503" in down.stdout
    bad = subprocess.run([MNEME, "doctor"], capture_output=True, text=True, timeout=60,
                         env={**env, "MNEME_MODEL_TIMEOUT": "soon"})
    assert bad.returncode == 2 and "MNEME_MODEL_TIMEOUT" in bad.stdout


def test_doctor_beside_a_running_server(spawn_mneme_serve: Callable[..., Any], tmp_path: Path) -> None:
    server = spawn_mneme_serve()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    env.update(MNEME_DATA_DIR=str(tmp_path / "serve0"), MNEME_EMBEDDINGS="fake")
    proc = subprocess.run([MNEME, "doctor"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"at {server.url}" in proc.stdout and "(from the server)" in proc.stdout
