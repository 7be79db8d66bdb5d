"""``mneme memories``: an administrator's view of one user's data: list, search, delete, restore, export.

The handlers are thin: the work is in ``mneme.admin`` (``MemoryAdmin``), which this command opens on the
configured store, or, while ``mneme serve`` holds an embedded data directory, on that server's memory API
(``mneme.admin_client``). Lines for people by default, JSON with ``--json`` (export is always JSON lines).
``delete --all`` asks first on a terminal and needs ``--yes`` otherwise; an unknown id is an error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mneme.admin import MemoryAdmin
from mneme.errors import InvalidInputError
from mneme.memory.base import Kind, validate_tenant


def _user(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-u", "--user", required=True, help="the user id")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``memories list|search|delete|restore|export``."""
    parser = subparsers.add_parser("memories", help="list, search, delete, restore or export one user's memories")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = sub.add_parser("list", help="list a user's memories (live and archived)")
    _user(listing)
    listing.add_argument("--kind", action="append", choices=[k.value for k in Kind],
                         help="only this kind (repeatable)")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(func=_list)

    search = sub.add_parser("search", help="search a user's memories as the agent would")
    search.add_argument("query")
    _user(search)
    search.add_argument("-k", "--k", type=int, default=10, help="how many results (default 10)")
    search.add_argument("--json", action="store_true", help="print a JSON array")
    search.set_defaults(func=_search)

    delete = sub.add_parser("delete", help="delete some or all of a user's memories")
    _user(delete)
    which = delete.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", dest="ids", action="append", help="a record id (repeatable); unknown ids are an error")
    which.add_argument("--all", action="store_true", help="everything kept about the user (see the README)")
    delete.add_argument("-y", "--yes", action="store_true", help="do not ask before --all (needed without a terminal)")
    delete.add_argument("--json", action="store_true", help="print what was deleted as JSON")
    delete.set_defaults(func=_delete)

    restore = sub.add_parser("restore", help="bring archived memories back into recall")
    _user(restore)
    restore.add_argument("--id", dest="ids", action="append", required=True,
                         help="an archived record id (repeatable)")
    restore.add_argument("--json", action="store_true", help="print the restored ids as JSON")
    restore.set_defaults(func=_restore)

    export = sub.add_parser("export", help="print everything stored for a user as JSON lines")
    _user(export)
    export.set_defaults(func=_export)


def open_admin() -> MemoryAdmin:
    """The admin interface on the configured store, or on the running ``mneme serve`` that holds it."""
    from mneme.admin_client import open_admin as open_configured
    from mneme.config import Settings

    return open_configured(Settings.from_env())


def _print_items(items: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(items, ensure_ascii=False, indent=2))
        return
    for item in items:
        score = f" {item['score']:.3f}" if "score" in item else ""
        flag = " [archived]" if item["archived"] else ""
        print(f"{item['id']}{score} {item['kind']:<10} {item['created_at']}{flag}  {_one_line(item['text'])}")


def _one_line(text: str, limit: int = 300) -> str:
    """A record's text on one line for people (``--json`` has it whole): newlines as spaces, a long text clipped
    with its length said."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}… ({len(text):,} chars; --json shows all)"


def _list(args: argparse.Namespace) -> int:
    admin = open_admin()
    try:
        kinds = [Kind(k) for k in args.kind] if args.kind else None
        _print_items(admin.list_memories(args.user, kinds), args.json)
    finally:
        admin.close()
    return 0


def _search(args: argparse.Namespace) -> int:
    admin = open_admin()
    try:
        _print_items(admin.search(args.user, args.query, k=args.k), args.json)
    finally:
        admin.close()
    return 0


def confirm_erase(user: str, *, assume_yes: bool) -> None:
    """Ask on a terminal before erasing a user; without one, only ``--yes`` lets it through."""
    if assume_yes:
        return
    if not sys.stdin.isatty():
        raise InvalidInputError(f"delete --all erases everything kept about {user}: pass --yes to confirm "
                                f"(there is no terminal to ask)")
    answer = input(f"Erase everything Mneme keeps about {user}? Type the user id to confirm: ")
    if answer.strip() != user:
        raise InvalidInputError("not confirmed; nothing was deleted")


def _delete(args: argparse.Namespace) -> int:
    user = validate_tenant(args.user)
    if args.all:
        confirm_erase(user, assume_yes=args.yes)
    admin = open_admin()
    try:
        if args.all:
            removed = admin.erase(user)
            result: dict[str, Any] = {"user_id": user, "erased": removed}
        else:
            result = {"user_id": user, "deleted": admin.delete(user, args.ids)}
    finally:
        admin.close()
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    elif args.all:
        parts = ", ".join(f"{n} {what.replace('_', ' ').removesuffix('s') if n == 1 else what.replace('_', ' ')}"
                          for what, n in result["erased"].items())
        print(f"erased everything of {user}: {parts}", file=sys.stderr)
    else:
        print(f"deleted {len(result['deleted'])} record(s) of {user}: {' '.join(result['deleted'])}", file=sys.stderr)
    return 0


def _restore(args: argparse.Namespace) -> int:
    user = validate_tenant(args.user)
    admin = open_admin()
    try:
        restored = admin.restore(user, args.ids)
    finally:
        admin.close()
    if args.json:
        print(json.dumps({"user_id": user, "restored": restored}, ensure_ascii=False))
    else:
        print(f"restored {len(restored)} record(s) of {user} into recall: {' '.join(restored)}", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    admin = open_admin()
    try:
        for item in admin.export(args.user):
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
    finally:
        admin.close()
    return 0
