"""Bad input never reaches a 500: a real ``mneme serve`` gets 50 malformed bodies on one keep-alive connection.

Each is refused with a 4xx saying why, or answered after sanitising (lone surrogates become U+FFFD and the
turn is stored); no response is a 5xx, the connection is never dropped, and the server logs no traceback.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from mneme.http_input import MAX_DEPTH, BadBodyError, parse_body
from mneme.memory.base import clean_text
from mneme.memory.lowvalue import content_hash


def msg(content: Any) -> bytes:
    return json.dumps({"input": {"messages": [{"role": "user", "content": content}]}}, ensure_ascii=False).encode()


def setting(raw: bytes) -> bytes:
    return b'{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"configurable": ' + raw + b"}}"


def deep(n: int) -> bytes:
    return ('{"input": {"messages": [{"role": "user", "content": "hi", "x": ' + "[" * n + "]" * n + "}]}}").encode()


MALFORMED: list[tuple[str, bytes]] = [
    ("invalid utf-8", b'{"input": {"messages": [{"role": "user", "content": "I like \xff coffee"}]}}'),
    ("latin-1 body", '{"input": {"messages": [{"role": "user", "content": "café"}]}}'.encode("latin-1")),
    ("utf-16 body", msg("你好").decode().encode("utf-16")),
    ("lone surrogate", b'{"input": {"messages": [{"role": "user", "content": "I like \\ud800 tea"}]}}'),
    ("low surrogate alone", b'{"input": {"messages": [{"role": "user", "content": "\\udc80"}]}}'),
    ("surrogate in a key", b'{"input": {"messages": [{"role": "user", "content": "x", "\\ud800": 1}]}}'),
    ("NaN", setting(b'{"k": NaN}')),
    ("Infinity", setting(b'{"score_floor": Infinity}')),
    ("-Infinity", setting(b'{"mmr_lambda": -Infinity}')),
    ("1e400", setting(b'{"k": 1e400}')),
    ("5000-digit integer", setting(b'{"k": ' + b"9" * 5000 + b"}")),
    ("nested 10k deep", deep(10_000)),
    ("nested 1k deep", deep(1_000)),
    ("objects nested 100k deep", ('{"input": ' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}").encode()),
    ("truncated", b'{"input": {"messages": [{"role": "user", "content": "hi"'),
    ("empty", b""),
    ("not json", b"hello there"),
    ("null", b"null"),
    ("a list", b"[1, 2, 3]"),
    ("a string", b'"hi"'),
    ("input null", b'{"input": null}'),
    ("input a string", b'{"input": "hi"}'),
    ("messages null", b'{"input": {"messages": null}}'),
    ("messages empty", b'{"input": {"messages": []}}'),
    ("messages an object", b'{"input": {"messages": {"role": "user"}}}'),
    ("message a number", b'{"input": {"messages": [5]}}'),
    ("content null", msg(None)),
    ("content a number", msg(5)),
    ("content an object", msg({"text": "hi"})),
    ("content parts numbers", msg([1, 2, 3])),
    ("content parts nested lists", msg([[{"text": "hi"}]])),
    ("content part without text", msg([{"type": "text"}])),
    ("content part text a number", msg([{"type": "text", "text": 5}])),
    ("content part image", msg([{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])),
    ("content part unknown type", msg([{"type": "weird", "blob": "x" * 10}])),
    ("content parts mixed", msg(["hi ", {"type": "text", "text": "there"}, None, 3.5])),
    ("unknown role", b'{"input": {"messages": [{"role": "robot", "content": "hi"}]}}'),
    ("tool message without id", b'{"input": {"messages": [{"type": "tool", "content": "hi"}]}}'),
    ("assistant only", b'{"input": {"messages": [{"role": "assistant", "content": "hi"}]}}'),
    ("NUL bytes", msg("a\u0000b")),
    ("terminal escapes", msg("\u0001\u0002\u001b[31mred")),
    ("UTF-8 BOM", b"\xef\xbb\xbf" + msg("hi with a BOM")),
    ("config a list", b'{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": [1]}'),
    ("configurable a string", setting(b'"x"')),
    ("k a word", setting(b'{"k": "many"}')),
    ("unknown top-level field", b'{"input": {"messages": [{"role": "user", "content": "hi"}]}, "k": 1}'),
]


# -- the parser alone ------------------------------------------------------------------------------
def test_parse_body_replaces_lone_surrogates_and_keeps_good_bytes() -> None:
    good = msg("我喜欢乌龙茶 🍵")
    value, out = parse_body(good)
    assert out is good and value["input"]["messages"][0]["content"] == "我喜欢乌龙茶 🍵"
    value, out = parse_body(b'{"a": "x\\ud800y", "\\udfff": "\\ud83d\\ude00"}')
    assert value == {"a": "x\ufffdy", "\ufffd": "😀"}  # a real pair is one character, kept
    assert json.loads(out.decode("utf-8")) == value


@pytest.mark.parametrize(("body", "says"), [
    (b'{"a": "\xff"}', "UTF-8"), (b'{"a": NaN}', "NaN"), (b'{"a": 1e999}', "out of range"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "deeper"), (b'{"a": ', "not valid JSON"),
])
def test_parse_body_refuses_with_a_reason(body: bytes, says: str) -> None:
    with pytest.raises(BadBodyError, match=says):
        parse_body(body)


def test_brackets_inside_strings_are_not_nesting() -> None:
    value, _ = parse_body(json.dumps({"text": "[" * 500}).encode())
    assert value == {"text": "[" * 500}


def test_memory_layer_hashes_text_with_lone_surrogates() -> None:
    assert clean_text("a\ud800b") == "a\ufffdb" and clean_text("ok") == "ok"
    assert content_hash("I like \ud800 tea") == content_hash("I like \ufffd tea")


# -- a real server ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_malformed_bodies_never_get_a_5xx_and_keep_the_connection(spawn_mneme_serve: Any) -> None:
    server = spawn_mneme_serve()
    parsed = urlparse(server.url)
    statuses: dict[str, int] = {}
    for path in ("/agent/invoke", "/agent/stream"):
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        for name, body in MALFORMED:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json", "X-User-Id": "mal"})
            response = conn.getresponse()  # raises if the server dropped the keep-alive connection
            data = response.read()
            statuses[f"{path} {name}"] = response.status
            assert response.status < 500, (path, name, data[:300])
            assert response.getheader("connection") != "close", (path, name)
        conn.close()
    assert len(statuses) == 2 * len(MALFORMED) >= 80
    refused = {k: v for k, v in statuses.items() if v >= 400}
    assert statuses["/agent/invoke invalid utf-8"] == 400 and statuses["/agent/invoke nested 10k deep"] == 400
    assert statuses["/agent/invoke NaN"] == 400 and statuses["/agent/invoke content parts numbers"] == 422
    assert statuses["/agent/invoke lone surrogate"] == 200  # sanitised, answered and stored
    assert len(refused) >= 60
    log = server.log_text()
    assert "Traceback" not in log and " 500 " not in log

    memories = httpx.get(f"{server.url}/memories", headers={"X-User-Id": "mal"}, timeout=30).json()["memories"]
    assert "user: I like \ufffd tea" in [m["text"] for m in memories]
    ok = httpx.post(f"{server.url}/agent/invoke", headers={"X-User-Id": "mal"}, timeout=60,
                    json={"input": {"messages": [{"role": "user", "content": "what tea do I like?"}]}})
    assert ok.status_code == 200 and "tea" in ok.json()["output"]["answer"]

    # a 4xx names the bad value, but never echoes a huge one back (it did: 300 KB answers to 300 KB bodies)
    huge = "长" * 300_000
    for body in ({"input": {"messages": huge}},  # pydantic's "input" in the detail list
                 {"input": {"messages": [{"role": "user", "content": "x"}]}, "config": {"configurable": {"k": huge}}},
                 {"input": {"messages": [{"role": "user", "content": "x"}], "extra": huge}}):
        r = httpx.post(f"{server.url}/agent/invoke", json=body, headers={"X-User-Id": "mal"}, timeout=60)
        assert r.status_code == 422 and len(r.content) < 5_000, (r.status_code, len(r.content))
        assert re.search(r"\(300,\d{3} characters in all\)", r.text), r.text[:300]


@pytest.mark.slow
def test_healthz_and_readyz(spawn_mneme_serve: Any) -> None:
    server = spawn_mneme_serve()
    assert httpx.get(f"{server.url}/healthz", timeout=10).json() == {"status": "ok"}
    ready = httpx.get(f"{server.url}/readyz", timeout=30)
    body = ready.json()
    assert ready.status_code == 200 and body["status"] == "ready" and body["failed"] == []
    assert set(body["checks"]) == {"memory_store", "embedder", "checkpointer", "journal"}
    assert all(c["ok"] for c in body["checks"].values())


@pytest.mark.server
def test_an_unexpected_error_is_a_500_that_closes_the_connection(tmp_path: Any) -> None:
    import socket
    import threading
    import time

    import uvicorn
    from langchain_core.runnables import RunnableLambda

    from mneme.config import Settings
    from mneme.serve import create_app

    def broken(_: Any) -> Any:
        raise RuntimeError("a bug, not the caller's fault")

    app = create_app(graph=RunnableLambda(broken), settings=Settings(data_dir=tmp_path / "data"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/agent/invoke", body=msg("hi"), headers={"Content-Type": "application/json",
                                                                        "X-User-Id": "u"})
        response = conn.getresponse()
        body = json.loads(response.read())
        assert response.status == 500 and response.getheader("connection") == "close"
        assert "keeps running" in body["detail"] and "bug" not in body["detail"]  # no internals leak
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_client_error_clips_what_it_echoes_and_keeps_the_rest() -> None:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    from mneme.http_errors import ClipEchoMiddleware

    long = "x" * 10_000

    async def refuse(request: Any) -> JSONResponse:
        return JSONResponse({"detail": [{"msg": "wrong shape", "input": long, "loc": ["a"]}]}, status_code=422)

    async def fine(request: Any) -> JSONResponse:
        return JSONResponse({"echo": long})

    async def text(request: Any) -> PlainTextResponse:
        return PlainTextResponse(long, status_code=404)

    app = ClipEchoMiddleware(Starlette(routes=[Route("/refuse", refuse), Route("/fine", fine),
                                               Route("/text", text)]))
    from starlette.testclient import TestClient

    client = TestClient(app)
    refused = client.get("/refuse")
    (error,) = refused.json()["detail"]
    assert refused.status_code == 422 and error["msg"] == "wrong shape" and error["loc"] == ["a"]
    assert error["input"].startswith("x" * 500) and error["input"].endswith("(10,000 characters in all)")
    assert int(refused.headers["content-length"]) == len(refused.content) < 1_000
    assert client.get("/fine").json() == {"echo": long}  # a success is never touched
    assert len(client.get("/text").text) == 10_000  # nor a non-JSON answer
