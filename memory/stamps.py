"""Change stamps: how app processes sharing a Chroma server know that a tenant's rows changed elsewhere.

A process caches each tenant's rows (``mneme.memory.vector_cache``) to search them without asking Chroma
to rank. With a server, other processes write too, so every search first reads one small row per
``(collection, tenant)`` from the collection ``{prefix}_stamps`` (one primary-key read for all of them)
and brings up to date an entry whose stamp moved.

A stamp row is a vector clock with a short change log. Its id is a hash of the collection id and the
tenant (no user id is stored). Its metadata has, per writer (a ``ChromaStore`` object, ``w`` + 12 hex
digits), a counter that writer increments each time it *publishes* a change to that row, which it does
after the change's data write has landed, and the ids that change touched, in a ring of ``LOG_SIZE``
slots (``"<writer>.<n mod LOG_SIZE>"`` holds ``{"n": n, "ids": [...]}``; ``ids`` is ``null`` for a write
of more than ``MAX_LOGGED_IDS`` rows). Chroma merges metadata field by field, so writers never erase each
other's fields, and a reader can never mistake a changed row for the one it loaded under: another
writer's change always shows as a new value of that writer's counter.

A reader whose entry is a few changes behind reads just the logged ids by primary key (``changed_ids``);
one too far behind (a log slot was overwritten, a write too big to log, a compacted row) reloads the
entry. A writer's own publication does not make its cache stale (it applied its write to the cache
already): it records its new counter on its entries (``VectorCache.restamp``).

Order is what makes this exact: a writer writes data, then publishes; a reader reads stamps, then rows.
Rows read after a publish therefore include that write, and a reader that read just before a publish
sees the stamp move on its next search.

Failure: a write that fails part way is still published (best effort, with no ids: readers reload); if
the server is gone that fails too, and another process may serve rows from before the partial write
until the tenant's next write or until its cache entry's ``max_age`` (``SERVER_MAX_AGE`` seconds) passes.
Rows grow a counter per writer that ever wrote the tenant; a reader that finds more than ``MAX_WRITERS``
compacts the row to one fresh counter, which every cache sees as a change (a reload, never a wrong answer).
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import ChromaError, NotFoundError

from mneme.memory.base import changed_between

Key = tuple[str, str]
"""``(collection id, tenant)``, as in ``mneme.memory.vector_cache``."""
Stamp = tuple[tuple[str, int], ...]
"""A stamp row's counters, sorted by writer: ``(("w1a2b…", 7), ("w9f8e…", 3))``; ``()`` for a row never
written."""

STAMPS_SUFFIX = "stamps"
LOG_SIZE = 8
"""Changes remembered per writer and row: a reader up to this many changes behind one writer catches up by id."""
MAX_LOGGED_IDS = 200
"""A write touching more rows than this is published without its ids (readers reload the entry)."""
MAX_WRITERS = 64
SERVER_MAX_AGE = 60.0
"""Seconds a server-mode cache entry is trusted at most, whatever the stamps say (a backstop for a write
whose publication failed with the server)."""
_PLACEHOLDER = [1.0]
"""Chroma rows need an embedding; stamp rows are never searched, so each carries this one."""


def stamps_collection_name(prefix: str) -> str:
    """The name of the stamps collection of a store with this prefix."""
    return f"{prefix}_{STAMPS_SUFFIX}"


def row_id(key: Key) -> str:
    """The stamp row of a ``(collection id, tenant)`` key: a hash, so user ids are not stored here."""
    return hashlib.sha256(f"{key[0]}\x00{key[1]}".encode()).hexdigest()[:32]


def with_field(stamp: Stamp | None, *, writer: str, value: int) -> Stamp:
    """``stamp`` with ``writer``'s counter set to ``value``."""
    fields = dict(stamp or ())
    fields[writer] = value
    return tuple(sorted(fields.items()))


@dataclass(frozen=True)
class StampRow:
    """What one stamp row says: the counters, and the ids of each logged change ``(writer, n)``."""

    stamp: Stamp = ()
    log: Mapping[tuple[str, int], tuple[str, ...] | None] = field(default_factory=dict)

    def changed_ids(self, old: Stamp | None) -> set[str] | None:
        """Ids changed since ``old`` (the stamp an entry was loaded under), or ``None`` if the log cannot say."""
        return None if old is None else changed_between(dict(old), dict(self.stamp), self.log)


class ChangeStamps:
    """Read and publish the change stamps of one store's collections on a Chroma server."""

    def __init__(self, collection: Collection) -> None:
        self._col = collection
        self.writer = f"w{uuid.uuid4().hex[:12]}"
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()
        self._pinned = threading.local()

    @classmethod
    def open(cls, client: ClientAPI, prefix: str) -> ChangeStamps:
        """Get or create the stamps collection of ``prefix`` on ``client``."""
        name = stamps_collection_name(prefix)
        try:
            col = client.get_collection(name, embedding_function=None)  # type: ignore[arg-type]
        except NotFoundError:
            try:
                col = client.create_collection(
                    name, metadata={"mneme": "change stamps"}, embedding_function=None,  # type: ignore[arg-type]
                )
            except ChromaError:  # another process created it first
                col = client.get_collection(name, embedding_function=None)  # type: ignore[arg-type]
        return cls(col)

    def pin(self, rows: Mapping[Key, StampRow]) -> None:
        """Until ``unpin``, this thread's ``read`` of keys among ``rows`` answers from them (see ``read``)."""
        self._pinned.rows = rows

    def unpin(self) -> None:
        """End this thread's ``pin``."""
        self._pinned.rows = None

    def read(self, keys: Sequence[Key], *, fresh: bool = False) -> dict[Key, StampRow]:
        """The current row of each key (one primary-key read), compacting rows with too many writers.

        Keys this thread pinned (one read for a whole recall) come from the pin unless ``fresh``.
        """
        pinned: Mapping[Key, StampRow] | None = getattr(self._pinned, "rows", None)
        if pinned is not None and not fresh and all(key in pinned for key in keys):
            return {key: pinned[key] for key in keys}
        ids = {row_id(key): key for key in keys}
        got = self._col.get(ids=list(ids), include=["metadatas"])  # type: ignore[list-item]
        found: dict[str, Mapping[str, Any]] = dict(zip(got["ids"], got["metadatas"] or [], strict=True))
        out: dict[Key, StampRow] = {}
        wide: list[tuple[str, Mapping[str, Any]]] = []
        for rid, key in ids.items():
            meta = found.get(rid) or {}
            out[key] = _parse(meta)
            if len(out[key].stamp) > MAX_WRITERS:
                wide.append((rid, meta))
        if wide:
            self._compact(wide)
        return out

    def publish(self, changes: Mapping[Key, Sequence[str] | None]) -> dict[Key, int]:
        """Mark these keys changed by this writer (with the ids each change touched, ``None`` if unknown);
        return the counter written for each key."""
        rows: dict[str, tuple[Key, Sequence[str] | None]] = {row_id(key): (key, ids) for key, ids in changes.items()}
        if not rows:
            return {}
        values: dict[Key, int] = {}
        metadatas = []
        with self._lock:
            for rid, (key, _) in rows.items():
                self._counters[rid] = values[key] = self._counters.get(rid, 0) + 1
        for key, ids in rows.values():
            n = values[key]
            logged = None if ids is None or len(ids) > MAX_LOGGED_IDS else sorted(set(ids))
            metadatas.append({self.writer: n,
                              f"{self.writer}.{n % LOG_SIZE}": json.dumps({"n": n, "ids": logged})})
        self._col.upsert(ids=list(rows), embeddings=[_PLACEHOLDER] * len(rows),  # type: ignore[arg-type]
                         metadatas=metadatas)  # type: ignore[arg-type]
        return values

    def _compact(self, rows: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Replace each row's fields by one fresh counter (a change every reader sees)."""
        fresh = f"w{uuid.uuid4().hex[:12]}"
        self._col.upsert(
            ids=[rid for rid, _ in rows], embeddings=[_PLACEHOLDER] * len(rows),  # type: ignore[arg-type]
            metadatas=[{**{f: None for f in meta}, fresh: 1} for _, meta in rows],  # type: ignore[misc]
        )


def _parse(meta: Mapping[str, Any]) -> StampRow:
    """A stamp row from its metadata (counters are int fields; log slots are JSON text fields)."""
    counters: dict[str, int] = {}
    log: dict[tuple[str, int], tuple[str, ...] | None] = {}
    for name, value in meta.items():
        if isinstance(value, int) and not isinstance(value, bool):
            counters[str(name)] = value
        elif isinstance(value, str) and "." in name:
            try:
                entry = json.loads(value)
                ids = entry.get("ids")
                log[(name.split(".", 1)[0], int(entry["n"]))] = None if ids is None else tuple(map(str, ids))
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # a damaged slot only costs a reload
    return StampRow(tuple(sorted(counters.items())), log)
