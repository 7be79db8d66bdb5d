"""``mneme memories``: an administrator's view of one user's memories: list, search, delete, export.

The handlers are thin; the work is in ``list_memories``, ``search_memories``, ``delete_memories`` and
``export_memories``, which take a store so they can be reused (and tested) without the CLI.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from mneme.memory.base import SHARED_TENANT, Kind, MemoryStore, validate_tenant
from mneme.memory.records import record_to_json
from mneme.memory.service import MemoryService, RecallOptions


def list_memories(store: MemoryStore, user_id: str, kinds: Sequence[Kind] | None = None) -> list[dict[str, Any]]:
    """Every record of ``user_id`` (live and archived, documents included unless ``kinds``), oldest first."""
    records = store.scan(validate_tenant(user_id), kinds=kinds, archived=None)
    return [record_to_json(r) for r in sorted(records, key=lambda r: (r.created_at, r.id))]


def export_memories(store: MemoryStore, user_id: str) -> Iterator[dict[str, Any]]:
    """Everything stored for ``user_id``, one JSON-ready dict per record (for JSON lines)."""
    yield from list_memories(store, user_id)


def search_memories(service: MemoryService, user_id: str, query: str, *, k: int = 10) -> list[dict[str, Any]]:
    """Recall for ``user_id`` as the agent would (hybrid, re-ranked; no reinforcement), with scores."""
    options = RecallOptions(k=k, reinforce=False, max_context_tokens=10**9)
    items = service.recall(validate_tenant(user_id), query, options=options)
    records = {r.id: r for r in service.store.get(user_id, [it.id for it in items])}
    shared = {r.id: r for r in service.store.get(SHARED_TENANT, [it.id for it in items if it.id not in records])}
    out = []
    for it in items:
        rec = records.get(it.id) or shared.get(it.id)
        if rec is not None:
            out.append({**record_to_json(rec), "score": round(it.score, 4), "signals": it.as_dict()["signals"]})
    return out


def delete_memories(service: MemoryService, user_id: str, ids: Sequence[str] | None = None) -> int:
    """Delete these records of ``user_id``, or with ``ids=None`` everything: memories, archive, documents."""
    user_id = validate_tenant(user_id)
    return service.forget_user(user_id) if ids is None else service.delete(user_id, ids)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``memories list|search|delete|export``."""
    parser = subparsers.add_parser("memories", help="list, search, delete or export one user's memories")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = sub.add_parser("list", help="list a user's memories")
    listing.add_argument("--user", required=True, help="the user id")
    listing.add_argument("--kind", action="append", choices=[k.value for k in Kind],
                         help="only this kind (repeatable)")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(func=_list)

    search = sub.add_parser("search", help="search a user's memories")
    search.add_argument("query")
    search.add_argument("--user", required=True, help="the user id")
    search.add_argument("--k", type=int, default=10, help="how many results (default 10)")
    search.add_argument("--json", action="store_true", help="print a JSON array")
    search.set_defaults(func=_search)

    delete = sub.add_parser("delete", help="delete some or all of a user's memories")
    delete.add_argument("--user", required=True, help="the user id")
    which = delete.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", dest="ids", action="append", help="a record id (repeatable)")
    which.add_argument("--all", action="store_true", help="everything: memories, archive and private documents")
    delete.set_defaults(func=_delete)

    export = sub.add_parser("export", help="print everything stored for a user as JSON lines")
    export.add_argument("--user", required=True, help="the user id")
    export.set_defaults(func=_export)


def _open() -> MemoryService:
    from mneme.config import Settings
    from mneme.stores import open_service

    return open_service(Settings.from_env())


def _print_items(items: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(items, ensure_ascii=False, indent=2))
        return
    for item in items:
        score = f" {item['score']:.3f}" if "score" in item else ""
        flag = " [archived]" if item["archived"] else ""
        print(f"{item['id']}{score} {item['kind']:<10} {item['created_at']}{flag}  {item['text']}")


def _list(args: argparse.Namespace) -> int:
    service = _open()
    try:
        kinds = [Kind(k) for k in args.kind] if args.kind else None
        _print_items(list_memories(service.store, args.user, kinds), args.json)
    finally:
        service.close()
    return 0


def _search(args: argparse.Namespace) -> int:
    service = _open()
    try:
        _print_items(search_memories(service, args.user, args.query, k=args.k), args.json)
    finally:
        service.close()
    return 0


def _delete(args: argparse.Namespace) -> int:
    service = _open()
    try:
        count = delete_memories(service, args.user, None if args.all else args.ids)
    finally:
        service.close()
    print(f"deleted {count} record(s) of {args.user}", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    service = _open()
    try:
        for item in export_memories(service.store, args.user):
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
    finally:
        service.close()
    return 0

