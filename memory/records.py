"""How a ``MemoryRecord`` is stored as flat metadata, and back; shared by every backend.

Vector stores keep scalar metadata only, so a record is flattened to this schema (one row per record;
the text is the stored document, the id is the record id):

=================  ========  ==========================================================
field              type      meaning
=================  ========  ==========================================================
``user_id``        str       the tenant (``~shared`` for shared documents)
``kind``           str       ``document`` ``episodic`` ``fact`` ``preference`` ``summary``
``created_at``     float     POSIX seconds
``last_accessed``  float     POSIX seconds of the last recall; absent if never recalled
``access_count``   int       how often it was recalled
``importance``     float     0..1
``emotion``        str       e.g. ``neutral``, ``negative``
``thread_id``      str       conversation thread, ``""`` if none
``source_turns``   str       JSON list of the turn ids it came from
``key``            str       fact/preference slot (``home_city``), ``""`` if none
``history``        str       JSON list of earlier values ``{"text", "created_at", "replaced_at"}``
``embedder``       str       name of the embedding model that embedded it
``m_<name>``       scalar    each item of ``record.metadata`` (str, int, float or bool)
=================  ========  ==========================================================

Filters name fields as callers see them: a core field by its name, an extra metadata item by its own
name (``{"source": "a.md"}`` matches ``m_source``); ``storage_where`` does that translation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from mneme.clock import to_iso
from mneme.errors import InvalidInputError, InvalidTenantError
from mneme.memory.base import SHARED_TENANT, Embedder, Kind, MemoryRecord, validate_tenant

EXTRA_PREFIX = "m_"
CORE_FIELDS = frozenset({
    "user_id", "kind", "created_at", "last_accessed", "access_count", "importance", "emotion",
    "thread_id", "source_turns", "key", "history", "embedder",
})
UPDATABLE_FIELDS = frozenset({
    "last_accessed", "access_count", "importance", "emotion", "thread_id", "source_turns", "key", "history",
})
"""Core fields ``update_metadata`` may change; tenant, kind, id and text never change in place."""

Scalar = str | int | float | bool


def storage_key(name: str) -> str:
    """The stored metadata field a filter or update key refers to."""
    return name if name in CORE_FIELDS else EXTRA_PREFIX + name


def storage_where(where: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Translate field names of a strict-form filter to stored names (operators are kept)."""
    if not where:
        return None
    out: dict[str, Any] = {}
    for key, value in where.items():
        if key in ("$and", "$or"):
            out[key] = [storage_where(item) for item in value]
        else:
            out[storage_key(key)] = value
    return out


def to_metadata(record: MemoryRecord, embedder: str) -> dict[str, Scalar]:
    """Flatten a record's fields and extra metadata into the stored schema."""
    meta: dict[str, Scalar] = {
        "user_id": record.user_id,
        "kind": Kind(record.kind).value,
        "created_at": float(record.created_at),
        "access_count": int(record.access_count),
        "importance": float(record.importance),
        "emotion": record.emotion or "neutral",
        "thread_id": record.thread_id or "",
        "source_turns": json.dumps(list(record.source_turns), ensure_ascii=False),
        "key": record.key or "",
        "history": json.dumps(list(record.history), ensure_ascii=False),
        "embedder": embedder,
    }
    if record.last_accessed is not None:
        meta["last_accessed"] = float(record.last_accessed)
    for name, value in record.metadata.items():
        if value is not None:
            meta[EXTRA_PREFIX + _name(name)] = _extra_value(name, value)
    return meta


def metadata_changes(fields: Mapping[str, Any]) -> dict[str, Scalar | None]:
    """Turn ``update_metadata`` fields into stored changes; ``None`` means remove the field."""
    changes: dict[str, Scalar | None] = {}
    for name, value in fields.items():
        if name in CORE_FIELDS:
            if name not in UPDATABLE_FIELDS:
                raise InvalidInputError(f"{name!r} cannot be changed by update_metadata")
            changes[name] = _core_value(name, value)
        else:
            changes[EXTRA_PREFIX + _name(name)] = None if value is None else _extra_value(name, value)
    return changes


def _core_value(name: str, value: Any) -> Scalar | None:
    if name in ("source_turns", "history"):
        return json.dumps(list(value or []), ensure_ascii=False)
    if name in ("thread_id", "key"):
        return "" if value is None else str(value)
    if name == "last_accessed":
        return None if value is None else float(value)
    if name == "access_count":
        return int(value)
    if name == "importance":
        return float(value)
    return str(value)


def from_metadata(
    record_id: str, text: str | None, meta: Mapping[str, Any], *, archived: bool = False,
    embedding: Any = None,
) -> MemoryRecord:
    """Rebuild a record from its stored document and flat metadata."""
    last = meta.get("last_accessed")
    return MemoryRecord(
        id=record_id,
        user_id=str(meta["user_id"]),
        kind=Kind(meta["kind"]),
        text=text or "",
        created_at=float(meta["created_at"]),
        last_accessed=None if last is None else float(last),
        access_count=int(meta.get("access_count", 0)),
        importance=float(meta.get("importance", 0.5)),
        emotion=str(meta.get("emotion", "neutral")),
        thread_id=meta.get("thread_id") or None,
        source_turns=json.loads(meta.get("source_turns") or "[]"),
        key=meta.get("key") or None,
        history=json.loads(meta.get("history") or "[]"),
        metadata={k[len(EXTRA_PREFIX):]: v for k, v in meta.items() if k.startswith(EXTRA_PREFIX)},
        archived=archived,
        embedding=None if embedding is None else [float(x) for x in embedding],
    )


def record_to_json(record: MemoryRecord) -> dict[str, Any]:
    """A record as a JSON-ready dict for export and the admin CLI (times as ISO-8601 UTC)."""
    return {
        "id": record.id,
        "user_id": record.user_id,
        "kind": Kind(record.kind).value,
        "text": record.text,
        "created_at": to_iso(record.created_at),
        "last_accessed": None if record.last_accessed is None else to_iso(record.last_accessed),
        "access_count": record.access_count,
        "importance": record.importance,
        "emotion": record.emotion,
        "thread_id": record.thread_id,
        "source_turns": list(record.source_turns),
        "key": record.key,
        "history": list(record.history),
        "archived": record.archived,
        "metadata": dict(record.metadata),
    }


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name or name.startswith("$") or len(name) > 128:
        raise InvalidInputError(f"metadata names must be 1-128 characters not starting with $, got {name!r:.40}")
    return name


def _extra_value(name: str, value: Any) -> Scalar:
    if isinstance(value, str | bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return value  # type: ignore[no-any-return]
    raise InvalidInputError(f"metadata {name!r} must be a string, number or boolean, got {type(value).__name__}")


def check_records(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Validate records before any write: tenant, kind, id and text; ids unique in the batch."""
    seen: set[str] = set()
    for record in records:
        validate_tenant(record.user_id, allow_shared=True)
        kind = Kind(record.kind)
        if record.user_id == SHARED_TENANT and kind is not Kind.DOCUMENT:
            raise InvalidTenantError(f"{SHARED_TENANT} owns shared documents only, not {kind.value} records")
        check_ids([record.id])
        if record.id in seen:
            raise InvalidInputError(f"record id {record.id!r} appears twice in one batch")
        seen.add(record.id)
        if not isinstance(record.text, str) or not record.text.strip():
            raise InvalidInputError(f"record {record.id!r} has no text")
    return list(records)


def check_ids(ids: Sequence[str]) -> list[str]:
    """Validate record ids (non-empty strings of at most 256 characters)."""
    if isinstance(ids, str):
        raise InvalidInputError("ids must be a list of strings, not one string")
    out = list(ids)
    for record_id in out:
        if not isinstance(record_id, str) or not record_id or len(record_id) > 256:
            raise InvalidInputError(f"invalid record id {record_id!r:.60}")
    return out


def embeddings_for(records: Sequence[MemoryRecord], embedder: Embedder) -> list[list[float]]:
    """Each record's embedding: its precomputed one (dimension checked) or one made by ``embedder``."""
    dim = embedder.info.dimension
    from mneme.memory.indexing import search_text

    missing = [search_text(r) for r in records if r.embedding is None]
    made = iter(embedder.embed(missing) if missing else [])
    out: list[list[float]] = []
    for record in records:
        vector = list(record.embedding) if record.embedding is not None else next(made)
        if len(vector) != dim:
            raise InvalidInputError(
                f"record {record.id!r} has a {len(vector)}-d embedding; {embedder.info.name} makes {dim}-d"
            )
        out.append([float(x) for x in vector])
    return out
