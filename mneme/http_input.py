"""The HTTP edge: a request body is valid UTF-8 JSON of sane depth before any route sees it, and no error
ever drops a keep-alive connection silently.

- ``JSONBodyMiddleware`` checks every request body that may hold JSON: bytes that are not UTF-8 (a UTF-8
  BOM is dropped), JSON that does not parse, ``NaN``/``Infinity``, numbers out of range, and nesting deeper
  than ``MAX_DEPTH`` are refused with 400 and a message saying which; lone surrogates (``"\\ud800"``, which
  JSON allows but no UTF-8 text can hold) and NULs (``"\\u0000"``, which PostgreSQL text cannot hold) are
  replaced with U+FFFD, so the routes, the embedder and the stores only ever see text they can keep.
- ``LastResortMiddleware`` (outermost) turns an exception no handler took into a JSON 500 that says
  ``Connection: close``, instead of a dropped connection the client must discover on its next request.
- ``client_error_handlers`` map what malformed input raises deep inside (pydantic validation of a message,
  a recursion limit, a codec error) to 4xx.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mneme.errors import InvalidInputError
from mneme.memory.base import clean_text

log = logging.getLogger(__name__)

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a body may have (a message needs 5)."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_NOT_JSON = (b"multipart/", b"application/x-www-form-urlencoded")


class BadBodyError(ValueError):
    """A request body that is not usable JSON; the message says why (answered with 400)."""


def _depth_over(body: bytes, limit: int) -> bool:
    """True when arrays/objects nest deeper than ``limit`` (strings skipped, escapes honoured)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _constant(name: str) -> Any:
    raise BadBodyError(f"{name} is not a JSON number: send finite numbers only")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadBodyError(f"number {text[:40]} is out of range")
    return value


def _sanitize(value: Any) -> tuple[Any, bool]:
    """``value`` with lone surrogates and NULs in its strings (keys too) replaced by U+FFFD; whether any was."""
    if isinstance(value, str):
        clean = clean_text(value)
        return clean, clean is not value and clean != value
    if isinstance(value, list):
        items = [_sanitize(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            key, c1 = _sanitize(k)
            val, c2 = _sanitize(v)
            out[key] = val
            changed = changed or c1 or c2
        return out, changed
    return value, False


def parse_body(body: bytes) -> tuple[Any, bytes]:
    """The JSON value of ``body`` and the bytes to hand on (re-encoded only when something was replaced).

    Raises ``BadBodyError`` saying what is wrong: not UTF-8, not JSON, NaN/Infinity, too deep, too big a number.
    """
    raw = body[3:] if body.startswith(b"\xef\xbb\xbf") else body
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBodyError(f"request body is not valid UTF-8 (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); "
                           "send JSON encoded as UTF-8") from None
    if _depth_over(raw, MAX_DEPTH):
        raise BadBodyError(f"JSON nests deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float)
    except BadBodyError:
        raise
    except RecursionError:
        raise BadBodyError(f"JSON nests deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise BadBodyError(f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise BadBodyError(f"request body has an unusable number: {str(exc)[:120]}") from None
    clean, changed = _sanitize(value)
    if changed or raw is not body:
        return clean, json.dumps(clean, ensure_ascii=False).encode("utf-8")
    return clean, body


async def _send_json(send: Send, status: int, payload: dict[str, Any], *, close: bool = False) -> None:
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class JSONBodyMiddleware:
    """ASGI middleware: refuse (400) a body that is not UTF-8 JSON of sane depth; replace lone surrogates.

    Only bodies of POST/PUT/PATCH that may be JSON are read (form and multipart uploads pass untouched);
    an empty body passes (the route decides whether it needs one).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body, check it, then run the app with the (possibly cleaned) body."""
        if scope["type"] != "http" or scope.get("method") not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        content_type = dict(scope.get("headers") or []).get(b"content-type", b"").lower()
        if content_type.startswith(_NOT_JSON):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body.strip():
            try:
                _, body = parse_body(body)
            except BadBodyError as exc:
                await _send_json(send, 400, {"detail": str(exc)})
                return
        headers = [(k, v) for k, v in scope.get("headers") or [] if k != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class LastResortMiddleware:
    """ASGI middleware (outermost): an unhandled exception becomes a JSON 500 with ``Connection: close``.

    The server stays up and the client is told the connection ends, rather than finding it dropped.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app; answer 500 if it raised before starting its response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await _send_json(send, 500, {"detail": "internal error; the server logged it and keeps running"},
                             close=True)


def check_message_shapes(messages: list[Any]) -> None:
    """Refuse (``InvalidInputError``, 422) messages LangChain cannot build, before a route starts answering.

    A stream has sent its 200 by the time the graph converts its input; a malformed content part found
    then could only break the stream. Checked here, it is a clear 422 instead.
    """
    from langchain_core.messages import convert_to_messages

    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            continue  # the route's own validation names this
        try:
            convert_to_messages([message])
        except Exception as exc:  # noqa: BLE001 - whatever LangChain raises, the message is unusable
            raise InvalidInputError(f"message {n} cannot be read: {' '.join(str(exc).split())[:300]}") from None


def _client_error(status: int, what: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(_: Request, exc: Exception) -> Response:
        return JSONResponse({"detail": f"{what}: {str(exc)[:500]}"}, status_code=status)

    return handle


def client_error_handlers() -> dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]]:
    """Exception handlers for what malformed input raises inside a route (all 4xx)."""
    return {
        ValidationError: _client_error(422, "a message or setting has the wrong shape"),
        RecursionError: _client_error(400, "input nests too deeply"),
        UnicodeError: _client_error(400, "text is not valid Unicode"),
        OverflowError: _client_error(422, "a number is out of range"),
    }
