"""Maintenance: apply the forgetting policy to what is stored (``mneme gc``).

For every tenant: live memories whose retention and importance have fallen below the policy's
thresholds move to the archive (kept, restorable with ``mneme memories restore``, not recalled); episodic
turns past their TTL and archived memories past the archive's TTL are deleted. Facts and preferences
are never deleted by age. Documents are not touched. The report lists every record it archives or
deletes with the reason (retention, idle days, the threshold crossed); ``dry_run`` reports the same and
changes nothing.

Each decision is made from one record's own fields at ``now`` and applied per batch, so a run can be
interrupted and re-run safely, and runs beside a serving app (with a Chroma server; an embedded data
directory belongs to one process at a time).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mneme.clock import to_iso
from mneme.memory.base import MEMORY_KINDS, MemoryRecord, validate_tenant
from mneme.memory.forgetting import DAY, ForgettingPolicy, decide, retention
from mneme.memory.service import MemoryService

BATCH = 500


@dataclass(kw_only=True)
class GcReport:
    """What a gc run did (or would do, in a dry run)."""

    now: float
    dry_run: bool
    tenants: int = 0
    scanned: int = 0
    kept: int = 0
    archived: int = 0
    expired: int = 0
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    changes: list[dict[str, Any]] = field(default_factory=list)
    """One entry per record archived or deleted: id, user, kind, action, reason, ISO times."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view; times as ISO-8601 UTC."""
        return {**self.__dict__, "now": to_iso(self.now), "changes": list(self.changes)}


def explain(record: MemoryRecord, verdict: str, now: float, policy: ForgettingPolicy) -> dict[str, Any]:
    """Why ``decide`` archives or expires ``record``: the figures it compared, in words and as an entry."""
    last = record.last_accessed if record.last_accessed is not None else record.created_at
    idle = max(0.0, (now - last) / DAY)
    if record.archived:
        reason = f"archived and idle {idle:.0f} days (>= {policy.archive_ttl_days:g})"
    else:
        r = retention(record, now, policy)
        if verdict == "expire":
            reason = (f"retention {r:.3f} < {policy.expire_threshold:g} and idle {idle:.0f} days "
                      f"(>= {policy.episodic_ttl_days:g})")
        else:
            reason = f"retention {r:.3f} < {policy.archive_threshold:g}"
    return {"id": record.id, "user_id": record.user_id, "kind": str(record.kind),
            "action": "delete" if verdict == "expire" else "archive", "reason": reason,
            "importance": round(record.importance, 3), "created_at": to_iso(record.created_at),
            "last_accessed": to_iso(last)}


def run_gc(service: MemoryService, *, now: float | None = None, dry_run: bool = False,
           user_id: str | None = None) -> GcReport:
    """Archive faded memories and delete expired ones for every tenant (or one); return the counts."""
    now = service.clock() if now is None else now
    report = GcReport(now=now, dry_run=dry_run)
    tenants = [validate_tenant(user_id)] if user_id else [t for t in service.store.tenants() if not t.startswith("~")]
    by_kind: dict[str, Counter[str]] = {}
    for tenant in tenants:
        report.tenants += 1
        to_archive: list[str] = []
        to_expire: list[str] = []
        for archived in (False, True):
            for record in service.store.scan(tenant, kinds=list(MEMORY_KINDS), archived=archived):
                report.scanned += 1
                verdict = decide(record, now, service.forgetting)
                by_kind.setdefault(str(record.kind), Counter())[verdict] += 1
                if verdict == "archive" and not archived:
                    to_archive.append(record.id)
                    report.changes.append(explain(record, verdict, now, service.forgetting))
                elif verdict == "expire":
                    to_expire.append(record.id)
                    report.changes.append(explain(record, verdict, now, service.forgetting))
                else:
                    report.kept += 1
        report.archived += len(to_archive)
        report.expired += len(to_expire)
        if dry_run:
            continue
        for start in range(0, len(to_archive), BATCH):
            ids = to_archive[start:start + BATCH]
            service.indexed.archive(tenant, ids)
        for start in range(0, len(to_expire), BATCH):
            ids = to_expire[start:start + BATCH]
            service.indexed.delete(tenant, ids)
    report.by_kind = {k: dict(v) for k, v in sorted(by_kind.items())}
    return report
