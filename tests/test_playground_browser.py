"""A person chats in the playground: real ``mneme serve`` and Debian's headless Chromium, driven by playwright-core.

The page must show the conversation, carry the thread, start a new one, and recall across threads, in dev
mode (a default local user) and with API keys (the key typed in the page; no key: the 401 is shown).
``.ci/run`` installs ``chromium`` (apt) and ``playwright-core`` (npm, into tests/browser) when missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.evaluation.bench_store import free_port
from mneme.testing import Cut, FakeOpenAIServer

pytestmark = [pytest.mark.server, pytest.mark.slow]
BROWSER_DIR = Path(__file__).parent / "browser"
MNEME = str(Path(sys.executable).with_name("mneme"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    return {**env, "MNEME_DATA_DIR": str(data_dir), "MNEME_EMBEDDINGS": "fake", "LANGSMITH_TRACING": "false"}


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    procs: list[subprocess.Popen[str]] = []

    def start(data_dir: Path, *args: str, **extra_env: str) -> str:
        port = free_port()
        log = (tmp_path / f"serve{len(procs)}.log").open("w")
        proc = subprocess.Popen([MNEME, "serve", "--port", str(port), *args], env={**_env(data_dir), **extra_env},
                                stdout=log, stderr=subprocess.STDOUT, text=True)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / f"serve{len(procs) - 1}.log").read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "mneme serve did not start"
            time.sleep(0.3)

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


def _chat(url: str, screenshot: Path, key: str | None = None) -> dict[str, Any]:
    assert Path(CHROMIUM).exists(), "chromium is missing: apt-get install chromium (.ci/run does it)"
    assert (BROWSER_DIR / "node_modules" / "playwright-core").exists(), \
        "playwright-core is missing: npm install --prefix tests/browser (.ci/run does it)"
    node = shutil.which("node")
    assert node, "node is missing"
    proc = subprocess.run([node, str(BROWSER_DIR / "chat.mjs"), url, str(screenshot), *([key] if key else [])],
                          capture_output=True, text=True, timeout=240, env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_a_person_chats_in_the_playground_in_dev_mode(serve: Any, tmp_path: Path) -> None:
    url = serve(tmp_path / "data")
    shot = tmp_path / "playground.png"
    seen = _chat(url, shot)
    assert seen["userShown"] and not seen["keyShown"] and "dev mode" in seen["mode"]
    first, second, third = seen["steps"]
    assert first["reply"] and not first["error"], first
    assert first["thread"] != "new" and second["thread"] == first["thread"]  # the page carries the thread
    assert first["shown"][:2] == ["我养了一只叫豆豆的猫，它是橘猫", first["reply"]]
    assert seen["afterNewThread"] == "new"
    assert third["thread"] not in ("new", first["thread"])
    assert "豆豆" in third["reply"] and third["shown"][0] == "我的猫叫什么名字？"  # recalled in a new thread
    assert shot.stat().st_size > 10_000
    # the page's default local user is the one whose memory holds it
    mine = httpx.get(f"{url}/memories", headers={"X-User-Id": "local"}, timeout=30).json()
    assert any("豆豆" in m["text"] for m in mine["memories"])


def test_the_playground_uses_the_api_key(serve: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    created = subprocess.run([MNEME, "keys", "create", "--user", "mei"], env=_env(data), capture_output=True,
                             text=True, timeout=120)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    url = serve(data)
    refused = _chat(url, tmp_path / "nokey.png")
    assert refused["keyShown"] and not refused["userShown"]
    assert refused["steps"][0]["reply"] is None and "401" in refused["steps"][0]["error"]
    seen = _chat(url, tmp_path / "key.png", key)
    assert "豆豆" in seen["steps"][2]["reply"]
    mine = httpx.get(f"{url}/memories", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()
    assert mine["user_id"] == "mei" and any("豆豆" in m["text"] for m in mine["memories"])


def test_the_playground_shows_a_streamed_reply(serve: Any, tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        if body.get("tools") or body.get("response_format"):
            return {}  # the memory writer's structured extraction: nothing extracted
        return "你的猫叫豆豆，是一只橘猫。"

    with FakeOpenAIServer(handler=reply) as llm:
        url = serve(tmp_path / "data", OPENAI_BASE_URL=llm.url, MNEME_CHAT_MODEL="fake-model")
        seen = _chat(url, tmp_path / "streamed.png")
        streamed = [b for b in llm.chat_requests() if b.get("stream")]
    assert streamed, "the answer was not requested as a stream"
    for step in seen["steps"]:
        # the streamed text, completed by the turn (the "recalled" details follow it in the bubble)
        assert step["reply"].startswith("你的猫叫豆豆，是一只橘猫。") and not step["error"], step


def test_the_playground_replaces_a_broken_off_answer_with_the_labelled_memory_reply(serve: Any, tmp_path: Path) -> None:
    half = "Your cat is called PARTIAL and she"

    def reply(body: dict[str, Any]) -> Any:
        if body.get("tools") or body.get("response_format"):
            return {}
        return Cut(after=4, text=f"{half} more words", chunked=True)  # every answer breaks off midway

    with FakeOpenAIServer(handler=reply) as llm:
        url = serve(tmp_path / "data", OPENAI_BASE_URL=llm.url, MNEME_CHAT_MODEL="fake-model")
        seen = _chat(url, tmp_path / "broken.png")
    for step in seen["steps"]:
        # the bubble holds the labelled memory reply, never the half answer (nor the half plus the reply)
        assert step["reply"].startswith("[对话模型暂时不可用：以下根据记忆回答]"), step
        assert "PARTIAL" not in " ".join(step["shown"]) and "model unavailable" in step["error"], step
    assert "豆豆" in seen["steps"][2]["reply"]  # recalled in a new thread, from memory
