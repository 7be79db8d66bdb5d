"""``MnemeStore`` behaves as LangGraph's ``BaseStore`` contract says (mirrored from ``InMemoryStore``), is
Mneme's memory (the agent's records, hybrid recall, the keyword index kept exact) and never crosses users.

LangGraph ships no store conformance suite (its store tests exercise ``InMemoryStore`` itself), so the
documented behaviour is mirrored here, and a property test runs random operations against both stores.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, Item, PutOp, SearchItem, SearchOp
from langgraph.store.memory import InMemoryStore

from mneme import MnemeStore
from mneme.clock import FixedClock
from mneme.memory.base import SHARED_TENANT, Kind
from mneme.memory.chroma import open_chroma_store
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService, RecallOptions
from mneme.testing import FakeEmbeddings

NOW = 1_750_000_000.0


def _service() -> MemoryService:
    return MemoryService(InProcessStore(FakeEmbeddings()), clock=FixedClock(NOW))


@pytest.fixture
def service() -> MemoryService:
    return _service()


@pytest.fixture
def store(service: MemoryService) -> MnemeStore:
    return MnemeStore(service)


def test_it_is_a_langgraph_store_exported_from_mneme(store: MnemeStore) -> None:
    assert isinstance(store, BaseStore)


def test_nested_values_round_trip_and_items_are_built_by_keyword(store: MnemeStore) -> None:
    value = {"text": "喜欢爬山 likes hiking", "tags": ["户外", "weekend"], "profile": {"level": 3, "ok": True,
             "deep": [{"a": None}, 1.5]}}
    store.put(("memories", "alice"), "hobby", value)
    item = store.get(("memories", "alice"), "hobby")
    assert isinstance(item, Item) and not isinstance(item, SearchItem)
    assert item.value == value
    assert (item.namespace, item.key) == (("memories", "alice"), "hobby")
    assert item.created_at == dt.datetime.fromtimestamp(NOW, dt.UTC)
    store.put(("memories", "alice"), "hobby", {"text": "喜欢游泳"})  # a put replaces the value
    again = store.get(("memories", "alice"), "hobby")
    assert again is not None and again.value == {"text": "喜欢游泳"}


def test_equal_keys_in_other_namespaces_or_users_are_other_items(store: MnemeStore) -> None:
    store.put(("memories", "alice"), "k", {"text": "alice top"})
    store.put(("memories", "alice", "preference"), "k", {"text": "alice pref"})
    store.put(("memories", "bob"), "k", {"text": "bob top"})
    assert store.get(("memories", "alice"), "k").value["text"] == "alice top"  # type: ignore[union-attr]
    assert store.get(("memories", "alice", "preference"), "k").value["text"] == "alice pref"  # type: ignore[union-attr]
    assert store.get(("memories", "bob"), "k").value["text"] == "bob top"  # type: ignore[union-attr]
    assert store.get(("memories", "alice", "fact"), "k") is None
    store.delete(("memories", "alice"), "k")
    assert store.get(("memories", "alice"), "k") is None
    assert store.get(("memories", "bob"), "k") is not None


def test_reads_in_a_batch_see_the_state_before_its_writes_and_the_last_put_wins(store: MnemeStore) -> None:
    ns = ("memories", "alice")
    store.put(ns, "a", {"text": "old"})
    results = store.batch([
        PutOp(ns, "a", {"text": "new"}), GetOp(ns, "a"), PutOp(ns, "b", {"text": "first"}),
        PutOp(ns, "b", {"text": "second"}), SearchOp(ns, None, 10, 0, None), GetOp(ns, "b"),
    ])
    assert results[0] is None and results[2] is None
    assert results[1].value == {"text": "old"}  # type: ignore[union-attr]
    assert [it.key for it in results[4]] == ["a"]  # type: ignore[union-attr]
    assert results[5] is None
    assert store.get(ns, "a").value == {"text": "new"}  # type: ignore[union-attr]
    assert store.get(ns, "b").value == {"text": "second"}  # type: ignore[union-attr]


@pytest.mark.parametrize("namespace", [(), ("memories", "a.b"), ("memories", "alice", ""), ("langgraph", "x"),
                                       ("users", "alice"), ("memories", "~shared"), ("memories", "bad user")])
def test_invalid_namespaces_are_refused(store: MnemeStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.aput(namespace, "k", {"text": "x"}))


def test_search_without_a_query_lists_newest_first_with_filters_limit_and_offset(service: MemoryService) -> None:
    clock = [NOW]
    service.clock = lambda: clock[0]
    store = MnemeStore(service)
    for i in range(6):
        clock[0] = NOW + i
        store.put(("memories", "alice"), f"k{i}", {"text": f"note {i}", "n": i, "meta": {"even": i % 2 == 0}})
    listed = store.search(("memories", "alice"))
    assert [it.key for it in listed] == ["k5", "k4", "k3", "k2", "k1", "k0"]
    assert all(it.score is None for it in listed)
    assert [it.key for it in store.search(("memories", "alice"), limit=2, offset=1)] == ["k4", "k3"]
    assert [it.key for it in store.search(("memories", "alice"), filter={"n": {"$gte": 4}})] == ["k5", "k4"]
    assert [it.key for it in store.search(("memories", "alice"), filter={"meta": {"even": True}, "n": {"$lt": 3}})
            ] == ["k2", "k0"]
    assert [it.key for it in store.search(("memories", "alice"), filter={"n": {"$ne": 0}, "meta.even": False})
            ] == ["k5", "k3", "k1"]
    assert store.search(("memories", "alice", "preference")) == []  # a narrower namespace


def test_search_with_a_query_is_mnemes_hybrid_recall_higher_score_better(store: MnemeStore,
                                                                        service: MemoryService) -> None:
    service.remember_turn("alice", user_text="我养了一只猫，名字叫豆豆")
    store.put(("memories", "alice"), "trip", {"text": "Trip to Kyoto planned for April"})
    store.put(("memories", "alice"), "food", {"text": "Allergic to peanuts"})
    found = store.search(("memories", "alice"), query="豆豆")
    assert found and found[0].namespace in (("memories", "alice", "episodic"), ("memories", "alice", "fact"))
    assert all(isinstance(it, SearchItem) and it.score is not None for it in found)
    assert [it.score for it in found] == sorted((it.score for it in found), reverse=True)  # type: ignore[misc]
    expected = service.recall("alice", "豆豆", options=RecallOptions(k=10, reinforce=False, include_documents=False,
                                                                    max_context_tokens=10**9))
    assert [it.key for it in found][:1] == [expected[0].id]  # the same ranking as the agent's recall
    kyoto = store.search(("memories", "alice"), query="Kyoto April", limit=1)
    assert [it.key for it in kyoto] == ["trip"]
    assert store.search(("memories", "alice", "preference"), query="Kyoto") == []


def test_the_agents_memories_and_store_items_are_one_memory(store: MnemeStore, service: MemoryService) -> None:
    report = service.remember_turn("alice", user_text="我住在杭州")
    keys = {it.key for it in store.search(("memories", "alice"))}
    assert set(report.stored) <= keys
    store.put(("memories", "alice", "preference"), "drink", {"text": "用户喜欢喝乌龙茶"})
    recalled = service.recall("alice", "乌龙茶", options=RecallOptions(include_documents=False))
    assert recalled and recalled[0].kind == Kind.PREFERENCE
    # written through the same path: the keyword index already agrees with the store
    assert service.sync_keyword_index() == 0
    store.delete(("memories", "alice", "preference"), "drink")
    assert recalled[0].id not in service.keyword.ids("alice")
    assert service.sync_keyword_index() == 0


def test_the_agents_records_can_be_edited_and_deleted_by_key(store: MnemeStore, service: MemoryService) -> None:
    report = service.remember_turn("alice", user_text="我的猫叫豆豆")
    rid = next(i for i in report.stored if i.startswith("ep-"))
    ns = ("memories", "alice", "episodic")
    assert store.get(ns, rid) is not None and store.get(("memories", "alice"), rid) is None
    store.put(ns, rid, {"text": "user: 我的猫叫豆豆，三岁了"})  # Studio's edit of an agent memory
    edited = service.store.get("alice", [rid])
    assert edited and edited[0].kind == Kind.EPISODIC and "三岁" in edited[0].text
    assert [it.key for it in store.search(("memories", "alice"), query="三岁")][:1] == [rid]
    store.delete(ns, rid)
    assert service.store.get("alice", [rid]) == [] and rid not in service.keyword.ids("alice")


def test_personal_data_in_values_is_redacted_and_counted(store: MnemeStore, service: MemoryService) -> None:
    store.put(("memories", "alice"), "contact", {"text": "我的手机是13812345678", "mail": ["zhang@example.com"]})
    item = store.get(("memories", "alice"), "contact")
    assert item is not None and "13812345678" not in str(item.value) and "zhang@example.com" not in str(item.value)
    record = next(service.store.scan("alice", kinds=None))
    assert record.metadata["redacted_phone"] == 1 and record.metadata["redacted_email"] == 1


def test_list_namespaces_prefix_suffix_depth_and_pages(store: MnemeStore, service: MemoryService) -> None:
    service.remember_turn("alice", user_text="我住在杭州")  # ('memories', 'alice', 'episodic'|'fact')
    store.put(("memories", "alice", "preference"), "tea", {"text": "乌龙茶"})
    store.put(("memories", "alice", "projects", "mneme"), "k", {"text": "deadline friday"})
    store.put(("memories", "bob"), "k", {"text": "bob"})
    alice = store.list_namespaces(prefix=("memories", "alice"))
    assert alice == [("memories", "alice", "episodic"), ("memories", "alice", "fact"),
                     ("memories", "alice", "preference"), ("memories", "alice", "projects", "mneme")]
    assert store.list_namespaces(prefix=("memories", "alice"), max_depth=3) == [
        ("memories", "alice", "episodic"), ("memories", "alice", "fact"), ("memories", "alice", "preference"),
        ("memories", "alice", "projects")]
    assert store.list_namespaces(prefix=("memories", "alice"), suffix=("mneme",)) == [
        ("memories", "alice", "projects", "mneme")]
    assert store.list_namespaces(prefix=("memories", "alice"), limit=2, offset=1) == alice[1:3]
    assert store.search(("memories", "alice", "projects"))[0].value == {"text": "deadline friday"}


def test_one_user_cannot_be_reached_through_another_or_through_all(store: MnemeStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.search(("memories",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces()
    with pytest.raises(InvalidNamespaceError):
        store.put(("memories",), "k", {"text": "x"})


def test_an_admin_store_reads_across_users(service: MemoryService) -> None:
    MnemeStore(service).put(("memories", "alice"), "k", {"text": "a"})
    MnemeStore(service).put(("memories", "bob"), "k", {"text": "b"})
    admin = MnemeStore(service, admin=True)
    assert {it.namespace for it in admin.search(("memories",))} == {("memories", "alice"), ("memories", "bob")}
    assert admin.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "bob")]


def test_documents_are_read_only_unless_admin(store: MnemeStore, service: MemoryService) -> None:
    service.ingest_document("西湖在杭州。\n\nThe Great Wall is in Beijing.", source="guide.md", now=NOW)
    service.ingest_document("私人笔记：密码提示是小狗", source="note.md", user_id="alice", now=NOW)
    docs = store.search(("documents",))
    assert docs and all(it.namespace == ("documents",) for it in docs)
    assert store.search(("documents",), query="Great Wall Beijing")[0].value["text"].startswith("西湖")
    private = store.search(("memories", "alice", "document"))
    assert [it.value["metadata"]["source"] for it in private] == ["note.md"]
    assert store.search(("memories", "bob", "document")) == []
    with pytest.raises(InvalidNamespaceError):
        store.put(("documents",), "faq", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("memories", "alice", "document"), "faq", {"text": "x"})
    admin = MnemeStore(service, admin=True)
    admin.put(("documents",), "faq", {"text": "营业时间 9:00-18:00", "title": "FAQ"})
    faq = store.get(("documents",), "faq")
    assert faq is not None and faq.value["title"] == "FAQ"
    assert service.store.get(SHARED_TENANT, [r.id for r in service.store.scan(SHARED_TENANT, kinds=[Kind.DOCUMENT])
                                             if r.metadata.get("store_key") == "faq"])
    recalled = service.recall("bob", "营业时间")
    assert recalled and recalled[0].source == "document"  # the agent sees the admin's document
    admin.delete(("documents",), "faq")  # and the admin can take it back
    assert store.get(("documents",), "faq") is None


def test_async_twins_give_the_same_answers(store: MnemeStore) -> None:
    async def run() -> None:
        ns = ("memories", "alice")
        await store.aput(ns, "k", {"text": "async 西湖边散步", "n": [1, 2]})
        item = await store.aget(ns, "k")
        assert item is not None and item.value == {"text": "async 西湖边散步", "n": [1, 2]}
        assert [it.key for it in await store.asearch(ns, query="西湖")] == ["k"]
        assert await store.alist_namespaces(prefix=ns) == [ns]
        got = await asyncio.gather(store.aget(ns, "k"), store.aget(ns, "missing"))
        assert got[0] == item and got[1] is None
        await store.adelete(ns, "k")
        assert await store.aget(ns, "k") is None

    asyncio.run(run())


def test_on_embedded_chroma_values_and_recall_survive_a_reopen(tmp_path: Path) -> None:
    emb = FakeEmbeddings()
    service = MemoryService(open_chroma_store(data_dir=tmp_path / "data", embedder=emb, prefix="ms"),
                            clock=FixedClock(NOW))
    MnemeStore(service).put(("memories", "alice"), "k", {"text": "住在杭州 Hangzhou", "deep": {"x": [1, "二"]}})
    service.close()
    reopened = MemoryService(open_chroma_store(data_dir=tmp_path / "data", embedder=emb, prefix="ms"),
                             clock=FixedClock(NOW))
    store = MnemeStore(reopened)
    assert store.get(("memories", "alice"), "k").value == {"text": "住在杭州 Hangzhou", "deep": {"x": [1, "二"]}}  # type: ignore[union-attr]
    reopened.sync_keyword_index()
    assert [it.key for it in store.search(("memories", "alice"), query="Hangzhou")] == ["k"]
    assert store.get(("memories", "bob"), "k") is None
    reopened.close()


def test_a_default_store_opens_the_environments_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mneme import stores

    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MNEME_EMBEDDINGS", "fake")
    monkeypatch.setattr(stores, "_shared", None)
    store = MnemeStore()
    try:
        assert store.service is stores.shared_service()  # one service per process, shared with the agent
        store.put(("memories", "alice"), "k", {"text": "hello"})
        assert store.service.store.count("alice") == 1
    finally:
        store.service.close()


def test_the_agent_reads_and_writes_the_hosts_mneme_store() -> None:
    from mneme import build_builder

    own, host = _service(), _service()
    host.remember_turn("alice", user_text="我的狗叫旺财")
    graph = build_builder(service=own).compile(store=MnemeStore(host))  # as langgraph dev does with langgraph.json
    out = graph.invoke({"messages": [("user", "我搬到成都了。我的狗叫什么名字？")]}, context={"user_id": "alice"})
    assert "旺财" in out["answer"]
    assert out["memory_report"]["stored"] and own.store.count("alice", kinds=None) == 0
    assert set(out["memory_report"]["stored"]) <= {r.id for r in host.store.scan("alice", kinds=None)}
    alone = build_builder(service=own).compile().invoke({"messages": [("user", "我的狗叫什么名字？")]},
                                                         context={"user_id": "alice"})
    assert "旺财" not in alone["answer"]  # without a host store the graph's own memory is used


# -- the contract against InMemoryStore, and tenancy, by property ------------------------------------
EXAMPLES = max(10, settings.default.max_examples // 4)
"""A quarter of the profile's examples (dev 25, CI 75): each example opens a store and runs a dozen operations."""
USERS = ("alice", "bob", "张三")
NAMESPACES = [("memories", u, *rest) for u in USERS for rest in ((), ("fact",), ("preference",), ("notes", "x"))]
values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text("ab 猫狗", max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("xyz", min_size=1, max_size=3), inner,
                                                                max_size=3),
    max_leaves=6,
)
ops = st.lists(st.tuples(st.sampled_from(["put", "delete"]), st.sampled_from(NAMESPACES),
                         st.sampled_from(["k1", "k2", "记忆"]),
                         st.dictionaries(st.sampled_from(["text", "v", "w"]), values, min_size=1, max_size=3)),
               max_size=12)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_get_delete_listing_and_namespaces_agree_with_in_memory_store(ops: list) -> None:
    mneme, reference = MnemeStore(_service()), InMemoryStore()
    for action, ns, key, value in ops:
        for s in (mneme, reference):
            s.put(ns, key, value) if action == "put" else s.delete(ns, key)
    for ns in NAMESPACES:
        for key in ("k1", "k2", "记忆"):
            a, b = mneme.get(ns, key), reference.get(ns, key)
            assert (a.value if a else None) == (b.value if b else None)
    for user in USERS:
        prefix = ("memories", user)
        assert {(i.namespace, i.key) for i in mneme.search(prefix, limit=100)} == \
            {(i.namespace, i.key) for i in reference.search(prefix, limit=100)}
        # InMemoryStore keeps a namespace once touched, even empty; a namespace here is one holding items
        holding = [ns for ns in reference.list_namespaces(prefix=prefix) 
                   if any(i.namespace == ns for i in reference.search(ns, limit=100))]
        assert mneme.list_namespaces(prefix=prefix) == holding


@settings(max_examples=EXAMPLES, deadline=None)
@given(ops=ops, probe=st.sampled_from(["猫", "ab", "狗 a", "k1"]))
def test_no_operation_reaches_another_users_items(ops: list, probe: str) -> None:
    store = MnemeStore(_service())
    owner: dict[tuple[tuple[str, ...], str], str] = {}
    for action, ns, key, value in ops:
        if action == "put":
            store.put(ns, key, value)
            owner[(ns, key)] = ns[1]
        else:
            store.delete(ns, key)
            owner.pop((ns, key), None)
    for user in USERS:
        for item in store.search(("memories", user), limit=100) + store.search(("memories", user), query=probe,
                                                                               limit=100):
            assert item.namespace[1] == user and owner[(item.namespace, item.key)] == user
        for other in USERS:
            if other == user:
                continue
            for ns, key in [k for k, o in owner.items() if o == other]:
                # the same key under this user's namespace is this user's item or nothing
                mine = ("memories", user, *ns[2:])
                item = store.get(mine, key)
                assert item is None or owner.get((mine, key)) == user
                store.delete(mine, key)  # deleting here never touches the other user's item
                owner.pop((mine, key), None)
                assert store.get(ns, key) is not None
