"""The write journal and its applier: durable acknowledgement, batches, idempotent replay, read-your-writes.

In-process store and keyword index, a ``FixedClock``; the journal is a real SQLite file in ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from mneme.clock import FixedClock
from mneme.errors import InvalidInputError, JournalWriteError, StoreUnavailableError
from mneme.graph import build_graph
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.inprocess import InProcessStore
from mneme.memory.journal import JournalEntry, WriteJournal, new_entry_id, open_journal, record_ids
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, TurnRequest
from mneme.testing import FakeChatModel, FakeEmbeddings

NOW = datetime(2024, 5, 5, 12, 0, tzinfo=UTC).timestamp()


class CountingEmbeddings(FakeEmbeddings):
    """``FakeEmbeddings`` that records the size of every ``embed`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed and count the call."""
        self.calls.append(len(texts))
        return super().embed(texts)


class FlakyStore(InProcessStore):
    """An in-process store whose ``add`` fails while ``down`` is set (as a stopped Chroma server would)."""

    def __init__(self, embedder: Any) -> None:
        super().__init__(embedder)
        self.down = False
        self.refuse_user: str | None = None
        self.add_calls = 0

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Fail like an unreachable server, or refuse one user's records, else add."""
        self.add_calls += 1
        if self.down:
            raise StoreUnavailableError("cannot reach the Chroma server (test)")
        if self.refuse_user and any(r.user_id == self.refuse_user for r in records):
            raise InvalidInputError("refused (test)")
        super().add(records)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[WriteJournal]:
    j = open_journal(tmp_path / "journal")
    yield j
    j.close()


def make(journal: WriteJournal | None, embedder: Any = None, store: Any = None, **kw: Any) -> MemoryService:
    store = store if store is not None else InProcessStore(embedder or FakeEmbeddings())
    return MemoryService(store, keyword=KeywordIndex(None), clock=FixedClock(NOW), journal=journal, **kw)


def all_records(service: MemoryService, user: str) -> list[MemoryRecord]:
    return list(service.store.scan(user, kinds=None, archived=None))


def test_an_acknowledged_turn_is_on_disk_redacted_and_survives_a_reopen(tmp_path: Path) -> None:
    j = open_journal(tmp_path / "journal")
    service = make(j)
    assert service.applier is not None
    service.applier.pause()
    report = service.enqueue_turn("alice", user_text="我的手机是13812345678，我喜欢乌龙茶", thread_id="t1")
    assert report.queued and not report.stored and report.redactions == {"phone": 1}
    # the process dies before the applier ran: close the file without draining
    service.applier.stop(0)
    j.close()
    raw = b"".join(p.read_bytes() for p in (tmp_path / "journal").glob("journal-*"))
    assert b"13812345678" not in raw and "乌龙茶".encode() in raw  # redacted before the disk
    again = open_journal(tmp_path / "journal")
    try:
        [entry] = again.pending("alice")
        assert entry.id == report.queued[0] and "[手机号]" in entry.user_text and entry.redactions == {"phone": 1}
    finally:
        again.close()


def test_recall_finds_a_queued_turn_before_it_is_applied_zh_and_en(journal: WriteJournal) -> None:
    service = make(journal)
    assert service.applier is not None
    service.applier.pause()
    service.enqueue_turn("alice", user_text="I like oolong tea")
    service.enqueue_turn("alice", user_text="我养了一只叫豆豆的猫")
    assert not all_records(service, "alice")  # nothing stored yet
    tea = service.recall("alice", "what tea do I like?")
    assert tea and "oolong" in tea[0].text and tea[0].metadata.get("queued")
    cat = service.recall("alice", "我的猫叫什么名字")
    assert cat and "豆豆" in cat[0].text
    assert service.recall("bob", "what tea do I like?") == []  # another user's queue is not theirs
    service.applier.resume()
    assert service.drain(10)
    stored = service.recall("alice", "what tea do I like?")
    assert stored and not stored[0].metadata.get("queued")
    assert stored[0].id == tea[0].id  # the queued item had the id its record got
    assert len([r for r in stored if "oolong" in r.text and r.kind == Kind.EPISODIC]) == 1


@pytest.mark.parametrize(("told", "asked", "unrelated"), [
    ("我最近在学吉他", "What instrument am I learning?", "What is my favourite food?"),
    ("My daughter is called Lily", "我女儿叫什么名字？", "我住在哪个城市？"),
])
def test_a_queued_turn_is_found_by_meaning_in_another_language(journal: WriteJournal, told: str, asked: str,
                                                                 unrelated: str) -> None:
    from mneme.embeddings import load_embedder

    service = make(journal, embedder=load_embedder("use-m3"))
    assert service.applier is not None
    service.applier.pause()
    service.enqueue_turn("alice", user_text=told)
    service.enqueue_turn("alice", user_text="The weather was nice, we walked to the station")
    assert not all_records(service, "alice") and not journal.search("alice", asked)  # queued, no shared word
    found = service.recall("alice", asked)
    assert found and found[0].text == f"user: {told}" and found[0].metadata.get("queued")
    assert all(told not in it.text for it in service.recall("alice", unrelated))  # the floor still holds
    assert service.recall("bob", asked) == []  # another user's queue is not theirs
    service.applier.resume()
    assert service.drain(10)
    assert found[0].id in {it.id for it in service.recall("alice", asked)}  # the record it became (a fact filling
    # the slot asked for may now come first: asks_slot)


def test_a_batch_is_one_embedding_call_and_one_store_write(journal: WriteJournal) -> None:
    embedder = CountingEmbeddings()
    store = FlakyStore(embedder)
    service = make(journal, store=store)
    assert service.applier is not None
    service.applier.pause()
    for i in range(20):
        service.enqueue_turn(f"u{i % 4}", user_text=f"I went hiking on trail number {i} today", thread_id="t")
    embedder.calls.clear()
    service.applier.resume()
    assert service.drain(10)
    assert embedder.calls == [20] and store.add_calls == 1 and service.applier.batches == 1
    assert sum(len(all_records(service, f"u{u}")) for u in range(4)) == 20


def test_store_turns_replayed_writes_the_same_records(journal: WriteJournal) -> None:
    service = make(None)
    requests = [TurnRequest(user_id="alice", user_text=t, now=NOW, id=new_entry_id())
                for t in ("我住在上海", "I like jazz", "我搬到北京了")]
    first = service.remember_turns(requests)
    before = sorted((r.id, r.text) for r in all_records(service, "alice"))
    service.remember_turns(requests)  # a crash between the store's write and the journal's ``done``
    assert sorted((r.id, r.text) for r in all_records(service, "alice")) == before
    assert first[0].stored[0] == record_ids(requests[0].id)[0]
    [home] = [r for r in all_records(service, "alice") if r.key == "home_city"]
    assert home.text == "用户住在北京" and [h["text"] for h in home.history] == ["用户住在上海"]


def test_a_replay_after_a_crash_before_done_adds_no_duplicates(tmp_path: Path) -> None:
    store = InProcessStore(FakeEmbeddings())
    j = open_journal(tmp_path / "journal")
    service = make(j, store=store)
    assert service.applier is not None
    service.applier.pause()
    for text in ("I like oolong tea", "My sister lives in Lyon", "我喜欢爵士乐"):
        service.enqueue_turn("alice", user_text=text)
    # apply without removing from the journal, as a process killed right after the store's write would
    entries = j.take()
    service.store_turns([TurnRequest.of(e) for e in entries], [service.plan(TurnRequest.of(e)) for e in entries])
    stored = sorted(r.id for r in all_records(service, "alice"))
    service.applier.stop(0)
    j.close()
    reopened = make(open_journal(tmp_path / "journal"), store=store)
    assert reopened.drain(10)
    assert sorted(r.id for r in all_records(reopened, "alice")) == stored
    assert reopened.journal is not None and reopened.journal.backlog() == 0
    reopened.close()


def test_forget_user_drops_queued_turns_and_delete_drops_a_queued_item(journal: WriteJournal) -> None:
    service = make(journal)
    assert service.applier is not None
    service.applier.pause()
    service.enqueue_turn("alice", user_text="I like oolong tea")
    service.enqueue_turn("bob", user_text="I like green tea")
    service.enqueue_turn("bob", user_text="My dog is called Rex")
    service.forget_user("alice")
    assert journal.pending("alice") == [] and len(journal.pending("bob")) == 2
    [rex] = [it for it in service.recall("bob", "what is my dog called") if "Rex" in it.text]
    assert service.delete("bob", [rex.id]) == 0  # nothing stored yet, but the queued turn goes
    assert [e.user_text for e in journal.pending("bob")] == ["I like green tea"]
    service.applier.resume()
    assert service.drain(10)
    assert all_records(service, "alice") == []
    assert not [r for r in all_records(service, "bob") if "Rex" in r.text]


def test_a_turn_that_cannot_be_journaled_is_an_error_not_a_success(journal: WriteJournal) -> None:
    service = make(journal)
    page_count = journal._conn.execute("PRAGMA page_count").fetchone()[0]
    journal._conn.execute(f"PRAGMA max_page_count = {page_count}")  # the disk is full: SQLITE_FULL
    with pytest.raises(JournalWriteError, match="NOT kept"):
        service.enqueue_turn("alice", user_text="I like oolong tea " + "x" * 20_000)
    assert journal.pending("alice") == [] and journal.backlog() == 0


def test_a_graph_run_raises_when_the_turn_cannot_be_journaled(journal: WriteJournal) -> None:
    service = make(journal)
    graph = build_graph(service=service, checkpointer=InMemorySaver())
    page_count = journal._conn.execute("PRAGMA page_count").fetchone()[0]
    journal._conn.execute(f"PRAGMA max_page_count = {page_count}")
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(JournalWriteError):
        graph.invoke({"messages": [{"role": "user", "content": "I like oolong tea " + "x" * 20_000}]}, config,
                     context={"user_id": "alice"})


def test_the_graph_acknowledges_with_queued_and_the_next_turn_recalls_it(journal: WriteJournal) -> None:
    service = make(journal)
    assert service.applier is not None
    service.applier.pause()  # the worst case: nothing applied between the two turns
    graph = build_graph(service=service, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    told = graph.invoke({"messages": [{"role": "user", "content": "我养了一只叫豆豆的猫"}]}, config,
                        context={"user_id": "alice"})
    assert told["memory_report"]["queued"] and told["memory_report"]["stored"] == []
    asked = graph.invoke({"messages": [{"role": "user", "content": "我的猫叫什么名字？"}]}, config,
                         context={"user_id": "alice"})
    assert "豆豆" in asked["answer"]


def test_the_async_graph_acknowledges_through_the_group_commit(journal: WriteJournal) -> None:
    service = make(journal)
    graph = build_graph(service=service, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    out = asyncio.run(graph.ainvoke({"messages": [{"role": "user", "content": "I like oolong tea"}]}, config,
                                    context={"user_id": "alice"}))
    assert out["memory_report"]["queued"]
    assert service.drain(10)
    assert [r.kind for r in all_records(service, "alice")].count(Kind.EPISODIC) == 1


def test_a_store_outage_is_retried_and_the_model_is_asked_once(journal: WriteJournal) -> None:
    embedder = FakeEmbeddings()
    store = FlakyStore(embedder)
    store.down = True
    model = FakeChatModel(structured_responses=[{}])
    service = make(journal, store=store, model=model)
    service.enqueue_turn("alice", user_text="I like oolong tea")
    deadline = time.monotonic() + 10
    while store.add_calls < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.add_calls >= 3 and journal.backlog() == 1  # kept while the store is down
    assert service.applier is not None and "StoreUnavailableError" in (service.applier.last_error or "")
    store.down = False
    assert service.drain(15)
    assert any("oolong" in r.text for r in all_records(service, "alice"))
    assert len(model.structured_calls) == 1  # planned once (the one model call), stored after the outage


def test_one_bad_turn_is_parked_and_the_others_are_stored(journal: WriteJournal) -> None:
    store = FlakyStore(FakeEmbeddings())
    store.refuse_user = "mallory"
    service = make(journal, store=store)
    assert service.applier is not None
    service.applier.give_up_after = 2
    service.applier.pause()
    service.enqueue_turn("alice", user_text="I like oolong tea")
    service.enqueue_turn("mallory", user_text="I like black coffee")
    service.enqueue_turn("bob", user_text="I like green tea")
    service.applier.resume()
    assert service.drain(20)
    assert all_records(service, "alice") and all_records(service, "bob") and not all_records(service, "mallory")
    [parked] = journal.pending("mallory")
    assert parked.failed and parked.attempts == 2 and "refused" in (parked.last_error or "")


def test_a_dead_process_journal_is_adopted(tmp_path: Path) -> None:
    root = tmp_path / "journal"
    first, second = open_journal(root), open_journal(root)
    assert first.path != second.path  # each live process owns its own file
    for j, text in ((first, "I like tea"), (second, "I like jazz")):
        j.append(JournalEntry(id=new_entry_id(), user_id="alice", user_text=text, preview=f"user: {text}",
                              created_at=NOW))
    first.close()
    second.close()
    third = open_journal(root)
    try:
        assert sorted(e.user_text for e in third.pending("alice")) == ["I like jazz", "I like tea"]
        assert len(list(root.glob("journal-*.sqlite3"))) == 1
    finally:
        third.close()


def test_concurrent_appends_share_commits(journal: WriteJournal) -> None:
    barrier = threading.Barrier(16)

    def append(i: int) -> None:
        barrier.wait()
        journal.append(JournalEntry(id=new_entry_id(), user_id=f"u{i}", user_text="x", created_at=NOW))

    threads = [threading.Thread(target=append, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert journal.backlog() == 16
    rows = journal._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    assert rows == 16


def test_without_a_journal_turns_are_stored_at_once() -> None:
    service = make(None)
    report = service.enqueue_turn("alice", user_text="I like oolong tea")
    assert report.stored and not report.queued and service.drain(0)


def test_recalls_are_counted_by_the_background_thread_in_one_write(journal: WriteJournal) -> None:
    store = FlakyStore(FakeEmbeddings())
    service = make(journal, store=store)
    service.enqueue_turn("alice", user_text="I like oolong tea")
    assert service.drain(10)
    calls = store.add_calls
    for _ in range(3):
        assert service.recall("alice", "what tea do I like?")
    assert service.drain(10)
    [episode] = [r for r in all_records(service, "alice") if r.kind == Kind.EPISODIC]
    assert episode.access_count == 3 and store.add_calls == calls


class SlowStore(FlakyStore):
    """A store whose writes take ``delay`` seconds (as an embedded Chroma write under load does)."""

    delay = 0.0

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Wait ``delay``, then add."""
        time.sleep(self.delay)
        super().add(records)


def test_batches_are_spaced_by_how_long_the_last_store_took(journal: WriteJournal) -> None:
    store = SlowStore(FakeEmbeddings())
    service = make(journal, store=store)
    applier = service.applier
    assert applier is not None
    assert applier.batch_spacing() == applier.batch_interval  # nothing stored yet: the floor
    service.enqueue_turn("alice", user_text="I like oolong tea")
    assert service.drain(10)
    # the write was timed (how fast it was depends on the machine's load: no upper bound asserted here)
    assert applier._last_write > 0 and applier.batch_spacing() >= applier.batch_interval
    store.delay = 0.02
    service.enqueue_turn("张三", user_text="我喜欢喝乌龙茶")
    assert service.drain(10)
    # a write of >= 20 ms at a 5 % share: the next batch starts >= 0.4 s after this one began
    assert 0.02 / applier.write_share <= applier.batch_spacing() <= applier.max_batch_interval
    store.delay = 0.3
    service.enqueue_turn("bob", user_text="I like green tea")
    assert service.drain(10)
    assert applier.batch_spacing() == applier.max_batch_interval  # capped: a turn waits at most that long


def test_a_recap_lists_the_queued_turns_made_then(journal: WriteJournal) -> None:
    from mneme.embeddings import load_embedder
    from mneme.memory.ranking import RecallOptions

    service = make(journal, embedder=load_embedder("use-m3"))
    assert service.applier is not None
    service.applier.pause()
    service.enqueue_turn("alice", user_text="I'm flying to Paris next Friday")
    service.enqueue_turn("alice", user_text="我喜欢喝乌龙茶")
    strict = RecallOptions(reinforce=False, relevance_floor=True)
    for question in ["我们上次聊了什么？", "What have I been up to lately?"]:  # nothing stored yet: the queue answers
        got = service.recall("alice", question, options=strict)
        assert {it.text for it in got} == {"user: I'm flying to Paris next Friday", "user: 我喜欢喝乌龙茶"}, question
    assert service.recall("bob", "我们上次聊了什么？", options=strict) == []


def test_a_question_about_feelings_finds_the_queued_summary_of_a_worry(journal: WriteJournal) -> None:
    from mneme.embeddings import load_embedder
    from mneme.memory.ranking import RecallOptions

    service = make(journal, embedder=load_embedder("use-m3"))
    assert service.applier is not None
    service.applier.pause()
    service.enqueue_turn("alice", user_text="最近夜班太多了，好累，感觉自己快撑不住了")
    service.enqueue_turn("alice", user_text="我喜欢喝乌龙茶")
    strict = RecallOptions(reinforce=False, relevance_floor=True)
    for question in ["我最近状态怎么样", "How have I been feeling lately?"]:  # queued: its summary, as once stored
        got = service.recall("alice", question, options=strict)
        assert [it.kind for it in got][:1] == [Kind.SUMMARY] and got[0].metadata.get("queued"), question
        assert "撑不住了" not in got[0].text  # the gist, not the words
    assert all(it.kind != Kind.SUMMARY for it in service.recall("alice", "我喜欢喝什么茶？", options=strict))
    assert service.recall("bob", "我最近状态怎么样", options=strict) == []


def test_a_queued_turn_tells_when_its_event_is_as_its_record_will(journal: WriteJournal) -> None:
    service = make(journal)
    assert service.applier is not None
    service.applier.pause()
    service.enqueue_turn("alice", user_text="下个月18号我要考六级，有点紧张")  # a worry: its summary is queued
    service.enqueue_turn("alice", user_text="上周末我去了杭州，吃了西湖醋鱼")
    queued = {it.id: it for it in service.recall("alice", "六级 杭州")}
    assert queued and all(it.metadata.get("queued") for it in queued.values())
    service.applier.resume()
    assert service.drain(10)
    stored = {r.id: r for r in all_records(service, "alice")}
    for rid, item in queued.items():  # the span recall showed while queued is the one the record holds
        assert (item.metadata["event_start"], item.metadata["event_end"]) == (
            stored[rid].metadata["event_start"], stored[rid].metadata["event_end"])
    exam = next(it for it in queued.values() if "六级" in it.text)
    assert datetime.fromtimestamp(exam.metadata["event_start"], UTC).date().isoformat() == "2024-06-18"


def test_a_long_context_keeps_its_tail_where_the_pronoun_resolution_is(journal: WriteJournal) -> None:
    service = make(journal)
    assert service.applier is not None
    service.applier.pause()
    reply = "很长的回答。" * 600  # longer than the policy's 2,000 characters of assistant text
    service.enqueue_turn("alice", user_text="她特别喜欢画画", previous_reply=f"{reply}\n我女儿特别喜欢画画")
    (entry,) = journal.pending("alice")
    assert entry.previous_reply.endswith("我女儿特别喜欢画画") and len(entry.previous_reply) <= 2000
