"""Shared fixtures: the three store backends, a session-wide ``chroma run`` server, a clean environment."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pgserver import PostgresServer

from mneme.evaluation.bench_store import ChromaProcess as ChromaServer
from mneme.evaluation.bench_store import free_port
from mneme.memory.base import MemoryStore
from mneme.memory.chroma import open_chroma_store
from mneme.memory.inprocess import InProcessStore
from mneme.testing import FakeEmbeddings, FakeOpenAIServer

BACKENDS = ("inprocess", "embedded", "server")


@pytest.fixture(autouse=True)
def _restore_environ() -> Iterator[None]:
    """Whatever a test does to os.environ is undone after it."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One Chroma server for the whole session; tests isolate themselves with unique prefixes."""
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole session (``pgserver.py``); ``.database()`` gives a fresh db."""
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def spawn_chroma_server(tmp_path: Path) -> Iterator[Callable[[], ChromaServer]]:
    """Start private ``chroma run`` servers (for tests that stop them); all are stopped after the test."""
    servers: list[ChromaServer] = []

    def spawn() -> ChromaServer:
        server = ChromaServer(tmp_path / f"server{len(servers)}" / "data")
        servers.append(server)
        return server.start()

    yield spawn
    for server in servers:
        server.stop()


@pytest.fixture
def unused_url() -> str:
    """The URL of a loopback port where no server listens."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def embedder() -> FakeEmbeddings:
    """Fast readable embeddings (hashed words and Chinese characters)."""
    return FakeEmbeddings()


StoreFactory = Callable[..., MemoryStore]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path, embedder: FakeEmbeddings) -> Iterator[StoreFactory]:
    """A factory opening the parametrised backend (same data each call); every store is closed after."""
    backend = request.param
    prefix = f"t{uuid.uuid4().hex[:10]}"
    opened: list[MemoryStore] = []
    shared_inprocess: dict[str, InProcessStore] = {}

    def make(emb: FakeEmbeddings | None = None) -> MemoryStore:
        emb = emb or embedder
        store: MemoryStore
        if backend == "inprocess":
            store = shared_inprocess.setdefault("store", InProcessStore(emb))
        elif backend == "embedded":
            store = open_chroma_store(data_dir=tmp_path / "data", embedder=emb, prefix=prefix)
        else:
            server = request.getfixturevalue("chroma_server")
            store = open_chroma_store(url=server.url, embedder=emb, prefix=prefix)
        opened.append(store)
        return store

    make.backend = backend  # type: ignore[attr-defined]
    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> MemoryStore:
    """The parametrised backend, opened once."""
    return make_store()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible HTTP server on a free loopback port (scripted; fails on demand)."""
    with FakeOpenAIServer() as server:
        yield server
