"""The journal's applier: one background thread that moves acknowledged turns into the memory store.

It takes the oldest queued turns (up to ``batch_size``: whatever arrived while the previous batch was
being stored, and no sooner than ``batch_spacing()`` after that batch began), plans each (redaction again,
emotion, extraction: the one model call of a turn), then
stores them all with ONE embedding call and ONE store write (``MemoryService.store_turns``), and only
then removes them from the journal. A crash anywhere in between replays the batch on the next start,
writing the same record ids again (idempotent).

Failures decide what happens next:
- the store is unreachable or times out (``StoreUnavailableError``, ``TimeoutError``, ``ConnectionError``): the
  whole batch waits and is retried with exponential backoff (0.2 s doubling to ``max_backoff``), so a
  Chroma server that comes back is written to within seconds; plans are kept, the model is not asked again;
- anything else (a bug, a record the store refuses): the batch is retried one turn at a time, and a
  turn that fails alone ``give_up_after`` times is parked in the journal (kept, logged, retried at the
  next start) so one bad turn never blocks the others.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from mneme.errors import MemoryStoreError, StoreUnavailableError
from mneme.memory.journal import JournalEntry, WriteJournal

if TYPE_CHECKING:
    from mneme.memory.service import MemoryService
    from mneme.memory.writing import TurnPlan

logger = logging.getLogger("mneme.memory.applier")

TRANSIENT: tuple[type[BaseException], ...] = (StoreUnavailableError, TimeoutError, ConnectionError)


class JournalApplier:
    """Applies a ``WriteJournal`` to a ``MemoryService`` in batches, in a daemon thread."""

    def __init__(self, journal: WriteJournal, service: MemoryService, *, batch_size: int = 64,
                 max_backoff: float = 8.0, give_up_after: int = 5, batch_interval: float = 0.2,
                 max_batch_interval: float = 1.0, write_share: float = 0.05) -> None:
        self.journal = journal
        self.service = service
        self.batch_size = batch_size
        self.max_backoff = max_backoff
        self.give_up_after = give_up_after
        self.model: Any = None
        """The chat model that extracts facts (the graph's; else the service's)."""
        self.batches = 0
        """Batches stored so far (figures and tests)."""
        self.last_error: str | None = None
        """The last failure, until a batch succeeds again (``/readyz`` and ``mneme doctor`` may show it)."""
        self.store_down = False
        """Set while the last batch failed because the store could not be reached (cleared by the next write)."""
        self._plans: dict[str, TurnPlan] = {}
        self._touches: dict[str, dict[str, tuple[float, int]]] = {}
        """Recalls to count, per user and record: (latest time, how many); applied in batches, best effort."""
        self._touch_lock = threading.Lock()
        self.touch_interval = 30.0
        """Seconds between writes of counted recalls: a memory recalled many times costs one row write per
        interval. The write updates every row recalled meanwhile (~1 ms of GIL-holding Chroma work per row,
        embedded); recall counts shape forgetting over days, so half a minute late changes no ranking. Drained
        (``drain``, ``stop``) at once; lost, like any best-effort side write, if the process is killed."""
        self._touched_at = 0.0
        self.batch_interval = batch_interval
        """Least seconds from one batch's start to the next one's while turns keep coming: a Chroma write costs
        ~10 ms of CPU whatever its size, so under load turns gather into fewer, larger batches (read-your-writes
        does not wait: recall searches the journal; other processes see a turn up to this much later)."""
        self.max_batch_interval = max_batch_interval
        self.write_share = write_share
        """While turns keep coming, the applier spends at most about this share of the time storing: the next
        batch starts no sooner than the last batch's store duration / ``write_share`` after it began, between
        ``batch_interval`` and ``max_batch_interval`` (see ``batch_spacing``)."""
        self._last_write = 0.0
        self._batch_started = 0.0
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._idle = threading.Condition()
        self._busy = False
        self._draining = False
        self._thread = threading.Thread(target=self._run, name="mneme-journal-apply", daemon=True)

    def start(self) -> None:
        """Start the background thread (it first applies what an earlier run left queued)."""
        self._thread.start()

    def pause(self) -> None:
        """Stop taking new batches (tests; a batch in flight finishes)."""
        self._running.clear()

    def resume(self) -> None:
        """Take batches again after ``pause``."""
        self._running.set()

    def touch(self, user_id: str, ids: list[str], now: float) -> None:
        """Count a recall of ``ids`` later, in this thread (reinforcement is a side write: off the request)."""
        with self._touch_lock:
            mine = self._touches.setdefault(user_id, {})
            for rid in ids:
                last, n = mine.get(rid, (now, 0))
                mine[rid] = (max(last, now), n + 1)

    def batch_spacing(self) -> float:
        """Least seconds from one batch's start to the next one's while turns keep coming.

        An embedded Chroma write holds the GIL for its whole duration (its Rust binding waits for its own
        threads without releasing it: ~20-60 ms a call under load, mostly whatever its size), so every other
        thread of the server (the requests, recall) stops meanwhile. Spacing batches by the last write's
        duration bounds that stall to ``write_share`` of the time: under load turns gather into fewer, larger
        writes (at most ``max_batch_interval`` apart); with few turns a write is cheap and batches follow
        ``batch_interval``. A turn is acknowledged (journaled) and recallable (journal search) either way.
        """
        return max(self.batch_interval, min(self.max_batch_interval, self._last_write / self.write_share))

    def drain(self, timeout: float | None = 30.0) -> bool:
        """Wait until the journal holds nothing still to apply; False if ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._draining = True
        try:
            return self._wait_drained(deadline)
        finally:
            self._draining = False

    def _wait_drained(self, deadline: float | None) -> bool:
        while True:
            if not self.journal.take(1) and not self._busy and not self._touches:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if not self._thread.is_alive():
                return False
            with self._idle:
                self._idle.wait(0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic())))

    def stop(self, drain_timeout: float = 10.0) -> bool:
        """Drain for up to ``drain_timeout`` s, then stop the thread; True when nothing was left queued."""
        drained = self.drain(drain_timeout) if self._thread.is_alive() else not self.journal.take(1)
        self._stop.set()
        self._running.set()
        self._thread.join(timeout=max(5.0, drain_timeout))
        return drained

    # -- the loop -----------------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            if not self._running.is_set():
                self._running.wait(0.1)
                continue
            self._apply_touches()
            entries = self.journal.take(self.batch_size)
            if not entries:
                self._apply_touches(now=self._draining)
                self.journal.wait_for_entries(0.2)
                continue
            pause = self.batch_spacing() - (time.monotonic() - self._batch_started)
            if pause > 0 and len(entries) < self.batch_size and not self._draining:
                self._stop.wait(pause)  # let more turns arrive: one write for all of them
                entries = self.journal.take(self.batch_size) or entries
            self._batch_started = time.monotonic()
            self._busy = True
            try:
                self._apply(entries)
                backoff = 0.0
                self.last_error, self.store_down = None, False
            except TRANSIENT as exc:
                backoff = min(self.max_backoff, max(0.2, backoff * 2))
                self.last_error, self.store_down = f"{type(exc).__name__}: {exc}", True
                logger.warning("memory store unavailable; %d queued turns wait (retry in %.1fs): %s",
                               self.journal.backlog(), backoff, exc)
                self._stop.wait(backoff)
            except Exception as exc:  # noqa: BLE001 - isolate the turn at fault, keep the others moving
                self.last_error = f"{type(exc).__name__}: {exc}"
                backoff = self._isolate(entries, backoff)
            finally:
                self._busy = False
                with self._idle:
                    self._idle.notify_all()

    def _apply_touches(self, *, now: bool = False) -> None:
        """Store the counted recalls of every user: one read and one update per collection (``count_recalls_of``)."""
        if not self._touches or (not now and time.monotonic() - self._touched_at < self.touch_interval):
            return
        self._touched_at = time.monotonic()
        with self._touch_lock:
            touches, self._touches = self._touches, {}
            self._busy = True  # drain() waits for these writes too
        try:
            self._write_touches(touches)
        finally:
            self._busy = False

    def _write_touches(self, touches: dict[str, dict[str, tuple[float, int]]]) -> None:
        every = getattr(self.service.store, "count_recalls_of", None)  # all users: one read + update per collection
        if every is not None:
            try:
                with self.service.write_lock:
                    every(touches)
                return
            except Exception as exc:  # noqa: BLE001 - reinforcement is best effort; recall never waits for it
                logger.warning("could not count recalls of %d users' memories: %s", len(touches), exc)
                return
        for user_id, counted in touches.items():
            try:
                with self.service.write_lock:
                    current = self.service.store.get(user_id, list(counted))
                    updates = {r.id: {"last_accessed": counted[r.id][0],
                                      "access_count": r.access_count + counted[r.id][1]}
                               for r in current if r.user_id == user_id}
                    if updates:
                        self.service.store.update_metadata(user_id, updates)
            except Exception as exc:  # noqa: BLE001 - reinforcement is best effort; recall never waits for it
                logger.warning("could not count recalls of %s's memories: %s", user_id, exc)

    def _apply(self, entries: list[JournalEntry]) -> None:
        from mneme.memory.service import TurnRequest

        with self.service.write_lock:  # erasure waits for this batch, and then drops what it queued
            live = {e.id for e in self.journal.take(len(entries) + self.batch_size)}
            entries = [e for e in entries if e.id in live]
            if not entries:
                return
            requests = [TurnRequest.of(e) for e in entries]
            model = self.model if self.model is not None else self.service.model
            plans = []
            for entry, request in zip(entries, requests, strict=True):
                plan = self._plans.get(entry.id)
                if plan is None:  # planned once: a retry after a store outage does not ask the model again
                    plan = self._plans[entry.id] = self.service.plan(request, model=model)
                plans.append(plan)
            started = time.monotonic()
            self.service.store_turns(requests, plans)
            self._last_write = time.monotonic() - started  # the store's part only (planning may wait on a model)
            self.journal.done([e.id for e in entries])
            for entry in entries:
                self._plans.pop(entry.id, None)
            self.batches += 1

    def _isolate(self, entries: list[JournalEntry], backoff: float) -> float:
        """After a non-transient batch failure: apply the turns one by one, parking the ones that fail."""
        for entry in entries:
            try:
                self._apply([entry])
            except TRANSIENT:
                return min(self.max_backoff, max(0.2, backoff * 2))
            except Exception as exc:  # noqa: BLE001
                give_up = entry.attempts + 1 >= self.give_up_after
                level = logging.ERROR if give_up else logging.WARNING
                logger.log(level, "could not store queued turn %s of %s (attempt %d%s): %s", entry.id,
                           entry.user_id, entry.attempts + 1, "; parked until restart" if give_up else "", exc,
                           exc_info=give_up)
                self.journal.record_failure(entry.id, f"{type(exc).__name__}: {exc}", give_up=give_up)
                if isinstance(exc, MemoryStoreError):
                    self._stop.wait(min(self.max_backoff, max(0.2, backoff * 2)))
        return backoff
