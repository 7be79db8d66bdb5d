"""Property tests: whatever the memories and filters, no tenant ever sees or deletes another's records."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mneme.errors import InvalidInputError
from mneme.memory.base import MEMORY_KINDS, MemoryRecord, MemoryStore
from mneme.memory.chroma import ChromaStore, chroma_client
from mneme.memory.inprocess import InProcessStore
from mneme.memory.tenancy import normalize_where, scoped_where
from mneme.memory.vector_cache import VectorCache
from mneme.testing import FakeEmbeddings

TENANTS = ["alice", "bob", "张三", "li.si@example.com", "u-7"]
WORDS = ["tea", "coffee", "北京", "上海", "cat", "猫", "hiking", "爬山", "work", "工作", "family", "家人"]
EMOTIONS = ["neutral", "positive", "negative"]
EMBEDDER = FakeEmbeddings(64)

memories = st.lists(
    st.builds(
        lambda user, words, kind, emotion, importance, count: MemoryRecord(
            id=uuid.uuid4().hex, user_id=user, kind=kind, text=" ".join(words), created_at=1.0,
            emotion=emotion, importance=importance, access_count=count, metadata={"topic": words[0]},
        ),
        st.sampled_from(TENANTS),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        st.sampled_from(MEMORY_KINDS),
        st.sampled_from(EMOTIONS),
        st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]),
        st.integers(0, 3),
    ),
    max_size=25,
)

conditions = st.one_of(
    st.builds(lambda t: {"user_id": t}, st.sampled_from(TENANTS)),
    st.builds(lambda t: {"user_id": {"$ne": t}}, st.sampled_from(TENANTS)),
    st.builds(lambda ts: {"user_id": {"$in": ts}}, st.lists(st.sampled_from(TENANTS), min_size=1, max_size=3)),
    st.builds(lambda e: {"emotion": e}, st.sampled_from(EMOTIONS)),
    st.builds(lambda es: {"emotion": {"$nin": es}}, st.lists(st.sampled_from(EMOTIONS), min_size=1, max_size=2)),
    st.builds(lambda op, x: {"importance": {op: x}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]),
              st.sampled_from([0.0, 0.3, 0.5, 1.0])),
    st.builds(lambda n: {"access_count": {"$gte": n}}, st.integers(0, 3)),
    st.builds(lambda w: {"topic": w}, st.sampled_from(WORDS)),
    st.builds(lambda k: {"kind": k.value}, st.sampled_from(MEMORY_KINDS)),
)
filters = st.one_of(st.none(), st.recursive(
    conditions,
    lambda inner: st.one_of(
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=6,
))


@pytest.fixture(scope="module")
def chroma_client_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chroma_client(data_dir=tmp_path_factory.mktemp("props")) as (client, _):
        yield client


@contextmanager
def chroma_store(client: Any, **kw: Any) -> Iterator[ChromaStore]:
    """A store under a fresh prefix whose collections are dropped after the example.

    Each example gets empty collections; dropping them keeps the client's collection count flat (Chroma
    slows down with it: ~0.2 s an example at first, over 1 s after a few hundred examples).
    """
    prefix = f"p{uuid.uuid4().hex[:12]}"
    store = ChromaStore(client, EMBEDDER, prefix=prefix, **kw)
    try:
        yield store
    finally:
        store.close()
        for col in client.list_collections():
            if col.name.startswith(prefix):
                client.delete_collection(col.name)


@pytest.fixture(params=["inprocess", "embedded", "embedded-cached"], scope="module")
def fresh_store(request: pytest.FixtureRequest) -> Callable[[], AbstractContextManager[MemoryStore]]:
    if request.param == "inprocess":
        return lambda: nullcontext(InProcessStore(EMBEDDER))
    client = request.getfixturevalue("chroma_client_dir")
    # a tiny row budget makes the cached store evict and reload between operations too
    cache = VectorCache(max_rows=0) if request.param == "embedded" else VectorCache(max_rows=12)
    return lambda: chroma_store(client, vector_cache=cache)


CHROMA_EXAMPLES = 40 if settings.get_current_profile_name() == "ci" else 10
"""Each example opens real Chroma collections (~0.2 s): the full count in CI, a quick pass locally."""
PROPS = settings(max_examples=CHROMA_EXAMPLES, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPS
@given(records=memories, tenant=st.sampled_from(TENANTS), where=filters, query=st.sampled_from(WORDS))
def test_reads_never_cross_tenants(fresh_store: Callable[[], AbstractContextManager[MemoryStore]],
                                   records: list[MemoryRecord], tenant: str, where: Any, query: str) -> None:
    with fresh_store() as store:
        _check_reads(store, records, tenant, where, query)


def _check_reads(store: MemoryStore, records: list[MemoryRecord], tenant: str, where: Any, query: str) -> None:
    store.add(records)
    expected = {r.id for r in records if r.user_id == tenant}
    hits = store.search(tenant, EMBEDDER.embed([query])[0], k=50, where=where)
    assert {h.record.id for h in hits} <= expected
    scanned = list(store.scan(tenant, where=where))
    assert {r.id for r in scanned} <= expected
    assert all(r.user_id == tenant for r in scanned)
    assert {r.id for r in store.get(tenant, [r.id for r in records])} == expected


@PROPS
@given(records=memories, tenant=st.sampled_from(TENANTS), where=filters, by_ids=st.booleans())
def test_deletes_never_touch_other_tenants(fresh_store: Callable[[], AbstractContextManager[MemoryStore]],
                                           records: list[MemoryRecord], tenant: str, where: Any, by_ids: bool) -> None:
    with fresh_store() as store:
        _check_deletes(store, records, tenant, where, by_ids)


def _check_deletes(store: MemoryStore, records: list[MemoryRecord], tenant: str, where: Any, by_ids: bool) -> None:
    store.add(records)
    others = {r.id for r in records if r.user_id != tenant}
    ids = [r.id for r in records] if by_ids else None
    store.delete(tenant, ids=ids, where=where)
    store.archive(tenant, [r.id for r in records])
    store.update_metadata(tenant, {r.id: {"importance": 0.0} for r in records})
    survivors = [r for user in TENANTS if user != tenant for r in store.scan(user)]
    assert {r.id for r in survivors} == others
    originals = {r.id: r for r in records}
    assert all(r.importance == originals[r.id].importance for r in survivors)


@PROPS
@given(records=memories, tenant=st.sampled_from(TENANTS), where=filters)
def test_inprocess_filters_agree_with_chroma(chroma_client_dir: Any, records: list[MemoryRecord],
                                             tenant: str, where: Any) -> None:
    memory = InProcessStore(EMBEDDER)
    with chroma_store(chroma_client_dir) as chroma:
        for store in (memory, chroma):
            store.add(records)
        assert {r.id for r in memory.scan(tenant, where=where)} == {r.id for r in chroma.scan(tenant, where=where)}


@given(where=filters, tenant=st.sampled_from(TENANTS))
def test_scoped_where_always_pins_the_tenant_at_the_top(where: Any, tenant: str) -> None:
    scoped = scoped_where(tenant, where)
    clauses = scoped.get("$and", [scoped])
    assert {"user_id": {"$eq": tenant}} in clauses
    assert set(scoped) <= {"$and", "user_id"}


@given(junk=st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=5), st.floats(allow_nan=True)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["$or", "$and", "$not", "$where", "x", "$in", ""]),
                                            inner, max_size=3)),
    max_leaves=8,
))
def test_arbitrary_input_is_normalised_or_rejected(junk: Any) -> None:
    try:
        out = normalize_where(junk)
    except InvalidInputError:
        return
    assert out is None or isinstance(out, dict)

