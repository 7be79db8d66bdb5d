"""Recall's two channels side by side: the keyword channel runs on a helper thread while the query is embedded.

A recall of a 1,000-memory user spends ~2.5 ms embedding the query (``use-m3``: seven small matrix products in
BLAS, which releases the GIL) and ~1 ms in the keyword channel (tokenizing in Python, BM25 in SQLite, which
releases the GIL while it steps). Neither needs the other, so the keyword channel runs beside the embedding and
a recall costs about the longer of the two plus what their Python work contends for the GIL (~0.3 ms), instead
of their sum (``mneme bench retrieval``; README).

Bounded: at most ``WORKERS`` pieces of work run beside at once; when every helper is busy (a server at full
load, where both cores are busy anyway) the work runs inline on the caller's thread, so a queue never adds to a
recall's latency. The caller always waits for the work it started (``Beside.result``), so nothing outlives its
recall; the work runs in a copy of the caller's context (``contextvars``), and an exception reaches the caller as if
the work had run inline.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")

WORKERS = 4
"""Helper threads at most (a recall holds one for about a millisecond)."""

_lock = threading.Lock()
_busy = 0
_pool: ThreadPoolExecutor | None = None


class Beside(Generic[T]):
    """``fn()`` started beside the caller; ``result()`` waits for it (or has it already, when it ran inline)."""

    def __init__(self, fn: Callable[[], T]) -> None:
        global _busy, _pool
        with _lock:
            spare = _busy < WORKERS
            if spare:
                _busy += 1
                if _pool is None:
                    _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="mneme-beside")
                pool = _pool
        self.inline = not spare
        """True when the work ran on the caller's thread (every helper was busy)."""
        if spare:
            # in the caller's context (run config, tracing, tallies), as if it ran inline
            self._future: Future[T] = pool.submit(_counted, contextvars.copy_context(), fn)
            return
        self._future = Future()  # every helper is busy: run it now, inline (never queued)
        try:
            self._future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to result(), as a pool's future would
            self._future.set_exception(exc)

    def wait(self) -> None:
        """Wait until the work has finished, whatever its outcome (an exception stays for ``result``)."""
        self._future.exception()

    def result(self) -> T:
        """The work's result, or its exception, raised here."""
        return self._future.result()


def _counted(context: contextvars.Context, fn: Callable[[], T]) -> T:
    global _busy
    try:
        return context.run(fn)
    finally:
        with _lock:
            _busy -= 1
