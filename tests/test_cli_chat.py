"""``mneme chat`` and ``mneme ingest`` as subprocesses, with the real defaults and no API key.

Embedded Chroma in a temporary MNEME_DATA_DIR and the offline use-m3 embedder: memory told in one
process and thread is recalled by another process in another thread, and never by another user.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MNEME = str(Path(sys.executable).with_name("mneme"))
LABEL_ZH = "[仅记忆模式：未配置对话模型]"
LABEL_EN = "[memory-only mode: no chat model configured]"

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    return {**clean, "MNEME_DATA_DIR": str(tmp_path / "data"), "LANGSMITH_TRACING": "false"}


def mneme(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([MNEME, *args], input=stdin, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def chat(env: dict[str, str], user: str, thread: str, *lines: str) -> str:
    return mneme(
        env, "chat", "--user", user, "--thread", thread, stdin="".join(f"{x}\n" for x in lines)
    ).stdout


def test_memory_crosses_processes_and_threads_but_not_users(env: dict[str, str]) -> None:
    told = chat(env, "alice", "t1", "我住在杭州，我养了一只叫豆豆的猫")
    assert told.startswith(LABEL_ZH)  # no banner when stdin is not a terminal
    asked = chat(env, "alice", "t2", "我的猫叫什么名字？")
    assert asked.startswith(LABEL_ZH) and "豆豆" in asked
    assert "豆豆" not in chat(env, "bob", "t3", "我的猫叫什么名字？")


def test_one_reply_per_input_line(env: dict[str, str]) -> None:
    out = chat(env, "carol", "t1", "I drink oolong tea every morning", "What tea do I drink?", "谢谢")
    assert out.count(LABEL_EN) == 1 and LABEL_ZH not in out  # the mode label once per chat, in any language
    first, rest = out.split(LABEL_EN)[1].split("What I remember:", 1)
    assert "Noted this message." in first  # the first reply says what it kept
    recalled, thanks = rest.split("\n好的。", 1)
    assert "oolong" in recalled and "oolong" not in thanks  # a thanks recalls nothing
    assert "没有需要记住" in thanks and "没有与此相关的记忆" not in thanks  # and is not told "nothing found"


def test_ingested_documents_are_found_by_chat(env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "handbook.md").write_text(
        "# 员工手册\n\n公司年假为每年十五天，需提前一周申请。\n", encoding="utf-8"
    )
    (docs / "sub" / "faq.txt").write_text(
        "The office wifi password is rotated every Monday.\n", encoding="utf-8"
    )
    (docs / "image.png").write_bytes(b"\x89PNG not text")
    out = mneme(env, "ingest", str(docs)).stdout
    assert "ingested 2 files" in out and "shared" in out
    reply = chat(env, "dave", "t1", "公司年假有多少天？")
    assert "十五天" in reply


def test_missing_user_is_a_usage_error(env: dict[str, str]) -> None:
    proc = subprocess.run([MNEME, "chat"], input="", env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "--user" in proc.stderr
