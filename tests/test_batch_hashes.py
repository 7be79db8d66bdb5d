"""A batch of turns looks up its exact repeats in one read per collection, per user, never across users."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mneme.memory.base import Kind
from mneme.memory.chroma import ChromaStore, open_chroma_store
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, TurnRequest
from mneme.testing import FakeEmbeddings


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings())
    svc = MemoryService(store, keyword=KeywordIndex(tmp_path / "keyword.sqlite3"))
    yield svc
    svc.close()


def spy(store: ChromaStore, monkeypatch: pytest.MonkeyPatch,
        methods: tuple[str, ...]) -> list[tuple[str, str, dict[str, Any]]]:
    """Record every call of ``methods`` on the store's collections as (method, collection name, keyword args)."""
    seen: list[tuple[str, str, dict[str, Any]]] = []
    for col in store._all:
        for method in methods:
            real = getattr(col, method)

            def counted(*args: Any, _real: Any = real, _tag: tuple[str, str] = (method, col.name),
                        **kwargs: Any) -> Any:
                seen.append((*_tag, kwargs))
                return _real(*args, **kwargs)

            monkeypatch.setattr(col, method, counted)
    return seen


def test_repeats_of_a_batch_are_read_once_per_collection_and_per_user(
        service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    store = service.store
    assert isinstance(store, ChromaStore)
    assert service.remember_turn("alice", user_text="I keep bees on my roof in Lyon.").stored
    assert service.remember_turn("张三", user_text="我在阳台上养了三盆兰花。").stored
    seen = spy(store, monkeypatch, ("get",))
    texts = [("alice", "I keep bees on my roof in Lyon."),       # alice's repeat
             ("bob", "I keep bees on my roof in Lyon."),         # the same words, but bob never said them
             ("张三", "我在阳台上养了三盆兰花。"),                   # 张三's repeat
             ("李四", "我在阳台上养了三盆兰花。"),
             ("alice", "My sister Maren plays the cello.")]      # new for alice
    requests = [TurnRequest(user_id=u, user_text=t, now=1000.0 + i) for i, (u, t) in enumerate(texts)]
    reports = service.remember_turns(requests)
    assert [r.skipped for r in reports] == ["repeat", None, "repeat", None, None]
    assert all(r.stored for r in reports[1::2] + [reports[4]])
    gets = [name for _, name, kwargs in seen if "content_hash" in str(kwargs.get("where"))]
    assert sorted(gets) == sorted(store._live[k].name for k in (Kind.EPISODIC, Kind.SUMMARY))  # 2 reads, not 10
    assert store.existing_hashes([("bob", "not-a-hash"), ("carol", "")]) == set()


def test_counted_recalls_are_written_with_one_read_and_one_update_per_collection(
        service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    store = service.store
    assert isinstance(store, ChromaStore)
    mine = service.remember_turn("alice", user_text="I keep bees on my roof in Lyon.").stored[0]
    theirs = service.remember_turn("bob", user_text="My sister Maren plays the cello.").stored[0]
    seen = spy(store, monkeypatch, ("get", "update"))
    assert store.count_recalls("alice", {mine: (5000.0, 2), theirs: (5000.0, 7), "nope": (1.0, 1)}) == 1
    calls = [f"{method} {name}" for method, name, _ in seen]
    assert sorted(c for c in calls if c.startswith("get")) == sorted(
        f"get {store._live[k].name}" for k in (Kind.EPISODIC, Kind.SUMMARY, Kind.FACT, Kind.PREFERENCE))
    assert [c for c in calls if c.startswith("update")] == [f"update {store._live[Kind.EPISODIC].name}"]
    (record,) = store.get("alice", [mine])
    assert (record.access_count, record.last_accessed) == (2, 5000.0)
    (other,) = store.get("bob", [theirs])
    assert other.access_count == 0  # another tenant's id is never counted
    store.count_recalls("alice", {mine: (10.0, 1)})  # an older recall adds its count, never moves time back
    (record,) = store.get("alice", [mine])
    assert (record.access_count, record.last_accessed) == (3, 5000.0)


def test_recalls_of_many_users_are_written_with_one_update_per_collection(
        service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    store = service.store
    assert isinstance(store, ChromaStore)
    alices = service.remember_turn("alice", user_text="I keep bees on my roof in Lyon.").stored[0]
    bobs = service.remember_turn("bob", user_text="My sister Maren plays the cello.").stored[0]
    zhangs = service.remember_turn("张三", user_text="我在阳台上养了三盆兰花。").stored[0]
    seen = spy(store, monkeypatch, ("update",))
    touches = {"alice": {alices: (5000.0, 2), bobs: (5000.0, 9)},  # bob's id named by alice: not counted
               "bob": {bobs: (6000.0, 1)}, "张三": {zhangs: (7000.0, 3)}, "carol": {}}
    assert store.count_recalls_of(touches) == 3
    updates = [len(kwargs["ids"]) for _, _, kwargs in seen]
    assert updates == [3]  # the three users' episodic rows in one write
    got = {u: store.get(u, [rid])[0] for u, rid in (("alice", alices), ("bob", bobs), ("张三", zhangs))}
    assert {u: (r.access_count, r.last_accessed) for u, r in got.items()} == {
        "alice": (2, 5000.0), "bob": (1, 6000.0), "张三": (3, 7000.0)}


def test_recalls_of_more_ids_than_one_chroma_read_takes_are_counted(service: MemoryService) -> None:
    # every user's recalls of a 30 s interval in one call: past 32,766 ids one Chroma ``get`` fails
    store = service.store
    assert isinstance(store, ChromaStore)
    mine = service.remember_turn("alice", user_text="我在阳台上养了三盆兰花。").stored[0]
    touches = {f"user-{u}": {f"gone-{u}-{i}": (5000.0, 1) for i in range(1_000)} for u in range(33)}
    touches["alice"] = {mine: (6000.0, 2)}
    assert store.count_recalls_of(touches, kinds=[Kind.EPISODIC]) == 1
    (record,) = store.get("alice", [mine])
    assert (record.access_count, record.last_accessed) == (2, 6000.0)
