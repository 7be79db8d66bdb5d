"""Server mode: a recall reads the store's change stamps once, and still sees what another process just wrote.

Two memory services over one real ``chroma run`` stand for two ``mneme serve`` processes (each its own
store object, vector cache and keyword index file).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mneme.memory.chroma import ChromaStore, open_chroma_store
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService
from mneme.testing import FakeEmbeddings

EMBEDDER = FakeEmbeddings()


@pytest.fixture
def two_processes(chroma_server: Any, tmp_path: Path) -> Iterator[tuple[MemoryService, MemoryService]]:
    prefix = f"p{uuid.uuid4().hex[:10]}"
    services = [MemoryService(open_chroma_store(url=chroma_server.url, embedder=EMBEDDER, prefix=prefix),
                              keyword=KeywordIndex(tmp_path / f"keyword-{n}.sqlite3")) for n in range(2)]
    yield services[0], services[1]
    for service in services:
        service.indexed.close()


def _count_stamp_reads(store: ChromaStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    assert store._stamps is not None
    col = store._stamps._col
    real = col.get
    reads: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(len(kwargs.get("ids") or []))
        return real(*args, **kwargs)

    monkeypatch.setattr(col, "get", counted)
    return reads


def test_one_stamp_read_per_recall_and_another_process_write_is_seen(
        two_processes: tuple[MemoryService, MemoryService], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two_processes
    a.remember_turn("alice", user_text="I visited a village called Bokamuri last spring.")
    assert any("Bokamuri" in r.text for r in a.recall("alice", "Bokamuri village"))
    reads = _count_stamp_reads(a.store, monkeypatch)  # type: ignore[arg-type]
    # another process writes; a's very next recall must find it (dense and keyword channels alike)
    b.remember_turn("alice", user_text="我第二次旅行去了一个叫Tulevo的村子。")
    found = a.recall("alice", "Tulevo 村子")
    assert any("Tulevo" in r.text for r in found)
    documents_too = len(reads)
    assert documents_too == 1  # the user's and shared documents' stamps in one primary-key read (was 3)
    a.recall("alice", "Bokamuri")
    assert len(reads) == 2
    # stamps are pinned only inside a recall: a search outside one reads them afresh
    a.store.search("alice", EMBEDDER.embed(["Tulevo"])[0])
    assert len(reads) == 3
