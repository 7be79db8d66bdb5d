"""A fake OpenAI-compatible HTTP server that answers from a script and misbehaves on demand.

``FakeChatModel`` tests the graph; this tests the real ``ChatOpenAI`` path (the OpenAI SDK, its HTTP
client, timeouts, retries, streaming, structured output) against a real socket on a loopback port, and
other processes (``mneme chat``, ``mneme serve``) can point ``OPENAI_BASE_URL`` at it.

Replies are consumed in order (the last one repeats); each is one of:

- ``str``: the assistant's text (streamed word by word when the request asks for ``stream``);
- ``dict`` / pydantic object: structured output: a tool call when the request offers tools, else JSON
  text (what ``with_structured_output`` parses);
- ``ToolCall(name, args)``: a tool call;
- a failure: ``Status(500)`` (an error status with an OpenAI-style error body), ``Hang(seconds)``
  (hold the request, answer nothing), ``Drop()`` (close the connection without a response),
  ``Garbage()`` (200 with a body that is not JSON), ``Cut(after=N)`` (start the answer, then drop the
  connection after N words: a model failing midway through a streamed answer).

``handler(request_json) -> reply`` replaces the script when given. ``fail(failure)`` makes every
request fail that way until ``fail(None)``; ``fail_embeddings(failure)`` only the embedding requests, and
``embedding_delay`` holds each embedding request that many seconds. ``attempts`` counts the chat-completion
requests that reached the socket (the SDK's retries included), ``embedding_attempts`` the embedding ones,
``requests`` keeps each request's path and JSON body.

Example::

    with FakeOpenAIServer(["你好！", Status(503)]) as server:
        model = ChatOpenAI(model="fake", base_url=server.url, api_key="x", max_retries=0)
        model.invoke("hi")          # -> "你好！"
        server.fail(Hang(30))       # every request now hangs (until fail(None) or stop())
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class ToolCall:
    """Reply with a call of tool ``name`` with ``args``."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Status:
    """Fail with HTTP ``code`` and an OpenAI-style error body."""

    code: int = 500
    message: str = "fake server error"


@dataclass(frozen=True)
class Hang:
    """Hold the request ``seconds`` (or until the server stops) and then close it without a reply."""

    seconds: float = 3600.0


@dataclass(frozen=True)
class Drop:
    """Close the connection without sending a response."""


@dataclass(frozen=True)
class Garbage:
    """Answer 200 with a body that is not JSON."""

    body: bytes = b'{"id": "chatcmpl-garbage", "choices": [ {{{ not json'


@dataclass(frozen=True)
class Cut:
    """Start answering ``text`` (default: the server's default reply), then drop the connection: a streamed
    request gets ``after`` words as content deltas, a plain one the response head and part of its body.

    ``chunked``: the stream is sent in chunked encoding (as Ollama, vLLM or OpenAI do) and stops inside
    it, so the client sees an error; otherwise it ends like a complete body, only without a finish reason.
    """

    after: int = 3
    text: str | None = None
    chunked: bool = False


Failure = Status | Hang | Drop | Garbage | Cut
Reply = str | dict[str, Any] | BaseModel | ToolCall | Failure
RequestHandler = Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    path: str
    body: dict[str, Any]
    at: float


class FakeOpenAIServer:
    """A real HTTP server on ``127.0.0.1`` (a free port) serving ``/v1/chat/completions``,
    ``/v1/embeddings`` and ``/v1/models``, in a background thread. Use it as a context manager or call
    ``start()`` / ``stop()``. ``url`` is the ``base_url`` to give ``ChatOpenAI`` (ends in ``/v1``)."""

    def __init__(self, replies: list[Reply] | None = None, *, handler: RequestHandler | None = None,
                 default: str = "好的。", model: str = "fake-model", host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self._replies: list[Reply] = list(replies or [])
        self.handler = handler
        self.default = default
        self.model = model
        self._failure: Failure | None = None
        self._embedding_failure: Failure | None = None
        self._index = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[Recorded] = []
        self.attempts = 0
        """Chat-completion requests received (each SDK retry counts)."""
        self.embedding_attempts = 0
        """Embedding requests received."""
        self.embedding_delay = 0.0
        """Seconds each embedding request is held before its answer (a slow endpoint)."""
        self._httpd = _QuietServer((host, port), _handler_class(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI ``base_url``: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Serve in a daemon thread; returns self."""
        if self._thread is None:
            # a short poll interval: ``stop`` waits for it (the default 0.5 s added that to every test)
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="fake-openai", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging requests, stop serving and close the socket."""
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script ------------------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        """Replace the script (and start it from its first reply)."""
        with self._lock:
            self._replies, self._index = list(replies), 0

    def fail(self, failure: Failure | None) -> None:
        """Fail every request this way from now on (``None``: back to the script)."""
        with self._lock:
            self._failure = failure

    def fail_embeddings(self, failure: Failure | None) -> None:
        """Fail every embedding request this way from now on, chat untouched (``None``: answer them again)."""
        with self._lock:
            self._embedding_failure = failure

    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completion requests received so far."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.attempts += 1
            if self._failure is not None:
                return self._failure
            if self.handler is None:
                if not self._replies:
                    return self.default
                out = self._replies[min(self._index, len(self._replies) - 1)]
                self._index += 1
                return out
        return self.handler(body)

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(path=path, body=body, at=time.time()))


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up on a failure it asked for (a cut stream) is expected: no traceback on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler_class(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_FakeHandler):
        fake = server

    return Handler


class _FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the OpenAI SDK's httpx client expects
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
        pass

    # -- plumbing ----------------------------------------------------------------------------------
    def _send_json(self, code: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        return body if isinstance(body, dict) else {"_raw": body}

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _fail(self, failure: Failure, body: dict[str, Any] | None = None) -> None:
        if isinstance(failure, Cut):
            self._cut(failure, body or {})
        elif isinstance(failure, Status):
            self._send_json(failure.code, {"error": {"message": failure.message, "type": "server_error",
                                                     "code": failure.code}})
        elif isinstance(failure, Hang):
            self.fake._stopping.wait(failure.seconds)
            self._drop()
        elif isinstance(failure, Drop):
            self._drop()
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(failure.body)))
            self.end_headers()
            self.wfile.write(failure.body)

    # -- routes ------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        with self.fake._lock:
            failure = self.fake._failure
        if failure is not None:  # a failing endpoint fails its model list too (what `mneme doctor` asks)
            self._fail(failure)
        elif self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": self.fake.model, "object": "model", "created": 0, "owned_by": "mneme-fake"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        body = self._read_body()
        self.fake._record(self.path, body)
        if self.path.rstrip("/").endswith("/chat/completions"):
            reply = self.fake._next(body)
            if isinstance(reply, Status | Hang | Drop | Garbage | Cut):
                self._fail(reply, body)
            elif body.get("stream"):
                self._stream(body, reply)
            else:
                self._send_json(200, _completion(body, reply, self.fake.model))
        elif self.path.rstrip("/").endswith("/embeddings"):
            with self.fake._lock:
                self.fake.embedding_attempts += 1
                failure = self.fake._embedding_failure or self.fake._failure
            if failure is not None:
                self._fail(failure, body)
                return
            if self.fake.embedding_delay:
                self.fake._stopping.wait(self.fake.embedding_delay)
            texts = body.get("input") or []
            texts = [texts] if isinstance(texts, str) else texts
            self._send_json(200, {"object": "list", "model": body.get("model", self.fake.model), "data": [
                {"object": "embedding", "index": i, "embedding": _vector(str(t))} for i, t in enumerate(texts)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0}})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _cut(self, cut: Cut, body: dict[str, Any]) -> None:
        text = cut.text if cut.text is not None else self.fake.default
        if body.get("stream"):
            self._stream(body, text, stop_after=cut.after, chunked=cut.chunked)
            return
        data = json.dumps(_completion(body, text, self.fake.model), ensure_ascii=False).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self._drop()

    def _stream(self, body: dict[str, Any], reply: Reply, *, stop_after: int | None = None,
                chunked: bool = False) -> None:
        message, finish = _message(body, reply)
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.fake.model}
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        text = message.get("content") or ""
        deltas += [{"content": piece} for piece in _pieces(text)]
        for n, call in enumerate(message.get("tool_calls") or []):
            deltas.append({"tool_calls": [{"index": n, **call}]})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # no Content-Length: the body ends when the socket closes
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        if stop_after is not None:  # a model dying midway: some words, then the connection drops
            for event in events[: stop_after + 1]:
                data = f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
                self.wfile.flush()
            if chunked:  # a chunk announced and never finished: an incomplete body
                self.wfile.write(b"ff\r\ndata: {")
                self.wfile.flush()
            self._drop()
            return
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**base, "choices": [], "usage": _usage(body, text)})
        for event in events:
            self.wfile.write(f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _pieces(text: str) -> list[str]:
    import re

    return re.findall(r"\S+\s*|\s+", text) or [""]


def _message(body: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], str]:
    """The assistant message for ``reply`` as the request expects it, and the finish reason."""
    if isinstance(reply, BaseModel):
        reply = reply.model_dump(mode="json")
    tools = body.get("tools") or []
    if isinstance(reply, dict) and tools:
        choice = body.get("tool_choice")
        name = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        reply = ToolCall(name or tools[0]["function"]["name"], reply)
    if isinstance(reply, ToolCall):
        call = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                "function": {"name": reply.name, "arguments": json.dumps(reply.args, ensure_ascii=False)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    if isinstance(reply, dict):
        return {"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)}, "stop"
    return {"role": "assistant", "content": str(reply)}, "stop"


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [] if isinstance(m, dict))
    return {"prompt_tokens": prompt // 4 + 1, "completion_tokens": len(text) // 4 + 1,
            "total_tokens": prompt // 4 + len(text) // 4 + 2}


def _completion(body: dict[str, Any], reply: Reply, model: str) -> dict[str, Any]:
    message, finish = _message(body, reply)
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                         "logprobs": None}],
            "usage": _usage(body, message.get("content") or "")}


def _vector(text: str, dimension: int = 64) -> list[float]:
    vec = [0.0] * dimension
    for word in text.lower().split() or [text]:
        vec[int.from_bytes(hashlib.blake2b(word.encode("utf-8", "replace"), digest_size=4).digest(), "little")
            % dimension] += 1.0
    norm = sum(x * x for x in vec) ** 0.5 or 1.0
    return [x / norm for x in vec]


_MODES: dict[str, Callable[[float], Failure | None]] = {
    "ok": lambda _: None, "500": lambda _: Status(500), "503": lambda _: Status(503),
    "hang": lambda s: Hang(s), "drop": lambda _: Drop(), "garbage": lambda _: Garbage(),
    "cut": lambda _: Cut(after=3),
}


def main(argv: list[str] | None = None) -> int:
    """``python -m mneme.fake_openai --mode hang --port 8089``: a misbehaving endpoint for manual trials."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--mode", choices=sorted(_MODES), default="ok")
    p.add_argument("--hang-seconds", type=float, default=3600.0)
    p.add_argument("--reply", default="好的。")
    args = p.parse_args(argv)
    server = FakeOpenAIServer(default=args.reply, port=args.port).start()
    server.fail(_MODES[args.mode](args.hang_seconds))
    print(f"fake OpenAI server at {server.url} mode={args.mode}", flush=True)
    try:
        while True:
            time.sleep(5)
            print(f"attempts={server.attempts}", flush=True)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
