"""Authentication and ownership under ``langgraph dev`` / LangGraph Platform (``langgraph.json``'s ``auth``).

The same keys and JWTs as ``mneme serve`` (``mneme.auth.Authenticator``). The authenticated user reaches the
graph as ``configurable.langgraph_auth_user_id``, which ``resolve_context`` puts over any ``context.user_id``.
Threads, runs, crons and assistants a user creates carry ``metadata.owner``; every read, search, update and
delete is filtered by it, so another user's thread is a 404. Store namespaces must start with
``("memories", <user>)`` (shared ``("documents",)`` may be read by all, written by admins only).
Assistants may be read and searched by everyone (the graph's own assistant is shared configuration, not user
data); only their owner may change them.

Dev mode (no keys, no JWT settings) keeps ``langgraph dev`` as it was: the identity is empty, nothing is
filtered, and the run's ``context.user_id`` names the user. ``disable_studio_auth`` in ``langgraph.json`` keeps
the Studio shortcut (an ``x-auth-scheme: langsmith`` header) from bypassing this handler.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from langgraph_sdk import Auth

from mneme.auth import DEV_MODE_WARNING, Authenticator, client_is_local
from mneme.errors import AuthenticationError, InvalidInputError

log = logging.getLogger(__name__)

auth = Auth()

OWNER = "owner"
_WRITES = frozenset({"create", "create_run", "update"})
_STORE_READS = frozenset({"get", "search", "list_namespaces"})
_lock = threading.Lock()
_authenticator: Authenticator | None = None


def _get_authenticator() -> Authenticator:
    global _authenticator
    with _lock:
        if _authenticator is None:
            from mneme.config import Settings

            _authenticator = Authenticator.from_settings(Settings.from_env())
            if _authenticator.dev_mode:
                log.warning(DEV_MODE_WARNING)
        return _authenticator


def _forbid(detail: str, status: int = 401) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=status, detail=detail)


def _remote_dev_allowed() -> bool:
    return (os.environ.get("MNEME_INSECURE_DEV_AUTH") or "").strip().lower() in ("1", "true", "yes", "on")


@auth.authenticate
async def authenticate(authorization: str | None, headers: dict[bytes, bytes],
                       scope: dict[str, Any] | None = None) -> Auth.types.MinimalUserDict:
    """The caller: a verified user, or in dev mode an empty identity (the run names its user).

    Dev mode answers loopback clients only (``langgraph dev --host 0.0.0.0`` would otherwise let anyone on the
    network read any user's memory), unless ``MNEME_INSECURE_DEV_AUTH=1``.
    """
    authenticator = await asyncio.to_thread(_get_authenticator)
    claimed = headers.get(b"x-user-id")
    try:
        principal = await asyncio.to_thread(
            authenticator.authenticate, authorization, claimed.decode("utf-8", "replace") if claimed else None)
    except AuthenticationError as exc:
        raise _forbid(str(exc)) from exc
    except InvalidInputError as exc:
        raise _forbid(f"X-User-Id: {exc}") from exc
    if principal.via == "dev":
        client = (scope or {}).get("client")
        if not client_is_local(client[0] if client else None) and not _remote_dev_allowed():
            raise _forbid("dev mode answers this machine only: configure API keys or JWT "
                          "(or set MNEME_INSECURE_DEV_AUTH=1)", 403)
        return {"identity": "", "display_name": "dev mode", "permissions": []}
    if not principal.user_id:
        raise _forbid("these credentials name no user")
    return {"identity": principal.user_id, "permissions": ["admin"] if principal.admin else []}


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """Stamp ``metadata.owner`` on what a user creates; let each user see and change only their own."""
    owner = ctx.user.identity
    if not owner:
        return None  # dev mode
    if ctx.resource == "assistants" and ctx.action in ("read", "search"):
        return None
    if ctx.action in _WRITES and isinstance(value, dict):
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"][OWNER] = owner  # in place: the server keeps its own reference to this dict
    return {OWNER: owner}


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Store items of a user live under ``("memories", <user>)``; a search or listing without one is put there.

    The server's store is an admin ``MnemeStore``, so this handler is what keeps a caller to their own items.
    """
    owner = ctx.user.identity
    if not owner or "admin" in ctx.permissions:
        return  # dev mode, or an --admin key (it manages shared documents)
    mine = ("memories", owner)
    namespace = tuple(value.get("namespace") or ())
    if namespace[:2] == mine:
        return
    if namespace[:1] == ("documents",) and ctx.action in _STORE_READS:
        return  # shared documents: everyone reads them, only admins write them
    if ctx.action in ("search", "list_namespaces") and namespace in ((), ("memories",)):
        value["namespace"] = mine
        return
    raise _forbid(f"store namespaces of this user start with {mine!r}", 403)
