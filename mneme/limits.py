"""How big a request may be: the body (checked before it is parsed), the messages in it, and each message.

Limits come from ``Settings`` (``MNEME_MAX_BODY_BYTES``, ``MNEME_MAX_REQUEST_MESSAGES``,
``MNEME_MAX_MESSAGE_CHARS``). Anything over a limit is refused with ``RequestTooLargeError`` (HTTP 413)
before the graph runs, so nothing of it is stored: no checkpoint, no memory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mneme.errors import RequestTooLargeError


def content_chars(content: Any) -> int:
    """Characters of a message content, as a message or a request body holds it (text parts summed)."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p) if isinstance(p, str) else len(str(p.get("text", ""))) if isinstance(p, dict) else 0
                   for p in content)
    return 0


def check_size(size: int, max_chars: int) -> None:
    """Refuse one message of ``size`` characters when it is over ``max_chars``."""
    if size > max_chars:
        raise RequestTooLargeError(
            f"message is {size:,} characters long; the limit is {max_chars:,} (MNEME_MAX_MESSAGE_CHARS). "
            "Nothing was stored: send a shorter message, or ingest long text as a document (mneme ingest).")


def check_sizes(sizes: Sequence[int], *, max_chars: int, max_messages: int) -> None:
    """Refuse a request of more than ``max_messages`` messages or with any message over ``max_chars``."""
    if len(sizes) > max_messages:
        raise RequestTooLargeError(
            f"request carries {len(sizes)} messages; the limit is {max_messages} (MNEME_MAX_REQUEST_MESSAGES). "
            "Send only the new message: the thread keeps the conversation.")
    for size in sizes:
        check_size(size, max_chars)


def check_messages(messages: Sequence[BaseMessage], *, max_chars: int, max_messages: int) -> None:
    """``check_sizes`` for LangChain messages."""
    check_sizes([content_chars(m.content) for m in messages], max_chars=max_chars, max_messages=max_messages)


class BodyLimitMiddleware:
    """ASGI middleware answering 413 to a request body over ``max_bytes``, before the app reads or parses it.

    A declared ``Content-Length`` over the limit is refused at once; a body without one (chunked) is read
    only up to the limit. Bodies within the limit are handed to the app unchanged.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the body's size, then run the app (or answer 413)."""
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, f"{int(declared):,} bytes")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, f"over {self.max_bytes:,} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, size: str) -> None:
        detail = (f"request body is {size}; the limit is {self.max_bytes:,} bytes (MNEME_MAX_BODY_BYTES). "
                  "Nothing was read or stored.")
        payload = json.dumps({"detail": detail}).encode()
        headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json"),
                                              (b"content-length", str(len(payload)).encode()),
                                              (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def limits_of(settings: Any) -> dict[str, int]:
    """The message limits of ``settings`` as ``check_messages`` keywords."""
    return {"max_chars": int(settings.max_message_chars), "max_messages": int(settings.max_request_messages)}
