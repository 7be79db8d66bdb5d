"""The keyword index agrees with the store after an interrupted write, without reading the whole store at start-up."""

from __future__ import annotations

from dataclasses import replace

from mneme.clock import FixedClock
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, RecallOptions
from mneme.memory.stamps import LOG_SIZE
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
    service.remember_turn("alice", user_text="我家旺财今天三岁了，很乖")
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


def test_processes_sharing_a_server_see_each_others_writes_at_once(tmp_path, chroma_server) -> None:
    """Two app processes (each its own store object and keyword file) on one ``chroma run`` server."""
    import uuid

    from mneme.memory.chroma import open_chroma_store

    prefix = f"k{uuid.uuid4().hex[:10]}"
    emb = FakeEmbeddings()
    services = [MemoryService(open_chroma_store(url=chroma_server.url, embedder=emb, prefix=prefix),
                              keyword=KeywordIndex(tmp_path / f"kw-{name}.sqlite3"), clock=FixedClock(1e9))
                for name in ("a", "b")]
    a, b = services
    try:
        assert b.recall("alice", "旺财", options=OPTS) == []
        a.remember_turn("alice", user_text="我家旺财今天三岁了，很乖")
        got = b.recall("alice", "旺财", options=OPTS)  # no wait: b's next recall sees a's write
        assert got and "旺财" in got[0].text and got[0].signals["keyword"] > 0
        rebuilt: list[str] = []
        real = b.keyword.rebuild
        b.keyword.rebuild = lambda entries, **kw: rebuilt.append(kw["user_id"]) or real(entries, **kw)  # type: ignore[method-assign]
        b.remember_turn("alice", user_text="I keep bees in Lyon")
        assert b.recall("alice", "bees Lyon", options=OPTS)[0].signals["keyword"] > 0
        assert rebuilt == []  # its own write was indexed as it happened: no rebuild
        # a replaced value (same id, new text): counts are equal, the stamp still tells
        fact = MemoryRecord(id="fact-city", user_id="alice", kind=Kind.FACT, text="用户住在上海", created_at=1e9)
        a.store.add([fact])
        assert b.recall("alice", "上海", options=OPTS)[0].id == "fact-city"
        a.store.add([replace(fact, text="用户住在成都")])
        top = b.recall("alice", "成都", options=OPTS)[0]
        assert top.id == "fact-city" and top.text == "用户住在成都" and top.signals["keyword"] > 0
        assert rebuilt == []  # a few changes behind: the changed records were re-read by id
        wangcai = [r.id for r in a.store.scan("alice", kinds=[Kind.EPISODIC]) if "旺财" in r.text]
        assert wangcai and set(wangcai) <= b.keyword.ids("alice")
        a.store.delete("alice", ids=wangcai)
        assert all("旺财" not in r.text for r in b.recall("alice", "旺财", options=OPTS))
        assert rebuilt == [] and not set(wangcai) & b.keyword.ids("alice")  # dropped by id too
        for i in range(LOG_SIZE + 1):  # further behind than the stamps' log reaches: a rebuild
            a.store.update_metadata("alice", {"fact-city": {"importance": i / 10}})
        a.store.delete("alice", ids=["fact-city"])
        assert all(r.id != "fact-city" for r in b.recall("alice", "成都", options=OPTS))
        assert rebuilt == ["alice"]
        # documents another process ingested are found too
        a.ingest_document("Mneme 的退货政策：三十天内可以退货。", source="policy.md")
        docs = b.recall("alice", "退货政策", options=RecallOptions(reinforce=False))
        assert docs and docs[0].source == "document" and docs[0].signals["keyword"] > 0
    finally:
        for service in services:
            service.close()


def test_a_new_process_trusts_an_index_file_rebuilt_under_the_current_stamp(tmp_path, chroma_server) -> None:
    import uuid

    from mneme.memory.chroma import open_chroma_store

    prefix = f"k{uuid.uuid4().hex[:10]}"
    emb = FakeEmbeddings()
    writer = MemoryService(open_chroma_store(url=chroma_server.url, embedder=emb, prefix=prefix),
                           keyword=KeywordIndex(tmp_path / "kw-writer.sqlite3"), clock=FixedClock(1e9))
    writer.remember_turn("bob", user_text="I keep bees in Lyon")
    rebuilt: list[str] = []
    for _ in range(2):  # the same keyword file, opened by a process, then by its successor
        reader = MemoryService(open_chroma_store(url=chroma_server.url, embedder=emb, prefix=prefix),
                               keyword=KeywordIndex(tmp_path / "kw-reader.sqlite3"), clock=FixedClock(1e9))
        real = reader.keyword.rebuild

        def counting(entries, real=real, **kw):  # type: ignore[no-untyped-def]
            rebuilt.append(kw["user_id"])
            return real(entries, **kw)

        reader.keyword.rebuild = counting  # type: ignore[method-assign]
        assert reader.recall("bob", "bees", options=OPTS)[0].signals["keyword"] > 0
        reader.close()
    assert rebuilt == ["bob"]  # the successor trusted the file: nothing changed since its rebuild
    writer.close()
