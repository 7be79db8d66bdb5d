"""Edges of the writing and recall policies that sit between modules."""

from __future__ import annotations

import pytest

from mneme.clock import FixedClock
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, RecallOptions
from mneme.memory.writing import plan_turn
from mneme.testing import FakeEmbeddings


@pytest.mark.parametrize("text", ["我的猫叫什么名字？", "What is my cat called?", "你还记得吗？我上次说了什么？"])
def test_a_bare_question_without_an_answer_is_not_a_memory(text: str) -> None:
    assert plan_turn(text, "").skip_reason == "question"


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("我明天要去北京，你觉得要带伞吗？", ""),
        ("I'm flying to Oslo tomorrow, should I pack a coat?", ""),
        ("What is my cat called?", "Your cat is called Whiskers."),
    ],
)
def test_a_question_that_tells_something_or_has_an_answer_is_kept(text: str, reply: str) -> None:
    plan = plan_turn(text, reply)
    assert plan.skip_reason is None
    assert plan.episodic_text is not None and text in plan.episodic_text


@pytest.mark.parametrize("query", ["谢谢！", "好的", "thanks!", "👍"])
def test_a_thank_you_recalls_nothing(query: str) -> None:
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(1e9))
    service.remember_turn("alice", user_text="谢谢你推荐的《活着》，我很喜欢 thanks", assistant_text="")
    assert service.recall("alice", "《活着》", options=RecallOptions(reinforce=False))  # the memory is there
    assert service.recall("alice", query, options=RecallOptions(reinforce=False)) == []


def test_a_negative_summary_keeps_the_need_not_the_detail() -> None:
    plan = plan_turn("好的。最近工作压力好大，我很焦虑。你觉得有什么办法可以放松吗？后来我和老板大吵了一架。", "")
    assert plan.summary_text is not None and plan.episodic_text is None
    assert "压力" in plan.summary_text and "放松" in plan.summary_text
    assert "大吵了一架" not in plan.summary_text  # the fight is named as an event, never quoted
    assert "好的" not in plan.summary_text


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("I love jazz and my email is [EMAIL]", "pref:jazz"),
        ("I like salt and pepper", "pref:salt and pepper"),
    ],
)
def test_a_preference_stops_where_the_next_clause_starts(text: str, key: str) -> None:
    from mneme.memory.extraction import extract_patterns

    assert [f.key for f in extract_patterns(text)] == [key]
