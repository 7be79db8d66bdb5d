"""Recall's two channels side by side: the keyword channel runs on a helper thread while the query is embedded.

A recall of a 1,000-memory user spends ~1.5 ms embedding the query (``use-m3``: small matrix products in BLAS,
which releases the GIL; ``mneme/use_query.py``) and ~0.8 ms in the keyword channel's BM25 in SQLite, which
releases the GIL while it steps (the query's words are made on the caller's thread first: pure Python beside
the embedding would hold the GIL it waits for). Neither needs the other, so the SQL runs beside the embedding and
a recall costs about the longer of the two plus what their Python work contends for the GIL, instead of their
sum (``mneme bench retrieval``; README).

Only on a core nobody else is using. Running beside buys latency with CPU (the two threads contend for the GIL
and the caches: ~1 ms more CPU per served turn, measured with ``mneme bench serve``), which a loaded server
cannot spare: there every core already runs somebody's turn, and the throughput fell 7 %. So work runs beside
only while the recalls and batch writes in flight in this process (``working``) leave a core for the helper
(two cores per piece of work: ``2 × in flight ≤ cores``); otherwise inline on the caller's thread, as before.
At most ``WORKERS`` helpers, and work is never queued behind a busy one.

The caller always waits for the work it started (``Beside.result``), so nothing outlives its recall; the work
runs in a copy of the caller's context (``contextvars``), and an exception reaches the caller as if the work had
run inline.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")

WORKERS = 4
"""Helper threads at most (a recall holds one for about a millisecond)."""

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
"""The cores this process may run on."""

_lock = threading.Lock()
_busy = 0
_working = 0
_pool: ThreadPoolExecutor | None = None


@contextmanager
def working() -> Iterator[None]:
    """Count the caller as CPU work in flight in this process while inside (a recall, a batch write)."""
    global _working
    with _lock:
        _working += 1
    try:
        yield
    finally:
        with _lock:
            _working -= 1


def _core_spare() -> bool:
    """Whether the work in flight here (``working``) leaves a core for a second thread (call under ``_lock``)."""
    return 2 * max(_working, 1) <= CORES


def spare_threads() -> int:
    """Threads one piece of work may use now: 2 while a core is spare (the rule ``Beside`` follows), else 1."""
    with _lock:
        return 2 if _core_spare() else 1


class Beside(Generic[T]):
    """``fn()`` started beside the caller; ``result()`` waits for it (or has it already, when it ran inline)."""

    def __init__(self, fn: Callable[[], T]) -> None:
        global _busy, _pool
        with _lock:
            spare = _busy < WORKERS and _core_spare()
            if spare:
                _busy += 1
                if _pool is None:
                    _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="mneme-beside")
                pool = _pool
        self.inline = not spare
        """True when the work ran on the caller's thread (no core to spare, or every helper busy)."""
        if spare:
            # in the caller's context (run config, tracing, tallies), as if it ran inline
            self._future: Future[T] = pool.submit(_counted, contextvars.copy_context(), fn)
            return
        self._future = Future()  # no core or helper to spare: run it now, inline (never queued)
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


def _forget_helpers() -> None:
    """In a forked child: the parent's helper threads do not exist there, so its pool would take work and never
    run it (a recall would wait for ever). Start afresh."""
    global _busy, _lock, _pool, _working
    _busy, _lock, _pool, _working = 0, threading.Lock(), None, 0


os.register_at_fork(after_in_child=_forget_helpers)


def _counted(context: contextvars.Context, fn: Callable[[], T]) -> T:
    global _busy
    try:
        return context.run(fn)
    finally:
        with _lock:
            _busy -= 1
