"""``mneme keys``: create, list and revoke the API keys the servers accept (``mneme.keys``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mneme.clock import to_iso


def _store() -> Any:
    from mneme.config import Settings
    from mneme.keys import open_key_store

    return open_key_store(Settings.from_env())


def register(subparsers: Any) -> None:
    """Add ``keys create|list|revoke``."""
    parser = subparsers.add_parser("keys", help="create, list or revoke API keys (Authorization: Bearer <key>)")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = sub.add_parser("create", help="make a key for a user; prints it once (the last line is the key)")
    create.add_argument("--user", "-u", required=True, help="the user id the key names")
    create.add_argument("--admin", action="store_true", help="may act for any user and manage shared documents")
    create.add_argument("--label", default="", help="a note shown by `keys list` (e.g. who holds it)")
    create.set_defaults(func=_create)
    listing = sub.add_parser("list", help="list keys (ids, users, admin, created, revoked; never the secret)")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(func=_list)
    revoke = sub.add_parser("revoke", help="revoke a key by its id (see `keys list`)")
    revoke.add_argument("id", help="the key id")
    revoke.set_defaults(func=_revoke)


def _create(args: argparse.Namespace) -> int:
    store = _store()
    record, key = store.create(args.user, admin=args.admin, label=args.label)
    role = " (admin)" if record.admin else ""
    print(f"created key {record.id} for user {record.user_id}{role} in {store.location}; it is shown only now:")
    print(key)
    return 0


def _list(args: argparse.Namespace) -> int:
    keys = _store().list()
    rows = [{"id": k.id, "user_id": k.user_id, "admin": k.admin, "created_at": to_iso(k.created_at),
             "revoked_at": to_iso(k.revoked_at) if k.revoked_at else None, "label": k.label} for k in keys]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("no API keys: the servers run in dev mode (the caller names the user)")
    for r in rows:
        state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "live"
        print(f"{r['id']}  {r['user_id']:<20} {'admin' if r['admin'] else 'user ':<5}  {r['created_at']}  {state}"
              f"{'  ' + r['label'] if r['label'] else ''}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from mneme.errors import InvalidInputError

    if not _store().revoke(args.id):
        raise InvalidInputError(f"no live API key with id {args.id!r} (see `mneme keys list`)")
    print(f"revoked key {args.id}")
    return 0
