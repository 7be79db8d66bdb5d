"""The issue's "done when", end to end through the real CLI: ``mneme chat`` then ``mneme memories``.

Subprocesses with the real defaults: embedded Chroma in a temporary MNEME_DATA_DIR, the offline use-m3
embedder, and no model configured (no OPENAI_* variables), so every memory is written by the no-model
path of the writing policy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

MNEME = str(Path(sys.executable).with_name("mneme"))
VALID_ID = "11010519491231002X"  # checksum-valid Chinese resident ID
IDENTIFIERS = ("13812345678", "zhang@example.com", VALID_ID)
NEGATIVE = "最近工作压力好大，我很焦虑，晚上失眠，和老板吵架了"
MESSAGES = [
    "谢谢！",
    "好的",
    f"我的手机是13812345678，邮箱zhang@example.com，身份证{VALID_ID}",
    NEGATIVE,
    "我住在上海",
    "我搬到北京了",
]

pytestmark = pytest.mark.slow


def mneme(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([MNEME, *args], input=stdin, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def listed(env: dict[str, str], user: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(mneme(env, "memories", "list", "--user", user, "--json").stdout)
    return out


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A data dir where user u1 has chatted the issue's six messages (one process, one thread)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env = {**clean, "MNEME_DATA_DIR": str(tmp_path_factory.mktemp("memcli") / "data"), "LANGSMITH_TRACING": "false"}
    replies = mneme(env, "chat", "--user", "u1", stdin="".join(f"{m}\n" for m in MESSAGES)).stdout
    assert replies.count("[仅记忆模式：未配置对话模型]") == 1  # the mode label once per chat
    for raw in IDENTIFIERS:
        assert raw not in replies
    return env


@pytest.fixture(scope="module")
def memories(env: dict[str, str]) -> list[dict[str, Any]]:
    return listed(env, "u1")


def episodes(memories: list[dict[str, Any]]) -> list[str]:
    return [m["text"] for m in memories if m["kind"] == "episodic"]


def test_every_record_belongs_to_u1_and_cites_its_turns(memories: list[dict[str, Any]]) -> None:
    assert memories and {m["user_id"] for m in memories} == {"u1"}
    assert all(m["source_turns"] and m["thread_id"] for m in memories)
    assert len({m["thread_id"] for m in memories}) == 1  # one chat process, one thread


def test_thanks_and_ack_store_nothing(memories: list[dict[str, Any]]) -> None:
    for m in memories:
        assert "谢谢" not in m["text"] and m["text"] not in ("user: 好的", "好的")
    # the six messages leave: the redacted turn, the summary, two city turns, one city fact
    assert sorted(m["kind"] for m in memories) == ["episodic", "episodic", "episodic", "fact", "summary"]


def test_identifiers_are_redacted_everywhere(memories: list[dict[str, Any]]) -> None:
    dump = json.dumps(memories, ensure_ascii=False)
    for raw in IDENTIFIERS:
        assert raw not in dump
    (record,) = [m for m in memories if "[手机号]" in m["text"]]
    assert "[邮箱]" in record["text"] and "[身份证号]" in record["text"]
    meta = record["metadata"]
    assert (meta["redacted_phone"], meta["redacted_email"], meta["redacted_id_number"]) == (1, 1, 1)


def test_negative_turn_is_kept_as_a_summary_only(memories: list[dict[str, Any]]) -> None:
    (summary,) = [m for m in memories if m["kind"] == "summary"]
    assert summary["emotion"] == "negative"
    assert summary["text"].startswith("用户") and "焦虑" in summary["text"]
    assert len(summary["text"]) <= 60
    # no episodic record of that exchange: neither its detail nor its feelings as said
    for text in episodes(memories):
        assert "和老板吵架" not in text and "焦虑" not in text and "失眠" not in text


def test_one_current_home_city_with_history(memories: list[dict[str, Any]]) -> None:
    cities = [m for m in memories if m["key"] == "home_city"]
    assert len(cities) == 1
    (city,) = cities
    assert city["kind"] == "fact" and not city["archived"]
    assert "北京" in city["text"] and city["metadata"]["value"] == "北京"
    assert [h["text"] for h in city["history"]] == ["用户住在上海"]
    assert "上海" not in city["text"]


def test_search_finds_the_current_city(env: dict[str, str]) -> None:
    hits = json.loads(mneme(env, "memories", "search", "--user", "u1", "我住在哪个城市", "--json").stdout)
    facts = [h for h in hits if h["kind"] == "fact"]
    assert facts and "北京" in facts[0]["text"]


def test_other_users_see_nothing_and_delete_all_erases(env: dict[str, str]) -> None:
    assert listed(env, "u2") == []
    assert json.loads(mneme(env, "memories", "search", "--user", "u2", "北京", "--json").stdout) == []
    exported = [json.loads(line) for line in mneme(env, "memories", "export", "--user", "u1").stdout.splitlines()]
    (thread,) = [e for e in exported if e.get("type") == "thread"]  # the conversation is exported with the memories
    assert thread["messages"] and thread["messages"][-1]["role"] == "assistant"
    for raw in IDENTIFIERS:  # as the thread store keeps it: redacted
        assert raw not in json.dumps(exported, ensure_ascii=False)
    proc = mneme(env, "memories", "delete", "--user", "u1", "--all", "--yes")
    assert "erased everything of u1: 5 records, 0 queued turns, 1 thread" in proc.stderr  # the chat's thread too
    assert mneme(env, "memories", "export", "--user", "u1").stdout == ""
    assert listed(env, "u1") == []
    assert json.loads(mneme(env, "memories", "search", "--user", "u1", "北京 上海", "--json").stdout) == []
