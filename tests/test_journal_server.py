"""The write journal against real processes: kill -9 of ``mneme serve``, a ``chroma run`` stopped and frozen.

Each test starts its own ``mneme serve`` (memory-only mode, the default offline embedder) and, where the
store is a server, its own ``chroma run``. Counts, not impressions: every acknowledged turn is looked for
by its unique made-up name in the user's stored memories.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mneme.evaluation.bench_serve import start_server
from mneme.evaluation.bench_store import ChromaProcess

pytestmark = [pytest.mark.server, pytest.mark.slow]

SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def names(n: int, seed: int) -> list[str]:
    """``n`` distinct made-up village names (no identifier shapes: redaction leaves them alone)."""
    import random

    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        name = "".join(rng.choice(SYLLABLES) for _ in range(4)).capitalize()
        if name not in out:
            out.append(name)
    return out


def say(url: str, user: str, name: str, i: int) -> httpx.Response:
    text = f"我第{i}次旅行去了一个叫{name}的村子。" if i % 2 else f"On trip {i} I visited a village called {name}."
    return httpx.post(f"{url}/agent/invoke", json={"input": {"messages": [{"role": "user", "content": text}]}},
                      headers={"X-User-Id": user, "X-Thread-Id": f"{user}-t"}, timeout=120)


def stored(url: str, user: str) -> str:
    r = httpx.get(f"{url}/memories", params={"limit": 1000}, headers={"X-User-Id": user}, timeout=60)
    r.raise_for_status()
    return " ".join(m["text"] for m in r.json()["memories"])


def found_within(url: str, user: str, wanted: list[str], seconds: float) -> list[str]:
    """The names of ``wanted`` in ``user``'s stored memories once all are there or ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while True:
        text = stored(url, user)
        hits = [n for n in wanted if n in text]
        if len(hits) == len(wanted) or time.monotonic() > deadline:
            return hits
        time.sleep(0.5)


def queued_on_disk(data_dir: Path) -> int:
    """Turns in the journal files of ``data_dir`` (read-only)."""
    total = 0
    for path in data_dir.glob("*journal*/journal-*.sqlite3"):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            total += conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    return total


@pytest.fixture
def servers() -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], str]]]:
    """Start ``mneme serve`` processes; each is killed after the test."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(data_dir: Path, **kw: Any) -> tuple[subprocess.Popen[bytes], str]:
        proc, url = start_server(data_dir, **kw)
        procs.append(proc)
        return proc, url

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_kill_9_right_after_30_acknowledged_turns_loses_none(tmp_path: Path, servers: Any) -> None:
    data = tmp_path / "data"
    proc, url = servers(data)
    wanted = names(30, seed=1)
    for i, name in enumerate(wanted):
        r = say(url, "kim", name, i)
        assert r.status_code == 200, r.text
        assert r.json()["output"]["memory_report"].get("queued")  # acknowledged = on disk
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _, url = servers(data)
    assert found_within(url, "kim", wanted, 60) == wanted
    assert queued_on_disk(data) == 0
    assert not any(n in stored(url, "lee") for n in wanted)  # and nobody else's


def test_chroma_stopped_turns_answer_degraded_are_kept_and_applied_when_it_returns(
        tmp_path: Path, servers: Any, spawn_chroma_server: Callable[[], ChromaProcess]) -> None:
    chroma = spawn_chroma_server()
    data = tmp_path / "data"
    proc, url = servers(data, chroma_url=chroma.url, extra_env={"MNEME_CHROMA_TIMEOUT": "3"})
    assert say(url, "ana", "Zorimeta", 0).status_code == 200  # the store works: one turn before the outage
    chroma.stop()
    wanted = names(10, seed=2)
    for i, name in enumerate(wanted, start=1):
        r = say(url, "ana", name, i)
        assert r.status_code == 200, r.text
        out = r.json()["output"]
        assert out["memory_report"].get("queued")
        if i > 1:  # the first turn after the stop may still be answered from the cache of a stamp read
            assert any("memory store unavailable" in label for label in out["degraded"]), out["degraded"]
    # what was just said is recalled from the journal, even with the store down
    r = httpx.post(f"{url}/agent/invoke", headers={"X-User-Id": "ana", "X-Thread-Id": "ana-q"}, timeout=120,
                   json={"input": {"messages": [{"role": "user", "content": f"tell me about {wanted[-1]}"}]}})
    assert r.status_code == 200 and wanted[-1] in r.json()["output"]["answer"]
    assert queued_on_disk(data) >= len(wanted)  # nothing could be stored: all kept in the journal
    started = time.monotonic()  # a read of the memories says the store is down at once, not after waiting to drain
    r = httpx.get(f"{url}/memories", headers={"X-User-Id": "ana"}, timeout=60)
    assert r.status_code == 503 and "Chroma" in r.text and time.monotonic() - started < 8, (r.status_code, r.text)
    chroma.start()
    started = time.monotonic()
    assert found_within(url, "ana", wanted, 60) == wanted  # recalled within a minute of the store's return
    assert time.monotonic() - started < 60
    assert queued_on_disk(data) == 0


def test_kill_9_while_chroma_is_down_then_both_restart(
        tmp_path: Path, servers: Any, spawn_chroma_server: Callable[[], ChromaProcess]) -> None:
    chroma = spawn_chroma_server()
    data = tmp_path / "data"
    proc, url = servers(data, chroma_url=chroma.url, extra_env={"MNEME_CHROMA_TIMEOUT": "3"})
    chroma.stop()
    wanted = names(30, seed=3)
    for i, name in enumerate(wanted):
        r = say(url, "bo", name, i)
        assert r.status_code == 200 and r.json()["output"]["memory_report"].get("queued"), r.text
    assert queued_on_disk(data) == 30  # every acknowledged turn is on disk, none in the store
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    chroma.start()
    _, url = servers(data, chroma_url=chroma.url)
    assert found_within(url, "bo", wanted, 60) == wanted
    assert queued_on_disk(data) == 0


def test_a_frozen_chroma_holds_a_turn_for_bounded_time(
        tmp_path: Path, servers: Any, spawn_chroma_server: Callable[[], ChromaProcess]) -> None:
    chroma = spawn_chroma_server()
    data = tmp_path / "data"
    _, url = servers(data, chroma_url=chroma.url, extra_env={"MNEME_CHROMA_TIMEOUT": "2"})
    assert say(url, "cy", "Velokari", 0).status_code == 200
    assert chroma.pid is not None
    os.kill(chroma.pid, signal.SIGSTOP)
    try:
        wanted = names(3, seed=4)
        for i, name in enumerate(wanted, start=1):
            start = time.monotonic()
            r = say(url, "cy", name, i)
            took = time.monotonic() - start
            assert r.status_code == 200 and r.json()["output"]["memory_report"].get("queued"), r.text
            assert took < 15, f"a turn took {took:.1f}s with the store frozen"
    finally:
        os.kill(chroma.pid, signal.SIGCONT)
    assert found_within(url, "cy", wanted, 60) == wanted


def test_a_turn_that_cannot_be_journaled_is_507_not_200(tmp_path: Path) -> None:
    import threading

    import uvicorn
    from langgraph.checkpoint.memory import InMemorySaver

    from mneme.config import Settings
    from mneme.evaluation.bench_store import free_port
    from mneme.graph import build_graph
    from mneme.memory.inprocess import InProcessStore
    from mneme.memory.journal import open_journal
    from mneme.memory.keyword import KeywordIndex
    from mneme.memory.service import MemoryService
    from mneme.serve import create_app
    from mneme.testing import FakeEmbeddings

    journal = open_journal(tmp_path / "journal")
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), journal=journal)
    graph = build_graph(service=service, checkpointer=InMemorySaver())
    app = create_app(graph=graph, service=service, settings=Settings(data_dir=tmp_path / "data"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        assert say(url, "dee", "Rakosemi", 0).status_code == 200
        pages = journal._conn.execute("PRAGMA page_count").fetchone()[0]
        journal._conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
        r = httpx.post(f"{url}/agent/invoke", headers={"X-User-Id": "dee"}, timeout=60, json={
            "input": {"messages": [{"role": "user", "content": "I visited Tumavelo " + "and more " * 2000}]}})
        assert r.status_code == 507 and "NOT kept" in r.json()["detail"]
        assert not any("Tumavelo" in e.user_text for e in journal.pending("dee"))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        service.close()
