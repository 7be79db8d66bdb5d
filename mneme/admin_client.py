"""``MemoryAdmin`` over HTTP: the admin CLI beside a running ``mneme serve`` on the same data directory.

An embedded data directory belongs to one process (its lock). While ``mneme serve`` holds it, the server
writes ``$MNEME_DATA_DIR/server.json`` (its URL and a local admin token, mode 0600); ``open_admin`` finds it
and this client speaks the server's memory API (``mneme.api``) as that admin, naming the user with
``X-User-Id``. Answers are the same JSON-ready dicts ``LocalAdmin`` gives, so the command prints the same.
Deleting and restoring check every id first (one list request), so an unknown id changes nothing here too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import httpx

from mneme.admin import LocalAdmin, MemoryAdmin, check_found
from mneme.config import Settings
from mneme.errors import InvalidInputError, MemoryStoreError, StoreLockedError, StoreUnavailableError
from mneme.memory.base import Kind, validate_tenant

PAGE = 1000


def request_server(client: httpx.Client, method: str, path: str, *, allow: tuple[int, ...] = (),
                   **kwargs: Any) -> httpx.Response:
    """One request to a running ``mneme serve``; its failures as Mneme's errors: no answer is
    ``StoreUnavailableError``, a 4xx (other than ``allow``) ``InvalidInputError``, a 5xx ``MemoryStoreError``,
    each naming the server and its ``detail``."""
    url = str(client.base_url).rstrip("/")
    try:
        response = client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise StoreUnavailableError(f"the running mneme serve at {url} did not answer: {exc}") from exc
    if response.status_code >= 400 and response.status_code not in allow:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        error = InvalidInputError if response.status_code < 500 else MemoryStoreError
        raise error(f"mneme serve at {url} answered {response.status_code}: {detail}")
    return response


class RemoteAdmin:
    """``MemoryAdmin`` through a running server's memory API."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self._client = httpx.Client(base_url=self.url, timeout=timeout, transport=transport,
                                    headers={"Authorization": f"Bearer {token}"})

    def _call(self, method: str, path: str, user_id: str, **kwargs: Any) -> httpx.Response:
        headers = {b"X-User-Id": validate_tenant(user_id).encode("utf-8")}  # UTF-8 bytes: 张三 is a user id too
        return request_server(self._client, method, path, allow=(404,), headers=headers, **kwargs)

    def list_memories(self, user_id: str, kinds: Sequence[Kind] | None = None) -> list[dict[str, Any]]:
        """Every record of ``user_id`` (live and archived), oldest first, page by page."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": PAGE, **({"kind": [str(k) for k in kinds]} if kinds else {})}
        while True:
            page = self._call("GET", "/memories", user_id, params={**params, "offset": len(items)}).json()
            items.extend(page["memories"])
            if not page["memories"] or len(items) >= int(page["total"]):
                return items

    def search(self, user_id: str, query: str, *, k: int = 10) -> list[dict[str, Any]]:
        """Recall as the agent would, with scores (the server does it; nothing is reinforced)."""
        results: list[dict[str, Any]] = self._call("POST", "/memories/search", user_id,
                                                   json={"query": query, "k": k}).json()["results"]
        return results

    def delete(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Delete these records; an id that is not one of the user's is an error and nothing is deleted."""
        ids = list(dict.fromkeys(ids))
        check_found(user_id, ids, [m["id"] for m in self.list_memories(user_id)])
        for rid in ids:
            if self._call("DELETE", f"/memories/{rid}", user_id).status_code == 404:
                raise InvalidInputError(f"record {rid} of user {user_id} was deleted meanwhile")
        return ids

    def erase(self, user_id: str) -> dict[str, int]:
        """Erase everything the server keeps about ``user_id``; what it removed, by kind of data."""
        body = self._call("DELETE", "/memories", user_id).json()
        erased: dict[str, int] = body.get("erased") or {"records": int(body.get("deleted", 0))}
        return erased

    def export(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Everything kept about ``user_id``, as the server exports it (JSON lines)."""
        for line in self._call("GET", "/memories/export", user_id).text.splitlines():
            if line.strip():
                yield json.loads(line)

    def restore(self, user_id: str, ids: Sequence[str]) -> list[str]:
        """Bring archived records back into recall; an id that is not archived is an error."""
        ids = list(dict.fromkeys(ids))
        check_found(user_id, ids, [m["id"] for m in self.list_memories(user_id) if m["archived"]], "archived record")
        for rid in ids:
            self._call("POST", f"/memories/{rid}/restore", user_id)
        return ids

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()


def open_admin(settings: Settings) -> MemoryAdmin:
    """The admin interface for ``settings``: the store itself, or the running server that holds it.

    With a Chroma server (``MNEME_CHROMA_URL``) every process opens the store directly. With an embedded data
    directory, a running ``mneme serve`` (its ``server.json``) is used through its memory API; otherwise the
    directory is opened here, and if another process holds it the error says what to do.
    """
    from mneme.server_info import read_server_file
    from mneme.stores import open_service
    from mneme.threads import open_checkpointer

    if not settings.chroma_url:
        info = read_server_file(settings.data_dir)
        if info is not None:
            return RemoteAdmin(str(info["url"]), str(info["admin_token"]))
    try:
        service = open_service(settings)
    except StoreLockedError:
        info = None if settings.chroma_url else read_server_file(settings.data_dir)
        if info is not None:  # the server started meanwhile
            return RemoteAdmin(str(info["url"]), str(info["admin_token"]))
        raise
    stack = ExitStack()
    try:
        checkpointer = stack.enter_context(open_checkpointer(settings))  # the user's threads, for erase and export
    except BaseException:
        service.close()
        raise
    return LocalAdmin(service, checkpointer=checkpointer, on_close=stack.close)
