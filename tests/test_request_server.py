"""How the admin and documents clients read a running server's failures (one function for both)."""

from __future__ import annotations

import httpx
import pytest

from mneme.admin_client import request_server
from mneme.errors import InvalidInputError, MemoryStoreError, StoreUnavailableError


def client(status: int, body: object) -> httpx.Client:
    return httpx.Client(base_url="http://mneme.test/",
                        transport=httpx.MockTransport(lambda request: httpx.Response(status, json=body)))


def test_a_4xx_is_invalid_input_and_a_5xx_a_store_error_naming_the_server_and_detail() -> None:
    with pytest.raises(InvalidInputError, match=r"mneme serve at http://mneme.test answered 422: 用户名无效"):
        request_server(client(422, {"detail": "用户名无效"}), "GET", "/documents")
    with pytest.raises(MemoryStoreError, match="answered 503: store down"):
        request_server(client(503, {"detail": "store down"}), "GET", "/documents")


def test_an_allowed_status_comes_back_and_no_answer_is_store_unavailable() -> None:
    assert request_server(client(404, {"detail": "no such id"}), "GET", "/memories/x", allow=(404,)).status_code == 404

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    dead = httpx.Client(base_url="http://mneme.test", transport=httpx.MockTransport(refuse))
    with pytest.raises(StoreUnavailableError, match="did not answer"):
        request_server(dead, "GET", "/documents")
