"""What a client-error answer (4xx) may echo of the request: never more than a short excerpt of any value.

Validation errors name the offending value (pydantic's ``input``, "configurable k='…'"), which is useful for
a typo and harmful for a 300 KB string: the answer would be as large as the request, and a log or a browser
would get it all back. ``ClipEchoMiddleware`` rewrites every 4xx JSON answer so that each string in it is
at most ``MAX_ECHO_CHARS`` characters, the rest replaced by a note of the full length. The status, the
structure and every short message stay as the route produced them.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_ECHO_CHARS = 500
"""Longest string a 4xx answer carries (a message naming the problem fits; an echoed input is cut)."""


def clip_echo(value: Any, limit: int = MAX_ECHO_CHARS) -> Any:
    """``value`` with every string longer than ``limit`` cut, saying how long it was."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}… ({len(value):,} characters in all)"
    if isinstance(value, list):
        return [clip_echo(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: clip_echo(v, limit) for k, v in value.items()}
    return value


class ClipEchoMiddleware:
    """ASGI middleware: a 4xx JSON answer is read whole and re-sent with its long strings clipped."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_ECHO_CHARS) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app, holding back a 4xx JSON answer until it can be clipped."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        chunks: list[bytes] = []

        async def clipping_send(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                if 400 <= message["status"] < 500 and dict(message.get("headers") or []).get(
                        b"content-type", b"").startswith(b"application/json"):  # 2xx pass at once
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks)
                if len(body) > self.limit:
                    with contextlib.suppress(ValueError):
                        body = json.dumps(clip_echo(json.loads(body), self.limit), ensure_ascii=False).encode()
                headers = [(k, v) for k, v in held.get("headers") or [] if k.lower() != b"content-length"]
                await send({**held, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, clipping_send)
