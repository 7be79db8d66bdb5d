"""``mneme gc``: apply the forgetting policy (archive faded memories, delete expired ones)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``gc``."""
    p = subparsers.add_parser("gc", help="archive faded memories and delete expired ones")
    p.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    p.add_argument("--now", help="the time to judge by, ISO-8601 (default: now)")
    p.add_argument("--user", help="only this user (default: every user)")
    p.set_defaults(func=_run)


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
        report = run_gc(service, now=now, dry_run=args.dry_run, user_id=args.user)
    finally:
        service.close()
    print(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    return 0
