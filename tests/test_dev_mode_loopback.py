"""Dev mode (the caller names the user) answers this machine only, however the app is served: ``mneme serve``
refuses a non-loopback host, but ``uvicorn --factory mneme.serve:create_app --host 0.0.0.0`` (which the README
offers) served anyone on the network as any user they named."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from langgraph.checkpoint.memory import InMemorySaver

from mneme.auth import Authenticator
from mneme.config import Settings
from mneme.graph import build_graph
from mneme.keys import KeyStore
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.serve import create_app
from mneme.testing import FakeEmbeddings


def _app(tmp_path: Path, authenticator: Authenticator, *, remote_dev_auth: bool = False) -> FastAPI:
    service = MemoryService(InProcessStore(FakeEmbeddings()))
    service.remember_turn("bob", user_text="my bank PIN hint is the dog's name")
    app = create_app(graph=build_graph(service=service, checkpointer=InMemorySaver()), service=service,
                     authenticator=authenticator, settings=Settings(data_dir=tmp_path / "data"),
                     remote_dev_auth=remote_dev_auth)
    return app


@pytest.mark.parametrize(("client", "status"), [
    ("10.1.2.3", 403), ("192.168.0.9", 403), ("2001:db8::1", 403),
    ("127.0.0.1", 200), ("::1", 200), ("::ffff:127.0.0.1", 200),
])
def test_dev_mode_answers_loopback_clients_only(tmp_path: Path, client: str, status: int) -> None:
    http = TestClient(_app(tmp_path, Authenticator()), client=(client, 50000))
    response = http.get("/memories", headers={"X-User-Id": "bob"})
    assert response.status_code == status, response.text
    if status == 403:
        assert "--insecure-dev-auth" in response.json()["detail"] and "bank" not in response.text


def test_insecure_dev_auth_and_credentials_answer_remote_clients(tmp_path: Path) -> None:
    remote = ("10.1.2.3", 50000)
    allowed = TestClient(_app(tmp_path, Authenticator(), remote_dev_auth=True), client=remote)
    assert allowed.get("/memories", headers={"X-User-Id": "bob"}).status_code == 200
    keys = KeyStore(tmp_path / "keys.sqlite3")
    key = keys.create("bob")[1]
    keyed = TestClient(_app(tmp_path, Authenticator(keys=keys)), client=remote)
    assert keyed.get("/memories", headers={"Authorization": f"Bearer {key}"}).json()["total"] == 1
