"""Records rebuilt from the vector cache's packed rows (decoded once, copied per call) equal the eager decode."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mneme.memory import cached_records
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.cached_records import record_of
from mneme.memory.chroma import open_chroma_store
from mneme.memory.records import from_metadata, to_metadata
from mneme.memory.vector_cache import PackedRows, VectorCache
from mneme.testing import FakeEmbeddings

RECORDS = [
    MemoryRecord(id="ep-1", user_id="张三", kind=Kind.EPISODIC, text="user: 我上周末去杭州爬山了，风景很好",
                 created_at=1_700_000_000.0, importance=0.4, thread_id="t1", source_turns=["t1:3", "t1:4"],
                 metadata={"content_hash": "ab12", "language": "zh", "event_start": 1.0, "event_end": 2.0}),
    MemoryRecord(id="fact-2", user_id="张三", kind=Kind.FACT, text="用户住在柏林", created_at=1_700_000_100.0,
                 last_accessed=1_700_000_500.0, access_count=3, importance=0.8, key="home_city",
                 history=[{"text": "用户住在上海", "created_at": 1.0, "replaced_at": 2.0, "entry": "j-1"}],
                 metadata={"value": "柏林", "extracted_by": "rules", "polarity": "positive"}),
    MemoryRecord(id="sum-3", user_id="alice", kind=Kind.SUMMARY, text="Alice adopted a golden retriever",
                 created_at=1_700_000_200.0, emotion="positive", metadata={"redacted_email": 1, "flag": True}),
]


def _rows() -> tuple[list[str], PackedRows]:
    ids = [r.id for r in RECORDS]
    return ids, PackedRows([(r.text, to_metadata(r, "fake")) for r in RECORDS])


def test_a_cached_record_equals_the_eagerly_decoded_one() -> None:
    cached_records.clear()
    ids, rows = _rows()
    for _ in range(2):  # the first call decodes, the second copies the prototype
        for pos, rid in enumerate(ids):
            text, meta = rows[pos]
            eager = from_metadata(rid, text, meta, archived=False)
            got = record_of(rid, rows, pos)
            assert got == eager
            assert got.metadata == RECORDS[pos].metadata and got.history == RECORDS[pos].history
    plain = [rows[i] for i in range(len(ids))]  # rows that are not packed: decoded as they come
    assert record_of("fact-2", plain, 1) == from_metadata("fact-2", *plain[1], archived=False)


def test_changing_a_returned_record_changes_neither_the_cache_nor_the_next_caller() -> None:
    ids, rows = _rows()
    first = record_of("fact-2", rows, 1)
    first.source_turns.append("x")
    first.history[0]["text"] = "changed"
    first.history.append({"text": "more"})
    first.metadata["value"] = "上海"
    first.importance = 0.0
    again = record_of("fact-2", rows, 1)
    assert again == from_metadata("fact-2", *rows[1], archived=False)
    assert again.history == RECORDS[1].history and again.metadata["value"] == "柏林" and again.importance == 0.8


def test_a_changed_row_is_decoded_anew() -> None:
    cache = VectorCache(100)
    key = ("c", "张三")
    vectors = np.eye(3, 8, dtype=np.float32)
    ids = [r.id for r in RECORDS]
    cache.snapshot(key, lambda: (ids, vectors, [(r.text, to_metadata(r, "fake")) for r in RECORDS]))
    located = cache.positions_of(key, ["fact-2", "nope"])
    assert located is not None and located[1] == {"fact-2": 1}
    before = record_of("fact-2", located[0], 1)
    cache.update(key, {"fact-2": {"access_count": 4, "last_accessed": 1_700_009_999.0, "m_value": "巴黎"}})
    rows, positions = cache.positions_of(key, ["fact-2"]) or ((), {})
    after = record_of("fact-2", rows, positions["fact-2"])
    assert (before.access_count, before.metadata["value"]) == (3, "柏林")  # the old view is unchanged
    assert (after.access_count, after.last_accessed, after.metadata["value"]) == (4, 1_700_009_999.0, "巴黎")
    assert after == from_metadata("fact-2", *rows[positions["fact-2"]], archived=False)


def test_the_store_reads_cached_records_as_chroma_holds_them(tmp_path: Path) -> None:
    store = open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings(16), prefix="t", cache_rows=1000)
    try:
        store.add([r for r in RECORDS if r.user_id == "张三"])
        vector = store.embedder.embed(["杭州爬山"])[0]
        hits = store.search("张三", vector, k=5)  # loads the cache
        assert {h.record.id for h in hits} == {"ep-1", "fact-2"}
        cached = {r.id: r for r in store.get("张三", ["ep-1", "fact-2"])}
        assert cached == {h.record.id: h.record for h in hits}
        for rid, rec in cached.items():
            want = next(r for r in RECORDS if r.id == rid)
            assert (rec.text, rec.source_turns, rec.history, rec.metadata, rec.key, rec.thread_id) == \
                (want.text, want.source_turns, want.history, want.metadata, want.key, want.thread_id)
        assert store.get("alice", ["ep-1"]) == []  # another tenant's id: nothing
    finally:
        store.close()
