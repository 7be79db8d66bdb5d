"""``MemoryService``: hybrid recall, re-ranking, reinforcement, the writing path, erasure and consistency.

Most tests run on ``InProcessStore(FakeEmbeddings())`` with an in-memory ``KeywordIndex`` and a
``FixedClock``; where meaning matters (a paraphrased question) the real offline use-m3 embedder is used,
and one test checks that embedded Chroma keeps data and the keyword index across a reopen.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mneme.clock import FixedClock
from mneme.config import Settings
from mneme.errors import InvalidTenantError
from mneme.memory.base import SHARED_TENANT, EmbedderInfo, Kind, MemoryRecord
from mneme.memory.fusion import count_tokens
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, RecallOptions
from mneme.memory.writing import WritePolicy
from mneme.stores import open_service
from mneme.testing import FakeChatModel, FakeEmbeddings

DAY = 86_400.0
NOW = datetime(2024, 5, 5, 12, 0, tzinfo=UTC).timestamp()
VALID_ID = "11010519491231002X"  # checksum-valid Chinese resident ID (GB 11643 test vector)
NEGATIVE = "最近工作压力好大，我很焦虑，晚上失眠，和老板吵架了"


class BlindEmbeddings:
    """An embedder that sees nothing: every text gets the same vector, so the dense channel cannot rank."""

    info = EmbedderInfo(name="blind", dimension=8)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The same unit vector for every text."""
        return [[1.0] + [0.0] * 7 for _ in texts]


def make_service(embedder: object | None = None, *, clock: FixedClock | None = None, **kwargs: object) -> MemoryService:
    """A service over a fresh in-process store and in-memory keyword index."""
    store = InProcessStore(embedder or FakeEmbeddings())  # type: ignore[arg-type]
    return MemoryService(store, keyword=KeywordIndex(None), clock=clock or FixedClock(NOW), **kwargs)  # type: ignore[arg-type]


def put(service: MemoryService, user: str, rid: str, text: str, *, created_at: float = NOW - DAY,
        kind: Kind = Kind.EPISODIC, importance: float = 0.5, embedding: list[float] | None = None) -> None:
    """Store one record directly (no writing policy) and bring the keyword index up to date."""
    service.store.add([MemoryRecord(id=rid, user_id=user, kind=kind, text=text, created_at=created_at,
                                    importance=importance, embedding=embedding)])
    service.sync_keyword_index()


def ids(items: Sequence[object]) -> list[str]:
    return [it.id for it in items]  # type: ignore[attr-defined]


@pytest.fixture
def service() -> MemoryService:
    return make_service()


@pytest.fixture(scope="module")
def use_m3() -> object:
    from mneme.embeddings import load_embedder

    return load_embedder("use-m3")


# -- recall: scope -----------------------------------------------------------------------------------


def test_fact_told_in_one_thread_is_recalled_in_another_for_that_user_only(use_m3: object) -> None:
    service = make_service(use_m3)
    service.remember_turn("alice", user_text="I moved to Berlin last year with my wife.", thread_id="t1")
    service.remember_turn("alice", user_text="我养了一只叫豆豆的猫。", thread_id="t1")
    service.remember_turn("bob", user_text="I like pizza with mushrooms.", thread_id="t9")

    where = service.recall("alice", "Where do I live?", options=RecallOptions(k=1))
    assert where and "Berlin" in where[0].text and where[0].thread_id == "t1"
    cat = service.recall("alice", "我的猫叫什么名字？", options=RecallOptions(k=1))
    assert cat and "豆豆" in cat[0].text

    for query in ("Where do I live?", "我的猫叫什么名字？", "Berlin 豆豆"):
        for item in service.recall("bob", query, options=RecallOptions(k=20)):
            assert item.user_id == "bob"
            assert "Berlin" not in item.text and "豆豆" not in item.text
    assert all(it.user_id == "alice" for it in service.recall("alice", "pizza mushrooms", options=RecallOptions(k=20)))


# -- recall: channels and fusion ----------------------------------------------------------------------


def test_keyword_only_match_is_found_through_bm25() -> None:
    service = make_service(BlindEmbeddings())
    for i in range(60):  # more than the dense pool (30): the target may not even be a dense candidate
        put(service, "u1", f"m{i:02d}", f"周末的计划 number {i} about the garden and the weather")
    put(service, "u1", "target", "我的订单号是 ZQX4471，快递员叫 Okonkwo")

    hits = service.recall("u1", "ZQX4471 Okonkwo", options=RecallOptions(k=3, reinforce=False))
    assert hits[0].id == "target" and hits[0].signals["keyword"] > 0
    zh = service.recall("u1", "订单号", options=RecallOptions(k=3, reinforce=False))
    assert zh[0].id == "target"
    # with the keyword channel switched off the blind dense channel cannot find it first
    dense_only = service.recall("u1", "ZQX4471 Okonkwo", options=RecallOptions(k=3, keyword_weight=0.0))
    assert "target" not in ids(dense_only)[:1]


class ScriptedEmbeddings(FakeEmbeddings):
    """FakeEmbeddings, except one query text maps to a chosen unit vector."""

    def __init__(self, query: str, vector: list[float]) -> None:
        super().__init__(dimension=len(vector))
        self.query, self.vector = query, vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector if t == self.query else v for t, v in zip(texts, super().embed(texts), strict=True)]


def unit(i: int, j: int | None = None, cos: float = 1.0, dim: int = 16) -> list[float]:
    """A unit vector at cosine ``cos`` to axis ``i`` (the rest along axis ``j``)."""
    v = [0.0] * dim
    v[i] = cos
    if j is not None:
        v[j] = (1 - cos * cos) ** 0.5
    return v


def test_fusion_puts_an_item_strong_in_both_channels_first() -> None:
    query = "kyoto temple trip"
    service = make_service(ScriptedEmbeddings(query, unit(0)))
    # dense: dense_only 1.0 > both 0.9 > kw_only 0; keyword: kw_only (terms twice) > both (once)
    put(service, "u1", "dense_only", "an autumn holiday with maple leaves", embedding=unit(0))
    put(service, "u1", "both", "the kyoto temple trip was lovely", embedding=unit(0, 1, 0.9))
    put(service, "u1", "kw_only", "kyoto temple trip kyoto temple trip notes", embedding=unit(2))
    for i in range(5):
        put(service, "u1", f"noise{i}", f"grocery list item {i}", embedding=unit(3 + i))

    opts = RecallOptions(k=3, reinforce=False, forgetting=False)
    hits = service.recall("u1", query, options=opts)
    assert ids(hits)[0] == "both"
    assert set(ids(hits)) == {"both", "dense_only", "kw_only"}
    # each channel alone prefers its own champion: the fused order is the fusion's doing
    assert ids(service.recall("u1", query, options=RecallOptions(k=1, keyword_weight=0.0, forgetting=False))) == [
        "dense_only"]
    assert ids(service.recall("u1", query, options=RecallOptions(k=1, keyword_weight=1.0, forgetting=False))) == [
        "kw_only"]


# -- recall: time --------------------------------------------------------------------------------------


def test_time_aware_query_prefers_memories_from_that_day_zh() -> None:
    service = make_service()
    may2 = datetime(2024, 5, 2, 15, 0, tzinfo=UTC).timestamp()
    may4 = datetime(2024, 5, 4, 15, 0, tzinfo=UTC).timestamp()
    apr20 = datetime(2024, 4, 20, 15, 0, tzinfo=UTC).timestamp()
    service.remember_turn("u1", user_text="下午我去爬山了", now=may2)
    service.remember_turn("u1", user_text="下午我去超市了", now=may4)
    service.remember_turn("u1", user_text="下午我去游泳了", now=apr20)

    # the same memories, different days asked about: only the time window can tell them apart
    opts = RecallOptions(k=3, reinforce=False)
    on_may2 = service.recall("u1", "我5月2日做了什么", options=opts, now=NOW)
    assert on_may2[0].created_at == may2 and on_may2[0].signals["time"] == 1.0
    assert on_may2[1].signals["time"] < 1.0
    assert service.recall("u1", "我5月4号做了什么？", options=opts, now=NOW)[0].created_at == may4
    assert service.recall("u1", "4月20日我干嘛了", options=opts, now=NOW)[0].created_at == apr20
    assert "time" not in service.recall("u1", "我做了什么", options=opts, now=NOW)[0].signals


def test_time_aware_query_prefers_memories_from_yesterday_en() -> None:
    clock = FixedClock(NOW)
    service = make_service(clock=clock)
    service.remember_turn("u1", user_text="In the afternoon I went swimming.", now=NOW - DAY)
    service.remember_turn("u1", user_text="In the afternoon I went shopping.", now=NOW - 3 * DAY)
    service.remember_turn("u1", user_text="In the afternoon I went hiking.", now=NOW - 10 * DAY)

    assert "swimming" in service.recall("u1", "what did I do yesterday", options=RecallOptions(k=1))[0].text
    clock.set(NOW - 2 * DAY)  # "yesterday" follows the clock: now it is the day of the shopping
    assert "shopping" in service.recall("u1", "what did I do yesterday", options=RecallOptions(k=1))[0].text
    # an explicit ``now`` wins over the clock
    top = service.recall("u1", "what did I do yesterday", options=RecallOptions(k=1), now=NOW - 9 * DAY)
    assert "hiking" in top[0].text


# -- recall: forgetting ----------------------------------------------------------------------------------


def test_forgetting_prefers_the_fresher_of_two_equally_relevant_memories(service: MemoryService) -> None:
    text = "I parked the car on level three"
    put(service, "u1", "a-old", text, created_at=NOW - 200 * DAY)  # ids chosen so a plain tie puts old first
    put(service, "u1", "z-new", text, created_at=NOW - DAY)
    hits = service.recall("u1", "where did I park the car", options=RecallOptions(k=2, reinforce=False))
    assert ids(hits) == ["z-new", "a-old"]
    assert hits[1].signals["retention"] < hits[0].signals["retention"]
    no_curve = service.recall("u1", "where did I park the car",
                              options=RecallOptions(k=2, reinforce=False, forgetting=False))
    assert ids(no_curve) == ["a-old", "z-new"]


def test_forgetting_never_buries_a_clearly_more_relevant_old_memory(service: MemoryService) -> None:
    put(service, "u1", "old", "my passport number is kept in the blue folder in the study",
        created_at=NOW - 3000 * DAY, importance=0.0)
    put(service, "u1", "fresh", "I bought a blue folder", created_at=NOW - 60.0)
    hits = service.recall("u1", "where is my passport kept", options=RecallOptions(k=2, reinforce=False))
    assert ids(hits)[0] == "old"
    assert hits[0].signals["retention"] < 0.01  # it had faded almost entirely, and still wins


# -- recall: reinforcement ------------------------------------------------------------------------------


def test_recall_reinforces_what_it_returns(service: MemoryService) -> None:
    put(service, "u1", "m1", "I play the cello in an orchestra")
    put(service, "u1", "m2", "My favourite fruit is mango")
    out = service.recall("u1", "cello orchestra", options=RecallOptions(k=1), now=NOW + 5.0)
    assert ids(out) == ["m1"]
    m1, m2 = service.store.get("u1", ["m1", "m2"])
    assert (m1.access_count, m1.last_accessed) == (1, NOW + 5.0)
    assert (m2.access_count, m2.last_accessed) == (0, None)
    service.recall("u1", "cello orchestra", options=RecallOptions(k=1), now=NOW + 9.0)
    assert service.store.get("u1", ["m1"])[0].access_count == 2


def test_recall_without_reinforce_changes_nothing(service: MemoryService) -> None:
    put(service, "u1", "m1", "I play the cello in an orchestra")
    service.recall("u1", "cello", options=RecallOptions(reinforce=False))
    record = service.store.get("u1", ["m1"])[0]
    assert (record.access_count, record.last_accessed) == (0, None)


# -- recall: options ------------------------------------------------------------------------------------


def test_k_and_score_floor(service: MemoryService) -> None:
    put(service, "u1", "strong", "jazz piano lessons on tuesday evenings")
    put(service, "u1", "weak", "a tuesday dentist appointment")
    for i in range(8):
        put(service, "u1", f"jazz{i}", f"jazz record number {i}")
    assert len(service.recall("u1", "jazz piano lessons", options=RecallOptions(k=3))) == 3
    everything = service.recall("u1", "jazz piano lessons", options=RecallOptions(k=50, reinforce=False))
    assert "weak" in ids(everything)
    floor = 0.5
    kept = service.recall("u1", "jazz piano lessons", options=RecallOptions(k=50, score_floor=floor))
    assert kept and all(it.score >= floor for it in kept)
    assert ids(kept)[0] == "strong" and "weak" not in ids(kept)
    assert service.recall("u1", "jazz piano lessons", options=RecallOptions(k=0)) == []


def test_documents_weight_and_inclusion(service: MemoryService) -> None:
    service.remember_turn("u1", user_text="I play tennis on Sundays")
    service.ingest_document("Tennis rules: a set is won with six games.", source="tennis.md")
    service.ingest_document("My private tennis club notes.", source="club.md", user_id="u1")
    service.ingest_document("Bob's tennis diary.", source="bob.md", user_id="bob")

    both = service.recall("u1", "tennis", options=RecallOptions(k=10))
    assert {it.source for it in both} == {"memory", "document"}
    titles = {it.metadata.get("title") for it in both if it.source == "document"}
    assert titles == {"tennis.md", "club.md"}  # shared and own private documents, never bob's
    hidden = service.recall("u1", "tennis", options=RecallOptions(k=10, document_weight=0.0))
    assert hidden and {it.source for it in hidden} == {"memory"}
    excluded = service.recall("u1", "tennis", options=RecallOptions(k=10, include_documents=False))
    assert excluded and {it.source for it in excluded} == {"memory"}
    only_docs = service.recall("u1", "tennis", options=RecallOptions(k=10, memory_weight=0.0))
    assert only_docs and {it.source for it in only_docs} == {"document"}


def test_mmr_returns_diverse_items(service: MemoryService) -> None:
    for i in range(3):
        put(service, "u1", f"dup{i}", f"I love jazz music and Miles Davis records {'!' * i}")
    put(service, "u1", "other", "the jazz music festival with Miles Davis tribute bands in Montreal")
    for i in range(4):
        put(service, "u1", f"noise{i}", f"grocery list {i}: eggs, milk, bread")
    plain = service.recall("u1", "jazz music Miles Davis", options=RecallOptions(k=2, reinforce=False))
    assert set(ids(plain)) <= {"dup0", "dup1", "dup2"}
    diverse = service.recall("u1", "jazz music Miles Davis",
                             options=RecallOptions(k=2, mmr=True, reinforce=False))
    assert ids(diverse)[0] in {"dup0", "dup1", "dup2"} and ids(diverse)[1] == "other"


def test_token_budget_is_respected(service: MemoryService) -> None:
    for i in range(6):
        put(service, "u1", f"m{i}", f"关于旅行的回忆第{i}条：我们在杭州西湖边散步，吃了很多好吃的东西，还拍了照片。")
    full = service.recall("u1", "杭州西湖旅行", options=RecallOptions(k=6, reinforce=False))
    assert len(full) == 6
    budget = 60
    cut = service.recall("u1", "杭州西湖旅行", options=RecallOptions(k=6, max_context_tokens=budget, reinforce=False))
    assert 0 < len(cut) < 6
    assert sum(count_tokens(it.text) for it in cut) <= budget
    assert ids(cut) == ids(full)[: len(cut)]


# -- remember_turn ---------------------------------------------------------------------------------------


def count_all(service: MemoryService, user: str) -> int:
    return service.store.count(user, kinds=None, archived=None)


@pytest.mark.parametrize("text", ["谢谢！", "好的", "thanks!", "ok", "👍"])
def test_low_value_turns_store_nothing(service: MemoryService, text: str) -> None:
    model = FakeChatModel(responses=[{"summary": None, "facts": []}])
    report = service.remember_turn("u1", user_text=text, assistant_text="不客气。", model=model)
    assert report.stored == [] and report.skipped is not None
    assert report.model_calls == 0 and model.calls == []
    assert count_all(service, "u1") == 0 and service.keyword.count("u1") == 0


def test_exact_repeat_is_skipped(service: MemoryService) -> None:
    first = service.remember_turn("u1", user_text="I am reading Dune this month", now=NOW)
    again = service.remember_turn("u1", user_text="I am reading Dune this month", now=NOW + DAY)
    assert first.stored and again.stored == [] and again.skipped == "repeat"
    assert count_all(service, "u1") == 1
    other = service.remember_turn("u2", user_text="I am reading Dune this month")  # hashes are per user
    assert other.stored


def test_repeat_still_updates_a_fact_that_changed_since(service: MemoryService) -> None:
    service.remember_turn("u1", user_text="我住在上海", now=NOW)
    service.remember_turn("u1", user_text="我搬到北京了", now=NOW + DAY)
    report = service.remember_turn("u1", user_text="我住在上海", now=NOW + 2 * DAY)  # moved back
    fact = service.store.get_by_key("u1", Kind.FACT, "home_city")
    assert fact is not None and "上海" in fact.text
    assert [h["text"] for h in fact.history] == ["用户住在上海", "用户住在北京"]
    assert report.stored == [fact.id]  # the fact, but no second episode
    assert service.store.count("u1", kinds=[Kind.EPISODIC]) == 2


def test_identifiers_are_redacted_and_counted(service: MemoryService) -> None:
    text = f"我的手机是13812345678，邮箱zhang@example.com，身份证{VALID_ID}，帮我记一下。"
    report = service.remember_turn("u1", user_text=text, assistant_text="好的，已记下 zhang@example.com。")
    assert report.stored and report.redactions == {"phone": 1, "email": 2, "id_number": 1}
    records = list(service.store.scan("u1", kinds=None, archived=None))
    assert len(records) == 1
    record = records[0]
    for raw in ("13812345678", "zhang@example.com", VALID_ID, "example.com"):
        assert raw not in record.text and raw not in str(record.metadata)
    assert record.metadata["redacted_phone"] == 1
    assert record.metadata["redacted_email"] == 2
    assert record.metadata["redacted_id_number"] == 1
    assert service.keyword.search("u1", "13812345678 zhang example") == []
    assert all(it.signals["keyword"] == 0 for it in service.recall("u1", "13812345678"))


def test_negative_turn_leaves_a_summary_only(service: MemoryService) -> None:
    report = service.remember_turn("u1", user_text=NEGATIVE, assistant_text="听起来你最近很辛苦。",
                                   thread_id="t1", turn_ids=["t1/7", "t1/8"])
    records = list(service.store.scan("u1", kinds=None, archived=None))
    assert [r.kind for r in records] == [Kind.SUMMARY] and report.stored == [records[0].id]
    summary = records[0]
    assert summary.emotion == "negative" and summary.source_turns == ["t1/7", "t1/8"]
    assert "焦虑" in summary.text
    assert "听起来你最近很辛苦" not in summary.text  # the reply is not kept either
    assert service.store.count("u1", kinds=[Kind.EPISODIC], archived=None) == 0


def test_negative_turn_with_graphic_detail_keeps_only_the_gist(service: MemoryService) -> None:
    text = "I feel so depressed and hopeless lately. Yesterday I cut myself with a knife."
    service.remember_turn("u1", user_text=text)
    (summary,) = list(service.store.scan("u1", kinds=None, archived=None))
    assert summary.kind == Kind.SUMMARY
    assert "knife" not in summary.text and "cut myself" not in summary.text


def test_fact_update_keeps_one_current_value_with_history(service: MemoryService) -> None:
    service.remember_turn("u1", user_text="我住在上海", now=NOW)
    service.remember_turn("u1", user_text="我搬到北京了", now=NOW + DAY)
    facts = [r for r in service.store.scan("u1", kinds=[Kind.FACT], archived=None) if r.key == "home_city"]
    assert len(facts) == 1
    assert "北京" in facts[0].text and facts[0].metadata["value"] == "北京"
    assert [h["text"] for h in facts[0].history] == ["用户住在上海"]
    assert facts[0].history[0]["replaced_at"] == NOW + DAY
    hits = service.recall("u1", "我住在哪里", options=RecallOptions(k=10, reinforce=False))
    fact_hits = [it for it in hits if it.kind == Kind.FACT]
    assert len(fact_hits) == 1 and "北京" in fact_hits[0].text


def test_malformed_model_output_twice_falls_back_and_still_stores(service: MemoryService) -> None:
    model = FakeChatModel(responses=["this is not JSON", "{still: not json"])
    report = service.remember_turn("u1", user_text="I work at Siemens as an engineer", model=model)
    assert report.model_calls == 2 and len(model.calls) == 2 and report.fallback
    assert report.stored
    job = service.store.get_by_key("u1", Kind.FACT, "workplace")
    assert job is not None and "Siemens" in job.text  # the pattern path filled in


def test_a_normal_turn_costs_one_model_call(service: MemoryService) -> None:
    model = FakeChatModel(responses=[{"summary": None, "facts": [
        {"kind": "preference", "key": "pref:music", "value": "jazz", "text": "The user likes jazz",
         "polarity": "likes"}]}])
    report = service.remember_turn("u1", user_text="Jazz is what I listen to all day", model=model)
    assert report.model_calls == 1 and len(model.calls) == 1 and not report.fallback
    pref = service.store.get_by_key("u1", Kind.PREFERENCE, "pref:music")
    assert pref is not None and pref.text == "The user likes jazz"
    negative = FakeChatModel(responses=[{"summary": "用户工作压力大，感到焦虑。", "facts": []}])
    report = service.remember_turn("u1", user_text=NEGATIVE, model=negative)
    assert report.model_calls == 1 and len(negative.calls) == 1
    summary = next(service.store.scan("u1", kinds=[Kind.SUMMARY]))
    assert summary.text == "用户工作压力大，感到焦虑。"


def test_service_model_is_used_when_no_model_is_passed() -> None:
    model = FakeChatModel(responses=[{"summary": None, "facts": []}])
    service = make_service(model=model)
    assert service.remember_turn("u1", user_text="I repaired my bike today").model_calls == 1
    assert service.remember_turn("u1", user_text="谢谢！").model_calls == 0
    assert len(model.calls) == 1


def test_context_comes_from_the_previous_reply_the_caller_read_from_the_thread(service: MemoryService) -> None:
    service.remember_turn("u1", user_text="我想学做菜", assistant_text="好主意！你喜欢哪种菜系呢？", thread_id="t1")
    service.remember_turn("u1", user_text="川菜和粤菜", thread_id="t1", previous_reply="好主意！你喜欢哪种菜系呢？")
    service.remember_turn("u1", user_text="粤菜", thread_id="t2")
    by_text = {r.text.splitlines()[0]: r for r in service.store.scan("u1", kinds=[Kind.EPISODIC])}
    assert "菜系" in by_text["user: 川菜和粤菜"].metadata["context"]
    assert "context" not in by_text["user: 粤菜"].metadata  # another thread has no previous reply
    hits = service.recall("u1", "用户喜欢哪种菜系", options=RecallOptions(k=1, reinforce=False))
    assert hits[0].text.startswith("user: 川菜和粤菜")


def test_write_policy_without_assistant_text() -> None:
    service = make_service(writing=WritePolicy(store_assistant_text=False))
    service.remember_turn("u1", user_text="I adopted a golden retriever", assistant_text="What's its name?")
    (record,) = list(service.store.scan("u1", kinds=None))
    assert record.text == "user: I adopted a golden retriever"


# -- erase and consistency -----------------------------------------------------------------------------


def test_forget_user_erases_everything_of_that_user_only(service: MemoryService) -> None:
    for user in ("u1", "u2"):
        service.remember_turn(user, user_text="我住在上海，我喜欢爵士乐")
        service.remember_turn(user, user_text=NEGATIVE)
        service.ingest_document("private notes about sailing", source="notes.md", user_id=user)
    service.ingest_document("shared handbook about sailing", source="handbook.md")
    some = next(service.store.scan("u1", kinds=[Kind.EPISODIC]))
    service.store.archive("u1", [some.id])
    before_u2 = count_all(service, "u2")

    erased = service.forget_user("u1")
    assert erased >= 5
    assert count_all(service, "u1") == 0 and service.keyword.count("u1") == 0
    assert service.recall("u1", "sailing 上海 爵士乐", options=RecallOptions(k=20, include_documents=False)) == []
    assert count_all(service, "u2") == before_u2 and service.keyword.count("u2") == before_u2
    assert service.store.count(SHARED_TENANT, kinds=None) == 1
    assert service.recall("u2", "爵士乐")


def test_delete_refuses_another_users_ids(service: MemoryService) -> None:
    service.remember_turn("alice", user_text="My locker code is in the red notebook")
    (rid,) = [r.id for r in service.store.scan("alice", kinds=None)]
    assert service.delete("bob", [rid]) == 0
    assert service.store.get("alice", [rid]) and rid in service.keyword.ids("alice")
    assert service.delete("alice", [rid, "no-such-id"]) == 1
    assert service.store.get("alice", [rid]) == [] and rid not in service.keyword.ids()


def test_sync_rebuilds_a_wiped_keyword_index() -> None:
    service = make_service(BlindEmbeddings())  # only the keyword channel can find anything
    for i in range(40):
        service.remember_turn("u1", user_text=f"routine note {i} about chores")
    service.remember_turn("u1", user_text="The spare key is under the flowerpot Qwerty9")
    service.keyword.rebuild([])  # wiped (a lost file, a crash)
    # (dense ties are broken by random ids, so only the keyword channel is checked here)
    assert service.keyword.search("u1", "Qwerty9", k=1) == []
    assert service.sync_keyword_index() == 41
    assert service.keyword.count("u1") == 41
    assert "Qwerty9" in service.recall("u1", "Qwerty9", options=RecallOptions(k=1))[0].text
    assert service.sync_keyword_index() == 0  # in agreement now: nothing to do


def test_a_record_deleted_behind_the_index_is_never_recalled(service: MemoryService) -> None:
    service.remember_turn("u1", user_text="The parcel locker code word is Zebra42")
    service.remember_turn("u1", user_text="I keep the router in the hall")
    (victim,) = [r.id for r in service.store.scan("u1", kinds=None) if "Zebra42" in r.text]
    service.store.delete("u1", ids=[victim])  # behind the service's back
    assert victim in service.keyword.ids("u1")
    assert victim not in ids(service.recall("u1", "Zebra42 parcel locker", options=RecallOptions(k=10)))
    assert victim not in service.keyword.ids("u1")  # recall healed the index
    service.remember_turn("u1", user_text="The guest room name is Lion77")
    service.store.delete("u1", ids=[r.id for r in service.store.scan("u1", kinds=None) if "Lion77" in r.text])
    assert service.sync_keyword_index() == 1 and service.keyword.count("u1") == 1
    assert ids(service.recall("u1", "Lion77 guest room", options=RecallOptions(k=10))) == [
        r.id for r in service.store.scan("u1", kinds=None)]


@pytest.mark.parametrize("query", [
    '"foo" AND bar* NEAR(baz, 2) col:val OR -x ^y',
    "x" * 100_000,
    "我" * 100_000,
    "",
    "   \n\t ",
    "😀🎉🔥",
    "\x00\u202e'; DROP TABLE kw_docs; --",
    "NOT OR AND *",
])
def test_hostile_queries_do_not_crash(service: MemoryService, query: str) -> None:
    service.remember_turn("u1", user_text="I like the foo bar near the baz 我喜欢")
    out = service.recall("u1", query)
    assert isinstance(out, list)
    if not query.strip():
        assert out == []
    assert service.keyword.count("u1") == 1  # the index survived the query


@pytest.mark.parametrize("bad", ["", "a b", "../etc", "x" * 200, SHARED_TENANT, "u1;DROP", None, 42])
def test_invalid_user_ids_raise(service: MemoryService, bad: object) -> None:
    with pytest.raises(InvalidTenantError):
        service.recall(bad, "anything")  # type: ignore[arg-type]
    with pytest.raises(InvalidTenantError):
        service.remember_turn(bad, user_text="I live in Paris")  # type: ignore[arg-type]
    with pytest.raises(InvalidTenantError):
        service.forget_user(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidTenantError):
        service.delete(bad, ["x"])  # type: ignore[arg-type]


# -- embedded Chroma ---------------------------------------------------------------------------------


def test_embedded_chroma_keeps_data_and_keyword_index_across_reopen(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", collection_prefix="svc")
    service = open_service(settings, embedder=FakeEmbeddings(), clock=FixedClock(NOW))
    service.remember_turn("u1", user_text="我住在上海", thread_id="t1")
    service.remember_turn("u1", user_text="我搬到北京了", thread_id="t1")
    service.remember_turn("u1", user_text="My library card number is LX-90817")
    before = service.store.count("u1", kinds=None, archived=None)
    service.close()

    reopened = open_service(settings, embedder=FakeEmbeddings(), clock=FixedClock(NOW + DAY))
    try:
        assert reopened.store.count("u1", kinds=None, archived=None) == before == 4
        assert reopened.keyword.count("u1") == before
        assert reopened.sync_keyword_index() == 0  # the persisted index agreed with the store
        fact = reopened.store.get_by_key("u1", Kind.FACT, "home_city")
        assert fact is not None and "北京" in fact.text and fact.history[0]["text"] == "用户住在上海"
        hits = reopened.recall("u1", "LX-90817", options=RecallOptions(k=1))
        assert "LX-90817" in hits[0].text and hits[0].signals["keyword"] > 0
        assert reopened.remember_turn("u1", user_text="My library card number is LX-90817").skipped == "repeat"
    finally:
        reopened.close()


@pytest.mark.parametrize("backend", ["inprocess", "embedded"])
def test_an_upserted_fact_starts_fresh(tmp_path: Path, backend: str) -> None:
    service = (make_service() if backend == "inprocess" else
               open_service(Settings(data_dir=tmp_path / "data"), embedder=FakeEmbeddings(), clock=FixedClock(NOW)))
    try:
        service.remember_turn("u1", user_text="我住在上海", now=NOW)
        service.recall("u1", "我住在哪里", now=NOW + 60)  # reinforces the 上海 fact
        service.drain(10)  # with a journal (open_service), recalls are counted by its background thread
        assert service.store.get_by_key("u1", Kind.FACT, "home_city").last_accessed == NOW + 60  # type: ignore[union-attr]
        service.remember_turn("u1", user_text="我搬到北京了", now=NOW + DAY)
        fact = service.store.get_by_key("u1", Kind.FACT, "home_city")
        assert fact is not None and "北京" in fact.text
        assert (fact.access_count, fact.last_accessed) == (0, None)  # the new value was never recalled
    finally:
        service.close()
