"""``IndexedStore`` keeps the store and the keyword index in step for every change that affects search."""

from __future__ import annotations

from dataclasses import replace

from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.indexed import IndexedStore
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.testing import FakeEmbeddings


def _records(store: InProcessStore, *specs: tuple[str, str, str]) -> list[MemoryRecord]:
    recs = [MemoryRecord(id=rid, user_id=user, kind=Kind.FACT, text=text, created_at=1e9) for rid, user, text in specs]
    vectors = store.embedder.embed([r.text for r in recs])
    return [replace(r, embedding=v) for r, v in zip(recs, vectors, strict=True)]


def test_add_archive_restore_delete_reach_both_store_and_index() -> None:
    store = InProcessStore(FakeEmbeddings())
    indexed = IndexedStore(store, KeywordIndex(None))
    indexed.add(_records(store, ("a1", "alice", "用户养了一只猫 Mimi"), ("b1", "bob", "Bob lives in Lyon")))
    assert indexed.keyword.ids("alice") == {"a1"} and indexed.keyword.ids("bob") == {"b1"}
    assert indexed.keyword.pending_tenants() == set()  # both tenants' writes were closed

    assert indexed.archive("alice", ["a1"]) == 1
    assert indexed.keyword.search("alice", "Mimi") == []  # archived: not searchable by default
    assert indexed.restore("alice", ["a1"]) == 1
    assert [i for i, _ in indexed.keyword.search("alice", "Mimi")] == ["a1"]

    assert indexed.delete("alice", ["a1"]) == 1
    assert store.count("alice", kinds=None, archived=None) == 0 and indexed.keyword.count("alice") == 0
    assert indexed.delete_user("bob") == 1
    assert indexed.keyword.count() == 0 and store.tenants() == []


def test_sync_repairs_an_index_that_lost_entries() -> None:
    store = InProcessStore(FakeEmbeddings())
    indexed = IndexedStore(store, KeywordIndex(None))
    store.add(_records(store, ("x", "carol", "卡罗尔住在成都")))  # behind the index's back
    assert indexed.keyword.count("carol") == 0
    assert indexed.sync() == 1
    assert indexed.keyword.ids("carol") == {"x"}
