"""Reading ``mneme chat``'s lines: any bytes in, text out, and line editing with history on a terminal.

- stdin and stdout are switched to ``errors="replace"``: a byte that is not UTF-8 (``printf 'I like \\xff'``)
  becomes U+FFFD instead of a ``UnicodeDecodeError`` that would end the session, and a reply holding text
  the terminal cannot show is printed with replacements rather than lost.
- On a terminal the stdlib ``readline`` gives line editing and a history kept in ``chat_history`` under
  the data directory (mode 0600: it holds what you typed), read at start and written at exit.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger(__name__)
HISTORY_FILE = "chat_history"
HISTORY_LENGTH = 1000


def tolerant(stream: TextIO) -> TextIO:
    """``stream`` set to replace undecodable (or unencodable) characters, when it can be reconfigured."""
    reconfigure: Any = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(Exception):  # a stream that refuses keeps its own settings
            reconfigure(errors="replace")
    return stream


def enable_history(data_dir: Path) -> Callable[[], None]:
    """Turn on readline editing with the history file under ``data_dir``; returns the function saving it."""
    try:
        import readline
    except ImportError:  # not every platform has it: plain input() still works
        return lambda: None
    path = Path(data_dir) / HISTORY_FILE
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LENGTH)

    def save() -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)
            os.chmod(path, 0o600)
        except OSError as exc:  # history is a comfort: failing to keep it must not fail the exit
            log.warning("could not save the chat history to %s: %s", path, exc)

    return save


def read_line(stdin: TextIO, *, interactive: bool, prompt: str = "> ") -> str | None:
    """The next line without its line ending, or ``None`` at the end of input."""
    if interactive:
        try:
            return input(prompt)
        except EOFError:
            return None
    raw = stdin.readline()
    if not raw:
        return None
    return raw.rstrip("\r\n")
