"""An in-memory ``MemoryStore`` (numpy cosine): for tests, demos and graph unit tests; nothing persists.

It stores records with the same flat metadata as Chroma (``mneme.memory.records``) and evaluates filters
with the same semantics (``mneme.memory.tenancy.matches``), so code tested against it behaves the same on
Chroma. Thread-safe: one lock around every call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mneme.errors import InvalidInputError
from mneme.memory.base import (
    MEMORY_KINDS,
    SHARED_TENANT,
    Embedder,
    Kind,
    MemoryRecord,
    ScoredRecord,
    Where,
    validate_tenant,
)
from mneme.memory.records import (
    check_ids,
    check_records,
    embeddings_for,
    from_metadata,
    metadata_changes,
    storage_where,
    to_metadata,
)
from mneme.memory.tenancy import matches, scoped_where


@dataclass
class _Row:
    meta: dict[str, Any]
    text: str
    vector: np.ndarray
    archived: bool

    def record(self, record_id: str) -> MemoryRecord:
        return from_metadata(record_id, self.text, self.meta, archived=self.archived)


class InProcessStore:
    """The whole ``MemoryStore`` protocol over a dict; search is brute-force cosine."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._rows: dict[str, _Row] = {}
        self._lock = threading.RLock()

    @property
    def embedder(self) -> Embedder:
        """The embedder this store was opened with."""
        return self._embedder

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Insert or replace (by id) records; an id owned by another tenant is refused."""
        records = check_records(records)
        vectors = embeddings_for(records, self._embedder)
        with self._lock:
            for record in records:
                existing = self._rows.get(record.id)
                if existing is not None and existing.meta["user_id"] != record.user_id:
                    raise InvalidInputError(f"record id {record.id!r} is already used by another tenant")
            for record, vector in zip(records, vectors, strict=True):
                v = np.asarray(vector, dtype=np.float32)
                norm = float(np.linalg.norm(v))
                self._rows[record.id] = _Row(
                    meta=to_metadata(record, self._embedder.info.name),
                    text=record.text,
                    vector=v / norm if norm else v,
                    archived=record.archived,
                )

    def search(
        self,
        user_id: str,
        embedding: Sequence[float],
        *,
        kinds: Sequence[Kind] = MEMORY_KINDS,
        k: int = 10,
        where: Where | None = None,
        include_shared: bool = False,
        archived: bool = False,
    ) -> list[ScoredRecord]:
        """Nearest records of ``user_id`` (and shared documents if asked), best first."""
        user_id = validate_tenant(user_id, allow_shared=True)
        wanted = _kinds(kinds)
        query = np.asarray(embedding, dtype=np.float32)
        if query.shape != (self._embedder.info.dimension,):
            raise InvalidInputError(f"query embedding must be {self._embedder.info.dimension}-d")
        query = query / (float(np.linalg.norm(query)) or 1.0)
        filters = [storage_where(scoped_where(user_id, where))]
        if include_shared and Kind.DOCUMENT in wanted and user_id != SHARED_TENANT:
            filters.append(storage_where(scoped_where(SHARED_TENANT, where)))
        with self._lock:
            hits = [
                (float(row.vector @ query), rid, row)
                for rid, row in self._rows.items()
                if row.archived == archived
                and row.meta["kind"] in wanted
                and any(matches(f, row.meta) for f in filters)
            ]
        hits.sort(key=lambda h: (-h[0], h[1]))
        return [ScoredRecord(row.record(rid), score) for score, rid, row in hits[: max(k, 0)]]

    def get(self, user_id: str, ids: Sequence[str], *, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """Records of ``user_id`` with these ids (only live ones of ``kinds`` if given); others are absent."""
        user_id = validate_tenant(user_id, allow_shared=True)
        with self._lock:
            found = [row.record(rid) for rid in dict.fromkeys(check_ids(ids))
                     if (row := self._rows.get(rid)) is not None and row.meta["user_id"] == user_id]
        if kinds is not None:
            found = [r for r in found if r.kind in kinds and not r.archived]
        return found

    def get_by_key(self, user_id: str, kind: Kind, key: str) -> MemoryRecord | None:
        """The current (live, newest) record of ``kind`` stored under ``key``."""
        found = list(self.scan(user_id, kinds=[kind], where={"key": key}))
        return max(found, key=lambda r: r.created_at) if found else None

    def update_metadata(self, user_id: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Change metadata fields of records of ``user_id``; foreign ids are ignored."""
        user_id = validate_tenant(user_id, allow_shared=True)
        changes = {rid: metadata_changes(fields) for rid, fields in updates.items()}
        with self._lock:
            for rid, change in changes.items():
                row = self._rows.get(rid)
                if row is None or row.meta["user_id"] != user_id:
                    continue
                meta = {**row.meta, **change}
                self._rows[rid] = replace(row, meta={k: v for k, v in meta.items() if v is not None})

    def delete(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        kinds: Sequence[Kind] | None = None,
        where: Where | None = None,
        archived: bool | None = None,
    ) -> int:
        """Delete records of ``user_id`` by ids and/or filter; return how many went."""
        with self._lock:
            doomed = [rid for rid, _ in self._select(user_id, ids, kinds, where, archived)]
            for rid in doomed:
                del self._rows[rid]
        return len(doomed)

    def scan(
        self,
        user_id: str,
        *,
        kinds: Sequence[Kind] | None = None,
        where: Where | None = None,
        archived: bool | None = False,
        batch_size: int = 500,
    ) -> Iterator[MemoryRecord]:
        """Every record of ``user_id`` matching the filter, oldest first."""
        with self._lock:
            rows = [row.record(rid) for rid, row in self._select(user_id, None, kinds, where, archived)]
        yield from sorted(rows, key=lambda r: (r.created_at, r.id))

    def count(self, user_id: str, *, kinds: Sequence[Kind] | None = None, archived: bool | None = False) -> int:
        """How many records ``user_id`` has of these kinds."""
        with self._lock:
            return len(self._select(user_id, None, kinds, None, archived))

    def tenants(self) -> list[str]:
        """Every user with at least one record (``~shared`` excluded)."""
        with self._lock:
            users = {row.meta["user_id"] for row in self._rows.values()}
        return sorted(users - {SHARED_TENANT})

    def change_stamp(self, user_id: str) -> None:
        """Always ``None``: nobody outside this process writes to it."""
        validate_tenant(user_id, allow_shared=True)
        return None

    def archive(self, user_id: str, ids: Sequence[str]) -> int:
        """Mark live records archived; return how many moved."""
        return self._set_archived(user_id, ids, True)

    def restore(self, user_id: str, ids: Sequence[str]) -> int:
        """Bring archived records back; return how many moved."""
        return self._set_archived(user_id, ids, False)

    def close(self) -> None:
        """Nothing to release."""

    def _set_archived(self, user_id: str, ids: Sequence[str], archived: bool) -> int:
        with self._lock:
            rows = self._select(user_id, ids, None, None, not archived)
            for rid, row in rows:
                self._rows[rid] = replace(row, archived=archived)
        return len(rows)

    def _select(
        self, user_id: str, ids: Sequence[str] | None, kinds: Sequence[Kind] | None,
        where: Where | None, archived: bool | None,
    ) -> list[tuple[str, _Row]]:
        user_id = validate_tenant(user_id, allow_shared=True)
        flt = storage_where(scoped_where(user_id, where))
        wanted = _kinds(kinds if kinds is not None else list(Kind))
        candidates = (
            [(rid, self._rows[rid]) for rid in dict.fromkeys(check_ids(ids)) if rid in self._rows]
            if ids is not None else list(self._rows.items())
        )
        return [
            (rid, row) for rid, row in candidates
            if (archived is None or row.archived == archived)
            and row.meta["kind"] in wanted
            and matches(flt, row.meta)
        ]


def _kinds(kinds: Sequence[Kind]) -> set[str]:
    try:
        return {Kind(k).value for k in kinds}
    except ValueError as exc:
        raise InvalidInputError(f"unknown kind: {exc}") from exc
