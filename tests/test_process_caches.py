"""Process caches that remember recent texts: erasure empties them, and no caller shares another's objects.

``redaction`` remembers recent texts, ``writing.preview_plan`` recent plans (keyed by the raw message) and
``cached_records`` decoded rows; ``forget_user`` must leave none of the erased user's words in them, nor
``delete`` those of a deleted memory.
"""

from __future__ import annotations

import gc
from pathlib import Path

from mneme.clock import FixedClock
from mneme.memory import cached_records, redaction, writing
from mneme.memory.chroma import open_chroma_store
from mneme.memory.journal import open_journal
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService
from mneme.memory.writing import WritePolicy, preview_plan
from mneme.testing import FakeEmbeddings


def _holding(needle: str) -> list[object]:
    """Containers the collector tracks that hold a string with ``needle`` in it (lru_cache keys are tuples)."""
    out: list[object] = []
    for obj in gc.get_objects():
        if isinstance(obj, tuple | list) and any(isinstance(x, str) and needle in x for x in obj):
            out.append(obj)
    return out


def test_forget_user_leaves_no_raw_message_nor_decoded_record_in_process_caches(tmp_path: Path) -> None:
    number = "139" + str(87654321)  # built at run time, so no code constant holds it
    store = open_chroma_store(data_dir=tmp_path / "chroma", embedder=FakeEmbeddings(32), prefix="t", cache_rows=1000)
    journal = open_journal(tmp_path / "journal")
    service = MemoryService(store, keyword=KeywordIndex(None), clock=FixedClock(1.7e9), journal=journal)
    try:
        service.enqueue_turn("张三", user_text=f"我的手机号是{number}，我在阳台上养了三盆兰花", assistant_text="好的")
        service.enqueue_turn("bob", user_text=f"call me on +86 {number}, I keep bees", assistant_text="ok")
        assert service.drain(10)
        assert service.recall("张三", "我养了什么花") and service.recall("bob", "bees")  # rows decoded, cached
        assert _holding(number)  # the raw messages are remembered (the test can fail)
        assert any(p.fields["user_id"] == "张三" for p in gc.get_objects() if isinstance(p, cached_records._Prototype))
        service.forget_user("张三")
        assert not [o for o in _holding(number) if any(isinstance(x, str) and "兰花" in x for x in o)]
        assert not [p for p in gc.get_objects()
                    if isinstance(p, cached_records._Prototype) and p.fields["user_id"] == "张三"]
        assert writing._remembered_plan.cache_info().currsize == 0
        assert redaction._remembered.cache_info().currsize == 0
    finally:
        service.close(drain_timeout=0)


def test_deleting_one_memory_leaves_its_raw_words_in_no_process_cache(tmp_path: Path) -> None:
    """"Forget my number": the deleted turn's raw message (the number unredacted) leaves the caches too."""
    number = "139" + str(12345678)
    store = open_chroma_store(data_dir=tmp_path / "chroma", embedder=FakeEmbeddings(32), prefix="t", cache_rows=1000)
    service = MemoryService(store, keyword=KeywordIndex(None), clock=FixedClock(1.7e9))
    try:
        report = service.remember_turn("张三", user_text=f"我的手机号是{number}，记一下", assistant_text="好的",
                                       thread_id="t")
        assert report.stored and service.recall("张三", "我的手机号")  # rows decoded, cached
        assert _holding(number)  # the raw message is remembered (the test can fail)
        assert service.delete("张三", list(report.stored)) == len(report.stored)
        assert not _holding(number)
        assert not [p for p in gc.get_objects()
                    if isinstance(p, cached_records._Prototype) and p.fields["user_id"] == "张三"]
        assert service.recall("张三", "我的手机号") == []
    finally:
        service.close()


def test_deleting_a_memory_still_queued_leaves_its_raw_words_in_no_process_cache(tmp_path: Path) -> None:
    """The turn is still in the write journal (nothing stored yet): deleting it drops the turn, and the caches too."""
    number = "139" + str(55556666)
    store = open_chroma_store(data_dir=tmp_path / "chroma", embedder=FakeEmbeddings(32), prefix="t", cache_rows=1000)
    service = MemoryService(store, keyword=KeywordIndex(None), clock=FixedClock(1.7e9),
                            journal=open_journal(tmp_path / "journal"))
    try:
        assert service.applier is not None
        service.applier.pause()
        service.enqueue_turn("张三", user_text=f"我的手机号是{number}，记一下")
        [queued] = service.recall("张三", "我的手机号")
        assert _holding(number)  # remembered (the test can fail)
        assert service.delete("张三", [queued.id]) == 0  # nothing was stored yet; the queued turn goes
        assert not _holding(number)
    finally:
        service.close(drain_timeout=0)


def test_a_preview_plan_is_the_caller_s_own() -> None:
    policy = WritePolicy()
    first = preview_plan("我住在柏林，是一名护士，我很难过", "", policy)
    kept = [f.text for f in first.facts]
    assert kept and first.emotion.cues
    first.facts.clear()
    first.redactions["phone"] = 9
    first.emotion.cues.append("changed")
    again = preview_plan("我住在柏林，是一名护士，我很难过", "", policy)  # another user saying the same words
    assert [f.text for f in again.facts] == kept and again.redactions == {} and "changed" not in again.emotion.cues
    assert writing._remembered_plan.cache_info().hits >= 1


def test_a_long_turn_is_planned_but_not_remembered() -> None:
    writing.forget_previews()
    long = "我今天去了杭州西湖，风景很好。" * 800  # 12,000 characters: a key that size is not kept
    plan = preview_plan(long, "好的", WritePolicy())
    assert plan.episodic_text and plan == writing.plan_turn(long, "好的", policy=WritePolicy(), model=None)
    assert writing._remembered_plan.cache_info().currsize == 0
