"""Time, injected: forgetting, TTLs and evaluation read a clock, never the wall clock directly."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]
"""A clock returns the current time as POSIX seconds (UTC)."""


def system_clock() -> float:
    """Return the wall-clock time; the default clock of a running app."""
    return time.time()


class FixedClock:
    """A clock that only moves when told to: for tests, replays and evaluation."""

    def __init__(self, start: float | datetime = 0.0) -> None:
        self.now = start.timestamp() if isinstance(start, datetime) else float(start)

    def __call__(self) -> float:
        """The current (fixed) time."""
        return self.now

    def set(self, when: float | datetime) -> None:
        """Jump to ``when``."""
        self.now = when.timestamp() if isinstance(when, datetime) else float(when)

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds``."""
        self.now += seconds


def to_iso(ts: float) -> str:
    """Format POSIX seconds as an ISO-8601 UTC string."""
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def parse_iso(text: str) -> float:
    """Parse an ISO-8601 date or datetime (naive means UTC) into POSIX seconds."""
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
