"""Shared fixtures: the three store backends, a session-wide ``chroma run`` server, a clean environment.

Markers are applied by fixture, at collection, so ``-m "not server and not slow"`` (the fast loop) never
starts a server: a test that uses a fixture named in ``SERVER_FIXTURES`` (directly or through another
fixture) is marked ``server``, one using a ``SLOW_FIXTURES`` fixture ``slow``. A test not marked ``server``
that starts a server process anyway fails at once, naming the process; an unmarked test that runs longer
than ``SLOW_SECONDS`` is listed at the end of the run. Hypothesis runs the ``dev`` profile (fast) unless
``HYPOTHESIS_PROFILE`` names another or ``CI=true`` (the ``ci`` profile: more examples).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from pgserver import PostgresServer

from mneme.evaluation.bench_store import ChromaProcess as ChromaServer
from mneme.evaluation.bench_store import free_port
from mneme.memory.base import MemoryStore
from mneme.memory.chroma import open_chroma_store
from mneme.memory.inprocess import InProcessStore
from mneme.testing import FakeEmbeddings, FakeOpenAIServer

BACKENDS = ("inprocess", "embedded", pytest.param("server", marks=pytest.mark.server))

SERVER_FIXTURES = frozenset({"chroma_server", "spawn_chroma_server", "postgres_server", "spawn_mneme_serve"})
"""Fixtures that start a server process (chroma run, uvicorn, langgraph dev, PostgreSQL, Chromium): add yours."""
SLOW_FIXTURES = frozenset({"use_m3"})
"""Fixtures that make every test using them take more than a few seconds (``use_m3`` loads the real model)."""
SLOW_SECONDS = 5.0
"""An unmarked test slower than this is reported (mark it ``slow``, or make it faster)."""
SERVER_PROGRAMS = ("chroma run", "langgraph dev", "mneme serve", "uvicorn", "pg_ctl", "postgres", "chromium")
"""Programs (or program + subcommand) whose start, anywhere in a command line, is a server's."""


# -- temporary data on tmpfs: embedded Chroma's fsyncs on a disk are most of a test's time -----------
def _use_tmpfs(root: str = "/dev/shm", min_free: int = 2**30) -> None:
    """Put test temp dirs (``tmp_path``, subprocesses' ``TMPDIR``) on ``root`` if it is a roomy tmpfs.

    An explicit ``TMPDIR`` wins. Nothing is lost for the tests: a killed process's writes survive in the
    page cache on a disk too; only a power cut differs, and no test can cut the power.
    """
    if os.environ.get("TMPDIR"):
        return
    try:
        fs = os.statvfs(root)
    except OSError:
        return
    if fs.f_bavail * fs.f_frsize >= min_free and os.access(root, os.W_OK):
        os.environ["TMPDIR"] = root
        tempfile.tempdir = root


_use_tmpfs()

# -- hypothesis: a quick local loop, more examples in CI ------------------------------------------
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=300, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev"))


# -- markers by fixture ---------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses a server-starting (or slow) fixture, before ``-m`` selects."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        if names & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)


def _starts_server(argv: Any) -> str | None:
    """The server a command line starts, if it does (``python -m mneme serve``, ``runuser … pg_ctl`` count)."""
    if isinstance(argv, str):
        args = argv.split()
    elif isinstance(argv, bytes | os.PathLike):
        args = [os.fsdecode(argv)]
    else:
        args = [os.fsdecode(a) for a in argv]
    words = [os.path.basename(a) for a in args if not a.startswith("-")]
    pairs = {" ".join(words[i:i + 2]) for i in range(len(words))}
    return next((p for p in SERVER_PROGRAMS if p in (pairs if " " in p else words)), None)


@pytest.fixture(autouse=True)
def _no_unmarked_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked ``server`` that starts a server process fails at once, saying how to mark it."""
    if request.node.get_closest_marker("server") is not None:
        return
    real_init = subprocess.Popen.__init__

    def guarded_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        server = _starts_server(args)
        if server is not None:
            pytest.fail(f"{request.node.nodeid} starts `{server}` but is not marked `server`: start it from a "
                        "fixture listed in tests/conftest.py SERVER_FIXTURES (or mark the test)", pytrace=False)
        real_init(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_init)


_slow_unmarked: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember unmarked tests that took longer than ``SLOW_SECONDS``."""
    if report.when == "call" and report.duration > SLOW_SECONDS and "slow" not in report.keywords:
        _slow_unmarked.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """List the unmarked slow tests, so the fast loop stays fast."""
    if _slow_unmarked:
        terminalreporter.section("tests over SLOW_SECONDS without the slow marker")
        for nodeid, duration in sorted(_slow_unmarked, key=lambda x: -x[1]):
            terminalreporter.write_line(f"{duration:6.1f}s {nodeid}")


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


class MnemeServe:
    """A running ``mneme serve`` process: its URL, its log (stdout and stderr) and the process."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def log_text(self) -> str:
        """Everything the server printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and wait for it."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)


@pytest.fixture
def spawn_mneme_serve(tmp_path: Path) -> Iterator[Callable[..., MnemeServe]]:
    """Start real ``mneme serve`` processes on free ports (dev mode: ``X-User-Id`` names the user, fake
    embeddings and no model unless ``env`` says otherwise); every one is stopped after the test."""
    import sys
    import time

    import httpx

    started: list[MnemeServe] = []

    def spawn(env: dict[str, str] | None = None, *args: str) -> MnemeServe:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
        full = {**clean, "MNEME_DATA_DIR": str(tmp_path / f"serve{len(started)}"), "MNEME_EMBEDDINGS": "fake",
                "LANGSMITH_TRACING": "false", **(env or {})}
        port = free_port()
        log = tmp_path / f"serve{len(started)}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(Path(sys.executable).with_name("mneme")), "serve", "--port", str(port),
                                     *args], env=full, stdout=out, stderr=subprocess.STDOUT)
        server = MnemeServe(proc, f"http://127.0.0.1:{port}", log)
        started.append(server)
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"mneme serve exited: {server.log_text()[-2000:]}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                    return server
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"mneme serve did not start: {server.log_text()[-2000:]}")
            time.sleep(0.2)

    yield spawn
    for server in started:
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
