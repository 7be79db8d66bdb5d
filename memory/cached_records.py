"""Records rebuilt from the vector cache's packed rows, each row decoded once and then copied.

Recall turns ~100-200 candidate rows into ``MemoryRecord``s per query: unpacking the row, decoding its two JSON
fields (``source_turns``, ``history``), filtering its metadata, building the dataclass. That cost ~12 µs a row,
2-3 ms of a 1,000-memory user's ~8 ms recall, mostly for the same rows again and again (a user's candidates
overlap from query to query). ``record_of`` decodes a packed row once (``records.from_metadata``, the one
definition) and keeps the result as a prototype, keyed by the row's id and its packed bytes: a row that changes
is packed anew, so its old prototype is simply never asked for again (and ages out, least recently used).

Every call returns a new record with its own containers (the lists and the metadata dict are copied; ``history``
is decoded again from its JSON when not empty), so a caller that changes a record it got cannot change the
cache nor another caller's record. The result equals ``from_metadata`` of the same row (tested).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from mneme.memory.base import MemoryRecord
from mneme.memory.records import from_metadata
from mneme.memory.vector_cache import PackedRows, unpack

DECODED_ROWS = 10_000
"""Prototypes kept at most (least recently used out): ~1.5 KB each, ~15 MB; the candidate rows of several
active users."""


class _Prototype:
    """A decoded row: the record's fields, and how to give each copy its own containers."""

    __slots__ = ("fields", "history", "turns_are_scalars")

    def __init__(self, record: MemoryRecord, history_json: str) -> None:
        self.fields: dict[str, Any] = dict(record.__dict__)
        self.history = history_json if record.history else ""
        """The stored JSON of a non-empty history (decoded anew for each copy: its items are dicts)."""
        self.turns_are_scalars = all(isinstance(t, str | int | float | bool) for t in record.source_turns)


@lru_cache(maxsize=DECODED_ROWS)
def _prototype(record_id: str, blob: bytes) -> _Prototype:
    text, meta = unpack(blob)
    return _Prototype(from_metadata(record_id, text, meta, archived=False), str(meta.get("history") or ""))


def record_of(record_id: str, rows: Any, position: int) -> MemoryRecord:
    """The live record ``record_id`` held at ``position`` of a cache entry's ``rows``, as ``from_metadata``
    builds it; decoded once per packed row (see the module docstring)."""
    if not isinstance(rows, PackedRows):
        text, meta = rows[position]
        return from_metadata(record_id, text, meta, archived=False)
    proto = _prototype(record_id, rows.blob(position))
    fields = proto.fields
    record = object.__new__(MemoryRecord)
    own = dict(fields)
    turns = fields["source_turns"]
    own["source_turns"] = list(turns) if proto.turns_are_scalars else json.loads(json.dumps(turns))
    own["history"] = json.loads(proto.history) if proto.history else []
    own["metadata"] = dict(fields["metadata"])
    record.__dict__.update(own)
    return record


def clear() -> None:
    """Forget every prototype (tests; memory)."""
    _prototype.cache_clear()
