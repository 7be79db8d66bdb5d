"""The keyword index agrees with the store after an interrupted write, without reading the whole store at start-up."""

from __future__ import annotations

from dataclasses import replace

from mneme.clock import FixedClock
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, RecallOptions
from mneme.testing import FakeEmbeddings

OPTS = RecallOptions(reinforce=False, include_documents=False)


class CountingStore(InProcessStore):
    """Counts whole-store reads (``tenants``) so a test can tell a quick start-up from a full check."""

    def __init__(self) -> None:
        super().__init__(FakeEmbeddings())
        self.tenant_scans = 0

    def tenants(self) -> list[str]:
        self.tenant_scans += 1
        return super().tenants()


def test_a_write_interrupted_between_store_and_index_is_repaired_at_start_up(tmp_path) -> None:
    store = CountingStore()
    index = KeywordIndex(tmp_path / "kw.sqlite3")
    service = MemoryService(store, keyword=index, clock=FixedClock(1e9))
    service.sync_keyword_index(only_if_needed=True)
    service.remember_turn("alice", user_text="我的狗叫旺财，它三岁了")
    # the crash: the store has the record, the index never heard of it
    token = index.begin_write("alice")
    orphan = MemoryRecord(id="ep-orphan", user_id="alice", kind=Kind.EPISODIC, text="user: 我在苏州工作",
                          created_at=1e9)
    store.add([replace(orphan, embedding=store.embedder.embed([orphan.text])[0])])
    assert token and "ep-orphan" not in index.ids("alice")
    index.close()

    reopened = KeywordIndex(tmp_path / "kw.sqlite3")
    assert reopened.pending_tenants() == {"alice"}
    service = MemoryService(store, keyword=reopened, clock=FixedClock(1e9))
    scans = store.tenant_scans
    assert service.sync_keyword_index(only_if_needed=True) == 2  # alice's two records, re-indexed
    assert store.tenant_scans == scans  # only the interrupted user was read, not the whole store
    assert reopened.pending_tenants() == set()
    assert "ep-orphan" in reopened.ids("alice")
    assert [r.id for r in service.recall("alice", "苏州", options=OPTS)][:1] == ["ep-orphan"]


def test_start_up_checks_everything_once_then_only_what_is_needed(tmp_path) -> None:
    store = CountingStore()
    index = KeywordIndex(tmp_path / "kw.sqlite3")
    service = MemoryService(store, keyword=index, clock=FixedClock(1e9))
    service.remember_turn("bob", user_text="I keep bees in Lyon")
    assert not index.synced
    service.sync_keyword_index(only_if_needed=True)  # never checked: full check
    assert index.synced and store.tenant_scans == 1
    service.sync_keyword_index(only_if_needed=True)  # checked and nothing pending: no store scan
    assert store.tenant_scans == 1
    index.rebuild([], user_id="bob")  # the index lost bob's entries behind the service's back
    assert service.sync_keyword_index() == 1  # an explicit full check finds and repairs it
    assert [r.text for r in service.recall("bob", "bees Lyon", options=OPTS)]
