"""Tenant scoping: every query a store runs is ``tenant AND caller's filter``, so a filter can only narrow.

Callers pass metadata filters in Chroma's syntax (``{"emotion": "negative"}``,
``{"$or": [{"importance": {"$gte": 0.8}}, {"key": "home_city"}]}``). ``scoped_where`` validates such a
filter against a small allow-list, normalises it to the strict form Chroma accepts (one key per dict,
``$and``/``$or`` with at least two items) and puts it beside the tenant condition under ``$and``. A
caller's ``$or`` therefore sits *inside* the conjunction and cannot widen it past the tenant.

Allowed: ``$and $or`` over lists of filters; field conditions ``{"field": scalar}`` (equality) or
``{"field": {"$op": value}}`` with ``$eq $ne`` (scalar), ``$gt $gte $lt $lte`` (number) and ``$in $nin``
(non-empty list of scalars of one type). Anything else raises ``InvalidInputError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mneme.errors import InvalidInputError
from mneme.memory.base import Where

LOGICAL_OPS = frozenset({"$and", "$or"})
SCALAR_OPS = frozenset({"$eq", "$ne"})
NUMBER_OPS = frozenset({"$gt", "$gte", "$lt", "$lte"})
LIST_OPS = frozenset({"$in", "$nin"})
MAX_DEPTH = 8
MAX_ITEMS = 256
"""Bounds on a filter's nesting and list sizes: a filter is data from a caller, keep it small."""

TENANT_FIELD = "user_id"


def scoped_where(user_id: str, where: Where | None, *, extra: Where | None = None) -> dict[str, Any]:
    """Return the filter ``user_id == tenant AND extra AND where`` in Chroma's strict syntax.

    ``user_id`` must already be validated (``validate_tenant``). ``where`` is the caller's filter (may be
    ``None`` or empty); ``extra`` is a store-internal condition (e.g. the kinds wanted in the archive).
    Raises ``InvalidInputError`` when either filter is malformed.
    """
    parts: list[dict[str, Any]] = [{TENANT_FIELD: {"$eq": user_id}}]
    for clause in (extra, where):
        normalised = normalize_where(clause)
        if normalised is not None:
            # flatten a top-level $and so the query stays shallow; its items are all required anyway
            parts.extend(normalised.get("$and", [normalised]))
    return parts[0] if len(parts) == 1 else {"$and": parts}


def normalize_where(where: Where | None) -> dict[str, Any] | None:
    """Validate a caller's filter and return it in strict form (``None`` when it is empty)."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidInputError(f"a metadata filter must be a JSON object, got {type(where).__name__}")
    if not where:
        return None
    return _normalize(where, depth=0)


def _normalize(where: Mapping[str, Any], depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"metadata filter nested deeper than {MAX_DEPTH} levels")
    if not isinstance(where, Mapping) or not where:
        raise InvalidInputError(f"each metadata filter clause must be a non-empty object, got {where!r:.80}")
    clauses: list[dict[str, Any]] = []
    for key, value in where.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"metadata filter keys must be non-empty strings, got {key!r:.40}")
        if key in LOGICAL_OPS:
            clauses.append(_logical(key, value, depth))
        elif key.startswith("$"):
            raise InvalidInputError(f"unsupported filter operator {key!r}: use $and, $or or a field name")
        else:
            clauses.append({key: _condition(key, value)})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _logical(op: str, items: Any, depth: int) -> dict[str, Any]:
    if not isinstance(items, list | tuple) or not items:
        raise InvalidInputError(f"{op} takes a non-empty list of filters")
    if len(items) > MAX_ITEMS:
        raise InvalidInputError(f"{op} has more than {MAX_ITEMS} items")
    normalised = [_normalize(item, depth + 1) for item in items]
    # Chroma rejects $and/$or with a single item; it means the item itself
    return normalised[0] if len(normalised) == 1 else {op: normalised}


def _condition(field: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {"$eq": _scalar(field, value)}
    if len(value) != 1:
        raise InvalidInputError(f"condition on {field!r} must have exactly one operator, got {list(value)}")
    op, operand = next(iter(value.items()))
    if op in SCALAR_OPS:
        return {op: _scalar(field, operand)}
    if op in NUMBER_OPS:
        if not _is_number(operand):
            raise InvalidInputError(f"{op} on {field!r} needs a number, got {operand!r:.40}")
        return {op: operand}
    if op in LIST_OPS:
        if not isinstance(operand, list | tuple) or not operand or len(operand) > MAX_ITEMS:
            raise InvalidInputError(f"{op} on {field!r} needs a non-empty list of at most {MAX_ITEMS} values")
        values = [_scalar(field, v) for v in operand]
        if len({_type_class(v) for v in values}) > 1:
            raise InvalidInputError(f"{op} on {field!r} mixes value types")
        return {op: values}
    raise InvalidInputError(f"unsupported operator {op!r} on {field!r}: use $eq $ne $gt $gte $lt $lte $in $nin")


def _scalar(field: str, value: Any) -> str | int | float | bool:
    if isinstance(value, str | bool) or _is_number(value):
        return value  # type: ignore[no-any-return]
    raise InvalidInputError(f"filter value for {field!r} must be a string, number or boolean, got {value!r:.40}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _type_class(value: Any) -> str:
    """Group values the way Chroma compares them: booleans, numbers and strings never equal each other."""
    if isinstance(value, bool):
        return "bool"
    return "str" if isinstance(value, str) else "number"


def matches(where: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> bool:
    """Evaluate a strict-form filter over flat ``metadata`` with Chroma's semantics.

    A missing field fails ``$eq``, ``$in`` and comparisons, and passes ``$ne`` and ``$nin``; values of
    different types (string, number, boolean) are never equal. Used by the in-process backend.
    """
    if not where:
        return True
    for key, value in where.items():
        if key == "$and":
            if not all(matches(item, metadata) for item in value):
                return False
        elif key == "$or":
            if not any(matches(item, metadata) for item in value):
                return False
        elif not _test(value, metadata.get(key), key in metadata):
            return False
    return True


def _test(condition: Any, actual: Any, present: bool) -> bool:
    if not isinstance(condition, Mapping):
        condition = {"$eq": condition}
    op, expected = next(iter(condition.items()))
    if op == "$ne":
        return not (present and _equal(actual, expected))
    if op == "$nin":
        return not (present and any(_equal(actual, e) for e in expected))
    if not present:
        return False
    if op == "$eq":
        return _equal(actual, expected)
    if op == "$in":
        return any(_equal(actual, e) for e in expected)
    if not (_is_number(actual) and _is_number(expected)):
        return False
    return {
        "$gt": actual > expected,
        "$gte": actual >= expected,
        "$lt": actual < expected,
        "$lte": actual <= expected,
    }[op]


def _equal(a: Any, b: Any) -> bool:
    return _type_class(a) == _type_class(b) and a == b
