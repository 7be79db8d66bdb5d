"""``mneme gc``: apply the forgetting policy (archive faded memories, delete expired ones)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``gc``."""
    p = subparsers.add_parser("gc", help="archive faded memories and delete expired ones")
    p.add_argument("--dry-run", action="store_true", help="list what would change (ids and reasons), change nothing")
    p.add_argument("--now", help="the time to judge by, ISO-8601 (default: now)")
    p.add_argument("-u", "--user", help="only this user (default: every user)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (counts and every change)")
    p.set_defaults(func=_run)


def render(report: dict[str, Any]) -> str:
    """The report for people: one summary line, then one line per record archived or deleted."""
    would = "would " if report["dry_run"] else ""
    head = (f"gc{' (dry run)' if report['dry_run'] else ''} at {report['now']}: {report['tenants']} user(s), "
            f"{report['scanned']} memories scanned, {report['archived']} {would}archive, "
            f"{report['expired']} {would}delete, {report['kept']} kept")
    lines = [head]
    for change in report["changes"]:
        lines.append(f"  {would}{change['action']:<7} {change['id']}  {change['user_id']}  {change['kind']:<10} "
                     f"last used {change['last_accessed']}: {change['reason']}")
    return "\n".join(lines)


def _run(args: Any) -> int:
    from mneme.clock import parse_iso
    from mneme.config import Settings
    from mneme.errors import InvalidInputError
    from mneme.memory.maintenance import run_gc
    from mneme.stores import open_service

    try:
        now = parse_iso(args.now) if args.now else None
    except ValueError as exc:
        raise InvalidInputError(f"--now must be an ISO-8601 date or time, got {args.now!r}") from exc
    service = open_service(Settings.from_env())
    try:
        report = run_gc(service, now=now, dry_run=args.dry_run, user_id=args.user).as_dict()
    finally:
        service.close()
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    return 0
