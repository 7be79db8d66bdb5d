"""The admin commands tell the truth: restore, exact deletes, a confirmed erase, the same flags everywhere.

Runs ``mneme.cli.main`` in this process against a real embedded Chroma in a temporary data directory,
with the readable ``fake`` embedder (``MNEME_EMBEDDINGS=fake``) so each command opens in milliseconds.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mneme.cli import build_parser, main
from mneme.cli.progress import Progress
from mneme.clock import FixedClock
from mneme.config import Settings
from mneme.memory.maintenance import run_gc
from mneme.stores import open_service

NOW = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
DAY = 86_400.0
README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir where u1 said where they live (in 2025), with the environment pointing the CLI at it."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MNEME_CHROMA_URL"):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(data))
    monkeypatch.setenv("MNEME_EMBEDDINGS", "fake")
    service = open_service(Settings(data_dir=data, embeddings="fake"), clock=FixedClock(NOW))
    try:
        service.remember_turn("u1", user_text="我住在上海")
        service.remember_turn("u1", user_text="I walked along the harbour with my dog today")  # no fact
    finally:
        service.close()
    return data


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], user: str = "u1") -> list[dict[str, Any]]:
    code, out, err = run(capsys, "memories", "list", "-u", user, "--json")
    assert code == 0, err
    items: list[dict[str, Any]] = json.loads(out)
    return items


def test_restore_brings_an_archived_memory_back_into_recall(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = open_service(Settings(data_dir=data, embeddings="fake"), clock=FixedClock(NOW))
    try:
        report = run_gc(service, now=NOW + 1000 * DAY)  # three years idle: the city fact fades to the archive
    finally:
        service.close()
    (fact,) = [c for c in report.changes if c["kind"] == "fact"]
    assert fact["action"] == "archive"
    assert [m["archived"] for m in listed(capsys) if m["id"] == fact["id"]] == [True]
    code, out, _ = run(capsys, "memories", "search", "我住在哪里", "-u", "u1", "--json")
    assert code == 0 and fact["id"] not in {h["id"] for h in json.loads(out)}  # archived: not recalled

    code, out, err = run(capsys, "memories", "restore", "-u", "u1", "--id", fact["id"], "--json")
    assert code == 0, err
    assert json.loads(out) == {"user_id": "u1", "restored": [fact["id"]]}
    (record,) = [m for m in listed(capsys) if m["id"] == fact["id"]]
    assert record["archived"] is False and "上海" in record["text"]
    code, out, _ = run(capsys, "memories", "search", "我住在哪里", "-u", "u1", "-k", "3", "--json")
    hits = json.loads(out)
    assert code == 0 and fact["id"] in {h["id"] for h in hits} and len(hits) <= 3

    # restored counts as used now: the next gc (at the same far date) leaves it alone
    service = open_service(Settings(data_dir=data, embeddings="fake"))
    try:
        again = run_gc(service, dry_run=True, now=service.clock() + DAY)
    finally:
        service.close()
    assert fact["id"] not in {c["id"] for c in again.changes}

    # restoring a live record or an unknown id is an error that names it
    code, _, err = run(capsys, "memories", "restore", "-u", "u1", "--id", fact["id"])
    assert code == 2 and f"no archived record {fact['id']} of user u1" in err


def test_deleting_an_unknown_id_is_an_error_and_deletes_nothing(data: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    before = listed(capsys)
    known = before[0]["id"]
    code, _, err = run(capsys, "memories", "delete", "-u", "u1", "--id", known, "--id", "ep-nosuchid")
    assert code == 2 and "no record ep-nosuchid of user u1; nothing was changed" in err
    assert listed(capsys) == before
    # another user's id is unknown to this user, too
    code, _, err = run(capsys, "memories", "delete", "-u", "u2", "--id", known)
    assert code == 2 and f"no record {known} of user u2" in err
    assert listed(capsys) == before

    code, out, err = run(capsys, "memories", "delete", "--user", "u1", "--id", known, "--json")
    assert code == 0, err
    assert json.loads(out) == {"user_id": "u1", "deleted": [known]}
    assert [m["id"] for m in listed(capsys)] == [m["id"] for m in before[1:]]


def test_delete_all_needs_a_yes_without_a_terminal(data: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    before = listed(capsys)
    assert before
    code, _, err = run(capsys, "memories", "delete", "-u", "u1", "--all")
    assert code == 2 and "pass --yes to confirm" in err
    assert listed(capsys) == before

    # on a terminal it asks; a wrong answer deletes nothing
    monkeypatch.setattr("sys.stdin", _Terminal("u2\n"))
    code, _, err = run(capsys, "memories", "delete", "-u", "u1", "--all")
    assert code == 2 and "not confirmed" in err
    assert listed(capsys) == before

    monkeypatch.setattr("sys.stdin", _Terminal("u1\n"))
    code, _, err = run(capsys, "memories", "delete", "-u", "u1", "--all")
    assert code == 0 and f"erased everything of u1: {len(before)} records" in err
    assert listed(capsys) == []


def test_delete_all_with_yes_reports_what_it_removed(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = len(listed(capsys))
    code, out, err = run(capsys, "memories", "delete", "-u", "u1", "--all", "--yes", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["user_id"] == "u1" and result["erased"]["records"] == n
    assert listed(capsys) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_one_summary_line_off_a_terminal() -> None:
    stream = io.StringIO()
    with Progress("eval locomo: replay", total=3, unit="turn", stream=stream) as bar:
        for _ in range(3):
            bar.update()
        bar.note("conv-26")
    line = stream.getvalue()
    assert re.fullmatch(r"eval locomo: replay: 3 turns in \d+\.\ds \(conv-26\)\n", line)


def test_progress_draws_a_bar_on_a_terminal() -> None:
    stream = _Terminal()
    with Progress("reindex", total=2, unit="record", stream=stream) as bar:
        bar.update(2)
    text = stream.getvalue()
    assert "\r" in text and text.rstrip().endswith("reindex: 2 records in " + text.rstrip().split(" in ")[-1])


def _options(parser: argparse.ArgumentParser, path: str = "mneme") -> dict[str, set[str]]:
    """Every command path and the long options it takes."""
    found: dict[str, set[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_options(sub, f"{path} {name}"))
    longs = {o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
    if longs or path == "mneme":
        found[path] = longs
    return found


def test_every_option_of_every_command_is_in_the_readme() -> None:
    """Each command has a row in the README's CLI table naming every option it takes."""
    readme = README.read_text(encoding="utf-8")
    missing = []
    for cmd, opts in _options(build_parser()).items():
        rows = [line for line in readme.splitlines() if line.startswith(f"| `{cmd} ") or line.startswith(f"| `{cmd}`")]
        where = "\n".join(rows) if cmd != "mneme" else readme
        if not where:
            missing.append(f"{cmd}: no row in the CLI table")
        missing += [f"{cmd} {opt}" for opt in sorted(opts) if not re.search(re.escape(opt) + r"(?![\w-])", where)]
    assert missing == []


def test_short_flags_are_the_same_everywhere() -> None:
    flags: dict[str, set[str]] = {}
    parser = build_parser()

    def walk(p: argparse.ArgumentParser) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)
            shorts = [o for o in action.option_strings if not o.startswith("--")]
            longs = [o for o in action.option_strings if o.startswith("--")]
            for short in shorts:
                flags.setdefault(short, set()).update(longs)

    walk(parser)
    assert all(len(longs) == 1 for longs in flags.values()), flags
    assert flags["-u"] == {"--user"} and flags["-k"] == {"--k"}
    for command in ("chat", "ingest", "gc"):
        assert "-u" in _shorts(parser, command)
    for action in ("list", "search", "delete", "restore", "export"):
        assert "-u" in _shorts(parser, "memories", action)


def _shorts(parser: argparse.ArgumentParser, *path: str) -> set[str]:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return {o for a in parser._actions for o in a.option_strings if not o.startswith("--")}
