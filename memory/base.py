"""The memory store contract: records, kinds, filters and the protocol every backend implements.

A store keeps records in one collection per kind (documents, episodic, facts, preferences, summaries)
plus an archive. Every read and write names a tenant (a user id); the store enforces it, so nothing a
caller passes can widen a query beyond one tenant. Stores embed text themselves with the embedder they
were opened with, and record that embedder's identity so a store is never read with another model.

The protocol is synchronous: Chroma's clients are synchronous, and the graph's nodes run in a thread
pool under LangGraph's async server. ``AsyncMemoryStore`` wraps any store with ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from mneme.errors import InvalidTenantError

SHARED_TENANT = "~shared"
"""The tenant that owns shared documents (the knowledge base everyone may read)."""

_TENANT_RE = re.compile(r"^[\w.@:+-]{1,128}$")


class Kind(StrEnum):
    """What a record is; each kind lives in its own collection."""

    DOCUMENT = "document"
    EPISODIC = "episodic"
    FACT = "fact"
    PREFERENCE = "preference"
    SUMMARY = "summary"


MEMORY_KINDS: tuple[Kind, ...] = (Kind.EPISODIC, Kind.FACT, Kind.PREFERENCE, Kind.SUMMARY)
"""The kinds that are a user's memories (as opposed to documents)."""


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (``"\ud800"``, which JSON and Python allow but UTF-8 cannot hold) and NUL
    characters (which PostgreSQL text cannot hold: a thread kept there would fail to save) replaced by U+FFFD;
    split surrogate pairs are joined. Clean text is returned as is (the same object).

    Every text entering the memory layer goes through this: hashing, embedding and storing need UTF-8.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def validate_tenant(user_id: object, *, allow_shared: bool = False) -> str:
    """Return ``user_id`` if it is a valid tenant id, else raise ``InvalidTenantError``.

    Valid ids are 1-128 characters of letters (any script), digits, ``_ . @ : + -``. ``~shared`` is
    reserved for shared documents and only accepted where ``allow_shared`` is set.
    """
    if user_id == SHARED_TENANT:
        if allow_shared:
            return SHARED_TENANT
        raise InvalidTenantError(f"{SHARED_TENANT!r} holds the shared documents, not a user's data: an admin lists "
                                 "and deletes them with `mneme documents list|delete` (HTTP: /documents)")
    if not isinstance(user_id, str) or not user_id:
        raise InvalidTenantError("a user id is required (pass user_id / --user / X-User-Id)")
    if not _TENANT_RE.match(user_id):
        raise InvalidTenantError(
            f"invalid user id {user_id[:40]!r}: use 1-128 letters, digits or _ . @ : + -"
        )
    return user_id


@dataclass(kw_only=True)
class MemoryRecord:
    """One stored memory or document chunk, with its provenance and forgetting-curve state.

    Times are POSIX seconds from the injected clock (the conversation's own time in evaluation).
    """

    id: str
    user_id: str
    kind: Kind
    text: str
    created_at: float
    last_accessed: float | None = None
    access_count: int = 0
    importance: float = 0.5
    emotion: str = "neutral"
    thread_id: str | None = None
    source_turns: list[str] = field(default_factory=list)
    key: str | None = None
    """Facts and preferences: the slot this value fills (``home_city``); an upsert by key replaces it."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Facts and preferences: earlier values, oldest first, as ``{"text", "created_at", "replaced_at"}``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Extra scalar metadata (redaction counts, source path, document title, ...)."""
    archived: bool = False
    embedding: list[float] | None = None
    """Optional precomputed embedding; stores embed ``text`` when it is missing."""

    def touched(self, now: float) -> MemoryRecord:
        """Return a copy reinforced by one recall at ``now`` (access count up, last access reset)."""
        return replace(self, last_accessed=now, access_count=self.access_count + 1)


def changed_between(before: Mapping[Any, int], now: Mapping[Any, int],
                    log: Mapping[tuple[Any, int], Sequence[str] | None]) -> set[str] | None:
    """Ids changed between two vector clocks (``{writer: counter}``), from a log of each change's ids
    (``{(writer, n): ids}``); ``None`` when the log cannot say (a counter went back or disappeared, or a
    change between is not logged)."""
    if any(writer not in now for writer in before):
        return None
    changed: set[str] = set()
    for writer, n in now.items():
        seen = before.get(writer, 0)
        if n < seen:
            return None
        for i in range(seen + 1, n + 1):
            ids = log.get((writer, i))
            if ids is None:
                return None
            changed.update(ids)
    return changed


@dataclass(frozen=True)
class TenantStamp:
    """A tenant's change stamp: who has written its records, and how often (see ``mneme.memory.stamps``)."""

    full: str
    """Every writer's counters, as canonical text (persistable: equal text, same writes)."""
    foreign: tuple[tuple[str, str, int], ...]
    """``(collection, writer, counter)`` of writers other than this store object (it applied its own writes)."""
    log: Mapping[tuple[tuple[str, str], int], Sequence[str] | None] = field(default_factory=dict)
    """The ids of recent changes: ``{((collection, writer), n): ids}``."""

    def changed_since(self, old: tuple[tuple[str, str, int], ...]) -> set[str] | None:
        """Ids other writers changed since ``old`` (an earlier ``foreign``), or ``None`` if the log cannot say."""
        return changed_between({(c, w): n for c, w, n in old}, {(c, w): n for c, w, n in self.foreign}, self.log)


@dataclass(frozen=True)
class ScoredRecord:
    """A record returned by a search with its similarity (higher is better, cosine in [-1, 1])."""

    record: MemoryRecord
    score: float


Where = Mapping[str, Any]
"""A metadata filter in Chroma's syntax (``{"emotion": "negative"}``, ``{"$and": [...]}``).

Stores combine it with the tenant scope so it can only narrow a query, never widen it.
"""


@dataclass(frozen=True)
class EmbedderInfo:
    """The identity of an embedding model, recorded in each collection's metadata."""

    name: str
    dimension: int


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors; ``info`` names the model so stores can refuse a mismatch."""

    @property
    def info(self) -> EmbedderInfo:
        """The model's name and vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch of texts into L2-normalised vectors."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """What the graph, retrieval and maintenance need from a backend. Every call names a tenant."""

    @property
    def embedder(self) -> Embedder:
        """The embedder this store was opened with."""
        ...

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Insert or replace (by id) records; each record's tenant is validated."""
        ...

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
        """Nearest records of ``user_id`` (and shared documents if asked), best first, across kinds."""
        ...

    def get(self, user_id: str, ids: Sequence[str], *, kinds: Sequence[Kind] | None = None) -> list[MemoryRecord]:
        """Records of ``user_id`` with these ids (missing or foreign ids are silently absent).

        ``kinds``, when the caller knows them, limits the collections read (live ones only).
        """
        ...

    def get_by_key(self, user_id: str, kind: Kind, key: str) -> MemoryRecord | None:
        """The current fact or preference of ``user_id`` stored under ``key``, if any."""
        ...

    def update_metadata(self, user_id: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Change metadata fields (e.g. ``last_accessed``, ``access_count``) of records of ``user_id``."""
        ...

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
        ...

    def scan(
        self,
        user_id: str,
        *,
        kinds: Sequence[Kind] | None = None,
        where: Where | None = None,
        archived: bool | None = False,
        batch_size: int = 500,
    ) -> Iterator[MemoryRecord]:
        """Every record of ``user_id`` matching the filter, in batches (for export and maintenance)."""
        ...

    def count(self, user_id: str, *, kinds: Sequence[Kind] | None = None, archived: bool | None = False) -> int:
        """How many records ``user_id`` has (of these kinds)."""
        ...

    def tenants(self) -> list[str]:
        """Every tenant that has at least one record (for maintenance over all users)."""
        ...

    def change_stamp(self, user_id: str) -> TenantStamp | None:
        """Where other processes also write (a shared server): what they have changed of ``user_id``'s
        records, read now. ``None`` when this process is the only writer."""
        ...

    def archive(self, user_id: str, ids: Sequence[str]) -> int:
        """Move records to the archive (kept, restorable, not recalled by default); return the count."""
        ...

    def restore(self, user_id: str, ids: Sequence[str]) -> int:
        """Move archived records back to their kind's collection; return the count."""
        ...

    def close(self) -> None:
        """Release clients and files."""
        ...


class AsyncMemoryStore:
    """The async twin of any ``MemoryStore``: each call runs the sync one in a worker thread."""

    def __init__(self, store: MemoryStore) -> None:
        self.sync = store

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.sync, name)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)

        return call
