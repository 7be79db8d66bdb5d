"""What an administrator can do to one user's data: list, search, delete, erase, export, restore.

``MemoryAdmin`` is the one interface the ``mneme memories`` command uses. ``LocalAdmin`` works on a memory
service this process opened (embedded data directory or a Chroma server); a remote twin talks to a running
``mneme serve`` instead (``mneme.admin_client``), so the command works beside a serving agent. Both answer
with the same JSON-ready dicts (``record_to_json``), so the command prints the same thing either way.

Deleting is exact: an id that is not one of the user's records is an error and nothing is deleted, so a typo
never passes for a success.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from mneme.errors import InvalidInputError
from mneme.memory.base import SHARED_TENANT, Kind, validate_tenant
from mneme.memory.records import record_to_json
from mneme.memory.service import MemoryService, RecallOptions


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


class LocalAdmin:
    """``MemoryAdmin`` over a memory service opened in this process."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

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

    def erase(self, user_id: str) -> dict[str, int]:
        """Erase every memory, the archive and private documents of ``user_id``."""
        return {"records": self.service.forget_user(validate_tenant(user_id))}

    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Every record of ``user_id``, oldest first."""
        yield from self.list_memories(user_id)

    def restore(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Bring archived records back into recall; an id that is not archived is an error."""
        user_id = validate_tenant(user_id)
        ids = list(dict.fromkeys(ids))
        archived = [r.id for r in self.service.store.get(user_id, ids) if r.archived]
        check_found(user_id, ids, archived, "archived record")
        return self.service.restore(user_id, archived)

    def close(self) -> None:
        """Close the memory service."""
        self.service.close()
