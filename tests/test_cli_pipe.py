"""``mneme … | head``: a reader that leaves early ends the command quietly (no traceback), as with other Unix tools."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MNEME = str(Path(sys.executable).with_name("mneme"))

pytestmark = pytest.mark.slow


def test_closed_stdout_pipe_is_not_a_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env["MNEME_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.Popen([MNEME, "keys", "create", "-u", "alice"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command prints anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
