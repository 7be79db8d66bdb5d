"""A Chinese user id (``mneme chat -u 张三`` makes one) works over HTTP too: ``X-User-Id`` carries it as UTF-8
bytes, the server reads it back as UTF-8 (servers decode header bytes as Latin-1), and ``mneme memories``
beside a running server sends it that way (it crashed with UnicodeEncodeError)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.admin_client import RemoteAdmin
from mneme.auth import header_text
from mneme.server_info import read_server_file


def test_header_text_undoes_latin1_decoding_only() -> None:
    assert header_text("张三".encode().decode("latin-1")) == "张三"
    assert header_text("alice") == "alice"
    assert header_text("张三") == "张三"      # already text (langgraph dev decodes UTF-8 itself)
    assert header_text("caf\xe9") == "caf\xe9"  # Latin-1 that is not UTF-8 stays


@pytest.mark.slow
def test_a_chinese_user_id_over_http_and_the_admin_cli(spawn_mneme_serve: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = spawn_mneme_serve({"MNEME_DATA_DIR": str(data)})
    turn = httpx.post(f"{server.url}/agent/invoke", timeout=60, headers={b"X-User-Id": "张三".encode()},
                      json={"input": {"messages": [{"role": "user", "content": "我喜欢乌龙茶"}]}})
    assert turn.status_code == 200, turn.text
    info = read_server_file(data)
    assert info is not None
    admin = RemoteAdmin(str(info["url"]), str(info["admin_token"]))
    try:
        texts = [m["text"] for m in admin.list_memories("张三")]
        assert any("乌龙茶" in t for t in texts), texts
        assert admin.list_memories("alice") == []
    finally:
        admin.close()
