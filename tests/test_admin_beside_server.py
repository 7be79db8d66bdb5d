"""Issue 13 item 4: ``mneme memories`` works while ``mneme serve`` holds the same embedded data directory.

Real processes: a real ``mneme serve`` (uvicorn, embedded Chroma, dev mode) owns the directory; the real
``mneme`` command runs beside it and goes through the server's memory API with the local admin token of
``server.json``. A command that needs the store itself gets the lock error, which names a free port.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.clock import FixedClock
from mneme.config import Settings
from mneme.memory.maintenance import run_gc
from mneme.stores import open_service

MNEME = str(Path(sys.executable).with_name("mneme"))
NOW = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
DAY = 86_400.0
pytestmark = pytest.mark.slow


def cli(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([MNEME, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == code, proc.stderr
    return proc


def listed(env: dict[str, str], user: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(cli(env, "memories", "list", "-u", user, "--json").stdout)
    return items


def test_memories_commands_work_while_mneme_serve_holds_the_data(tmp_path: Path, spawn_mneme_serve: Any) -> None:
    data = tmp_path / "data"
    service = open_service(Settings(data_dir=data, embeddings="fake"), clock=FixedClock(NOW))
    try:
        service.remember_turn("u1", user_text="我住在上海")
        service.remember_turn("u1", user_text="I walked along the harbour with my dog today")  # no fact
        service.remember_turn("u2", user_text="我喜欢爵士乐")
        (faded,) = [c["id"] for c in run_gc(service, now=NOW + 1000 * DAY, user_id="u1").changes
                    if c["action"] == "archive"]
        before = [r.id for r in service.store.scan("u1", archived=None)]
    finally:
        service.close()

    server = spawn_mneme_serve({"MNEME_DATA_DIR": str(data)})
    info = json.loads((data / "server.json").read_text(encoding="utf-8"))
    assert info["url"] == server.url
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(MNEME_DATA_DIR=str(data), MNEME_EMBEDDINGS="fake", LANGSMITH_TRACING="false")

    # the server holds the store: a command that needs it directly is told what to do, with a free port
    locked = cli(env, "gc", "--dry-run", code=2)
    assert "another process" in locked.stderr and "mneme memories` talks to the server" in locked.stderr
    assert "8000 is `mneme serve`'s default" in locked.stderr and ":8000 in every" not in locked.stderr
    assert f"--path {data / 'chroma'} --port" in locked.stderr

    # while it serves, memories goes through it: the same records, the user's own only
    items = listed(env, "u1")
    assert sorted(m["id"] for m in items) == sorted(before) and {m["user_id"] for m in items} == {"u1"}
    theirs = listed(env, "u2")
    assert theirs and all("爵士乐" in m["text"] and m["user_id"] == "u2" for m in theirs)
    # what the agent itself answers from is what the admin sees: a turn through HTTP shows up at once
    turn = httpx.post(f"{server.url}/agent/invoke", headers={"X-User-Id": "u1", "X-Thread-Id": "t1"},
                      json={"input": {"messages": [{"role": "user", "content": "我养了一只猫叫咪咪"}]}}, timeout=60)
    assert turn.status_code == 200, turn.text
    assert any("咪咪" in m["text"] for m in listed(env, "u1"))

    hits = json.loads(cli(env, "memories", "search", "咪咪", "-u", "u1", "-k", "3", "--json").stdout)
    assert hits and "咪咪" in hits[0]["text"] and len(hits) <= 3

    unknown = cli(env, "memories", "delete", "-u", "u1", "--id", before[0], "--id", "ep-nosuch", code=2)
    assert "no record ep-nosuch of user u1; nothing was changed" in unknown.stderr
    assert before[0] in {m["id"] for m in listed(env, "u1")}

    restored = json.loads(cli(env, "memories", "restore", "-u", "u1", "--id", faded, "--json").stdout)
    assert restored == {"user_id": "u1", "restored": [faded]}
    assert [m["archived"] for m in listed(env, "u1") if m["id"] == faded] == [False]

    exported = [json.loads(line) for line in cli(env, "memories", "export", "-u", "u1").stdout.splitlines()]
    assert {m["id"] for m in exported if "id" in m} >= set(before)

    held = len(listed(env, "u1"))
    erased = json.loads(cli(env, "memories", "delete", "-u", "u1", "--all", "--yes", "--json").stdout)
    assert erased["user_id"] == "u1" and erased["erased"]["records"] == held
    assert erased["erased"]["threads"] == 1  # the server's thread store: the HTTP turn's thread is gone too
    assert cli(env, "memories", "export", "-u", "u1").stdout == ""
    assert listed(env, "u1") == [] and listed(env, "u2") == theirs
