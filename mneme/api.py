"""The HTTP memory API (what mem0 users expect), always for the authenticated caller only.

The same operations as ``mneme memories`` (``mneme.admin.LocalAdmin``): list, search, delete one or all, export,
restore from the archive. The user is the caller's verified identity (``mneme.serve.resolve_principal``); an
admin may name another user with ``X-User-Id``. Shared documents are managed by admins only (an ``--admin``
key or the local admin token of ``server.json``). Unknown ids and other users' ids are both 404: one user
cannot even learn that another's record exists.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from mneme.admin import CheckpointerRef, LocalAdmin
from mneme.auth import Principal
from mneme.errors import InvalidInputError
from mneme.memory.base import SHARED_TENANT, Kind, validate_tenant
from mneme.memory.documents import delete_document, list_documents
from mneme.memory.service import MemoryService

MAX_LIST = 1000


class SearchRequest(BaseModel):
    """``POST /memories/search``: recall as the agent would."""

    query: str = Field(min_length=1, max_length=4000, description="What to look for.")
    k: int = Field(default=10, ge=1, le=100, description="How many results at most.")


class DocumentRequest(BaseModel):
    """``POST /documents``: a text to store as a (shared by default) document."""

    text: str = Field(min_length=1, description="The document's text.")
    source: str = Field(min_length=1, max_length=500, description="Its name; re-posting a source replaces it.")
    title: str | None = Field(default=None, description="A title (default: the source).")
    user_id: str | None = Field(default=None, description="Make it private to this user (default: shared).")


def _principal(request: Request) -> Principal:
    from mneme.serve import resolve_principal

    return resolve_principal(request)


def _user(principal: Annotated[Principal, Depends(_principal)]) -> str:
    if not principal.user_id:
        raise HTTPException(400, "missing X-User-Id header: say whose memory this request uses")
    return principal.user_id


def _admin(principal: Annotated[Principal, Depends(_principal)]) -> Principal:
    if not principal.admin:
        raise HTTPException(403, "documents are managed by an admin: an --admin API key or the local admin token")
    return principal


SETTLE_SECONDS = 10.0
"""How long a memory API read waits for the caller's journaled turns to be stored (read-your-writes)."""

User = Annotated[str, Depends(_user)]
Admin = Annotated[Principal, Depends(_admin)]


def memory_router(service: MemoryService, *, checkpointer: CheckpointerRef = None) -> APIRouter:
    """The ``/memories`` and ``/documents`` routes over ``service`` (sync handlers: FastAPI runs them in threads).

    ``checkpointer`` (or a function giving the server's current one) holds the conversation threads: erasing a
    user removes theirs, and export lists them.
    """
    router = APIRouter(tags=["memory"])
    admin = LocalAdmin(service, checkpointer=checkpointer)  # the same operations as ``mneme memories``

    def settle(user: str) -> None:
        # Turns are acknowledged once journaled and stored by a background batch: a caller who just spoke
        # must see (and be able to delete) what they said, so wait for their own queued turns first.
        # While the store is down nothing drains: the read fails at once (503) instead of after the wait.
        journal, applier = service.journal, service.applier
        if journal is not None and journal.pending(user) and not (applier is not None and applier.store_down):
            service.drain(timeout=SETTLE_SECONDS)

    @router.get("/memories")
    def list_(user: User, kind: Annotated[list[Kind] | None, Query()] = None,
              limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
              offset: Annotated[int, Query(ge=0)] = 0) -> dict[str, object]:
        """The caller's records (live and archived; private documents too unless ``kind`` says), oldest first."""
        settle(user)
        items = admin.list_memories(user, kind)
        return {"user_id": user, "total": len(items), "memories": items[offset:offset + limit]}

    @router.post("/memories/search")
    def search(user: User, body: SearchRequest) -> dict[str, object]:
        """Recall for the caller as the agent would (hybrid, re-ranked), with scores; nothing is reinforced."""
        return {"user_id": user, "results": admin.search(user, body.query, k=body.k)}

    @router.get("/memories/export")
    async def export(user: User) -> StreamingResponse:
        """Everything stored for the caller, one JSON object per line: records, then threads."""
        await asyncio.to_thread(settle, user)
        items = await admin.aexport(user)

        def lines() -> Iterator[str]:
            for item in items:
                yield json.dumps(item, ensure_ascii=False) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @router.delete("/memories/{record_id}")
    def delete_one(user: User, record_id: str) -> dict[str, object]:
        """Delete one of the caller's records; 404 when the caller has none with this id."""
        settle(user)
        try:
            admin.delete(user, [record_id])
        except InvalidInputError:
            raise HTTPException(404, f"no memory {record_id!r} of this user") from None
        return {"deleted": 1, "id": record_id}

    @router.delete("/memories")
    async def delete_all(user: User) -> dict[str, object]:
        """Erase everything kept about the caller: memories, archive, private documents, queued turns, threads."""
        erased = await admin.aerase(user)
        return {"user_id": user, "deleted": erased["records"], "erased": erased}

    @router.post("/memories/{record_id}/restore")
    def restore(user: User, record_id: str) -> dict[str, object]:
        """Bring an archived record of the caller back into recall; 404 when it has no such archived record."""
        settle(user)
        if not service.restore(user, [record_id]):
            raise HTTPException(404, f"no archived memory {record_id!r} of this user")
        return {"restored": 1, "id": record_id}

    @router.get("/documents")
    def documents_list(_: Admin, user_id: str | None = None) -> dict[str, object]:
        """Shared documents (or one user's private ones), one entry per source with its chunk count."""
        tenant = validate_tenant(user_id) if user_id else SHARED_TENANT
        return {"user_id": tenant, "documents": list_documents(service.indexed, tenant)}

    @router.post("/documents")
    def documents_add(_: Admin, body: DocumentRequest) -> dict[str, object]:
        """Store a document (split into chunks); shared unless ``user_id`` names its owner."""
        tenant = validate_tenant(body.user_id) if body.user_id else SHARED_TENANT
        ids = service.ingest_document(body.text, source=body.source, user_id=tenant, title=body.title)
        return {"user_id": tenant, "source": body.source, "ids": ids}

    @router.delete("/documents")
    def documents_delete(_: Admin, source: str, user_id: str | None = None) -> dict[str, object]:
        """Delete every chunk of the document named ``source`` (shared, or private to ``user_id``); 404 if none."""
        tenant = validate_tenant(user_id) if user_id else SHARED_TENANT
        deleted = delete_document(service.indexed, source, tenant)
        if not deleted:
            raise HTTPException(404, f"no document {source!r}")
        return {"user_id": tenant, "source": source, "deleted": deleted}

    return router

