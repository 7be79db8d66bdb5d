"""Change stamps: how app processes sharing a Chroma server know that a tenant's rows changed elsewhere.

A process caches each tenant's rows (``mneme.memory.vector_cache``) to search them without asking Chroma
to rank. With a server, other processes write too, so every search first reads one small row per
``(collection, tenant)`` from the collection ``{prefix}_stamps`` (one primary-key read for all of them)
and reloads an entry whose stamp moved.

A stamp row is a vector clock. Its id is a hash of the collection id and the tenant (no user id is
stored); its metadata has one field per writer (a ``ChromaStore`` object, ``w`` + 12 hex digits) holding
a counter that writer increments each time it *publishes*, which it does after every data write has
landed. Chroma merges metadata field by field, so writers never erase each other's fields, and a reader
can never mistake a changed row for the one it loaded under: another writer's change always shows as a
new value of that writer's field. A writer's own publication does not make its cache stale (it applied
its write to the cache already): it records its new counter on its entries (``VectorCache.restamp``).

Order is what makes this exact: a writer writes data, then publishes; a reader reads stamps, then rows.
A row read after a publish therefore includes that write, and a reader that loaded just before a
publish sees the stamp move on its next search and reloads.

Failure: a write that fails part way is still published (best effort); if the server is gone that fails
too, and another process may serve rows from before the partial write until the tenant's next write or
until its cache entry's ``max_age`` (``SERVER_MAX_AGE`` seconds) passes. Rows grow one field per writer
that ever wrote the tenant; a reader that finds more than ``MAX_FIELDS`` compacts the row to one fresh
field, which every cache sees as a change (a reload, never a wrong answer).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import ChromaError, NotFoundError

Key = tuple[str, str]
"""``(collection id, tenant)``, as in ``mneme.memory.vector_cache``."""
Stamp = tuple[tuple[str, int], ...]
"""A stamp row's fields, sorted: ``(("w1a2b…", 7), ("w9f8e…", 3))``; ``()`` for a row never written."""

STAMPS_SUFFIX = "stamps"
MAX_FIELDS = 64
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


def with_field(stamp: Stamp | None, writer: str, value: int) -> Stamp:
    """``stamp`` with ``writer``'s field set to ``value``."""
    fields = dict(stamp or ())
    fields[writer] = value
    return tuple(sorted(fields.items()))


class ChangeStamps:
    """Read and publish the change stamps of one store's collections on a Chroma server."""

    def __init__(self, collection: Collection) -> None:
        self._col = collection
        self.writer = f"w{uuid.uuid4().hex[:12]}"
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

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

    def read(self, keys: Sequence[Key]) -> dict[Key, Stamp]:
        """The current stamp of each key (one primary-key read), compacting rows that grew too wide."""
        ids = {row_id(key): key for key in keys}
        got = self._col.get(ids=list(ids), include=["metadatas"])  # type: ignore[list-item]
        found: dict[str, Mapping[str, Any]] = dict(zip(got["ids"], got["metadatas"] or [], strict=True))
        out: dict[Key, Stamp] = {}
        wide: list[tuple[str, Mapping[str, Any]]] = []
        for rid, key in ids.items():
            meta = found.get(rid) or {}
            out[key] = tuple(sorted((str(f), int(v)) for f, v in meta.items() if isinstance(v, int)))
            if len(meta) > MAX_FIELDS:
                wide.append((rid, meta))
        if wide:
            self._compact(wide)
        return out

    def publish(self, keys: Iterable[Key]) -> int:
        """Mark these keys changed by this writer; return the counter value written."""
        rows = sorted({row_id(key) for key in keys})
        with self._lock:
            value = next(self._counter)
        if rows:
            self._col.upsert(ids=rows, embeddings=[_PLACEHOLDER] * len(rows),  # type: ignore[arg-type]
                             metadatas=[{self.writer: value}] * len(rows))
        return value

    def _compact(self, rows: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Replace each row's fields by one fresh field (a change every reader sees)."""
        fresh = f"w{uuid.uuid4().hex[:12]}"
        self._col.upsert(
            ids=[rid for rid, _ in rows], embeddings=[_PLACEHOLDER] * len(rows),  # type: ignore[arg-type]
            metadatas=[{**{f: None for f in meta}, fresh: 1} for _, meta in rows],  # type: ignore[misc]
        )
