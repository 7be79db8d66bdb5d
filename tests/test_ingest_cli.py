"""``mneme ingest`` and ``mneme documents`` through the real CLI on embedded Chroma (use-m3, no key).

A GBK and a BOM'd UTF-8 Markdown file are ingested and recalled (their titles found); binary and special
files get a clear error and exit code; shared documents are listed and deleted by the admin command, which
a user id cannot reach.
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

pytestmark = pytest.mark.slow

GBK_MD = "# 退货政策\n\n顾客在三十天内可以无理由退货，请保留发票和原包装。\n\n退款在七个工作日内到账。\n"
BOM_MD = "\ufeff# Tram timetable\n\nThe number 7 tram runs every twelve minutes in winter.\n"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The real defaults (use-m3 embeddings): what a user gets."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    return {**clean, "MNEME_DATA_DIR": str(tmp_path / "data"), "LANGSMITH_TRACING": "false"}


@pytest.fixture
def fast_env(env: dict[str, str]) -> dict[str, str]:
    """Hashed-word embeddings: for tests about files and admin, not about recall quality."""
    return {**env, "MNEME_EMBEDDINGS": "fake"}


def mneme(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([MNEME, *args], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def test_any_encoding_is_ingested_and_recalled_and_non_text_is_named(env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_bytes(GBK_MD.encode("gbk"))
    (docs / "tram.md").write_bytes(BOM_MD.encode("utf-8"))
    (docs / "notes.txt").write_bytes("# 备忘\n\n周五下午三点开会。\n".encode("utf-16"))
    (docs / "photo.txt").write_bytes(bytes.fromhex("89504e470d0a1a0a") + bytes(range(256)) * 8)

    out = mneme(env, "ingest", str(docs), "--json", code=1)  # one file skipped: exit 1, the rest stored
    summary = json.loads(out.stdout)
    assert summary["files"] == 3 and summary["skipped"].keys() == {str(docs / "photo.txt")}
    assert "binary" in out.stderr and "photo.txt" in out.stderr
    assert summary["encodings"] == {"gb18030": 1, "utf-8-sig": 1, "utf-16": 1}

    listed = json.loads(mneme(env, "documents", "list", "--json").stdout)
    assert {d["title"] for d in listed} == {"退货政策", "Tram timetable", "备忘"}

    found = json.loads(mneme(env, "memories", "search", "可以退货吗？发票", "-u", "alice", "--json").stdout)
    assert found and found[0]["metadata"]["title"] == "退货政策" and "三十天" in found[0]["text"]
    found = json.loads(mneme(env, "memories", "search", "how often does the tram run", "-u", "bob", "--json").stdout)
    assert found and found[0]["metadata"]["title"] == "Tram timetable" and not found[0]["text"].startswith("\ufeff")

    again = json.loads(mneme(env, "ingest", str(docs / "policy.md"), str(docs / "tram.md"), "--json").stdout)
    assert again["unchanged_chunks"] == again["chunks"] > 0  # nothing re-embedded


def test_special_files_stop_before_anything_is_stored(fast_env: dict[str, str], tmp_path: Path) -> None:
    env = fast_env
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    good = tmp_path / "good.md"
    good.write_text("# Good\n\ntext\n", encoding="utf-8")
    for path, what in (("/dev/null", "character device"), (str(fifo), "named pipe"),
                       (str(tmp_path / "missing.md"), "no such file")):
        err = mneme(env, "ingest", str(good), path, code=2).stderr
        assert what in err and path in err and "Traceback" not in err
    assert json.loads(mneme(env, "documents", "list", "--json").stdout) == []
    wrong = mneme(env, "ingest", "--encoding", "utf-8", str(good), code=0)
    assert "ingested 1 files" in wrong.stdout


def test_shared_documents_are_managed_by_the_admin_command_only(fast_env: dict[str, str], tmp_path: Path) -> None:
    env = fast_env
    (tmp_path / "a.md").write_text("# 手册\n\n公司年假为每年十五天。\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Handbook\n\nAnnual leave is fifteen days.\n", encoding="utf-8")
    (tmp_path / "own.md").write_text("# Mine\n\nAlice's private leave notes.\n", encoding="utf-8")
    mneme(env, "ingest", str(tmp_path / "a.md"), str(tmp_path / "b.md"))
    mneme(env, "ingest", "-u", "alice", str(tmp_path / "own.md"))

    refused = mneme(env, "memories", "list", "--user", "~shared", code=2).stderr
    assert "mneme documents" in refused
    assert [d["source"] for d in json.loads(mneme(env, "documents", "list", "--json").stdout)] == \
        [str(tmp_path / "a.md"), str(tmp_path / "b.md")]
    assert [d["source"] for d in json.loads(mneme(env, "documents", "list", "-u", "alice", "--json").stdout)] == \
        [str(tmp_path / "own.md")]

    unknown = mneme(env, "documents", "delete", "--source", "nope.md", code=2).stderr
    assert "no document 'nope.md'" in unknown
    deleted = json.loads(mneme(env, "documents", "delete", "-s", str(tmp_path / "a.md"), "--json").stdout)
    assert deleted["deleted"] == {str(tmp_path / "a.md"): 1}
    assert "年假" not in mneme(env, "memories", "search", "年假", "-u", "bob", "--json").stdout

    assert "--yes" in mneme(env, "documents", "delete", "--all", code=2).stderr  # no terminal: must confirm
    mneme(env, "documents", "delete", "--all", "--yes")
    assert json.loads(mneme(env, "documents", "list", "--json").stdout) == []
    assert len(json.loads(mneme(env, "documents", "list", "-u", "alice", "--json").stdout)) == 1  # private kept


def test_ingest_and_documents_go_through_a_running_server(fast_env: dict[str, str], tmp_path: Path,
                                                          spawn_mneme_serve: Any) -> None:
    server = spawn_mneme_serve({"MNEME_DATA_DIR": fast_env["MNEME_DATA_DIR"]})
    assert json.loads((Path(fast_env["MNEME_DATA_DIR"]) / "server.json").read_text())["url"] == server.url
    policy = tmp_path / "policy.md"
    policy.write_bytes(GBK_MD.encode("gbk"))
    out = json.loads(mneme(fast_env, "ingest", str(policy), "--json").stdout)  # the server holds the lock
    assert out["files"] == 1 and out["chunks"] > 0 and out["encodings"] == {"gb18030": 1}
    listed = json.loads(mneme(fast_env, "documents", "list", "--json").stdout)
    assert [(d["source"], d["title"]) for d in listed] == [(str(policy), "退货政策")]
    assert "no document 'nope.md'" in mneme(fast_env, "documents", "delete", "-s", "nope.md", code=2).stderr
    mneme(fast_env, "documents", "delete", "-s", str(policy))
    assert json.loads(mneme(fast_env, "documents", "list", "--json").stdout) == []
