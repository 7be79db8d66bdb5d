"""What an administrator can do to one user's data: list, search, delete, erase, export, restore.

``MemoryAdmin`` is the one interface the ``mneme memories`` command uses. ``LocalAdmin`` works on a memory
service this process opened (embedded data directory or a Chroma server); a remote twin talks to a running
``mneme serve`` instead (``mneme.admin_client``), so the command works beside a serving agent. Both answer
with the same JSON-ready dicts (``record_to_json``), so the command prints the same thing either way.

Deleting is exact: an id that is not one of the user's records is an error and nothing is deleted, so a typo
never passes for a success. Erasing is whole: the user's memories, archive and private documents, their turns
still queued in the write journal, and every conversation thread of theirs in the checkpointer (when the admin
has one); export likewise lists the records and then the threads (``{"type": "thread", ...}`` lines).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from mneme.errors import InvalidInputError
from mneme.memory.base import SHARED_TENANT, Kind, validate_tenant
from mneme.memory.records import record_to_json
from mneme.memory.service import MemoryService, RecallOptions
from mneme.threads import adelete_threads, athreads_of, delete_threads, scoped_thread_id, threads_of

CheckpointerRef = BaseCheckpointSaver | Callable[[], BaseCheckpointSaver | None] | None
"""A checkpointer, or a function giving the current one (a server opens its own in its lifespan)."""


class MemoryAdmin(Protocol):
    """An administrator's operations on one user's data (every call names the user)."""

    def list_memories(self, user_id: str, kinds: Sequence[Kind] | None = None) -> list[dict[str, Any]]:
        """Every record of ``user_id`` (live and archived), oldest first."""
        ...

    def search(self, user_id: str, query: str, *, k: int = 10) -> list[dict[str, Any]]:
        """Recall as the agent would (no reinforcement), with scores."""
        ...

    def delete(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Delete these records; every id must be one of the user's (else nothing is deleted)."""
        ...

    def erase(self, user_id: str) -> dict[str, int]:
        """Erase everything kept about ``user_id``; return what was removed, by kind of data."""
        ...

    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Everything kept about ``user_id``, one JSON-ready dict per item."""
        ...

    def restore(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Bring archived records back into recall; every id must be an archived record of the user."""
        ...

    def close(self) -> None:
        """Release what was opened."""
        ...


def check_found(user_id: str, wanted: Sequence[str], found: Sequence[str], what: str = "record") -> None:
    """Raise ``InvalidInputError`` naming the ids of ``wanted`` that are not in ``found``."""
    missing = [i for i in dict.fromkeys(wanted) if i not in set(found)]
    if missing:
        raise InvalidInputError(f"no {what} {', '.join(missing)} of user {user_id}; nothing was changed")


def _message_json(message: Any) -> dict[str, Any]:
    if isinstance(message, BaseMessage):
        role = {"human": "user", "ai": "assistant"}.get(message.type, message.type)
        return {"id": message.id, "role": role, "content": message.content}
    return {"content": str(message)}


def _thread_json(user_id: str, thread_id: str, values: dict[str, Any] | None) -> dict[str, Any]:
    values = values or {}
    return {"type": "thread", "user_id": user_id, "thread_id": thread_id,
            "messages": [_message_json(m) for m in values.get("messages") or []],
            "summary": values.get("summary") or ""}


def _config(user_id: str, thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": scoped_thread_id(user_id, thread_id), "checkpoint_ns": ""}}


def export_threads(checkpointer: BaseCheckpointSaver, user_id: str) -> list[dict[str, Any]]:
    """Every thread of ``user_id`` as it stands (latest checkpoint): its messages and running summary."""
    out = []
    for thread_id in threads_of(checkpointer, user_id):
        found = checkpointer.get_tuple(_config(user_id, thread_id))  # type: ignore[arg-type]
        out.append(_thread_json(user_id, thread_id, found.checkpoint["channel_values"] if found else None))
    return out


async def aexport_threads(checkpointer: BaseCheckpointSaver, user_id: str) -> list[dict[str, Any]]:
    """Async twin of ``export_threads`` (for the async savers a server runs)."""
    out = []
    for thread_id in await athreads_of(checkpointer, user_id):
        found = await checkpointer.aget_tuple(_config(user_id, thread_id))  # type: ignore[arg-type]
        out.append(_thread_json(user_id, thread_id, found.checkpoint["channel_values"] if found else None))
    return out


class LocalAdmin:
    """``MemoryAdmin`` over a memory service (and a thread checkpointer) opened in this process."""

    def __init__(self, service: MemoryService, *, checkpointer: CheckpointerRef = None,
                 on_close: Callable[[], Any] | None = None) -> None:
        self.service = service
        self._checkpointer = checkpointer
        self._on_close = on_close

    @property
    def checkpointer(self) -> BaseCheckpointSaver | None:
        """The thread checkpointer, if this admin has one (now)."""
        ref = self._checkpointer
        return ref if ref is None or isinstance(ref, BaseCheckpointSaver) else ref()

    def list_memories(self, user_id: str, kinds: Sequence[Kind] | None = None) -> list[dict[str, Any]]:
        """Every record of ``user_id`` (live and archived, documents included unless ``kinds``), oldest first."""
        records = self.service.store.scan(validate_tenant(user_id), kinds=kinds, archived=None)
        return [record_to_json(r) for r in sorted(records, key=lambda r: (r.created_at, r.id))]

    def search(self, user_id: str, query: str, *, k: int = 10) -> list[dict[str, Any]]:
        """Recall for ``user_id`` as the agent would (hybrid, re-ranked; no reinforcement), with scores."""
        service = self.service
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

    def delete(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Delete these records of ``user_id``; an unknown id is an error and nothing is deleted."""
        user_id = validate_tenant(user_id)
        ids = list(dict.fromkeys(ids))
        found = [r.id for r in self.service.store.get(user_id, ids)]
        check_found(user_id, ids, found)
        self.service.delete(user_id, found)
        return found

    def _erase_memory(self, user_id: str) -> dict[str, int]:
        journal = self.service.journal
        queued = len(journal.pending(user_id)) if journal is not None else 0
        return {"records": self.service.forget_user(user_id), "queued_turns": queued}

    def erase(self, user_id: str) -> dict[str, int]:
        """Erase everything of ``user_id``: memories, archive, private documents, queued turns, threads."""
        user_id = validate_tenant(user_id)
        erased = self._erase_memory(user_id)
        checkpointer = self.checkpointer
        if checkpointer is not None:
            erased["threads"] = delete_threads(checkpointer, user_id)
        return erased

    async def aerase(self, user_id: str) -> dict[str, int]:
        """Async twin of ``erase`` (the store work runs in a thread; the async savers are awaited)."""
        user_id = validate_tenant(user_id)
        erased = await asyncio.to_thread(self._erase_memory, user_id)
        checkpointer = self.checkpointer
        if checkpointer is not None:
            erased["threads"] = await adelete_threads(checkpointer, user_id)
        return erased

    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Every record of ``user_id`` (oldest first), then every thread of theirs."""
        yield from self.list_memories(user_id)
        checkpointer = self.checkpointer
        if checkpointer is not None:
            yield from export_threads(checkpointer, validate_tenant(user_id))

    async def aexport(self, user_id: str) -> list[dict[str, Any]]:
        """Async twin of ``export``."""
        items = await asyncio.to_thread(self.list_memories, user_id)
        checkpointer = self.checkpointer
        if checkpointer is not None:
            items += await aexport_threads(checkpointer, validate_tenant(user_id))
        return items

    def restore(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Bring archived records back into recall; an id that is not archived is an error."""
        user_id = validate_tenant(user_id)
        ids = list(dict.fromkeys(ids))
        archived = [r.id for r in self.service.store.get(user_id, ids) if r.archived]
        check_found(user_id, ids, archived, "archived record")
        return self.service.restore(user_id, archived)

    def close(self) -> None:
        """Close the memory service (and what ``on_close`` releases: the checkpointer this admin opened)."""
        try:
            self.service.close()
        finally:
            if self._on_close is not None:
                self._on_close()
