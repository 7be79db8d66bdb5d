"""The write journal: a turn is acknowledged once its write request is durably on disk, not once it is stored.

``WriteJournal`` is a SQLite file (WAL, ``synchronous=FULL``: every commit is fsync'd) holding the turns
the memory store has not taken yet. Appends from many requests are group-committed by one thread (one
fsync for all the turns that arrived during the previous commit), so acknowledging a turn costs one
fsync however many clients write at once. ``memory/applier.py`` empties it into the store in batches.

What reaches the disk is the writing policy's *redacted* text (e-mail, phones, ids, cards, secrets
already replaced by placeholders) and the redaction counts: raw identifiers never touch the journal.

Each process owns one journal file (an exclusive ``flock`` on its ``.lock`` file, released by the kernel
when the process dies). ``open_journal(directory)`` takes the first free file and adopts the entries of
any other free file (a process that died with turns still queued), so nothing waits for that process
to come back. Entry ids are random and stable; the records a turn becomes get ids derived from them
(``record_ids``), so an entry applied twice (a crash between the store's write and the journal's
``done``) writes the same records again instead of duplicates.

The journal keeps an in-memory mirror of its entries (it is the only writer of its file), so
``pending``, ``search`` (read-your-writes: recall also matches the user's queued turns) and ``backlog``
never touch the disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from mneme.errors import JournalWriteError
from mneme.memory.tokenize import tokenize

logger = logging.getLogger("mneme.memory.journal")
_HAN = re.compile(r"^[\u3400-\u9fff]+$")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS entries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT NOT NULL,
        thread_id TEXT,
        user_text TEXT NOT NULL,
        assistant_text TEXT NOT NULL,
        preview TEXT NOT NULL,
        turn_ids TEXT NOT NULL,
        redactions TEXT NOT NULL,
        created_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        failed INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        previous_reply TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX IF NOT EXISTS entries_user ON entries (user_id, seq)",
)
_COLUMNS = ("id, user_id, thread_id, user_text, assistant_text, preview, turn_ids, redactions, created_at, "
            "attempts, failed, last_error, previous_reply")


def new_entry_id() -> str:
    """A fresh journal entry id (random: two identical turns are two turns)."""
    return f"j-{uuid.uuid4().hex}"


def record_ids(entry_id: str) -> tuple[str, str]:
    """The episodic and summary record ids a journal entry becomes: the same on every replay."""
    digest = hashlib.sha256(entry_id.encode()).hexdigest()
    return f"ep-{digest[:16]}", f"sum-{digest[16:32]}"


@dataclass(frozen=True, kw_only=True)
class JournalEntry:
    """One acknowledged turn waiting to be applied (texts already redacted)."""

    id: str
    user_id: str
    user_text: str
    assistant_text: str = ""
    thread_id: str | None = None
    turn_ids: tuple[str, ...] = ()
    redactions: dict[str, int] = field(default_factory=dict)
    """Identifiers the redaction before journaling replaced, by kind (they end in the records' metadata)."""
    preview: str = ""
    """What recall shows while the turn is queued: the no-model plan's episodic or summary text."""
    created_at: float = 0.0
    attempts: int = 0
    failed: bool = False
    """Set after repeated non-transient failures: kept (never lost) but no longer retried automatically."""
    last_error: str | None = None
    previous_reply: str = ""
    """The assistant's reply before this turn in its thread (redacted): the turn's search context."""

    def row(self) -> tuple[Any, ...]:
        """The entry as a row of ``entries`` (in ``_COLUMNS`` order)."""
        return (self.id, self.user_id, self.thread_id, self.user_text, self.assistant_text, self.preview,
                json.dumps(list(self.turn_ids)), json.dumps(self.redactions, sort_keys=True), self.created_at,
                self.attempts, int(self.failed), self.last_error, self.previous_reply)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> JournalEntry:
        """The entry a row of ``entries`` holds."""
        return cls(id=row[0], user_id=row[1], thread_id=row[2], user_text=row[3], assistant_text=row[4],
                   preview=row[5], turn_ids=tuple(json.loads(row[6])), redactions=json.loads(row[7]),
                   created_at=float(row[8]), attempts=int(row[9]), failed=bool(row[10]), last_error=row[11],
                   previous_reply=row[12] or "")


@dataclass
class _Mirrored:
    entry: JournalEntry
    tokens: frozenset[str] | None = None
    vector: Any = None
    """The preview's embedding, once a recall has asked for it (``queued_vectors``)."""


class WriteJournal:
    """Durable queue of acknowledged turns, one SQLite file, owned by one process at a time."""

    def __init__(self, path: Path | str, *, lock: IO[str] | None = None) -> None:
        self.path = Path(path)
        self._lock_file = lock
        self._cond = threading.Condition()
        self._queue: list[tuple[JournalEntry, Future[None]]] = []
        self._closed = False
        self._mirror: dict[str, _Mirrored] = {}  # entry id -> entry, in append order
        self._changed = threading.Condition()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False,
                                         timeout=30)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")  # a commit is on disk when it returns
            self._conn.execute("PRAGMA secure_delete = ON")  # an erased user's queued turns are zeroed on disk
            for statement in _SCHEMA:
                self._conn.execute(statement)
            columns = {r[1] for r in self._conn.execute("PRAGMA table_info(entries)")}
            if "previous_reply" not in columns:  # a journal written before turns carried their context
                self._conn.execute("ALTER TABLE entries ADD COLUMN previous_reply TEXT NOT NULL DEFAULT ''")
            self._conn.execute("UPDATE entries SET failed = 0 WHERE failed != 0")  # parked turns: one more try
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM entries ORDER BY seq").fetchall()
        except sqlite3.Error as exc:
            raise JournalWriteError(f"cannot open the write journal {self.path}: {exc}") from exc
        for row in rows:
            entry = JournalEntry.from_row(row)
            self._mirror[entry.id] = _Mirrored(entry)
        self._db_lock = threading.Lock()
        self._committer = threading.Thread(target=self._commit_loop, name="mneme-journal-commit", daemon=True)
        self._committer.start()

    # -- appending (group commit) --------------------------------------------------------------------
    def submit(self, entry: JournalEntry) -> Future[None]:
        """Queue ``entry`` for the next group commit; the future completes once it is on disk.

        The future fails with ``JournalWriteError`` when the entry could not be written (disk full,
        read-only or vanished data directory): the turn is then NOT acknowledged.
        """
        fut: Future[None] = Future()
        with self._cond:
            if self._closed:
                fut.set_exception(JournalWriteError(f"the write journal {self.path} is closed"))
                return fut
            self._queue.append((entry, fut))
            self._cond.notify()
        return fut

    def append(self, entry: JournalEntry, *, timeout: float | None = 30.0) -> None:
        """Write ``entry`` durably; return once it is on disk (raises ``JournalWriteError`` otherwise)."""
        self.submit(entry).result(timeout=timeout)

    def _commit_loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                batch, self._queue = self._queue, []
            try:
                self._insert([e for e, _ in batch])
            except JournalWriteError as exc:
                for _, fut in batch:
                    fut.set_exception(exc)
                continue
            with self._changed:
                for entry, _ in batch:
                    self._mirror.setdefault(entry.id, _Mirrored(entry))
                self._changed.notify_all()
            for _, fut in batch:
                fut.set_result(None)

    def _insert(self, entries: Sequence[JournalEntry]) -> None:
        marks = ", ".join("?" * len(_COLUMNS.split(",")))
        with self._db_lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany(f"INSERT OR IGNORE INTO entries ({_COLUMNS}) VALUES ({marks})",
                                       [e.row() for e in entries])
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                raise JournalWriteError(
                    f"cannot write the turn to the journal {self.path} ({exc}); it was NOT kept. "
                    "Free disk space or fix the data directory's permissions") from exc

    # -- the applier's side ---------------------------------------------------------------------------
    def take(self, limit: int = 64) -> list[JournalEntry]:
        """The oldest ``limit`` entries still to apply (failed ones left out), without removing them."""
        with self._changed:
            out = [m.entry for m in self._mirror.values() if not m.entry.failed]
        return out[:limit]

    def done(self, ids: Iterable[str]) -> None:
        """Remove applied entries (their records are in the store)."""
        self._delete_where("id", list(ids))

    def record_failure(self, entry_id: str, error: str, *, give_up: bool) -> None:
        """Count a failed attempt at ``entry_id``; ``give_up`` parks it (kept, retried only on restart)."""
        with self._changed:
            current = self._mirror.get(entry_id)
            if current is None:
                return
            entry = current.entry
            updated = replace(entry, attempts=entry.attempts + 1, failed=give_up, last_error=error[:500])
            self._mirror[entry_id] = _Mirrored(updated, current.tokens, current.vector)
        with self._db_lock, contextlib.suppress(sqlite3.Error):  # bookkeeping only: the entry is safe either way
            self._conn.execute("UPDATE entries SET attempts = ?, failed = ?, last_error = ? WHERE id = ?",
                               (updated.attempts, int(give_up), updated.last_error, entry_id))

    def wait_for_entries(self, timeout: float) -> None:
        """Block until an entry is appended (or ``timeout`` seconds pass)."""
        with self._changed:
            if not any(not m.entry.failed for m in self._mirror.values()):
                self._changed.wait(timeout)

    # -- what callers ask -----------------------------------------------------------------------------
    def pending(self, user_id: str) -> list[JournalEntry]:
        """``user_id``'s acknowledged turns not yet in the store, oldest first."""
        with self._changed:
            return [m.entry for m in self._mirror.values() if m.entry.user_id == user_id]

    def backlog(self) -> int:
        """How many acknowledged turns are not yet in the store (``/readyz`` reports it)."""
        with self._changed:
            return len(self._mirror)

    def search(self, user_id: str, query: str, *, k: int = 10) -> list[tuple[JournalEntry, float]]:
        """``user_id``'s queued turns sharing words with ``query``: (entry, share of the query's words matched).

        Keyword overlap is enough here: these turns are seconds old and few; once applied, the full
        hybrid search takes over.
        """
        with self._changed:
            mine = [m for m in self._mirror.values() if m.entry.user_id == user_id]
        if not mine:
            return []
        wanted = _features(query)
        if not wanted:
            return []
        hits: list[tuple[JournalEntry, float]] = []
        for m in mine:
            if m.tokens is None:
                m.tokens = _features(m.entry.preview)
            overlap = len(wanted & m.tokens) / len(wanted)
            if overlap > 0:
                hits.append((m.entry, overlap))
        hits.sort(key=lambda h: (-h[1], -h[0].created_at))
        return hits[:k]

    def queued_vectors(self, user_id: str, embed: Callable[[list[str]], Sequence[Sequence[float]]],
                       ) -> list[tuple[JournalEntry, Sequence[float]]]:
        """``user_id``'s queued turns with their previews' embeddings (made by ``embed`` in one call for those
        not embedded yet, then kept with the entry until it is applied): a queued turn is found by meaning too,
        in any language, not only by the words it shares with a query."""
        with self._changed:
            mine = [m for m in self._mirror.values() if m.entry.user_id == user_id and m.entry.preview]
        todo = [m for m in mine if m.vector is None]
        if todo:
            for m, vector in zip(todo, embed([m.entry.preview for m in todo]), strict=True):
                m.vector = vector
        return [(m.entry, m.vector) for m in mine]

    def delete_user(self, user_id: str) -> int:
        """Drop every queued turn of ``user_id`` (erasure); return how many were dropped."""
        with self._changed:
            ids = [i for i, m in self._mirror.items() if m.entry.user_id == user_id]
        self._delete_where("id", ids)
        return len(ids)

    def _delete_where(self, column: str, values: list[str]) -> None:
        if not values:
            return
        with self._db_lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                for start in range(0, len(values), 500):
                    chunk = values[start:start + 500]
                    self._conn.execute(f"DELETE FROM entries WHERE {column} IN ({','.join('?' * len(chunk))})",
                                       chunk)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                raise JournalWriteError(f"cannot update the journal {self.path}: {exc}") from exc
        with self._changed:
            for value in values:
                self._mirror.pop(value, None)
            self._changed.notify_all()

    def adopt(self, other: WriteJournal) -> int:
        """Move ``other``'s entries (a dead process's journal) into this one; return how many."""
        entries = [m.entry for m in other._mirror.values()]
        if entries:
            self._insert(entries)
            with self._changed:
                for entry in entries:
                    self._mirror.setdefault(entry.id, _Mirrored(entry))
                self._changed.notify_all()
        return len(entries)

    def close(self) -> None:
        """Finish the queued commits, close the file and release ownership."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._committer.join(timeout=30)
        with self._db_lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)
                self._lock_file.close()
            self._lock_file = None


def _features(text: str) -> frozenset[str]:
    """Words, plus the characters of Chinese words: segmentation differs between a question and a statement
    ("猫叫" / "猫"), and these few fresh turns need a match, not a ranking."""
    words = tokenize(text)
    chars = {ch for w in words if len(w) > 1 and _HAN.match(w) for ch in w}
    return frozenset(words) | chars


def _try_lock(path: Path) -> IO[str] | None:
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the journal's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def open_journal(directory: Path | str) -> WriteJournal:
    """Own a journal file in ``directory`` (one per live process) and adopt any orphaned one's entries.

    Files are ``journal-<n>.sqlite3``; a process takes the lowest ``n`` whose lock is free (so a restarted
    single process finds its own file again), then moves the entries of every other free file into it
    and removes that file. A crash between the two steps leaves an entry in both, which is harmless:
    applying an entry is idempotent.
    """
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JournalWriteError(f"cannot create the journal directory {root}: {exc}") from exc
    own: WriteJournal | None = None
    n = 0
    while own is None:
        lock = _try_lock(root / f"journal-{n}.lock")
        if lock is not None:
            own = WriteJournal(root / f"journal-{n}.sqlite3", lock=lock)
        n += 1
    for path in sorted(root.glob("journal-*.sqlite3")):
        if path == own.path:
            continue
        lock = _try_lock(path.with_suffix(".lock"))
        if lock is None:
            continue  # a live process owns it
        orphan = WriteJournal(path, lock=lock)
        try:
            moved = own.adopt(orphan)
            for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):  # before the lock is released
                with contextlib.suppress(OSError):
                    leftover.unlink()
        finally:
            orphan.close()
        if moved:
            logger.info("adopted %d queued turns from %s", moved, path)
    return own
