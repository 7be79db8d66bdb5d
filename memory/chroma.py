"""The Chroma backend: embedded (``PersistentClient`` under ``MNEME_DATA_DIR``) or a server (``MNEME_CHROMA_URL``).

Layout: one collection per kind, ``{prefix}_documents``, ``{prefix}_episodic``, ``{prefix}_facts``,
``{prefix}_preferences``, ``{prefix}_summaries``, plus ``{prefix}_archive`` whose records keep their
``kind``. Collections use cosine space; a search's score is ``1 - cosine distance``. Rows carry the flat
metadata described in ``mneme.memory.records``. Chroma never embeds: every write and query passes
vectors made by the store's ``Embedder``, and each collection records ``{"embedder": name,
"dimension": d}`` so a store is never read with another model (``EmbedderMismatchError``; fix with
``mneme reindex``, see ``reindex_store``).

Search cache: ``search`` without a caller filter ranks from ``VectorCache`` (each tenant's unit vectors,
texts and metadata per collection, loaded by one scoped ``get``, kept exact by every write path here)
and answers without another Chroma call; Chroma's filtered ``query`` scans metadata first, which
dominated search at 100k rows. Embedded, the cache is shared by the stores of one data directory and
prefix in a process (the only writers: the directory is locked). With a server, other processes write
too: each search first reads the change stamps of its ``(collection, tenant)`` pairs (one primary-key
read, see ``mneme.memory.stamps``) and brings up to date what another process changed (the changed ids by
primary key, or a reload); every write publishes its stamps, with the ids it touched, after its data.

Tenancy: every call validates the user id and scopes its filter with ``scoped_where``; reads and
deletes by id filter by id *and* tenant. Embedded Chroma is single-process: opening a data directory
takes an exclusive ``flock`` on ``DATA_DIR/chroma.lock`` (``StoreLockedError`` for a second process;
opens within one process share a client). Chroma and HTTP exceptions are translated to
``MemoryStoreError`` subclasses at one boundary, ``translate_errors``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar
from urllib.parse import urlparse

import chromadb
import httpx
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import ChromaError, NotFoundError

from mneme.deadlines import DeadlineExceeded, call_with_deadline
from mneme.errors import (
    ConfigurationError,
    EmbedderMismatchError,
    InvalidInputError,
    MemoryStoreError,
    MnemeError,
    StoreLockedError,
    StoreUnavailableError,
)
from mneme.memory.base import (
    MEMORY_KINDS,
    SHARED_TENANT,
    Embedder,
    EmbedderInfo,
    Kind,
    MemoryRecord,
    ScoredRecord,
    TenantStamp,
    Where,
    validate_tenant,
)
from mneme.memory.cached_records import record_of
from mneme.memory.heap import release_free_memory
from mneme.memory.indexing import search_text
from mneme.memory.records import (
    check_ids,
    check_records,
    embeddings_for,
    from_metadata,
    metadata_changes,
    storage_key,
    storage_where,
    to_metadata,
)
from mneme.memory.stamps import SERVER_MAX_AGE, ChangeStamps, Stamp, StampRow, with_field
from mneme.memory.tenancy import TENANT_FIELD, matches, normalize_where, scoped_where
from mneme.memory.vector_cache import (
    Loaded,
    PackedRows,
    Patch,
    Snapshot,
    VectorCache,
    normalized,
    storage_dtype,
)

KIND_COLLECTIONS: dict[Kind, str] = {
    Kind.DOCUMENT: "documents",
    Kind.EPISODIC: "episodic",
    Kind.FACT: "facts",
    Kind.PREFERENCE: "preferences",
    Kind.SUMMARY: "summaries",
}
ARCHIVE_COLLECTION = "archive"
HNSW_CONFIGURATION: dict[str, Any] = {"hnsw": {"space": "cosine"}}
WRITE_BATCH = 1000
"""Rows per Chroma write call (its own limit is a few thousand)."""
_NEW, _OLD = "__reindex", "__old"

P = ParamSpec("P")
logger = logging.getLogger(__name__)
T = TypeVar("T")


def collection_names(prefix: str) -> list[str]:
    """The six collection names of a store with this prefix (kinds first, archive last)."""
    return [f"{prefix}_{suffix}" for suffix in KIND_COLLECTIONS.values()] + [f"{prefix}_{ARCHIVE_COLLECTION}"]


# --- the error boundary -------------------------------------------------------------------------


def unavailable_message(location: str, detail: object = "") -> str:
    """What to tell a user whose Chroma server cannot be reached."""
    port = urlparse(location).port or 8000
    why = f" ({detail})" if detail else ""
    return (
        f"cannot reach the Chroma server at {location}{why}. Start it with "
        f"`chroma run --path DIR --port {port}`, or unset MNEME_CHROMA_URL to use embedded storage"
    )


@contextmanager
def translate_errors(location: str, action: str, *, remote: bool) -> Iterator[None]:
    """Turn Chroma, HTTP and I/O exceptions raised inside into ``MemoryStoreError`` subclasses."""
    try:
        yield
    except MnemeError:
        raise
    except (httpx.TransportError, ConnectionError) as exc:
        raise StoreUnavailableError(unavailable_message(location, exc)) from exc
    except ValueError as exc:
        if remote and "could not connect" in str(exc).lower():
            raise StoreUnavailableError(unavailable_message(location)) from exc
        raise MemoryStoreError(f"Chroma refused to {action} ({location}): {exc}") from exc
    except (ChromaError, httpx.HTTPError, OSError, sqlite3.Error) as exc:
        raise MemoryStoreError(f"Chroma failed to {action} ({location}): {exc}") from exc


def _guarded(action: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Method decorator: run the call inside ``translate_errors`` of its store."""

    def wrap(method: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(method)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            store = args[0]
            assert isinstance(store, ChromaStore)
            with translate_errors(store.location, action, remote=store.remote):
                return method(*args, **kwargs)

        return call

    return wrap


# --- the store ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hits:
    """Rows of one ``get``: parallel lists as Chroma returns them."""

    ids: list[str]
    texts: list[str | None]
    metas: list[dict[str, Any]]
    vectors: list[Any] | None = None

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> _Hits:
        ids = list(result["ids"])
        texts = result.get("documents")
        metas = result.get("metadatas")
        vectors = result.get("embeddings")
        return cls(
            ids=ids,
            texts=list(texts) if texts is not None else [None] * len(ids),
            metas=[dict(m or {}) for m in metas] if metas is not None else [{} for _ in ids],
            vectors=list(vectors) if vectors is not None else None,
        )


class ChromaStore:
    """A ``MemoryStore`` over a Chroma client (embedded or HTTP); see the module docstring for layout."""

    def __init__(
        self,
        client: ClientAPI,
        embedder: Embedder,
        *,
        prefix: str = "mneme",
        allow_embedder_mismatch: bool = False,
        location: str = "embedded Chroma",
        remote: bool = False,
        on_close: Callable[[], None] | None = None,
        vector_cache: VectorCache | None = None,
    ) -> None:
        self._client = client
        self._cache = vector_cache if vector_cache is not None and vector_cache.enabled else None
        """Searched and kept exact; ``None``: search asks Chroma."""
        self._notify = self._cache if remote or self._cache is not None else _vector_cache(client, prefix)
        """Told of every write: the search cache, or (embedded, uncached) the one its directory shares."""
        self._stamps: ChangeStamps | None = None
        self._embedder = embedder
        self.prefix = prefix
        self.location = location
        self.remote = remote
        self._on_close = on_close
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        with translate_errors(location, "open its collections", remote=remote):
            existing = {c.name for c in client.list_collections()}
            leftovers = sorted(n for n in existing if n.endswith(_OLD) and n[: -len(_OLD)] in collection_names(prefix))
            if leftovers:
                raise MemoryStoreError(
                    f"an interrupted `mneme reindex` left {', '.join(leftovers)} in {location}: "
                    "run `mneme reindex` again to finish it"
                )
            self._live = {
                kind: _open_collection(client, f"{prefix}_{suffix}", embedder.info, allow_embedder_mismatch)
                for kind, suffix in KIND_COLLECTIONS.items()
            }
            self._archive = _open_collection(
                client, f"{prefix}_{ARCHIVE_COLLECTION}", embedder.info, allow_embedder_mismatch
            )
            if remote:  # every server-mode writer publishes, whether or not it caches itself
                self._stamps = ChangeStamps.open(client, prefix)

    @property
    def embedder(self) -> Embedder:
        """The embedder this store was opened with."""
        return self._embedder

    @property
    def _all(self) -> list[Collection]:
        return [*self._live.values(), self._archive]

    @_guarded("add records")
    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Insert or replace (by id) records; an id owned by another tenant is refused before any write."""
        records = check_records(records)
        if not records:
            return
        vectors = embeddings_for(records, self._embedder)
        owner = {r.id: r.user_id for r in records}
        target = {r.id: self._archive if r.archived else self._live[Kind(r.kind)] for r in records}
        stale: list[tuple[Collection, list[str]]] = []
        old_keys: dict[str, set[str]] = {}
        for col in self._all:
            found = _Hits.of(col.get(ids=list(owner), include=["metadatas"]))
            for rid, meta in zip(found.ids, found.metas, strict=True):
                if meta.get("user_id") != owner[rid]:
                    raise InvalidInputError(f"record id {rid!r} is already used by another tenant")
                if target[rid] is col:
                    old_keys[rid] = set(meta)
            # a record moving between live and archive (or kinds) by this write leaves no copy behind
            moved = [rid for rid in found.ids if target[rid] is not col]
            if moved:
                stale.append((col, moved))
        name = self._embedder.info.name
        metas = [to_metadata(r, name) for r in records]
        # every (collection, tenant) this write touches: cached rows follow it, or are dropped if it fails
        touched: dict[tuple[str, str], list[str]] = {}
        for r in records:
            touched.setdefault(_key(target[r.id], r.user_id), []).append(r.id)
        for col, ids in stale:
            for rid in ids:
                touched.setdefault(_key(col, owner[rid]), []).append(rid)
        with self._writing(touched):
            for col in self._all:
                rows = [i for i, r in enumerate(records) if target[r.id] is col]
                for start in range(0, len(rows), WRITE_BATCH):
                    chunk = rows[start : start + WRITE_BATCH]
                    col.upsert(
                        ids=[records[i].id for i in chunk],
                        embeddings=[vectors[i] for i in chunk],  # type: ignore[arg-type]
                        documents=[records[i].text for i in chunk],
                        metadatas=[_replacing(metas[i], old_keys.get(records[i].id, set()))
                                   for i in chunk],  # type: ignore[misc]
                    )
            for col, ids in stale:
                col.delete(ids=ids)
            if self._notify is not None:
                written: dict[tuple[str, str], list[int]] = {}
                for i, r in enumerate(records):
                    written.setdefault(_key(target[r.id], r.user_id), []).append(i)
                for key, rows in written.items():
                    self._notify.upsert(key, [records[i].id for i in rows], [vectors[i] for i in rows],
                                        [(records[i].text, metas[i]) for i in rows])
                for col, ids in stale:
                    for rid in ids:
                        self._notify.remove(_key(col, owner[rid]), [rid])

    @_guarded("search")
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
        """Nearest records of ``user_id`` (and shared documents if asked), best first, merged across kinds."""
        user_id = validate_tenant(user_id, allow_shared=True)
        wanted = _kinds(kinds)
        query = [float(x) for x in embedding]
        if len(query) != self._embedder.info.dimension:
            raise InvalidInputError(f"query embedding must be {self._embedder.info.dimension}-d")
        if k <= 0 or not wanted:
            return []
        if self._cache is not None and not archived and normalize_where(where) is None:
            cached = self._search_cached(user_id, query, wanted, k, include_shared)
            if cached is not None:
                return cached
        targets: list[tuple[Collection, dict[str, Any] | None]] = []
        if archived:
            kind_filter = {"kind": {"$in": [kind.value for kind in wanted]}}
            targets.append((self._archive, _scope(user_id, where, kind_filter)))
        else:
            targets += [(self._live[kind], _scope(user_id, where)) for kind in wanted]
            if include_shared and Kind.DOCUMENT in wanted and user_id != SHARED_TENANT:
                targets.append((self._live[Kind.DOCUMENT], _scope(SHARED_TENANT, where)))
        def query_one(target: tuple[Collection, dict[str, Any] | None]) -> Any:
            col, flt = target
            return col.query(
                query_embeddings=[query],  # type: ignore[arg-type]
                n_results=k,
                where=flt,
                include=["documents", "metadatas", "distances"],  # type: ignore[list-item]
            )

        # one query per kind; run them side by side (Chroma's bindings and HTTP calls release the GIL)
        results = list(self._pool().map(query_one, targets)) if len(targets) > 1 else [query_one(targets[0])]
        scored: list[ScoredRecord] = []
        for res in results:
            docs, metas, dists = res["documents"], res["metadatas"], res["distances"]
            assert docs is not None and metas is not None and dists is not None
            for rid, text, meta, dist in zip(res["ids"][0], docs[0], metas[0], dists[0], strict=True):
                record = from_metadata(rid, text, meta, archived=archived)
                scored.append(ScoredRecord(record, 1.0 - float(dist)))
        scored.sort(key=lambda s: (-s.score, s.record.id))
        return scored[:k]

    def _search_cached(
        self, user_id: str, query: Sequence[float], wanted: list[Kind], k: int, include_shared: bool
    ) -> list[ScoredRecord] | None:
        """``search`` over cached vectors: rank by dot product, then fetch the winners by id.

        ``None`` (search Chroma instead) when a tenant is too big to cache or a winner is gone or foreign.
        """
        assert self._cache is not None
        sources = [(self._live[kind], user_id) for kind in wanted]
        if include_shared and Kind.DOCUMENT in wanted and user_id != SHARED_TENANT:
            sources.append((self._live[Kind.DOCUMENT], SHARED_TENANT))
        keys = [_key(col, tenant) for col, tenant in sources]
        # server mode: what every other process has published, read *before* any rows (see stamps.py)
        stamps: dict[tuple[str, str], StampRow] = self._stamps.read(keys) if self._stamps is not None else {}
        snaps: list[Snapshot] = []
        for (col, tenant), key in zip(sources, keys, strict=True):
            row = stamps.get(key)
            moved = None if row is None else functools.partial(self._stamp_moved, key, row.stamp)
            try:
                snap = self._cache.snapshot(
                    key, functools.partial(_load_rows, col, tenant, moved), stamp=None if row is None else row.stamp,
                    patch=None if row is None else functools.partial(_patch_rows, col, tenant, row))
            except _LoadRaced:
                return None  # this once, Chroma's own query answers
            if snap is None:
                return None
            snaps.append(snap)
        unit = normalized(query)[0]
        ranked = [(score, snap.ids[pos], i, pos) for i, snap in enumerate(snaps) for pos, score in snap.top(unit, k)]
        ranked.sort(key=lambda hit: (-hit[0], hit[1]))
        out: list[ScoredRecord] = []
        for score, rid, i, pos in ranked[:k]:
            record = record_of(rid, snaps[i].rows, pos)
            if record.user_id != sources[i][1]:  # rows come from this tenant's scoped read; check anyway
                self._cache.invalidate(keys[i])
                return None
            out.append(ScoredRecord(record, score))
        return out

    @_guarded("get records")
    def get(self, user_id: str, ids: Sequence[str], *, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """Records of ``user_id`` with these ids (live or archived; only live ones of ``kinds`` if given)."""
        user_id = validate_tenant(user_id, allow_shared=True)
        wanted = list(dict.fromkeys(check_ids(ids)))
        if not wanted:
            return []
        found: dict[str, MemoryRecord] = {}
        for col in self._all if kinds is None else [self._live[kind] for kind in _kinds(kinds)]:
            # embedded, a loaded cache entry is exact (this process is the only writer): no Chroma call
            cached = self._cache.positions_of(_key(col, user_id), wanted) \
                if self._cache is not None and not self.remote and col is not self._archive else None
            if cached is not None:
                rows, positions = cached
                for rid, pos in positions.items():
                    found[rid] = record_of(rid, rows, pos)
                continue
            # by primary key alone (a ``where`` here costs a metadata scan); the tenant is checked row by row
            hits = _Hits.of(col.get(ids=wanted, include=["documents", "metadatas"]))
            for rid, text, meta in zip(hits.ids, hits.texts, hits.metas, strict=True):
                if meta.get("user_id") == user_id:
                    found[rid] = from_metadata(rid, text, meta, archived=col is self._archive)
        return [found[rid] for rid in wanted if rid in found]

    @_guarded("get a record by key")
    def get_by_key(self, user_id: str, kind: Kind, key: str) -> MemoryRecord | None:
        """The current (live, newest) record of ``kind`` stored under ``key``."""
        found = list(self.scan(user_id, kinds=[kind], where={"key": key}))
        return max(found, key=lambda r: r.created_at) if found else None

    @_guarded("update metadata")
    def update_metadata(self, user_id: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Change metadata fields of records of ``user_id``; foreign or missing ids are ignored."""
        user_id = validate_tenant(user_id, allow_shared=True)
        changes = {rid: metadata_changes(fields) for rid, fields in updates.items()}
        ids = check_ids(list(changes))
        if not ids:
            return
        plan: list[tuple[Collection, list[str]]] = []
        for col in self._all:
            # by primary key alone (a ``where`` costs a metadata scan); the tenant is checked row by row
            hits = _Hits.of(col.get(ids=ids, include=["metadatas"]))
            mine = [rid for rid, meta in zip(hits.ids, hits.metas, strict=True) if meta.get("user_id") == user_id]
            if mine:
                plan.append((col, mine))
        with self._writing({_key(col, user_id): mine for col, mine in plan}):
            for col, mine in plan:
                # Chroma merges an update into the stored metadata; a None value removes the field
                for start in range(0, len(mine), WRITE_BATCH):
                    chunk = mine[start : start + WRITE_BATCH]
                    col.update(ids=chunk, metadatas=[changes[rid] for rid in chunk])  # type: ignore[misc]
                if self._notify is not None:
                    self._notify.update(_key(col, user_id), {rid: changes[rid] for rid in mine})

    def count_recalls(self, user_id: str, counted: Mapping[str, tuple[float, int]],
                      kinds: Sequence[Kind] = MEMORY_KINDS) -> int:
        """Add recalls to live records of ``user_id`` among ``kinds``: ``{id: (time of the latest, how many)}``
        raises ``access_count`` by how many and moves ``last_accessed`` forward; foreign or missing ids are
        ignored. Returns how many records were counted (see ``count_recalls_of``)."""
        return self.count_recalls_of({user_id: counted}, kinds)

    @_guarded("count recalls")
    def count_recalls_of(self, counted: Mapping[str, Mapping[str, tuple[float, int]]],
                         kinds: Sequence[Kind] = MEMORY_KINDS) -> int:
        """``count_recalls`` for many users at once: ``{user: {id: (time of the latest, how many)}}``.

        One read and one update per collection holding any of the ids, whatever the number of users: an
        embedded Chroma write holds the GIL for its whole ~15-20 ms (its Rust binding waits for its own
        threads without releasing it), so one update per user and collection stalled every other thread of
        a busy server. Each row is counted only for the user it belongs to. Returns how many were counted.
        """
        counted = {validate_tenant(user, allow_shared=True): mine for user, mine in counted.items() if mine}
        ids = check_ids(list(dict.fromkeys(rid for mine in counted.values() for rid in mine)))
        if not ids:
            return 0
        plan: list[tuple[Collection, dict[str, dict[str, Any]], dict[tuple[str, str], list[str]]]] = []
        for kind in _kinds(kinds):
            col = self._live[kind]
            # read in chunks: one ``get`` of 32,767 ids or more fails ("too many SQL variables"), and these are
            # every user's recalled ids of a 30 s interval
            metas = [pair for start in range(0, len(ids), WRITE_BATCH)
                     for hits in [_Hits.of(col.get(ids=ids[start:start + WRITE_BATCH], include=["metadatas"]))]
                     for pair in zip(hits.ids, hits.metas, strict=True)]
            changes: dict[str, dict[str, Any]] = {}
            keys: dict[tuple[str, str], list[str]] = {}
            for rid, meta in metas:
                owner = str(meta.get("user_id"))
                seen = counted.get(owner, {}).get(rid)
                if seen is None:  # another tenant's id: never counted
                    continue
                changes[rid] = metadata_changes({
                    "last_accessed": max(seen[0], float(meta.get("last_accessed") or 0.0)),
                    "access_count": int(meta.get("access_count", 0)) + seen[1]})
                keys.setdefault(_key(col, owner), []).append(rid)
            if changes:
                plan.append((col, changes, keys))
        with self._writing({key: rids for _, _, keys in plan for key, rids in keys.items()}):
            for col, changes, keys in plan:
                changed = list(changes)
                for start in range(0, len(changed), WRITE_BATCH):
                    chunk = changed[start : start + WRITE_BATCH]
                    col.update(ids=chunk, metadatas=[changes[rid] for rid in chunk])  # type: ignore[misc]
                if self._notify is not None:
                    for key, rids in keys.items():
                        self._notify.update(key, {rid: changes[rid] for rid in rids})
        return sum(len(changes) for _, changes, _ in plan)

    @_guarded("delete records")
    def delete(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        kinds: Sequence[Kind] | None = None,
        where: Where | None = None,
        archived: bool | None = None,
    ) -> int:
        """Delete records of ``user_id`` by ids and/or filter (all of them if neither); return the count."""
        user_id = validate_tenant(user_id, allow_shared=True)
        wanted_ids = None if ids is None else list(dict.fromkeys(check_ids(ids)))
        if wanted_ids == []:
            return 0
        plan: list[tuple[Collection, list[str]]] = []
        for col, flt in self._targets(user_id, kinds, where, archived):
            hits = _Hits.of(col.get(where=flt, include=[])) if wanted_ids is None \
                else _by_ids(col, wanted_ids, flt, [])
            if hits.ids:
                plan.append((col, hits.ids))
        with self._writing({_key(col, user_id): found for col, found in plan}):
            for col, found in plan:
                for start in range(0, len(found), WRITE_BATCH):
                    col.delete(ids=found[start : start + WRITE_BATCH])
                if self._notify is not None:
                    self._notify.remove(_key(col, user_id), found)
        return sum(len(found) for _, found in plan)

    def scan(
        self,
        user_id: str,
        *,
        kinds: Sequence[Kind] | None = None,
        where: Where | None = None,
        archived: bool | None = False,
        batch_size: int = 500,
    ) -> Iterator[MemoryRecord]:
        """Every record of ``user_id`` matching the filter, fetched ``batch_size`` rows at a time.

        Pages by offset: collect the ids first if you mean to delete or archive while iterating.
        """
        with translate_errors(self.location, "scan records", remote=self.remote):
            user_id = validate_tenant(user_id, allow_shared=True)
            targets = self._targets(user_id, kinds, where, archived)
        for col, flt in targets:
            offset = 0
            while True:
                with translate_errors(self.location, "scan records", remote=self.remote):
                    hits = _Hits.of(col.get(where=flt, limit=batch_size, offset=offset,
                                            include=["documents", "metadatas"]))
                for rid, text, meta in zip(hits.ids, hits.texts, hits.metas, strict=True):
                    yield from_metadata(rid, text, meta, archived=col is self._archive)
                if len(hits.ids) < batch_size:
                    break
                offset += batch_size

    @_guarded("look up content hashes")
    def existing_hashes(self, pairs: Sequence[tuple[str, str]], *,
                        kinds: Sequence[Kind] = (Kind.EPISODIC, Kind.SUMMARY)) -> set[tuple[str, str]]:
        """Which ``(tenant, content_hash)`` pairs a live record of ``kinds`` already holds.

        One read per collection for a whole batch of turns of many tenants (instead of one per turn and
        collection); every row is checked against the tenants that asked, so nothing is answered across them.
        """
        asked = {(validate_tenant(user_id), digest) for user_id, digest in pairs if digest}
        if not asked:
            return set()
        digests = sorted({d for _, d in asked})
        tenants = sorted({u for u, _ in asked})
        found: set[tuple[str, str]] = set()
        field = storage_key("content_hash")
        for kind in _kinds(kinds):
            for start in range(0, len(digests), WRITE_BATCH):
                flt = storage_where({"$and": [{TENANT_FIELD: {"$in": tenants}},
                                             {"content_hash": {"$in": digests[start:start + WRITE_BATCH]}}]})
                hits = _Hits.of(self._live[kind].get(where=flt, include=["metadatas"]))  # type: ignore[arg-type]
                found.update(pair for meta in hits.metas
                             if (pair := (str(meta.get(TENANT_FIELD)), str(meta.get(field)))) in asked)
        return found

    @_guarded("count records")
    def count(self, user_id: str, *, kinds: Sequence[Kind] | None = None, archived: bool | None = False) -> int:
        """How many records ``user_id`` has (of these kinds)."""
        user_id = validate_tenant(user_id, allow_shared=True)
        return sum(len(col.get(where=flt, include=[])["ids"])
                   for col, flt in self._targets(user_id, kinds, None, archived))

    @_guarded("list tenants")
    def tenants(self) -> list[str]:
        """Every user with at least one record, live or archived (``~shared`` excluded)."""
        users: set[str] = set()
        for col in self._all:
            offset = 0
            while True:
                metas = col.get(limit=5000, offset=offset, include=["metadatas"])["metadatas"] or []
                users.update(str(m["user_id"]) for m in metas if m and "user_id" in m)
                if len(metas) < 5000:
                    break
                offset += 5000
        return sorted(users - {SHARED_TENANT})

    @_guarded("read change stamps")
    def change_stamp(self, user_id: str) -> TenantStamp | None:
        """Server mode: the change stamps of ``user_id``'s rows in every collection (one primary-key read).

        ``None`` embedded: this process is the only writer.
        """
        user_id = validate_tenant(user_id, allow_shared=True)
        if self._stamps is None:
            return None
        names = {_key(col, user_id): col.name for col in self._all}
        read = self._stamps.read(list(names))
        fields = sorted((names[key], writer, value) for key, row in read.items() for writer, value in row.stamp)
        own = self._stamps.writer
        log = {((names[key], writer), n): ids for key, row in read.items() for (writer, n), ids in row.log.items()}
        return TenantStamp(full=json.dumps(fields, separators=(",", ":")),
                           foreign=tuple(f for f in fields if f[1] != own), log=log)

    @_guarded("archive records")
    def archive(self, user_id: str, ids: Sequence[str]) -> int:
        """Move live records to the archive collection (written there before removal here)."""
        user_id = validate_tenant(user_id, allow_shared=True)
        wanted = list(dict.fromkeys(check_ids(ids)))
        plan: list[tuple[Collection, _Hits]] = []
        for col in self._live.values():
            if wanted:
                got = _by_ids(col, wanted, _scope(user_id, None), ["documents", "metadatas", "embeddings"])
                if got.ids:
                    plan.append((col, got))
        moved = 0
        moving = [rid for _, got in plan for rid in got.ids]
        touched = {_key(col, user_id): got.ids for col, got in plan}
        with self._writing({_key(self._archive, user_id): moving, **touched} if plan else {}):
            for col, got in plan:
                moved += _move(got, source=col, target=lambda meta: self._archive)
                if self._notify is not None:
                    self._notify.remove(_key(col, user_id), got.ids)
        return moved

    @_guarded("restore records")
    def restore(self, user_id: str, ids: Sequence[str]) -> int:
        """Move archived records back to their kind's collection."""
        user_id = validate_tenant(user_id, allow_shared=True)
        wanted = list(dict.fromkeys(check_ids(ids)))
        if not wanted:
            return 0
        hits = _by_ids(self._archive, wanted, _scope(user_id, None), ["documents", "metadatas", "embeddings"])
        if not hits.ids:
            return 0
        touched: dict[tuple[str, str], list[str]] = {_key(self._archive, user_id): list(hits.ids)}
        for rid, meta in zip(hits.ids, hits.metas, strict=True):
            touched.setdefault(_key(self._live[Kind(meta["kind"])], user_id), []).append(rid)
        with self._writing(touched):
            moved = _move(hits, source=self._archive, target=lambda meta: self._live[Kind(meta["kind"])])
            if self._notify is not None and hits.vectors is not None:
                for rid, text, meta, vector in zip(hits.ids, hits.texts, hits.metas, hits.vectors, strict=True):
                    self._notify.upsert(_key(self._live[Kind(meta["kind"])], user_id), [rid], [vector],
                                        [(text or "", meta)])
        return moved

    def close(self) -> None:
        """Release the client (and, for the last embedded user of a data directory, its lock)."""
        if self._closed:
            return
        self._closed = True
        self._cache = self._notify = None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _writing(self, changes: Mapping[tuple[str, str], Sequence[str]]) -> Iterator[None]:
        """Around a Chroma write of these ids per ``(collection, tenant)`` key: publish it (server mode) when done.

        If the write fails part way (what landed is unknown), the keys' cache entries are dropped and the
        change is still published, best effort and without its ids, so other processes reload too.
        """
        try:
            yield
        except BaseException:
            if self._notify is not None:
                for key in changes:
                    self._notify.invalidate(key)
            with contextlib.suppress(Exception):  # the write's own error is the one to report
                self._publish(dict.fromkeys(changes))
            raise
        self._publish(changes)

    def _stamp_moved(self, key: tuple[str, str], stamp: Stamp) -> bool:
        """Whether ``key``'s change stamp is no longer ``stamp`` (server mode)."""
        return self._stamps is not None and self._stamps.read([key], fresh=True)[key].stamp != stamp

    @contextmanager
    def pinned_stamps(self, tenants: Sequence[str]) -> Iterator[None]:
        """Server mode: within this block, this thread's change stamps of ``tenants`` come from one read made
        at its start. A recall asks for them up to three times within milliseconds (the keyword index's
        catch-up for the user and for shared documents, then the search): one primary-key read instead of
        three. A load's check that no write raced it still reads afresh. Embedded: nothing to read."""
        if self._stamps is None:
            yield
            return
        keys = [_key(col, validate_tenant(t, allow_shared=True)) for t in tenants for col in self._all]
        with translate_errors(self.location, "read change stamps", remote=self.remote):
            rows = self._stamps.read(keys)
        self._stamps.pin(rows)
        try:
            yield
        finally:
            self._stamps.unpin()

    def _publish(self, changes: Mapping[tuple[str, str], Sequence[str] | None]) -> None:
        """Server mode: mark these keys changed by this store, and record that on its own fresh entries."""
        if self._stamps is None or not changes:
            return
        values = self._stamps.publish(changes)
        if self._cache is not None:
            writer = self._stamps.writer
            for key, value in values.items():
                self._cache.restamp(key, functools.partial(with_field, writer=writer, value=value))

    def _pool(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=len(KIND_COLLECTIONS) + 1,
                                                    thread_name_prefix="mneme-chroma")
            return self._executor

    def _targets(
        self, user_id: str, kinds: Sequence[Kind] | None, where: Where | None, archived: bool | None
    ) -> list[tuple[Collection, dict[str, Any] | None]]:
        """The collections (with their scoped filters) holding ``kinds`` in the live/archive state asked."""
        wanted = _kinds(kinds) if kinds is not None else list(Kind)
        out: list[tuple[Collection, dict[str, Any] | None]] = []
        if archived is not True:
            out += [(self._live[kind], _scope(user_id, where)) for kind in wanted]
        if archived is not False and wanted:
            extra = None if kinds is None else {"kind": {"$in": [kind.value for kind in wanted]}}
            out.append((self._archive, _scope(user_id, where, extra)))
        return out


def _key(col: Collection, tenant: str) -> tuple[str, str]:
    """The vector-cache key of a tenant's rows in ``col`` (by collection id: a reindexed one is new)."""
    return (str(col.id), tenant)


LOAD_PAGE = 2000
"""Rows per ``get`` when loading a tenant. Chroma fails a read of tens of thousands of rows with documents and
metadata ("too many SQL variables"), and each page costs ~40 KB per row while it is read (Chroma's buffers and
the Python lists it returns, embeddings as float64): 2,000 rows keep that under ~80 MB."""


class _LoadRaced(Exception):
    """Another process changed rows while a load read them page by page (offsets may have shifted)."""


def _load_rows(col: Collection, tenant: str, moved: Callable[[], bool] | None = None) -> Loaded:
    """All ids, embeddings, texts and metadata of ``tenant`` in ``col``: scoped ``get``s of ``LOAD_PAGE`` rows.

    Built to keep a large tenant's peak memory near what the cache then holds: each page's embeddings become
    unit rows written straight into one matrix of the cache's ``storage_dtype`` (sized by an ids-only read when
    there is more than one page, so the matrix is never held twice), its rows are packed (``PackedRows``) and the page's
    transient memory is returned to the OS (``heap.release_free_memory``) before the next page is read.
    One page is one consistent read. Several are not, if another process deletes rows meanwhile: then
    ``moved()`` (server mode: did the key's stamp change?) is asked afterwards, and ``_LoadRaced`` raised if so.
    """
    ids: list[str] = []
    matrix: Any = None
    rows = PackedRows()
    while True:
        hits = _Hits.of(col.get(where=_scope(tenant, None), limit=LOAD_PAGE, offset=len(ids),
                                include=["embeddings", "documents", "metadatas"]))
        if hits.vectors:
            page = normalized(hits.vectors)
            if matrix is None:
                # one page, or the first of many: size the matrix for all (ids only: cheap)
                total = len(hits.ids) if len(hits.ids) < LOAD_PAGE else \
                    len(col.get(where=_scope(tenant, None), include=[])["ids"])
                rows_in_all = max(total, len(hits.ids))
                matrix = np.empty((rows_in_all, page.shape[1]), dtype=storage_dtype(rows_in_all))
            if len(ids) + len(hits.ids) > matrix.shape[0]:  # rows added meanwhile (another writer)
                matrix = _grown(matrix, len(ids) + len(hits.ids))
            matrix[len(ids) : len(ids) + len(hits.ids)] = page
        ids += hits.ids
        rows.extend((text or "", meta) for text, meta in zip(hits.texts, hits.metas, strict=True))
        full = len(hits.ids) == LOAD_PAGE
        del hits
        if full or len(ids) > LOAD_PAGE:
            release_free_memory()
        if not full:
            if len(ids) >= LOAD_PAGE and moved is not None and moved():
                raise _LoadRaced(col.name)
            return ids, matrix[: len(ids)] if matrix is not None else [], rows


def _grown(matrix: Any, need: int) -> Any:
    grown = np.empty((need, matrix.shape[1]), dtype=matrix.dtype)
    grown[: matrix.shape[0]] = matrix
    return grown


def _patch_rows(col: Collection, tenant: str, row: StampRow, old: Stamp | None) -> Patch | None:
    """The ids of ``tenant`` in ``col`` changed since ``old`` (from the stamp row's log) and the current rows
    of those that exist: one primary-key read. ``None`` when the log cannot say (then the entry reloads)."""
    changed = row.changed_ids(old)
    if changed is None:
        return None
    if not changed:
        return [], ([], [], [])
    hits = _Hits.of(col.get(ids=sorted(changed), include=["embeddings", "documents", "metadatas"]))
    keep = [i for i, meta in enumerate(hits.metas) if meta.get("user_id") == tenant]
    vectors = hits.vectors if hits.vectors is not None else []
    return sorted(changed), ([hits.ids[i] for i in keep], [vectors[i] for i in keep],
                             [(hits.texts[i] or "", hits.metas[i]) for i in keep])


def _replacing(meta: dict[str, Any], old: set[str]) -> dict[str, Any]:
    """Metadata that replaces a row's: Chroma merges on upsert, so keys the new record lacks are set to
    ``None``, which removes them (``last_accessed`` of a replaced fact, an old ``polarity`` …)."""
    return {**{key: None for key in old - set(meta)}, **meta}


def _scope(user_id: str, where: Where | None, extra: Where | None = None) -> dict[str, Any] | None:
    return storage_where(scoped_where(user_id, where, extra=extra))


def _kinds(kinds: Sequence[Kind]) -> list[Kind]:
    try:
        return list(dict.fromkeys(Kind(k) for k in kinds))
    except ValueError as exc:
        raise InvalidInputError(f"unknown kind: {exc}") from exc


def _by_ids(col: Collection, ids: Sequence[str], where: Mapping[str, Any] | None, include: list[str]) -> _Hits:
    """Rows of ``col`` with these ids that match ``where`` (a stored-name filter, the tenant scope included).

    Read by primary key and filtered here with Chroma's semantics (``tenancy.matches``): Chroma's ``get``
    with ids *and* a ``where`` takes minutes for tens of thousands of ids.
    """
    hits = _Hits.of(col.get(ids=list(ids), include=list(dict.fromkeys([*include, "metadatas"]))))  # type: ignore[arg-type, list-item]
    keep = [i for i, meta in enumerate(hits.metas) if matches(where, meta)]
    return _Hits(ids=[hits.ids[i] for i in keep], texts=[hits.texts[i] for i in keep],
                 metas=[hits.metas[i] for i in keep],
                 vectors=None if hits.vectors is None else [hits.vectors[i] for i in keep])


def _move(hits: _Hits, *, source: Collection, target: Callable[[dict[str, Any]], Collection]) -> int:
    """Copy rows to their target collection, then delete them from ``source`` (never the other order)."""
    if not hits.ids:
        return 0
    assert hits.vectors is not None
    groups: dict[str, tuple[Collection, list[int]]] = {}
    for i, meta in enumerate(hits.metas):
        col = target(meta)
        groups.setdefault(col.name, (col, []))[1].append(i)
    for col, rows in groups.values():
        for start in range(0, len(rows), WRITE_BATCH):
            chunk = rows[start : start + WRITE_BATCH]
            col.upsert(
                ids=[hits.ids[i] for i in chunk],
                embeddings=[list(hits.vectors[i]) for i in chunk],  # type: ignore[arg-type]
                documents=[hits.texts[i] or "" for i in chunk],
                metadatas=[hits.metas[i] for i in chunk],
            )
    for start in range(0, len(hits.ids), WRITE_BATCH):
        source.delete(ids=hits.ids[start : start + WRITE_BATCH])
    return len(hits.ids)


def _open_collection(client: ClientAPI, name: str, info: EmbedderInfo, allow_mismatch: bool) -> Collection:
    """Get or create ``name``; refuse one built with another embedder unless told to allow it."""
    identity = {"embedder": info.name, "dimension": info.dimension}
    try:
        col = client.get_collection(name, embedding_function=None)  # type: ignore[arg-type]
    except NotFoundError:
        try:
            return client.create_collection(
                name, configuration=HNSW_CONFIGURATION, metadata=identity,  # type: ignore[arg-type]
                embedding_function=None,  # type: ignore[arg-type]
            )
        except ChromaError:  # another process created it first
            col = client.get_collection(name, embedding_function=None)  # type: ignore[arg-type]
    meta = dict(col.metadata or {})
    recorded = (meta.get("embedder"), meta.get("dimension"))
    if recorded == (info.name, info.dimension) or allow_mismatch:
        return col
    if recorded[0] is None and col.count() == 0:
        col.modify(metadata=identity)
        return col
    old = f"{recorded[0] or 'an unknown model'} ({recorded[1] or '?'}-d)"
    raise EmbedderMismatchError(
        f"collection {name} was built with embedder {old}, but Mneme is configured with "
        f"{info.name} ({info.dimension}-d). Run `mneme reindex` to re-embed the store with {info.name}, "
        f"or set MNEME_EMBEDDINGS back to {recorded[0]}"
    )


# --- opening: embedded (locked, shared per process) or HTTP ---------------------------------------


def chroma_settings() -> ChromaSettings:
    """Client settings: no telemetry (this machine has no business phoning home), resets refused."""
    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


@dataclass
class _Embedded:
    client: ClientAPI
    lock_file: IO[str]
    users: int = 0
    caches: dict[str, VectorCache] = field(default_factory=dict)
    """One vector cache per store prefix, shared by every store on this data directory in the process."""


def _vector_cache(client: ClientAPI, prefix: str, max_rows: int | None = None) -> VectorCache | None:
    """The shared vector cache of ``prefix`` on this embedded client (``None`` for any other client).

    The first opener's ``max_rows`` sizes it (``None``: ``DEFAULT_MAX_ROWS``).
    """
    with _embedded_lock:
        for handle in _embedded.values():
            if handle.client is client:
                return handle.caches.setdefault(prefix, VectorCache(max_rows))
    return None


def drop_vector_caches(client: ClientAPI) -> None:
    """Empty every vector cache of this embedded client (after changes made around the stores)."""
    with _embedded_lock:
        caches = [c for h in _embedded.values() if h.client is client for c in h.caches.values()]
    for cache in caches:
        cache.clear()


_embedded: dict[Path, _Embedded] = {}
_embedded_lock = threading.Lock()


def _acquire_embedded(data_dir: Path) -> tuple[ClientAPI, Callable[[], None]]:
    """The process's client for ``data_dir`` (locked against other processes) and its release."""
    root = Path(data_dir).expanduser().resolve()
    with _embedded_lock:
        handle = _embedded.get(root)
        if handle is None:
            handle = _open_embedded(root)
            _embedded[root] = handle
        handle.users += 1

    def release() -> None:
        with _embedded_lock:
            handle.users -= 1
            if handle.users == 0:
                _embedded.pop(root, None)
                for cache in handle.caches.values():
                    cache.clear()
                try:
                    handle.client.close()  # type: ignore[attr-defined]
                finally:
                    fcntl.flock(handle.lock_file, fcntl.LOCK_UN)
                    handle.lock_file.close()

    return handle.client, release


def _free_port_near(start: int) -> int:
    """The first loopback port from ``start`` nobody listens on (``start`` itself if none is found)."""
    import socket

    for port in range(start, start + 100):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return start


def _open_embedded(root: Path) -> _Embedded:
    location = f"embedded Chroma in {root}"
    with translate_errors(location, "open the data directory", remote=False):
        root.mkdir(parents=True, exist_ok=True)
        lock_path = root / "chroma.lock"
        lock_file = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.seek(0)
            holder = lock_file.read().strip() or "?"
            lock_file.close()
            port = _free_port_near(8001)
            raise StoreLockedError(
                f"another process (pid {holder}) is using the embedded store in {root} ({lock_path}). "
                "Embedded Chroma is single-process. Beside a running `mneme serve`, `mneme memories` talks to "
                "the server instead. To share the data between processes, stop the other process, serve it "
                f"with Chroma (`chroma run --path {root / 'chroma'} --port {port}`: {port} is free now; 8000 is "
                f"`mneme serve`'s default) and set MNEME_CHROMA_URL=http://127.0.0.1:{port} in every process"
            ) from None
        try:
            lock_file.truncate(0)
            lock_file.write(str(os.getpid()))
            lock_file.flush()
            client = chromadb.PersistentClient(path=str(root / "chroma"), settings=chroma_settings())
        except BaseException:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
            lock_file.close()
            raise
    return _Embedded(client=client, lock_file=lock_file)


DEFAULT_HTTP_TIMEOUT = 10.0
"""Seconds a Chroma server may stay silent on one request before the call fails (``MNEME_CHROMA_TIMEOUT``)."""


def _http_client(url: str, timeout: float | None = None) -> ClientAPI:
    """A client for the server at ``url`` whose every request gives up after ``timeout`` seconds of silence.

    Chroma's HTTP client has no timeout setting (its httpx session waits for ever), so a frozen server would
    hold a turn for as long as it stays frozen: the session's timeout is set here, and opening (which already
    talks to the server) runs under the same deadline.
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"a Chroma URL must look like http://host:port, got {url!r}")
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    seconds = DEFAULT_HTTP_TIMEOUT if timeout is None else timeout
    with translate_errors(url, "connect", remote=True):
        try:
            client = call_with_deadline(lambda: chromadb.HttpClient(
                host=parsed.hostname or "", port=port, ssl=parsed.scheme == "https", settings=chroma_settings()
            ), seconds, what="opening the Chroma client")
        except DeadlineExceeded as exc:
            raise StoreUnavailableError(unavailable_message(url, exc)) from exc
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(seconds, connect=min(seconds, 5.0))
    else:  # a chromadb without the attribute: say so once instead of silently waiting for ever
        logger.warning("could not set a timeout on the Chroma HTTP client (chromadb %s)", chromadb.__version__)
    return client


@contextmanager
def chroma_client(*, data_dir: Path | str | None = None, url: str | None = None) -> Iterator[tuple[ClientAPI, str]]:
    """A client for a data directory (embedded, locked) or a server URL, with its location for messages."""
    if (data_dir is None) == (url is None):
        raise ConfigurationError("give exactly one of a data directory (embedded Chroma) or a Chroma URL")
    if url is not None:
        client = _http_client(url)
        try:
            yield client, url
        finally:
            _close_quietly(client)
        return
    assert data_dir is not None
    client, release = _acquire_embedded(Path(data_dir))
    try:
        yield client, f"embedded Chroma in {Path(data_dir).expanduser().resolve()}"
    finally:
        release()


def open_chroma_store(
    *,
    data_dir: Path | str | None = None,
    url: str | None = None,
    embedder: Embedder,
    prefix: str = "mneme",
    allow_embedder_mismatch: bool = False,
    cache_rows: int | None = None,
    timeout: float | None = None,
) -> ChromaStore:
    """Open the store at ``data_dir`` (embedded, under ``data_dir/chroma``) or on the server at ``url``.

    ``cache_rows`` bounds the search cache (``Settings.cache_rows``; ``0`` turns it off, ``None``: the default).
    ``timeout``: seconds a server may stay silent on one request (``Settings.chroma_timeout``; server mode).
    """
    if (data_dir is None) == (url is None):
        raise ConfigurationError("give exactly one of a data directory (embedded Chroma) or a Chroma URL")
    if url is not None:
        client = _http_client(url, timeout)
        try:
            return ChromaStore(client, embedder, prefix=prefix, allow_embedder_mismatch=allow_embedder_mismatch,
                               location=url, remote=True, on_close=lambda: _close_quietly(client),
                               vector_cache=VectorCache(cache_rows, max_age=SERVER_MAX_AGE))
        except BaseException:
            _close_quietly(client)
            raise
    assert data_dir is not None
    client, release = _acquire_embedded(Path(data_dir))
    try:
        return ChromaStore(client, embedder, prefix=prefix, allow_embedder_mismatch=allow_embedder_mismatch,
                           location=f"embedded Chroma in {Path(data_dir).expanduser().resolve()}",
                           on_close=release, vector_cache=_vector_cache(client, prefix, cache_rows))
    except BaseException:
        release()
        raise


def _close_quietly(client: ClientAPI) -> None:
    with contextlib.suppress(Exception):  # closing a dead connection must not mask the real error
        client.close()  # type: ignore[attr-defined]


# --- re-embedding ---------------------------------------------------------------------------------


def reindex_store(
    client: ClientAPI,
    embedder: Embedder,
    *,
    prefix: str = "mneme",
    location: str = "Chroma",
    force: bool = False,
    batch_size: int = 256,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, int]:
    """Re-embed every record of every collection with ``embedder``; return rows copied per collection.

    Each collection is copied, re-embedded, into ``NAME__reindex``; only when that copy is complete is
    ``NAME`` renamed to ``NAME__old``, the copy renamed to ``NAME`` and the old one deleted. A crash at
    any point leaves the old data intact, and the next run finishes or redoes the swap. Collections
    already built with ``embedder`` are skipped unless ``force``. Stop writers (the app) while it runs.
    """
    drop_vector_caches(client)
    with translate_errors(location, "re-embed the store", remote=location.startswith("http")):
        done: dict[str, int] = {}
        for name in collection_names(prefix):
            _recover_swap(client, name)
            old = _maybe_get(client, name)
            if old is None:
                continue
            meta = dict(old.metadata or {})
            if not force and (meta.get("embedder"), meta.get("dimension")) == (
                embedder.info.name, embedder.info.dimension
            ):
                continue
            if _maybe_get(client, name + _NEW) is not None:
                client.delete_collection(name + _NEW)  # a partial copy from an earlier crash
            new = client.create_collection(
                name + _NEW, configuration=HNSW_CONFIGURATION,  # type: ignore[arg-type]
                metadata={"embedder": embedder.info.name, "dimension": embedder.info.dimension},
                embedding_function=None,  # type: ignore[arg-type]
            )
            done[name] = _copy_embedded(old, new, embedder, batch_size, progress)
            old.modify(name=name + _OLD)
            new.modify(name=name)
            client.delete_collection(name + _OLD)
        drop_vector_caches(client)  # new collections have new ids, but free the old rows now
        return done


def _copy_embedded(
    old: Collection, new: Collection, embedder: Embedder, batch_size: int,
    progress: Callable[[str, int], None] | None,
) -> int:
    offset = 0
    while True:
        hits = _Hits.of(old.get(limit=batch_size, offset=offset, include=["documents", "metadatas"]))
        if hits.ids:
            texts = [t or "" for t in hits.texts]
            metas = [{**m, "embedder": embedder.info.name} for m in hits.metas]
            # embed what search matches (see ``mneme.memory.indexing``), not just the stored text
            searched = [search_text(from_metadata(i, t, m, archived=False))
                        for i, t, m in zip(hits.ids, texts, hits.metas, strict=True)]
            new.add(ids=hits.ids, embeddings=embedder.embed(searched), documents=texts,  # type: ignore[arg-type]
                    metadatas=metas)  # type: ignore[arg-type]
        offset += len(hits.ids)
        if progress is not None:
            progress(old.name, offset)
        if len(hits.ids) < batch_size:
            return offset


def _recover_swap(client: ClientAPI, name: str) -> None:
    """Finish a swap a crash interrupted: the copy is complete once the old collection was renamed."""
    old = _maybe_get(client, name + _OLD)
    if old is None:
        return
    current = _maybe_get(client, name)
    if current is None:
        copy = _maybe_get(client, name + _NEW)
        (copy or old).modify(name=name)
        if copy is None:
            return
    client.delete_collection(name + _OLD)


def _maybe_get(client: ClientAPI, name: str) -> Collection | None:
    try:
        return client.get_collection(name, embedding_function=None)  # type: ignore[arg-type]
    except NotFoundError:
        return None
