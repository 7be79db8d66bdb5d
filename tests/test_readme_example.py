"""The README's Python example runs as printed: quietly (no warning, no retry) and shows the answer prompt."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### From Python"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no Python example under 'From Python'"
    return match.group(1)


def test_the_readme_python_example_runs_quietly_and_shows_the_answer_prompt(
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    namespace: dict[str, object] = {}
    exec(compile(python_example(), "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    out, err = capsys.readouterr()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "retrying" not in out + err and err == ""
    answer, prompt = out.split("\n", 1)
    assert answer == "你住在杭州。"
    # what it prints is the answer prompt: the recalled memory as data inside the tags, not an extraction prompt
    assert "<memories>" in prompt and "用户住在杭州" in prompt.split("<memories>")[1].split("</memories>")[0]
    model = namespace["model"]
    assert len(model.structured_calls) == 2  # type: ignore[attr-defined]  # one extraction per turn, no retry
