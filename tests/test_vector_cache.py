"""The embedded store's vector cache: search from it equals Chroma's own query, through every write path."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mneme.memory.base import MEMORY_KINDS, SHARED_TENANT, Kind, MemoryRecord, ScoredRecord
from mneme.memory.chroma import ChromaStore, open_chroma_store, reindex_store
from mneme.memory.records import from_metadata
from mneme.memory.vector_cache import Snapshot, VectorCache, normalized
from mneme.testing import FakeEmbeddings

DIM = 24
EMBEDDER = FakeEmbeddings(DIM)
TENANTS = ["alice", "张三", "bob"]
TEXTS = ["I drink green tea every morning", "我每天早上喝绿茶", "hiking in the hills", "周末去爬山",
         "my cat sleeps", "猫在睡觉"]


def _vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(DIM)]


def _records(rng: random.Random, n: int, tenants: list[str] = TENANTS) -> list[MemoryRecord]:
    kinds = [Kind.DOCUMENT] if tenants == [SHARED_TENANT] else [*MEMORY_KINDS, Kind.DOCUMENT]
    return [
        MemoryRecord(id=uuid.uuid4().hex, user_id=rng.choice(tenants), kind=rng.choice(kinds),
                     text=rng.choice(TEXTS), created_at=float(i), embedding=_vector(rng))
        for i in range(n)
    ]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[ChromaStore, ChromaStore]]:
    """A cached embedded store and an uncached one over the same collections (Chroma's own query)."""
    cached = open_chroma_store(data_dir=tmp_path / "data", embedder=EMBEDDER, prefix="vc")
    plain = ChromaStore(cached._client, EMBEDDER, prefix="vc", vector_cache=None)
    assert cached._cache is not None and plain._cache is None
    yield cached, plain
    plain.close()
    cached.close()


def _assert_equal_hits(got: list[ScoredRecord], want: list[ScoredRecord]) -> None:
    """Same records with the same scores (within 1e-4), best first; rows with tied scores may swap."""
    expected = {h.record.id: h for h in want}
    assert [h.record.id for h in got if h.record.id in expected] == [h.record.id for h in got]
    assert len(got) == len(want)
    for hit in got:
        assert hit.score == pytest.approx(expected[hit.record.id].score, abs=1e-4)
        assert hit.record == expected[hit.record.id].record
    assert all(x.score >= y.score - 1e-6 for x, y in zip(got, got[1:], strict=False))


def _exact(plain: ChromaStore, tenant: str, query: list[float], *, kinds: tuple[Kind, ...] = MEMORY_KINDS,
           k: int = 10, include_shared: bool = False) -> list[ScoredRecord]:
    """The true top ``k``: every stored row of the tenant ranked by exact cosine (Chroma's HNSW is approximate)."""
    sources = [(plain._live[kind], tenant) for kind in kinds]
    if include_shared and Kind.DOCUMENT in kinds and tenant != SHARED_TENANT:
        sources.append((plain._live[Kind.DOCUMENT], SHARED_TENANT))
    unit = normalized(query)[0]
    scored = []
    for col, owner in sources:
        got = col.get(where={"user_id": owner}, include=["embeddings", "documents", "metadatas"])  # type: ignore[list-item]
        for rid, vector, text, meta in zip(got["ids"], got["embeddings"], got["documents"], got["metadatas"],
                                           strict=True):
            score = float(normalized(vector)[0] @ unit)
            scored.append(ScoredRecord(from_metadata(rid, text, meta), score))
    scored.sort(key=lambda h: (-h.score, h.record.id))
    return scored[:k]


def _assert_same(cached: ChromaStore, plain: ChromaStore, rng: random.Random, *, queries: int = 6) -> None:
    """Cached search equals the exact ranking of what Chroma stores (ids, order, scores, records), for every
    tenant, and agrees with Chroma's own (approximate) query on the records both return."""
    for tenant in [*TENANTS, SHARED_TENANT]:
        for _ in range(queries):
            query = _vector(rng)
            for kwargs in ({}, {"kinds": [Kind.FACT, Kind.DOCUMENT]}, {"include_shared": True, "k": 25}):
                got = cached.search(tenant, query, **kwargs)  # type: ignore[arg-type]
                want = _exact(plain, tenant, query, **kwargs)  # type: ignore[arg-type]
                assert [h.record.id for h in got] == [h.record.id for h in want]  # random vectors: no ties
                _assert_equal_hits(got, want)
                assert all(h.record.user_id in (tenant, SHARED_TENANT) for h in got)
                approximate = {h.record.id: h for h in plain.search(tenant, query, **kwargs)}  # type: ignore[arg-type]
                for hit in got:
                    if hit.record.id in approximate:
                        assert hit.record == approximate[hit.record.id].record


def test_cached_search_equals_chroma_query_on_random_data(stores: tuple[ChromaStore, ChromaStore]) -> None:
    cached, plain = stores
    rng = random.Random(7)
    cached.add(_records(rng, 150) + _records(rng, 20, [SHARED_TENANT]))
    _assert_same(cached, plain, rng)
    assert cached._cache is not None and cached._cache.rows > 0  # the cache did serve those searches


def test_cache_stays_exact_through_every_write(stores: tuple[ChromaStore, ChromaStore]) -> None:
    cached, plain = stores
    rng = random.Random(11)
    records = _records(rng, 120)
    cached.add(records)
    _assert_same(cached, plain, rng, queries=2)  # loads the entries
    # add new rows and replace vectors (and kinds: a moved record leaves its old collection)
    changed = [MemoryRecord(id=r.id, user_id=r.user_id, kind=rng.choice(MEMORY_KINDS), text="新的 text",
                            created_at=r.created_at, embedding=_vector(rng)) for r in records[:30]]
    cached.add(changed + _records(rng, 30))
    _assert_same(cached, plain, rng, queries=2)
    # a write made by another (uncached) store object: the cached one must notice when hydrating
    plain.delete("alice", ids=[r.id for r in records if r.user_id == "alice"][:5])
    _assert_same(cached, plain, rng, queries=2)
    cached.delete("张三", ids=[r.id for r in records if r.user_id == "张三"][:8])
    _assert_same(cached, plain, rng, queries=2)
    archived = [r.id for r in records if r.user_id == "bob"][:10]
    assert cached.archive("bob", archived) > 0
    _assert_same(cached, plain, rng, queries=2)
    assert cached.restore("bob", archived[:4]) > 0
    _assert_same(cached, plain, rng, queries=2)
    cached.update_metadata("bob", {rid: {"importance": 0.9} for rid in archived})
    _assert_same(cached, plain, rng, queries=2)
    assert cached.delete("alice", archived=None) > 0  # forget a user
    assert cached.search("alice", _vector(rng)) == []
    _assert_same(cached, plain, rng, queries=2)


def test_two_store_objects_on_one_directory_share_the_cache(tmp_path: Path) -> None:
    rng = random.Random(3)
    with open_chroma_store(data_dir=tmp_path, embedder=EMBEDDER, prefix="vc") as a, \
            open_chroma_store(data_dir=tmp_path, embedder=EMBEDDER, prefix="vc") as b:
        assert a._cache is b._cache
        a.add(_records(rng, 40, ["alice"]))
        query = _vector(rng)
        before = b.search("alice", query, k=50)
        fresh = MemoryRecord(id="new-one", user_id="alice", kind=Kind.FACT, text="住在北京 lives in Beijing",
                             created_at=99.0, embedding=query)
        a.add([fresh])
        after = b.search("alice", query, k=50)
        assert after[0].record.id == "new-one" and after[0].score == pytest.approx(1.0, abs=1e-5)
        assert len(after) == len(before) + 1
        a.delete("alice", ids=["new-one"])
        assert [h.record.id for h in b.search("alice", query, k=50)] == [h.record.id for h in before]


def test_reindex_drops_the_cache(tmp_path: Path) -> None:
    rng = random.Random(5)
    with open_chroma_store(data_dir=tmp_path, embedder=EMBEDDER, prefix="vc") as store:
        store.add(_records(rng, 30))
        store.search("alice", _vector(rng))
        assert store._cache is not None and store._cache.rows > 0
        other = FakeEmbeddings(DIM + 8, name="other")
        reindex_store(store._client, other, prefix="vc")
        assert store._cache.rows == 0
        with open_chroma_store(data_dir=tmp_path, embedder=other, prefix="vc") as again:
            query = other.embed(["green tea 绿茶"])[0]
            plain = ChromaStore(again._client, other, prefix="vc")
            _assert_equal_hits(again.search("alice", query), plain.search("alice", query))


def test_a_filtered_or_archived_search_still_goes_to_chroma(stores: tuple[ChromaStore, ChromaStore]) -> None:
    cached, plain = stores
    rng = random.Random(9)
    cached.add(_records(rng, 60))
    query = _vector(rng)
    for kwargs in ({"where": {"emotion": "neutral"}}, {"archived": True}):
        _assert_equal_hits(cached.search("alice", query, **kwargs),  # type: ignore[arg-type]
                           plain.search("alice", query, **kwargs))  # type: ignore[arg-type]
    assert cached._cache is not None and cached._cache.rows == 0


def test_an_uncached_store_object_still_keeps_the_shared_cache_exact(tmp_path: Path) -> None:
    with open_chroma_store(data_dir=tmp_path, embedder=EMBEDDER, prefix="vc") as store:
        plain = ChromaStore(store._client, EMBEDDER, prefix="vc", vector_cache=None)
        rng = random.Random(2)
        store.add(_records(rng, 10, ["alice"]))
        query = _vector(rng)
        before = store.search("alice", query, k=20)
        plain.add([MemoryRecord(id="via-plain", user_id="alice", kind=Kind.FACT, text="x", created_at=1.0,
                                embedding=query)])
        after = store.search("alice", query, k=20)
        assert [h.record.id for h in after] == ["via-plain"] + [h.record.id for h in before]


# --- the cache on its own ------------------------------------------------------------------------


def _loader(n: int, dim: int = 4) -> tuple[list[str], list[list[float]], list[tuple[str, dict[str, object]]]]:
    return ([f"r{i}" for i in range(n)], [[float(i + 1)] + [1.0] * (dim - 1) for i in range(n)],
            [(f"text {i}", {"user_id": "a", "n": i}) for i in range(n)])


def _row(text: str) -> tuple[str, dict[str, object]]:
    return (text, {"user_id": "a"})


def test_lru_bound_evicts_least_recently_used() -> None:
    cache = VectorCache(max_rows=10)
    cache.snapshot(("c", "a"), lambda: _loader(4))
    cache.snapshot(("c", "b"), lambda: _loader(4))
    cache.snapshot(("c", "a"), lambda: pytest.fail("a is cached"))  # a is now the most recent
    cache.snapshot(("c", "d"), lambda: _loader(4))
    assert cache.keys() == [("c", "a"), ("c", "d")]
    assert cache.rows == 8
    cache.upsert(("c", "a"), ["x", "y", "z"], [[1.0, 0, 0, 0]] * 3, [_row("x")] * 3)  # past the budget: d goes
    assert cache.keys() == [("c", "a")] and cache.rows == 7


def test_a_tenant_bigger_than_the_budget_is_not_cached() -> None:
    cache = VectorCache(max_rows=3)
    loads = []
    assert cache.snapshot(("c", "big"), lambda: loads.append(1) or _loader(5)) is None
    assert cache.snapshot(("c", "big"), lambda: loads.append(1) or _loader(5)) is None
    assert len(loads) == 1 and cache.rows == 0  # remembered as too big until it changes
    cache.remove(("c", "big"), ["r0", "r1", "r2"])
    assert cache.snapshot(("c", "big"), lambda: _loader(2)) is not None


def test_a_write_during_a_load_keeps_the_loaded_rows_out() -> None:
    cache = VectorCache()

    def racing_load() -> tuple[list[str], list[list[float]], list[tuple[str, dict[str, object]]]]:
        cache.upsert(("c", "a"), ["late"], [[0.0, 1.0, 0.0, 0.0]], [_row("late")])
        return _loader(3)

    snap = cache.snapshot(("c", "a"), racing_load)
    assert snap is not None and len(snap.ids) == 3
    assert cache.keys() == []


def test_snapshot_top_is_exact_cosine_ranking() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(200, 16))
    ids = [f"id{i}" for i in range(200)]
    snap = Snapshot(ids, normalized(vectors))
    query = normalized(rng.normal(size=16))[0]
    cosine = vectors @ query / np.linalg.norm(vectors, axis=1)
    want = [ids[i] for i in np.argsort(-cosine)[:10]]
    got = snap.top(query, 10)
    assert [ids[pos] for pos, _ in got] == want
    assert np.allclose([s for _, s in got], np.sort(cosine)[::-1][:10], atol=1e-5)
    assert len(snap.top(query, 500)) == 200


def test_readers_keep_their_snapshot_while_rows_change() -> None:
    cache = VectorCache()
    before = cache.snapshot(("c", "a"), lambda: _loader(3))
    assert before is not None
    rows = before.vectors.copy()
    texts = [text for text, _ in before.rows]
    cache.upsert(("c", "a"), ["r0", "new"], [[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]],
                 [_row("r0 again"), _row("new")])
    cache.update(("c", "a"), {"r2": {"n": None, "seen": 3}})
    cache.remove(("c", "a"), ["r1"])
    assert np.array_equal(before.vectors, rows) and list(before.ids[:3]) == ["r0", "r1", "r2"]
    assert [text for text, _ in before.rows[:3]] == texts and before.rows[2][1] == {"user_id": "a", "n": 2}
    after = cache.snapshot(("c", "a"), lambda: pytest.fail("cached"))
    assert after is not None and list(after.ids) == ["r0", "r2", "new"]
    assert np.allclose(after.vectors[0], [0.0, 0.0, 0.0, 1.0])
    assert [text for text, _ in after.rows] == ["r0 again", "text 2", "new"]
    assert after.rows[1][1] == {"user_id": "a", "seen": 3}  # merged as Chroma merges: None removes


def test_a_changed_stamp_or_an_old_entry_reloads() -> None:
    cache = VectorCache(max_age=3600)
    loads: list[int] = []

    def load() -> tuple[list[str], list[list[float]], list[tuple[str, dict[str, object]]]]:
        loads.append(1)
        return _loader(2)

    cache.snapshot(("c", "a"), load, stamp=(("w1", 1),))
    cache.snapshot(("c", "a"), load, stamp=(("w1", 1),))
    assert len(loads) == 1
    cache.snapshot(("c", "a"), load, stamp=(("w1", 1), ("w2", 1)))  # another writer published
    assert len(loads) == 2
    cache.restamp(("c", "a"), lambda old: (*old, ("w3", 5)))  # our own publication
    cache.snapshot(("c", "a"), load, stamp=(("w1", 1), ("w2", 1), ("w3", 5)))
    assert len(loads) == 2
    cache.max_age = 0.0
    cache.snapshot(("c", "a"), load, stamp=(("w1", 1), ("w2", 1), ("w3", 5)))
    assert len(loads) == 3


# --- server mode: several processes, each with its own cache ------------------------------------


@pytest.fixture
def server_pair(chroma_server: Any) -> Iterator[tuple[ChromaStore, ChromaStore, ChromaStore]]:
    """Two cached server-mode stores, as two app processes would open them, and an uncached reference."""
    prefix = f"s{uuid.uuid4().hex[:10]}"
    a = open_chroma_store(url=chroma_server.url, embedder=EMBEDDER, prefix=prefix)
    b = open_chroma_store(url=chroma_server.url, embedder=EMBEDDER, prefix=prefix)
    plain = ChromaStore(b._client, EMBEDDER, prefix=prefix, remote=True, vector_cache=None)
    assert a._cache is not None and b._cache is not None and a._cache is not b._cache
    assert a._stamps is not None and b._stamps is not None and a._stamps.writer != b._stamps.writer
    yield a, b, plain
    for store in (plain, a, b):
        store.close()


def test_server_mode_caches_stay_exact_across_processes(
        server_pair: tuple[ChromaStore, ChromaStore, ChromaStore]) -> None:
    a, b, plain = server_pair
    rng = random.Random(21)
    records = _records(rng, 90)
    a.add(records[:60])
    _assert_same(a, plain, rng, queries=2)
    _assert_same(b, plain, rng, queries=2)  # both caches loaded
    b.add(records[60:])  # b writes: a must see it on its very next search
    _assert_same(a, plain, rng, queries=2)
    a.delete("alice", ids=[r.id for r in records if r.user_id == "alice"][:5])
    _assert_same(b, plain, rng, queries=2)
    bobs = [r.id for r in records if r.user_id == "bob"]
    b.update_metadata("bob", {rid: {"importance": 0.91, "topic": "茶"} for rid in bobs[:6]})
    _assert_same(a, plain, rng, queries=2)
    assert b.archive("bob", bobs[:8]) > 0
    _assert_same(a, plain, rng, queries=2)
    assert a.restore("bob", bobs[:3]) > 0
    _assert_same(b, plain, rng, queries=2)
    assert b.delete("张三", archived=None) > 0
    _assert_same(a, plain, rng, queries=2)
    _assert_same(b, plain, rng, queries=2)


def test_server_mode_own_writes_do_not_force_a_reload(
        server_pair: tuple[ChromaStore, ChromaStore, ChromaStore], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, plain = server_pair
    rng = random.Random(22)
    a.add(_records(rng, 20, ["alice"]))
    query = _vector(rng)
    a.search("alice", query)
    loads: list[str] = []
    import mneme.memory.chroma as chroma_module
    from mneme.memory.stamps import LOG_SIZE, MAX_LOGGED_IDS

    real = chroma_module._load_rows
    monkeypatch.setattr(chroma_module, "_load_rows",
                        lambda col, tenant, moved=None: loads.append(tenant) or real(col, tenant, moved))
    fresh = MemoryRecord(id="own", user_id="alice", kind=Kind.EPISODIC, text="刚写的", created_at=5.0,
                         embedding=query)
    a.add([fresh])
    assert a.search("alice", query)[0].record.id == "own"
    assert loads == []  # served from a's cache, updated in place
    b.add([MemoryRecord(id="theirs", user_id="alice", kind=Kind.EPISODIC, text="别人写的", created_at=6.0,
                        embedding=[-x for x in query])])
    b.delete("alice", ids=["own"])
    ids = [h.record.id for h in a.search("alice", [-x for x in query], k=50)]
    assert ids[0] == "theirs" and "own" not in ids
    assert loads == []  # two changes behind b: patched from the stamps' log, by id
    for i in range(LOG_SIZE + 1):  # too far behind for the log: the changed entry reloads
        b.update_metadata("alice", {"theirs": {"importance": i / 10}})
    hits = a.search("alice", [-x for x in query], k=50)
    assert hits[0].record.id == "theirs" and hits[0].record.importance == LOG_SIZE / 10
    assert loads == ["alice"]
    big = [MemoryRecord(id=f"bulk{i}", user_id="alice", kind=Kind.FACT, text="批量", created_at=7.0,
                        embedding=_vector(rng)) for i in range(MAX_LOGGED_IDS + 1)]
    b.add(big)  # too many ids to log: the facts entry reloads
    facts = a.search("alice", query, kinds=[Kind.FACT], k=500)
    assert len(facts) == plain.count("alice", kinds=[Kind.FACT]) >= MAX_LOGGED_IDS + 1
    assert loads == ["alice", "alice"]


def test_concurrent_writers_never_erase_each_others_stamps(chroma_server: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from mneme.memory.stamps import row_id

    prefix = f"s{uuid.uuid4().hex[:10]}"
    stores = [open_chroma_store(url=chroma_server.url, embedder=EMBEDDER, prefix=prefix) for _ in range(4)]
    try:
        key = ("some-collection", "alice")
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda s: [s._stamps.publish({key: [f"id{i}"]}) for i in range(10)],  # type: ignore[union-attr]
                          stores))
        row = stores[0]._stamps.read([key])[key]  # type: ignore[union-attr]
        assert dict(row.stamp) == {s._stamps.writer: 10 for s in stores}  # type: ignore[union-attr]
        # the log keeps each writer's last LOG_SIZE changes: a reader 3 changes behind learns their ids
        behind = tuple((w, 7) for w, _ in row.stamp)
        assert row.changed_ids(behind) == {"id7", "id8", "id9"}
        assert row.changed_ids(tuple((w, 0) for w, _ in row.stamp)) is None  # too far behind: reload
        assert row.changed_ids(row.stamp) == set()
        assert "alice" not in row_id(key)
    finally:
        for store in stores:
            store.close()


def test_wide_stamp_rows_are_compacted_into_a_change(chroma_server: Any) -> None:
    from mneme.memory.stamps import MAX_WRITERS, ChangeStamps

    prefix = f"s{uuid.uuid4().hex[:10]}"
    with open_chroma_store(url=chroma_server.url, embedder=EMBEDDER, prefix=prefix) as store:
        writers = [ChangeStamps(store._stamps._col) for _ in range(MAX_WRITERS + 1)]  # type: ignore[union-attr]
        key = ("c", "bob")
        for w in writers:
            w.publish({key: ["x"]})
        wide = writers[0].read([key])[key]
        assert len(wide.stamp) == MAX_WRITERS + 1  # read as it was, then compacted
        after = writers[0].read([key])[key]
        assert len(after.stamp) == 1 and after.stamp != wide.stamp and after.log == {}
        assert after.changed_ids(wide.stamp) is None  # a compacted row means: reload


def test_a_big_tenant_loads_page_by_page(stores: tuple[ChromaStore, ChromaStore],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import mneme.memory.chroma as chroma_module

    monkeypatch.setattr(chroma_module, "LOAD_PAGE", 7)
    cached, plain = stores
    rng = random.Random(31)
    cached.add(_records(rng, 60, ["alice"]))
    _assert_same(cached, plain, rng, queries=2)  # alice's entries came in pages of 7 rows


def test_a_paged_load_raced_by_another_process_is_not_trusted(
        server_pair: tuple[ChromaStore, ChromaStore, ChromaStore], monkeypatch: pytest.MonkeyPatch) -> None:
    import mneme.memory.chroma as chroma_module

    monkeypatch.setattr(chroma_module, "LOAD_PAGE", 5)
    a, _, plain = server_pair
    rng = random.Random(32)
    plain.add(_records(rng, 30, ["alice"]))
    monkeypatch.setattr(a, "_stamp_moved", lambda key, stamp: True)  # as if rows moved during every load
    query = _vector(rng)
    got = a.search("alice", query, k=8)
    assert [h.record.id for h in got] == [h.record.id for h in plain.search("alice", query, k=8)]  # Chroma's query
    assert a._cache is not None and a._cache.keys() == []  # nothing installed from the raced loads


# -- the int8 first pass of large entries: exactly the float32 ranking -------------------------------------
def _unit_rows(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _assert_near_top(got: list[tuple[int, float]], want: list[tuple[int, float]], vectors: np.ndarray,
                     query: np.ndarray) -> None:
    """The quantized path's top k against the float32 scan's: every score within 1e-3 of the row's float32
    cosine, and a row only differs from the float32 top k where the two tie within that (float16 rows)."""
    assert len(got) == len(want)
    truth = vectors @ query
    assert all(abs(s - truth[i]) < 1e-3 for i, s in got)
    kth = want[-1][1]
    assert all(truth[i] >= kth - 2e-3 for i, _ in got)
    assert all(s <= got[-1][1] + 2e-3 for i, s in want if i not in {j for j, _ in got})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_int8_first_pass_ranks_like_the_float32_scan(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from mneme.memory import vector_cache

    monkeypatch.setattr(vector_cache, "QUANTIZED_MIN_ROWS", 500)  # small sizes, where brute force is cheap
    rng = np.random.default_rng(seed)
    vectors = _unit_rows(rng, 3000)
    ids = [f"r{i}" for i in range(3000)]
    cache = VectorCache(10_000)
    snap = cache.snapshot(("c", "u"), lambda: (ids, vectors, [("", {})] * 3000))
    assert snap is not None and snap.quant is not None and snap.vectors.dtype == np.float16
    brute = Snapshot(ids, vectors)
    found = total = 0
    for _ in range(20):
        q = normalized(vectors[rng.integers(3000)] + 0.5 * rng.standard_normal(64).astype(np.float32))[0]
        for k in (1, 10, 30):
            got, want = snap.top(q, k), brute.top(q, k)
            _assert_near_top(got, want, vectors, q)
            found += len({i for i, _ in got} & {i for i, _ in want})
            total += k
    assert found / total >= 0.99  # the figure the README states: recall of the float32 top k


def test_int8_scores_are_the_exact_integer_dot_products(monkeypatch: pytest.MonkeyPatch) -> None:
    import simsimd

    from mneme.memory import vector_cache

    rng = np.random.default_rng(4)
    quant = rng.integers(-127, 128, size=(5000, 512), dtype=np.int8)
    quant[7] = 127  # the largest |sum| a row can reach: 512 * 127 * 127
    query = np.full(512, 127, dtype=np.int8)
    query[:100] = rng.integers(-127, 128, size=100, dtype=np.int8)
    want = quant.astype(np.int64) @ query.astype(np.int64)
    assert np.array_equal(vector_cache.int8_scores(quant, query), want)  # SimSIMD's kernel

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("Input tensors must have matching datatypes")

    monkeypatch.setattr(simsimd, "cdist", refused)  # as when usearch's bundled SimSIMD was loaded first
    assert np.array_equal(vector_cache.int8_scores(quant, query), want)  # the numpy fallback


def test_the_int8_copy_follows_upserts_and_removals(monkeypatch: pytest.MonkeyPatch) -> None:
    from mneme.memory import vector_cache

    monkeypatch.setattr(vector_cache, "QUANTIZED_MIN_ROWS", 400)
    rng = np.random.default_rng(9)
    vectors = _unit_rows(rng, 380)  # below the threshold: no int8 copy yet
    ids = [f"r{i}" for i in range(380)]
    cache = VectorCache(10_000)
    key = ("c", "u")
    first = cache.snapshot(key, lambda: (ids, vectors, [("", {})] * 380))
    assert first is not None and first.quant is None and first.vectors.dtype == np.float32
    more = _unit_rows(rng, 300)
    cache.upsert(key, [f"s{i}" for i in range(300)], more, [("", {})] * 300)  # crosses it
    replaced = _unit_rows(rng, 5)
    cache.upsert(key, ["r0", "r1", "s2", "s3", "s4"], replaced, [("", {})] * 5)
    cache.remove(key, ["r5", "s7", "r100"])
    snap = cache.snapshot(key, lambda: ([], [], []))
    assert snap is not None and snap.quant is not None and snap.quant.shape[0] == len(snap.ids) == 677
    assert snap.vectors.dtype == np.float16 and first.vectors.dtype == np.float32  # the old view kept its rows
    exact = {**dict(zip(ids, vectors, strict=True)), **{f"s{i}": v for i, v in enumerate(more)},
             "r0": replaced[0], "r1": replaced[1], "s2": replaced[2], "s3": replaced[3], "s4": replaced[4]}
    rows32 = np.stack([exact[i] for i in snap.ids])
    brute = Snapshot(snap.ids, rows32)
    for _ in range(20):
        q = normalized(rng.standard_normal(64).astype(np.float32))[0]
        _assert_near_top(snap.top(q, 10), brute.top(q, 10), rows32, q)
    assert snap.top(normalized(replaced[0])[0], 1)[0][0] == list(snap.ids).index("r0")
    cache.remove(key, [f"s{i}" for i in range(300)])  # back below it: float32 again, exact
    small = cache.snapshot(key, lambda: ([], [], []))
    assert small is not None and small.quant is None and small.vectors.dtype == np.float32


def test_the_dense_bench_reports_both_scans_and_that_they_agree() -> None:
    from mneme.evaluation.bench_retrieval import run_dense_bench
    from mneme.memory.vector_cache import QUANTIZED_MIN_ROWS

    out = run_dense_bench(QUANTIZED_MIN_ROWS, queries=5, dim=64)
    assert out["int8_used"] and out["stored_as"] == "float16"
    assert out["recall_of_float32_top_k"] >= 0.99 and out["max_score_difference"] < 1e-3
    assert out["float32_scan_ms"]["p95"] >= out["float32_scan_ms"]["p50"] > 0
    assert out["int8_first_pass_ms"]["p50"] > 0


def test_cached_rows_are_packed_and_read_back_exactly() -> None:
    from mneme.memory.vector_cache import PackedRows

    meta = {"user_id": "张三", "created_at": 1.5, "access_count": 3, "flag": True, "key": "", "none": None}
    rows = [("我每天早上喝绿茶", meta), ("hiking", {"user_id": "张三", "tags": ["a", "b"]})]
    packed = PackedRows(rows)
    assert len(packed) == 2 and packed[0] == rows[0] and packed[1] == rows[1] and packed[:] == rows
    assert packed[0][1] is not meta  # a fresh dict on every read: a caller cannot change the cache
    cache = VectorCache(100)
    key = ("c", "张三")
    vectors = _unit_rows(np.random.default_rng(4), 2, dim=8)
    before = cache.snapshot(key, lambda: (["a", "b"], vectors, rows))
    assert before is not None and isinstance(before.rows, PackedRows)
    cache.update(key, {"a": {"access_count": 4, "flag": None}})
    cache.upsert(key, ["c"], vectors[:1], [("猫在睡觉", {"user_id": "张三"})])
    cache.remove(key, ["b"])
    assert cache.rows_of(key, ["a", "b", "c"]) == {
        "a": ("我每天早上喝绿茶", {"user_id": "张三", "created_at": 1.5, "access_count": 4, "key": ""}),
        "c": ("猫在睡觉", {"user_id": "张三"})}
    assert list(before.rows) == rows  # a snapshot taken before keeps the rows it saw
