"""How LangGraph store namespaces, keys and values map onto Mneme's records (used by ``MnemeStore``).

Namespaces:

- ``("memories", user_id)`` — a user's memories; ``("memories", user_id, kind)`` narrows to a kind
  (``episodic``, ``fact``, ``preference``, ``summary``, or ``document`` for the user's private documents).
  A record the agent wrote is the item ``("memories", user_id, kind)`` / its id.
- ``("documents",)`` — the shared knowledge base (tenant ``~shared``).

An item put through the store is one record of the namespace's user: kind ``fact`` unless the third label
names a kind; its id is derived from (user, namespace, key) so equal keys of different users or
namespaces never collide; the namespace, key and the whole JSON value are kept in metadata
(``store_ns``, ``store_key``, ``store_value``), so nested values round-trip. Its searchable ``text`` is
the value's ``text``/``content``/``memory`` string, the fields named by ``index``, or else the JSON.
Strings in the value are redacted like any memory (counts in ``redacted_<kind>`` metadata).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import InvalidNamespaceError, Item
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from mneme.errors import InvalidInputError, InvalidTenantError
from mneme.memory.base import SHARED_TENANT, Kind, MemoryRecord, validate_tenant
from mneme.memory.redaction import RedactionPolicy, redact

MEMORIES = "memories"
DOCUMENTS = "documents"
TEXT_FIELDS = ("text", "content", "memory")
"""Value fields whose string is the item's searchable text, in this order, when ``index`` names none."""
MAX_VALUE_CHARS = 64_000
"""Largest value (as JSON) one item may hold: a memory, not a file (documents go through ``mneme ingest``)."""
MAX_KEY_CHARS = 512

_KINDS = {k.value: k for k in Kind}


@dataclass(frozen=True)
class Scope:
    """What a namespace (or a prefix of one) covers: one tenant and maybe one kind, or every user."""

    namespace: tuple[str, ...]
    tenant: str | None
    """The user (or ``~shared``); None for ``("memories",)``: every user (admin only)."""
    kind: Kind | None = None

    @property
    def kinds(self) -> list[Kind] | None:
        """The collections to read (None: all)."""
        return [self.kind] if self.kind is not None else None


def scope_of(namespace: Sequence[str]) -> Scope:
    """The tenant and kind a namespace or namespace prefix names; ``InvalidNamespaceError`` if none."""
    ns = tuple(namespace)
    if ns[:1] == (DOCUMENTS,):
        return Scope(ns, SHARED_TENANT, Kind.DOCUMENT)
    if ns[:1] != (MEMORIES,):
        raise InvalidNamespaceError(
            f"MnemeStore keeps ('memories', user_id[, kind]) and ('documents',); got {ns}")
    if len(ns) == 1:
        return Scope(ns, None)
    try:
        tenant = validate_tenant(ns[1])
    except InvalidTenantError as exc:
        raise InvalidNamespaceError(str(exc)) from exc
    return Scope(ns, tenant, _KINDS.get(ns[2]) if len(ns) > 2 else None)


def put_kind(scope: Scope) -> Kind:
    """The kind of a record put into ``scope``'s namespace."""
    return scope.kind if scope.kind is not None else Kind.FACT


def item_id(tenant: str, namespace: Sequence[str], key: str) -> str:
    """The record id of the item ``key`` put into ``namespace`` by the store."""
    digest = hashlib.sha256("\x00".join([tenant, *namespace, key]).encode()).hexdigest()[:24]
    return f"kv-{digest}"


def namespace_of(record: MemoryRecord) -> tuple[str, ...]:
    """The namespace an item lives in: where it was put, else where the agent's record of its kind is."""
    stored = record.metadata.get("store_ns")
    if isinstance(stored, str) and stored:
        return tuple(stored.split("."))  # labels never hold "." (LangGraph forbids it)
    if record.user_id == SHARED_TENANT:
        return (DOCUMENTS,)
    return (MEMORIES, record.user_id, str(record.kind))


def key_of(record: MemoryRecord) -> str:
    """The item key: the key it was put under, else the record id."""
    stored = record.metadata.get("store_key")
    return stored if isinstance(stored, str) and stored else record.id


def _time(seconds: float | None) -> datetime:
    return datetime.fromtimestamp(float(seconds or 0.0), UTC)


def updated_at(record: MemoryRecord) -> float:
    """When the item last changed (a put, or a fact's newest value)."""
    value = record.metadata.get("store_updated_at")
    return float(value) if isinstance(value, int | float) else record.created_at


def value_of(record: MemoryRecord) -> dict[str, Any]:
    """The item value: the JSON put, else a view of the agent's record."""
    stored = record.metadata.get("store_value")
    if isinstance(stored, str):
        try:
            value = json.loads(stored)
            if isinstance(value, dict):
                return value
        except json.JSONDecodeError:
            pass
    view: dict[str, Any] = {
        "text": record.text, "kind": str(record.kind), "importance": record.importance,
        "emotion": record.emotion, "thread_id": record.thread_id, "source_turns": list(record.source_turns),
        "access_count": record.access_count, "last_accessed": record.last_accessed,
        "metadata": {k: v for k, v in record.metadata.items() if not k.startswith("store_")},
    }
    if record.key is not None:
        view["key"] = record.key
        view["history"] = list(record.history)
    return view


def to_item(record: MemoryRecord) -> Item:
    """The LangGraph item of a record."""
    return Item(value=value_of(record), key=key_of(record), namespace=namespace_of(record),
                created_at=_time(record.created_at), updated_at=_time(updated_at(record)))


def _redact_value(value: Any, policy: RedactionPolicy, counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        out = redact(value, policy)
        for kind, n in out.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        return out.text
    if isinstance(value, Mapping):
        return {str(k): _redact_value(v, policy, counts) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(v, policy, counts) for v in value]
    return value


def text_for(value: Mapping[str, Any], index: Sequence[str] | None) -> str:
    """The searchable text of a value: the ``index`` fields' texts, a text field, or the JSON."""
    if index:
        texts = [t for path in index for t in get_text_at_path(value, tokenize_path(path))]
        if texts:
            return "\n".join(texts)
    for name in TEXT_FIELDS:
        if isinstance(value.get(name), str) and value[name].strip():
            return str(value[name])
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def new_record(scope: Scope, key: str, value: Mapping[str, Any], *, index: Sequence[str] | None,
               now: float, previous: MemoryRecord | None, policy: RedactionPolicy) -> MemoryRecord:
    """The record that stores ``value`` as the item ``key`` of ``scope``'s namespace (redacted)."""
    if scope.tenant is None:
        raise InvalidNamespaceError(f"name the user to write to: ('memories', user_id), got {scope.namespace}")
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(f"item key must be a non-empty string of at most {MAX_KEY_CHARS} characters")
    counts: dict[str, int] = {}
    clean = _redact_value(dict(value), policy, counts)
    encoded = json.dumps(clean, ensure_ascii=False, default=str)
    if len(encoded) > MAX_VALUE_CHARS:
        raise InvalidInputError(f"item value too large ({len(encoded)} chars as JSON; max {MAX_VALUE_CHARS})")
    metadata: dict[str, Any] = {
        "store_ns": ".".join(scope.namespace), "store_key": key, "store_value": encoded,
        "store_updated_at": now, **{f"redacted_{k}": n for k, n in counts.items()},
    }
    kind = put_kind(scope)
    if kind == Kind.DOCUMENT:
        metadata.update(source=key, title=str(clean.get("title") or key))
    return MemoryRecord(
        id=previous.id if previous is not None else item_id(scope.tenant, scope.namespace, key),
        user_id=scope.tenant, kind=kind, text=text_for(clean, index) or key,
        created_at=previous.created_at if previous is not None else now, importance=0.6, metadata=metadata,
    )


def under(namespace: Sequence[str], prefix: Sequence[str]) -> bool:
    """Whether ``namespace`` starts with ``prefix`` (``*`` matches any label)."""
    ns, pre = tuple(namespace), tuple(prefix)
    return len(ns) >= len(pre) and all(p in ("*", n) for p, n in zip(pre, ns, strict=False))


def ends_with(namespace: Sequence[str], suffix: Sequence[str]) -> bool:
    """Whether ``namespace`` ends with ``suffix`` (``*`` matches any label)."""
    ns, suf = tuple(namespace), tuple(suffix)
    return len(ns) >= len(suf) and all(p in ("*", n) for p, n in zip(suf, ns[len(ns) - len(suf):], strict=True))


_OPS = {
    "$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b, "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b, "$lte": lambda a, b: a is not None and a <= b,
}


def _lookup(value: Mapping[str, Any], path: str) -> Any:
    if path in value:
        return value[path]
    current: Any = value
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and wanted and all(str(k).startswith("$") for k in wanted):
        for op, operand in wanted.items():
            if op not in _OPS:
                raise InvalidInputError(f"unsupported filter operator {op!r}; use one of {sorted(_OPS)}")
            try:
                if not _OPS[op](actual, operand):
                    return False
            except TypeError:
                return False
        return True
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    return bool(actual == wanted)


def matches(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """Whether an item value passes a store filter (InMemoryStore's: equality, ``$eq`` … ``$lte``,
    nested dicts, dotted paths; plus ``$and``/``$or`` lists, which the LangGraph server uses to add
    an auth filter to a caller's)."""
    if not where:
        return True
    for name, wanted in where.items():
        if name in ("$and", "$or"):
            parts: Iterable[Any] = wanted if isinstance(wanted, list) else [wanted]
            results = (matches(value, p) for p in parts)
            if not (all(results) if name == "$and" else any(results)):
                return False
        elif not _compare(_lookup(value, name), wanted):
            return False
    return True
