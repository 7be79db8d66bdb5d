"""The forgetting curve: how strongly a memory is retained, how that bends ranking, and when to let go.

Retention follows Ebbinghaus as used by MemoryBank (Zhong et al., 2023): ``R = exp(-Δt / S)``, with Δt
the time since the memory was last recalled (or written, if never recalled) and S its strength. MemoryBank
starts S at 1 and adds 1 per recall, in days, which forgets a memory in a few days; a person's assistant
should not. Here S is a number of days that grows with importance and multiplies with each recall (spaced
repetition):

    S = min(max_strength_days, base_strength_days * (1 + importance_factor * importance)
                               * (1 + reinforcement_factor) ** access_count)

Ranking. Retention only *bends* relevance, within a bound: ``combine`` returns
``relevance * (1 - weight * (1 - retention))``, a factor in ``[1 - weight, 1]``. Guarantee (tested with
hypothesis): for relevance(a) > 0, if ``relevance(a) > relevance(b) * (1 + policy.dominance_margin)``
(``dominance_margin = weight / (1 - weight)``, 0.111 at weight 0.1) then ``final(a) > final(b)``,
whatever the two retentions. Faded memories lose near ties; a clearly relevant one is never hidden.

Maintenance (``decide``):

- documents are the knowledge base, never forgotten: always ``keep``;
- a memory of importance ``>= importance_threshold`` is always kept;
- an *episodic* memory idle for ``episodic_ttl_days`` (90) with retention below ``expire_threshold``
  is deleted (``expire``); facts and preferences never expire by time, whatever their retention;
- otherwise a memory whose retention fell below ``archive_threshold`` is archived (kept, restorable,
  not recalled by default);
- an archived episodic memory idle for ``archive_ttl_days`` (365) expires; other archived kinds stay.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mneme.errors import InvalidInputError
from mneme.memory.base import Kind, MemoryRecord

DAY = 86_400.0
Decision = Literal["keep", "archive", "expire"]


@dataclass(frozen=True, kw_only=True)
class ForgettingPolicy:
    """How fast memories fade, how much that weighs in ranking, and when maintenance archives or expires."""

    base_strength_days: float = 30.0
    """S (days) of a memory of importance 0 never recalled: its retention is 1/e after this long."""
    importance_factor: float = 1.0
    """S is multiplied by ``1 + importance_factor * importance`` (importance in [0, 1]): x2 at 1.0."""
    reinforcement_factor: float = 0.5
    """Each recall multiplies S by ``1 + reinforcement_factor`` (spaced repetition)."""
    max_strength_days: float = 3650.0
    """Upper bound of S, so a much-recalled memory still has a finite curve."""
    weight: float = 0.1
    """How much retention can lower a relevance in ``combine``: at most by this fraction (0 <= w < 1)."""
    archive_threshold: float = 0.1
    """Retention below which a memory of low importance is archived."""
    expire_threshold: float = 0.05
    """Retention below which an idle episodic memory of low importance is deleted."""
    importance_threshold: float = 0.7
    """Memories at least this important are never archived or expired."""
    episodic_ttl_days: float = 90.0
    """An episodic memory must be idle (not recalled) this long before it can expire."""
    archive_ttl_days: float = 365.0
    """An archived episodic memory idle this long (since its last recall) expires."""
    expiring_kinds: frozenset[Kind] = field(default_factory=lambda: frozenset({Kind.EPISODIC}))
    """Kinds that may be deleted by time; facts, preferences and summaries are only archived."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight < 1.0:
            raise InvalidInputError(f"forgetting weight must be in [0, 1), got {self.weight}")
        if self.base_strength_days <= 0 or self.max_strength_days < self.base_strength_days:
            raise InvalidInputError("strengths must satisfy 0 < base_strength_days <= max_strength_days")
        if self.importance_factor < 0 or self.reinforcement_factor < 0:
            raise InvalidInputError("importance_factor and reinforcement_factor must be >= 0")

    @property
    def dominance_margin(self) -> float:
        """Relative relevance lead beyond which retention can no longer change an order: w / (1 - w)."""
        return self.weight / (1.0 - self.weight)


DEFAULT_POLICY = ForgettingPolicy()


def _clamp01(x: float, default: float) -> float:
    if not isinstance(x, int | float) or math.isnan(x):
        return default
    return min(1.0, max(0.0, float(x)))


def strength(importance: float, access_count: int, policy: ForgettingPolicy = DEFAULT_POLICY) -> float:
    """Memory strength S in days: grows with importance and multiplies with each recall, bounded."""
    imp = _clamp01(importance, 0.5)
    n = max(0, int(access_count or 0))
    # In log space so a huge access count cannot overflow before the bound applies.
    log_s = (
        math.log(policy.base_strength_days)
        + math.log1p(policy.importance_factor * imp)
        + n * math.log1p(policy.reinforcement_factor)
    )
    return min(policy.max_strength_days, math.exp(min(log_s, 700.0)))


def _field(record: MemoryRecord | Mapping[str, Any], name: str, default: Any = None) -> Any:
    if isinstance(record, Mapping):
        return record.get(name, default)
    return getattr(record, name, default)


def retention(record: MemoryRecord | Mapping[str, Any], now: float, policy: ForgettingPolicy = DEFAULT_POLICY) -> float:
    """R = exp(-Δt / S) in [0, 1] for a record (or a mapping with the same fields) at time ``now``.

    Δt runs from ``last_accessed``, or ``created_at`` if never recalled; a time in the future (clock
    skew, replays) counts as Δt = 0, and a missing or non-finite time as "just now" (R = 1).
    """
    if type(record) is MemoryRecord:  # recall's hot path (~200 candidates a query): plain attribute reads
        last, importance, count = record.last_accessed, record.importance, record.access_count
        if last is None:
            last = record.created_at
        if type(last) is float and type(now) is float and type(importance) is float and type(count) is int:
            return _float_retention(now - last, importance, count, policy)
    else:
        last, importance, count = (_field(record, "last_accessed"), _field(record, "importance", 0.5),
                                   _field(record, "access_count", 0))
        if last is None:
            last = _field(record, "created_at")
    try:
        dt = float(now) - float(last)
    except (TypeError, ValueError):
        return 1.0
    if not math.isfinite(dt) or dt <= 0:
        return 1.0
    s_days = strength(importance, count or 0, policy)
    return _clamp01(math.exp(-(dt / DAY) / s_days), 1.0)


def _float_retention(dt: float, importance: float, count: int, policy: ForgettingPolicy) -> float:
    """``retention`` of a record whose times and importance are floats (as stored), in one function: the same
    operations as ``strength`` and ``retention`` in the same order, so the same value to the last bit (tested)."""
    return _curve(dt, importance, count, math.log(policy.base_strength_days), policy.importance_factor,
                  math.log1p(policy.reinforcement_factor), policy.max_strength_days)


def _curve(dt: float, importance: float, count: int, log_base: float, importance_factor: float, log_reinforce: float,
           max_days: float) -> float:
    """``_float_retention`` with the policy's constants given (``Fade`` computes them once per recall)."""
    if not math.isfinite(dt) or dt <= 0:
        return 1.0
    imp = 0.5 if importance != importance else min(1.0, max(0.0, importance))  # NaN: the default, as _clamp01
    n = count if count > 0 else 0
    log_s = log_base + math.log1p(importance_factor * imp) + n * log_reinforce
    s_days = min(max_days, math.exp(min(log_s, 700.0)))
    r = math.exp(-(dt / DAY) / s_days)
    return 1.0 if r != r else min(1.0, max(0.0, r))


def combine(relevance: float, retention: float, policy: ForgettingPolicy = DEFAULT_POLICY) -> float:
    """Final score: relevance lowered by at most ``policy.weight`` of its size as retention falls.

    Monotone in both arguments (for negative relevance too: ``relevance - w * (1 - R) * |relevance|``),
    so faded memories lose near ties only; see the module docstring for the bound.
    """
    r = _clamp01(retention, 1.0)
    return relevance - policy.weight * (1.0 - r) * abs(relevance)


class Fade:
    """``retention`` of many records at one time ``now`` under one policy (recall ranks ~100-200 candidates a
    query): the same values to the last bit (tested), the policy's constants computed once. (It repeats
    ``retention``'s check for float fields inline: through a shared helper, the tuple it returns cost ~0.1 ms a
    recall.)"""

    __slots__ = ("policy", "now", "_log_base", "_imp", "_log_reinf", "_max")

    def __init__(self, policy: ForgettingPolicy, now: float) -> None:
        self.policy, self.now = policy, now
        self._log_base = math.log(policy.base_strength_days)
        self._imp = policy.importance_factor
        self._log_reinf = math.log1p(policy.reinforcement_factor)
        self._max = policy.max_strength_days

    def retention(self, record: MemoryRecord) -> float:
        """``retention(record, now, policy)``."""
        if type(record) is MemoryRecord and type(self.now) is float:
            last, importance, count = record.last_accessed, record.importance, record.access_count
            if last is None:
                last = record.created_at
            if type(last) is float and type(importance) is float and type(count) is int:
                return _curve(self.now - last, importance, count, self._log_base, self._imp, self._log_reinf,
                              self._max)
        return retention(record, self.now, self.policy)


def reinforce(record: MemoryRecord, now: float) -> MemoryRecord:
    """The record after one more recall at ``now``: access count up, Δt restarts (MemoryBank's rehearsal)."""
    return record.touched(now)


def decide(record: MemoryRecord, now: float, policy: ForgettingPolicy = DEFAULT_POLICY) -> Decision:
    """What maintenance should do with ``record`` at ``now``: ``keep``, ``archive`` or ``expire``.

    See the module docstring for the rules; ``keep`` on an archived record means leave it archived.
    """
    if record.kind == Kind.DOCUMENT:
        return "keep"
    if _clamp01(record.importance, 0.5) >= policy.importance_threshold:
        return "keep"
    last = record.last_accessed if record.last_accessed is not None else record.created_at
    idle_days = max(0.0, (now - last) / DAY) if math.isfinite(now - last) else 0.0
    expirable = record.kind in policy.expiring_kinds
    if record.archived:
        return "expire" if expirable and idle_days >= policy.archive_ttl_days else "keep"
    r = retention(record, now, policy)
    if expirable and idle_days >= policy.episodic_ttl_days and r < policy.expire_threshold:
        return "expire"
    if r < policy.archive_threshold:
        return "archive"
    return "keep"
