"""The MemoryStore contract, run against every backend: in-process, embedded Chroma and a Chroma server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from mneme.errors import InvalidInputError, InvalidTenantError
from mneme.memory.base import MEMORY_KINDS, SHARED_TENANT, Kind, MemoryRecord, MemoryStore

pytestmark = pytest.mark.server


def rec(user: str, text: str, kind: Kind = Kind.EPISODIC, *, rid: str | None = None, **kw: Any) -> MemoryRecord:
    return MemoryRecord(id=rid or uuid.uuid4().hex, user_id=user, kind=kind, text=text,
                        created_at=kw.pop("created_at", 1_700_000_000.0), **kw)


def search_text(store: MemoryStore, user: str, query: str, **kw: Any) -> list[str]:
    vector = store.embedder.embed([query])[0]
    return [hit.record.text for hit in store.search(user, vector, **kw)]


def test_add_then_get_roundtrips_every_field(store: MemoryStore) -> None:
    original = rec(
        "alice", "我住在北京 I live in Beijing", Kind.FACT, rid="f1", key="home_city", importance=0.9,
        emotion="positive", thread_id="t-1", source_turns=["t-1:3"], last_accessed=1_700_000_100.0,
        access_count=2, history=[{"text": "上海", "created_at": 1.0, "replaced_at": 2.0}],
        metadata={"source": "chat", "redactions": 1, "confident": True, "weight": 0.25},
    )
    store.add([original])
    [got] = store.get("alice", ["f1"])
    assert got.text == original.text and got.kind is Kind.FACT and got.key == "home_city"
    assert (got.importance, got.emotion, got.thread_id) == (0.9, "positive", "t-1")
    assert got.source_turns == ["t-1:3"] and got.history == original.history
    assert (got.last_accessed, got.access_count, got.created_at) == (1_700_000_100.0, 2, 1_700_000_000.0)
    assert got.metadata == original.metadata
    assert got.archived is False


def test_add_same_id_replaces(store: MemoryStore) -> None:
    store.add([rec("alice", "likes tea", Kind.PREFERENCE, rid="p1")])
    store.add([rec("alice", "喜欢咖啡 likes coffee", Kind.PREFERENCE, rid="p1")])
    assert [r.text for r in store.get("alice", ["p1"])] == ["喜欢咖啡 likes coffee"]
    assert store.count("alice") == 1


def test_add_refuses_an_id_owned_by_another_tenant(store: MemoryStore) -> None:
    store.add([rec("alice", "alice secret", rid="same")])
    with pytest.raises(InvalidInputError):
        store.add([rec("bob", "bob overwrite", rid="same")])
    assert [r.text for r in store.get("alice", ["same"])] == ["alice secret"]
    assert store.get("bob", ["same"]) == []


def test_add_validates_records(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError):
        store.add([rec("alice", "   ")])
    with pytest.raises(InvalidInputError):
        store.add([rec("alice", "a", rid="dup"), rec("alice", "b", rid="dup")])
    with pytest.raises(InvalidInputError):
        store.add([rec("alice", "nested", metadata={"tags": ["a", "b"]})])
    with pytest.raises(InvalidTenantError):
        store.add([rec(SHARED_TENANT, "shared memories are not a thing", Kind.FACT)])
    assert store.count("alice", kinds=list(Kind), archived=None) == 0


def test_search_ranks_and_stays_in_tenant(store: MemoryStore) -> None:
    store.add([
        rec("alice", "我喜欢喝绿茶 green tea every morning", Kind.PREFERENCE),
        rec("alice", "went hiking in the mountains", Kind.EPISODIC),
        rec("alice", "works as a nurse", Kind.FACT),
        rec("bob", "bob loves green tea 绿茶 too", Kind.PREFERENCE),
    ])
    hits = store.search("alice", store.embedder.embed(["绿茶 green tea"])[0], k=3)
    assert [h.record.text for h in hits][0] == "我喜欢喝绿茶 green tea every morning"
    assert all(h.record.user_id == "alice" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score > 0.5
    assert search_text(store, "bob", "green tea") == ["bob loves green tea 绿茶 too"]


def test_search_k_and_kinds(store: MemoryStore) -> None:
    store.add([rec("alice", f"note {i} about cats", Kind.EPISODIC) for i in range(5)])
    store.add([rec("alice", "a fact about cats", Kind.FACT)])
    assert len(search_text(store, "alice", "cats", k=2)) == 2
    assert search_text(store, "alice", "cats", kinds=[Kind.FACT]) == ["a fact about cats"]
    assert search_text(store, "alice", "cats", k=0) == []


def test_where_filters_narrow(store: MemoryStore) -> None:
    store.add([
        rec("alice", "angry about the delayed train 火车晚点", emotion="negative", importance=0.9),
        rec("alice", "happy about the train ride", emotion="positive", importance=0.2),
        rec("alice", "train ticket source doc", metadata={"source": "a.md"}),
    ])
    angry = ["angry about the delayed train 火车晚点"]
    assert search_text(store, "alice", "train", where={"emotion": "negative"}) == angry
    assert search_text(store, "alice", "train", where={"importance": {"$lt": 0.3}}) == ["happy about the train ride"]
    assert search_text(store, "alice", "train", where={"source": "a.md"}) == ["train ticket source doc"]
    both = {"emotion": {"$in": ["negative", "positive"]}, "importance": {"$gte": 0.5}}
    assert search_text(store, "alice", "train", where=both) == ["angry about the delayed train 火车晚点"]


def test_or_filter_cannot_widen_to_other_tenants(store: MemoryStore) -> None:
    store.add([rec("alice", "alice's diary 日记"), rec("bob", "bob's diary 日记", emotion="negative")])
    widening = [
        {"$or": [{"user_id": "bob"}, {"emotion": "negative"}]},
        {"$or": [{"user_id": {"$ne": "nobody"}}, {"user_id": "alice"}]},
        {"user_id": "bob"},
    ]
    for where in widening:
        texts = search_text(store, "alice", "diary 日记", where=where)
        assert "bob's diary 日记" not in texts
        assert all(r.user_id == "alice" for r in store.scan("alice", where=where))
    for where in widening:
        store.delete("alice", where=where)
    assert [r.text for r in store.scan("bob")] == ["bob's diary 日记"]
    assert store.count("alice") == 0


@pytest.mark.parametrize("where", [
    {"$where": "1"}, {"emotion": {"$contains": "neg"}}, {"emotion": {"$eq": ["a"]}}, {"$or": []},
    {"importance": {"$gt": "high"}}, {"emotion": {"$in": []}}, {"emotion": {"$in": ["a", 1]}},
    {"emotion": {"$eq": "a", "$ne": "b"}}, {"emotion": None}, "emotion", {"x": {"$gt": float("nan")}},
])
def test_malformed_filters_are_rejected(store: MemoryStore, where: Any) -> None:
    store.add([rec("alice", "anything")])
    with pytest.raises(InvalidInputError):
        search_text(store, "alice", "anything", where=where)
    with pytest.raises(InvalidInputError):
        store.delete("alice", where=where)
    assert store.count("alice") == 1


def test_deeply_nested_filter_is_rejected(store: MemoryStore) -> None:
    where: dict[str, Any] = {"emotion": "x"}
    for _ in range(12):
        where = {"$or": [where, {"emotion": "y"}]}
    with pytest.raises(InvalidInputError):
        list(store.scan("alice", where=where))


def test_shared_documents_only_when_asked(store: MemoryStore) -> None:
    store.add([
        rec(SHARED_TENANT, "公司年假政策 vacation policy handbook", Kind.DOCUMENT),
        rec("alice", "alice notes on vacation policy", Kind.DOCUMENT),
        rec("bob", "bob private vacation policy doc", Kind.DOCUMENT),
    ])
    kinds = [*MEMORY_KINDS, Kind.DOCUMENT]
    assert set(search_text(store, "alice", "vacation policy", kinds=kinds)) == {"alice notes on vacation policy"}
    assert set(search_text(store, "alice", "vacation policy", kinds=kinds, include_shared=True)) == {
        "alice notes on vacation policy", "公司年假政策 vacation policy handbook"}


def test_get_skips_foreign_and_missing_ids(store: MemoryStore) -> None:
    store.add([rec("alice", "a1", rid="a1"), rec("bob", "b1", rid="b1")])
    assert [r.id for r in store.get("alice", ["b1", "a1", "nope"])] == ["a1"]
    assert store.get("alice", []) == []


def test_get_by_key_returns_current_value(store: MemoryStore) -> None:
    store.add([
        rec("alice", "lives in Shanghai 上海", Kind.FACT, key="home_city", created_at=1.0),
        rec("alice", "likes jazz", Kind.PREFERENCE, key="music"),
        rec("bob", "lives in Paris", Kind.FACT, key="home_city"),
    ])
    got = store.get_by_key("alice", Kind.FACT, "home_city")
    assert got is not None and got.text == "lives in Shanghai 上海"
    assert store.get_by_key("alice", Kind.FACT, "music") is None
    assert store.get_by_key("carol", Kind.FACT, "home_city") is None


def test_update_metadata_changes_only_own_records(store: MemoryStore) -> None:
    store.add([rec("alice", "a", rid="a", metadata={"note": "x"}), rec("bob", "b", rid="b")])
    store.update_metadata("alice", {
        "a": {"last_accessed": 5.0, "access_count": 3, "importance": 0.8, "note": None, "flag": True},
        "b": {"access_count": 99},
    })
    [a] = store.get("alice", ["a"])
    assert (a.last_accessed, a.access_count, a.importance) == (5.0, 3, 0.8)
    assert a.metadata == {"flag": True}
    assert a.text == "a"
    [b] = store.get("bob", ["b"])
    assert b.access_count == 0
    with pytest.raises(InvalidInputError):
        store.update_metadata("alice", {"a": {"user_id": "bob"}})


def test_delete_by_ids_filter_and_user(store: MemoryStore) -> None:
    store.add([rec("alice", f"alice {i}", rid=f"a{i}", importance=i / 10) for i in range(6)])
    store.add([rec("alice", "alice doc", Kind.DOCUMENT, rid="adoc")])
    store.add([rec("bob", "bob 0", rid="b0", importance=0.0)])
    assert store.delete("alice", ids=["a0", "b0", "zzz"]) == 1
    assert store.delete("alice", where={"importance": {"$lt": 0.25}}) == 2  # a1, a2
    store.archive("alice", ["a5"])
    assert store.delete("alice", kinds=[Kind.DOCUMENT]) == 1
    assert store.delete("alice") == 3  # a3, a4 and the archived a5
    assert store.count("alice", kinds=list(Kind), archived=None) == 0
    assert [r.id for r in store.scan("bob")] == ["b0"]


def test_delete_everything_includes_archive(store: MemoryStore) -> None:
    store.add([rec("alice", "kept", rid="k"), rec("alice", "archived", rid="z")])
    store.archive("alice", ["z"])
    assert store.delete("alice", archived=None) == 2
    assert store.count("alice", archived=None) == 0


def test_scan_and_count(store: MemoryStore) -> None:
    store.add([rec("alice", f"记忆 memory {i}", Kind.EPISODIC) for i in range(7)])
    store.add([rec("alice", "fact", Kind.FACT), rec("bob", "bob", Kind.FACT)])
    assert len(list(store.scan("alice", batch_size=3))) == 8
    assert len(list(store.scan("alice", kinds=[Kind.FACT]))) == 1
    assert store.count("alice") == 8
    assert store.count("alice", kinds=[Kind.EPISODIC]) == 7
    assert store.count("bob") == 1
    assert store.count("carol") == 0


def test_archive_and_restore(store: MemoryStore) -> None:
    store.add([rec("alice", "old memory about 旧家 the old house", Kind.FACT, rid="old", key="house"),
               rec("bob", "bob's", rid="bob1")])
    assert store.archive("alice", ["old", "bob1"]) == 1
    assert store.count("alice") == 0 and store.count("alice", archived=True) == 1
    assert search_text(store, "alice", "old house") == []
    assert search_text(store, "alice", "old house", archived=True) == ["old memory about 旧家 the old house"]
    [archived] = store.get("alice", ["old"])
    assert archived.archived and archived.kind is Kind.FACT
    assert store.get_by_key("alice", Kind.FACT, "house") is None
    assert store.count("bob") == 1
    assert store.restore("alice", ["old"]) == 1
    [back] = store.get("alice", ["old"])
    assert not back.archived and back.kind is Kind.FACT and back.key == "house"
    assert search_text(store, "alice", "old house", kinds=[Kind.FACT]) == ["old memory about 旧家 the old house"]


def test_tenants_lists_users_not_shared(store: MemoryStore) -> None:
    store.add([rec("alice", "a"), rec("bob", "b", Kind.FACT), rec("张三", "中文用户", Kind.SUMMARY),
               rec(SHARED_TENANT, "doc", Kind.DOCUMENT), rec("dora", "gone", rid="d1")])
    store.archive("dora", ["d1"])
    assert store.tenants() == sorted(["alice", "bob", "张三", "dora"])


@pytest.mark.parametrize("bad", ["", "a b", "x" * 129, "../etc", None, 7, "~shared2"])
def test_invalid_tenants_are_refused_everywhere(store: MemoryStore, bad: Any) -> None:
    vector = store.embedder.embed(["x"])[0]
    calls = [
        lambda: store.add([rec(bad, "x")]),
        lambda: store.search(bad, vector),
        lambda: store.get(bad, ["x"]),
        lambda: store.get_by_key(bad, Kind.FACT, "k"),
        lambda: store.update_metadata(bad, {"x": {"importance": 1.0}}),
        lambda: store.delete(bad),
        lambda: list(store.scan(bad)),
        lambda: store.count(bad),
        lambda: store.archive(bad, ["x"]),
        lambda: store.restore(bad, ["x"]),
    ]
    for call in calls:
        with pytest.raises(InvalidTenantError):
            call()


def test_precomputed_embedding_is_used_and_checked(store: MemoryStore) -> None:
    dim = store.embedder.info.dimension
    vector = [0.0] * dim
    vector[7] = 1.0
    store.add([rec("alice", "text whose own embedding differs", embedding=vector)])
    hits = store.search("alice", vector, k=1)
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(InvalidInputError):
        store.add([rec("alice", "wrong dim", embedding=[1.0, 0.0])])


def test_real_multilingual_embedder_ranks_translation_first(make_store: Any) -> None:
    from mneme.embeddings import load_embedder

    if make_store.backend != "embedded":
        pytest.skip("one backend is enough for the real model")
    store = make_store(load_embedder("use-m3"))
    store.add([
        rec("alice", "我的猫叫小白", Kind.FACT),
        rec("alice", "I work at a bank in London", Kind.FACT),
        rec("alice", "周末喜欢去爬山", Kind.PREFERENCE),
    ])
    assert search_text(store, "alice", "What is my cat's name?", k=3)[0] == "我的猫叫小白"
    assert search_text(store, "alice", "我在哪里工作", k=3)[0] == "I work at a bank in London"
