"""A NUL in a message (``"\\u0000"``, valid JSON) is replaced at the HTTP edge and at the memory layer's entry:
PostgreSQL text cannot hold it, and a thread kept there failed to save (500, and every later turn of that
thread failed too)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mneme.http_input import parse_body
from mneme.memory.base import clean_text


def test_nul_is_replaced_like_a_lone_surrogate() -> None:
    assert clean_text("a\x00b\ud800") == "a\ufffdb\ufffd"
    ok = "plain 文本"
    assert clean_text(ok) is ok
    value, out = parse_body(b'{"input": {"messages": [{"role": "user", "content": "a\\u0000b"}]}}')
    assert value["input"]["messages"][0]["content"] == "a\ufffdb"
    assert "\x00" not in out.decode("utf-8") and json.loads(out) == value


@pytest.mark.slow
def test_a_nul_in_a_message_keeps_a_postgresql_thread_working(spawn_mneme_serve: Any,
                                                               postgres_server: Any) -> None:
    server = spawn_mneme_serve({"MNEME_POSTGRES_URL": postgres_server.database()})

    def turn(text: str) -> httpx.Response:
        return httpx.post(f"{server.url}/agent/invoke", timeout=60,
                          headers={"X-User-Id": "nina", "X-Thread-Id": "n1"},
                          json={"input": {"messages": [{"role": "user", "content": text}]}})

    for text in ("I like chess", "NULMARK a\x00b chess", "what about chess?"):
        response = turn(text)
        assert response.status_code == 200, (text, response.text, server.log_text()[-1500:])
    listed = httpx.get(f"{server.url}/memories", headers={"X-User-Id": "nina"}, timeout=60).json()
    texts = [m["text"] for m in listed["memories"]]
    assert any("NULMARK a\ufffdb" in t for t in texts), texts
