"""``mneme documents list|delete``: an administrator's view of the documents, shared or one user's private ones.

Documents are managed by source (the path or name they were ingested under), per owner: the shared
collection by default (``--shared``), or one user's private documents (``-u USER``). ``~shared`` is not a
user id, so ``mneme memories`` cannot reach them; this command is the admin path (the HTTP twin is the
admin-only ``/documents``). Deleting an unknown source is an error and deletes nothing; ``delete --all``
asks on a terminal and needs ``--yes`` otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mneme.errors import InvalidInputError


def _owner(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--shared", action="store_true", help="the shared documents (the default)")
    which.add_argument("-u", "--user", default=None, help="this user's private documents instead")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``documents list|delete``."""
    parser = subparsers.add_parser("documents", help="list or delete ingested documents (shared or a user's)")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = sub.add_parser("list", help="one line per document: source, chunks, title, when ingested")
    _owner(listing)
    listing.add_argument("--json", action="store_true", help="print a JSON array (with the chunk ids)")
    listing.set_defaults(func=_list)

    delete = sub.add_parser("delete", help="delete documents by source (every chunk of each)")
    _owner(delete)
    which = delete.add_mutually_exclusive_group(required=True)
    which.add_argument("-s", "--source", dest="sources", action="append",
                       help="a source as `documents list` shows it (repeatable); unknown sources are an error")
    which.add_argument("--all", action="store_true", help="every document of the owner")
    delete.add_argument("-y", "--yes", action="store_true", help="do not ask before --all (needed without a terminal)")
    delete.add_argument("--json", action="store_true", help="print what was deleted as JSON")
    delete.set_defaults(func=_delete)


def _tenant(args: argparse.Namespace) -> str:
    from mneme.memory.base import SHARED_TENANT, validate_tenant

    return validate_tenant(args.user) if args.user else SHARED_TENANT


def _describe(tenant: str) -> str:
    from mneme.memory.base import SHARED_TENANT

    return "shared documents" if tenant == SHARED_TENANT else f"private documents of {tenant}"


def _open() -> Any:
    from mneme.config import Settings
    from mneme.stores import open_service

    return open_service(Settings.from_env())


def _list(args: argparse.Namespace) -> int:
    from mneme.clock import to_iso

    tenant = _tenant(args)
    service = _open()
    try:
        docs = service.list_documents(tenant)
    finally:
        service.close()
    for doc in docs:
        doc["created_at"] = to_iso(doc["created_at"])
    if args.json:
        print(json.dumps(docs, ensure_ascii=False, indent=2))
        return 0
    for doc in docs:
        print(f"{doc['source']}\t{doc['chunks']} chunks\t{doc['created_at']}\t{doc['title']}")
    print(f"{len(docs)} {_describe(tenant)}", file=sys.stderr)
    return 0


def _confirm_all(tenant: str, n: int, *, assume_yes: bool) -> None:
    if assume_yes:
        return
    if not sys.stdin.isatty():
        raise InvalidInputError(f"delete --all removes all {n} {_describe(tenant)}: pass --yes to confirm "
                                "(there is no terminal to ask)")
    answer = input(f"Delete all {n} {_describe(tenant)}? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise InvalidInputError("not confirmed; nothing was deleted")


def _delete(args: argparse.Namespace) -> int:
    tenant = _tenant(args)
    service = _open()
    try:
        if args.all:
            sources = [d["source"] for d in service.list_documents(tenant)]
            if not sources:
                raise InvalidInputError(f"there are no {_describe(tenant)}; nothing was deleted")
            _confirm_all(tenant, len(sources), assume_yes=args.yes)
        else:
            sources = args.sources
        deleted = service.delete_documents(sources, user_id=tenant)
    finally:
        service.close()
    if args.json:
        print(json.dumps({"user_id": tenant, "deleted": deleted}, ensure_ascii=False))
    else:
        chunks = sum(deleted.values())
        print(f"deleted {len(deleted)} of the {_describe(tenant)} ({chunks} chunks): {', '.join(deleted)}",
              file=sys.stderr)
    return 0
