"""``mneme memories list/search`` print one line per record for people: a 32,000-character message or a
multi-line document no longer floods the terminal (``--json`` keeps the whole text)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mneme.cli.memories import _print_items


def _item(text: str) -> dict[str, Any]:
    return {"id": "ep-1", "kind": "episodic", "created_at": "2026-12-01T00:00:00+00:00", "archived": False,
            "text": text}


def test_people_get_one_short_line_per_record(capsys: pytest.CaptureFixture[str]) -> None:
    long_text, doc = "user: " + "q" * 32_000, "# 员工手册\n\n年假规定：十五天。"
    _print_items([_item(long_text), _item(doc)], as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert len(lines[0]) < 500 and "32,006 chars" in lines[0]
    assert lines[1].endswith("# 员工手册 年假规定：十五天。")
    _print_items([_item(long_text)], as_json=True)
    assert json.loads(capsys.readouterr().out)[0]["text"] == long_text
