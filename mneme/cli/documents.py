"""``mneme documents list|delete``: an administrator's view of the documents, shared or one user's private ones.

Documents are managed by source (the path or name they were ingested under), per owner: the shared
collection by default (``--shared``), or one user's private documents (``-u USER``). ``~shared`` is not a
user id, so ``mneme memories`` cannot reach them; this command is the admin path (the HTTP twin is the
admin-only ``/documents``). Deleting an unknown source is an error and deletes nothing; ``delete --all``
asks on a terminal and needs ``--yes`` otherwise. Beside a running ``mneme serve`` that holds the embedded
data directory (its ``server.json``), the command (and ``mneme ingest``) goes through that server's
``/documents`` routes as its local admin, like ``mneme memories`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mneme.errors import InvalidInputError, StoreLockedError


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


class LocalDocuments:
    """Documents of the store this process opened."""

    def __init__(self, service: Any) -> None:
        self.service = service

    def listing(self, tenant: str) -> list[dict[str, Any]]:
        """One entry per source."""
        return list(self.service.list_documents(tenant))

    def remove(self, sources: list[str], tenant: str) -> dict[str, int]:
        """Delete by source; an unknown source is an error and nothing is deleted."""
        return dict(self.service.delete_documents(sources, user_id=tenant))

    def add(self, docs: list[Any], tenant: str, progress: Any = None) -> tuple[int, int | None]:
        """Ingest ``docs`` (batched); (chunks, unchanged chunks)."""
        result = self.service.ingest_documents(docs, user_id=tenant, progress=progress)
        return sum(len(i) for i in result.ids), result.unchanged

    def close(self) -> None:
        """Close the service."""
        self.service.close()


class RemoteDocuments:
    """Documents through a running ``mneme serve``'s admin-only ``/documents`` routes."""

    def __init__(self, url: str, token: str) -> None:
        import httpx

        self.url = url.rstrip("/")
        self._client = httpx.Client(base_url=self.url, timeout=300, headers={"Authorization": f"Bearer {token}"})

    def _call(self, method: str, tenant: str, **kwargs: Any) -> Any:
        from mneme.admin_client import request_server
        from mneme.memory.base import SHARED_TENANT

        params = {**kwargs.pop("params", {}), **({} if tenant == SHARED_TENANT else {"user_id": tenant})}
        return request_server(self._client, method, "/documents", params=params, **kwargs).json()

    def listing(self, tenant: str) -> list[dict[str, Any]]:
        """One entry per source."""
        docs: list[dict[str, Any]] = self._call("GET", tenant)["documents"]
        return docs

    def remove(self, sources: list[str], tenant: str) -> dict[str, int]:
        """Delete by source; every source is checked first, so an unknown one deletes nothing."""
        known = {d["source"] for d in self.listing(tenant)}
        missing = [s for s in dict.fromkeys(sources) if s not in known]
        if missing:
            raise InvalidInputError(f"no document {', '.join(map(repr, missing))} ({_describe(tenant)}); "
                                    "nothing was deleted")
        return {s: int(self._call("DELETE", tenant, params={"source": s})["deleted"]) for s in dict.fromkeys(sources)}

    def add(self, docs: list[Any], tenant: str, progress: Any = None) -> tuple[int, int | None]:
        """Ingest ``docs`` one request each (the server embeds them); (chunks, ``None``: unchanged not known)."""
        from mneme.memory.base import SHARED_TENANT

        chunks = 0
        for doc in docs:
            body = {"text": doc.text, "source": doc.source, "title": doc.title,
                    **({} if tenant == SHARED_TENANT else {"user_id": tenant})}
            ids = self._call("POST", SHARED_TENANT, json=body)["ids"]
            chunks += len(ids)
            if progress is not None:
                progress(len(ids))
        return chunks, None

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()


def open_documents() -> LocalDocuments | RemoteDocuments:
    """The documents of the configured store, or of the running ``mneme serve`` that holds it."""
    from mneme.config import Settings
    from mneme.server_info import read_server_file
    from mneme.stores import open_service

    settings = Settings.from_env()
    if not settings.chroma_url:
        info = read_server_file(settings.data_dir)
        if info is not None:
            return RemoteDocuments(str(info["url"]), str(info["admin_token"]))
    try:
        return LocalDocuments(open_service(settings))
    except StoreLockedError:
        info = None if settings.chroma_url else read_server_file(settings.data_dir)
        if info is not None:  # the server started meanwhile
            return RemoteDocuments(str(info["url"]), str(info["admin_token"]))
        raise


def _list(args: argparse.Namespace) -> int:
    from mneme.clock import to_iso

    tenant = _tenant(args)
    admin = open_documents()
    try:
        docs = admin.listing(tenant)
    finally:
        admin.close()
    for doc in docs:
        if isinstance(doc.get("created_at"), int | float):
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
    admin = open_documents()
    try:
        if args.all:
            sources = [d["source"] for d in admin.listing(tenant)]
            if not sources:
                raise InvalidInputError(f"there are no {_describe(tenant)}; nothing was deleted")
            _confirm_all(tenant, len(sources), assume_yes=args.yes)
        else:
            sources = args.sources
        deleted = admin.remove(sources, tenant)
    finally:
        admin.close()
    if args.json:
        print(json.dumps({"user_id": tenant, "deleted": deleted}, ensure_ascii=False))
    else:
        chunks = sum(deleted.values())
        print(f"deleted {len(deleted)} of the {_describe(tenant)} ({chunks} chunks): {', '.join(deleted)}",
              file=sys.stderr)
    return 0
