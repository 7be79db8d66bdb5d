"""How long commands talk while they work: a progress bar on a terminal, one summary line otherwise.

Every long command (``eval``, ``ingest``, ``reindex``, ``bench``) reports through ``Progress``: on a terminal
(stderr is a TTY) it draws a tqdm bar on stderr; otherwise (a pipe, a log, CI) it stays silent while working
and writes one line when done (``eval: 1,234 turns in 6m12s``), so logs get an account without carriage
returns. Results always go to stdout; progress only ever goes to stderr, so ``--json`` output stays parseable.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Count work done under a label; a bar on a terminal, a closing summary line otherwise.

    Use as a context manager: ``with Progress("eval", total=n, unit="turn") as bar: bar.update()``.
    ``note(text)`` sets a short status (the current collection, the phase) shown on the bar and in the summary.
    """

    def __init__(self, label: str, *, total: int | None = None, unit: str = "item", stream: TextIO | None = None,
                 tty: bool | None = None) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self.status = ""
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty() if tty is None else tty
        self._bar: Any = None
        self._started = time.perf_counter()

    def __enter__(self) -> Progress:
        if self._tty:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.label, unit=self.unit, file=self._stream, leave=False,
                             dynamic_ncols=True)
        return self

    def update(self, n: int = 1) -> None:
        """Count ``n`` more units done."""
        self.done += n
        if self._bar is not None:
            self._bar.update(n)

    def note(self, status: str) -> None:
        """Show what is being worked on now (kept for the summary line)."""
        self.status = status
        if self._bar is not None:
            self._bar.set_postfix_str(status, refresh=False)

    def summary(self) -> str:
        """``label: N units in T`` (with the last status, if any)."""
        plural = self.unit if self.done == 1 else (
            f"{self.unit[:-1]}ies" if self.unit.endswith("y") and self.unit[-2:-1] not in "aeiou" else f"{self.unit}s")
        extra = f" ({self.status})" if self.status else ""
        return f"{self.label}: {self.done:,} {plural} in {_duration(time.perf_counter() - self._started)}{extra}"

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.close()
        if exc_type is None or exc_type is KeyboardInterrupt:
            print(self.summary() + (" (interrupted)" if exc_type is KeyboardInterrupt else ""),
                  file=self._stream, flush=True)
