"""Conversation neighbours (``memory/neighbours.py``): a turn next to a strong match in the same sitting rises.

Pure tests of ``lift_neighbours`` over scored items, a property (the best item keeps its rank, no score
falls), and the whole recall path in Chinese and English: the turn that says what "the trouble" was comes
right after the turn that announced it, where without the lift unrelated turns sharing a word sit between.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneme.clock import FixedClock
from mneme.errors import InvalidInputError
from mneme.graph.context import Context
from mneme.memory.base import Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.neighbours import SITTING_SECONDS, lift_neighbours
from mneme.memory.ranking import Recalled, RecallOptions
from mneme.memory.service import MemoryService
from mneme.testing import FakeEmbeddings

NOW = 1_700_000_000.0
DAY = 86_400.0


def item(rid: str, score: float, *, thread: str | None = "t", at: float = 0.0,
         relevance: float | None = None) -> Recalled:
    return Recalled(id=rid, kind=Kind.EPISODIC, text=rid, score=score, source="memory", created_at=NOW + at,
                    thread_id=thread, signals={"relevance": score if relevance is None else relevance})


def test_an_adjacent_turn_inherits_half_its_neighbours_lead() -> None:
    ranked = [item("a", 0.9, at=0), item("x", 0.5, thread="other", at=60), item("b", 0.2, at=60),
              item("c", 0.1, at=120), item("far", 0.3, at=120 + SITTING_SECONDS + 1)]
    out = lift_neighbours(ranked, share=0.5)
    scores = {it.id: it.score for it in out}
    assert scores["b"] == pytest.approx(0.2 + 0.5 * (0.9 - 0.2))  # lifted by a (0.9); c is weaker
    assert scores["c"] == pytest.approx(0.1 + 0.5 * (0.2 - 0.1))  # by b's own relevance, not b's lifted score
    assert scores["x"] == 0.5 and scores["a"] == 0.9  # another thread; the strongest item gains nothing
    assert scores["far"] == 0.3  # next in time but another sitting
    assert [it.id for it in out] == ["a", "b", "x", "far", "c"]
    assert out[1].signals["neighbour"] == pytest.approx(0.35) and "neighbour" not in out[0].signals


def test_only_the_nearest_candidates_in_time_are_neighbours_and_share_zero_is_off() -> None:
    # b sits between a and c: c is not a's neighbour; records of one turn (same time) are one position
    ranked = [item("a", 0.9, at=0), item("fact-of-b", 0.05, at=60), item("b", 0.05, at=60), item("c", 0.0, at=120)]
    out = {it.id: it.score for it in lift_neighbours(ranked, share=0.5)}
    assert out["b"] == out["fact-of-b"] == pytest.approx(0.05 + 0.5 * 0.85)
    assert out["c"] == pytest.approx(0.5 * 0.05)
    assert [it.id for it in lift_neighbours(ranked, share=0.0)] == [it.id for it in ranked]
    no_thread = [item("a", 0.9, thread=None), item("b", 0.1, thread=None, at=60)]
    assert [it.score for it in lift_neighbours(no_thread)] == [0.9, 0.1]


def test_the_lead_is_measured_on_final_scores_so_a_faded_lifter_is_not_overtaken() -> None:
    # the forgetting curve left the old turn's score (0.80) below its relevance (0.88); its fresher neighbour
    # has score = relevance = 0.70. A lead taken from relevance (0.9 × 0.18) would lift it to 0.862, past 0.80.
    faded = item("old", 0.80, relevance=0.88, at=0)
    fresh = item("next", 0.70, at=60)
    out = lift_neighbours([faded, fresh], share=0.9)
    assert [it.id for it in out] == ["old", "next"]
    assert out[1].score == pytest.approx(0.70 + 0.9 * (0.80 - 0.70))


@given(st.lists(st.tuples(st.floats(0, 2), st.floats(0, 0.1), st.sampled_from(["t", "u", None]), st.integers(0, 40)),
                min_size=1, max_size=30), st.floats(0, 0.99))
def test_the_best_item_stays_first_and_no_score_falls(rows: list[tuple[float, float, str | None, int]],
                                                      share: float) -> None:
    # scores are relevance bent by forgetting (up to 10 % lower), as ``rank`` makes them
    ranked = sorted((item(f"i{n}", rel * (1 - fade), relevance=rel, thread=th, at=60.0 * slot)
                     for n, (rel, fade, th, slot) in enumerate(rows)), key=lambda it: (-it.score, it.id))
    out = lift_neighbours(ranked, share=share)
    before = {it.id: it.score for it in ranked}
    assert all(it.score >= before[it.id] for it in out)
    assert out[0].score == pytest.approx(ranked[0].score)  # nothing overtakes the best match
    assert out[0].id == ranked[0].id or out[0].score == pytest.approx(ranked[0].score)
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)


def test_context_refuses_a_share_that_could_overtake() -> None:
    with pytest.raises(InvalidInputError, match="neighbour_share"):
        Context(user_id="u", neighbour_share=1.0)
    assert Context(user_id="u", neighbour_share=0.0).neighbour_share == 0.0


# -- the whole recall path -------------------------------------------------------------------------------

CASES = {
    "zh": dict(
        announce=("今天我遇到了一个麻烦，不知道该怎么解决。", "没问题，你可以跟我讲一讲。"),
        detail=("下周公司年会要我上台做报告，讲新产品的设计。", "提前多排练几遍，会顺利很多。"),
        others=[("我上个月换了一个新的手机壳，是蓝色的。", "蓝色很好看。"),
                ("周末我去超市买了很多水果，有苹果和香蕉。", "多吃水果对身体好。"),
                ("我妹妹最近在学钢琴，她每天练一个小时。", "坚持下去会有进步的。"),
                ("我遇到一个老同学，我们一起吃了午饭。", "和老同学叙旧真不错。"),
                ("那个问题后来解决了，邻居帮我修好了水管。", "邻居真热心。")],
        query="我那天遇到的麻烦具体是什么？",
    ),
    "en": dict(
        announce=("I ran into a problem at work today and I am not sure what to do.", "Tell me about it."),
        detail=("The quarterly report script crashes whenever the input file is empty.",
                "Check for an empty file before parsing."),
        others=[("I love to work in the garden on weekends.", "Gardening is relaxing."),
                ("My sister started piano lessons this month.", "That is lovely."),
                ("We had pasta for dinner with friends from work.", "Sounds fun."),
                ("The bus to work was late again this morning.", "That is annoying."),
                ("I bought a blue phone case yesterday.", "Blue looks nice.")],
        query="What was the problem I had at work that day?",
    ),
}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_the_turn_that_tells_the_trouble_comes_right_after_the_turn_that_announced_it(lang: str) -> None:
    case = CASES[lang]
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(NOW))
    start = NOW - 3 * DAY
    for day, (user, reply) in enumerate(case["others"]):  # other days, other threads
        service.remember_turn("u", user_text=user, assistant_text=reply, thread_id=f"d{day}",
                              now=start + day * 3600 * 5)
    (u1, r1), (u2, r2) = case["announce"], case["detail"]
    service.remember_turn("u", user_text=u1, assistant_text=r1, thread_id="trouble", now=NOW - DAY)
    service.remember_turn("u", user_text=u2, assistant_text=r2, thread_id="trouble", now=NOW - DAY + 60,
                          previous_reply=r1)

    def order(share: float) -> list[str]:
        got = service.recall("u", case["query"], options=RecallOptions(k=8, neighbour_share=share, reinforce=False))
        return [it.text.split("\n")[0].removeprefix("user: ") for it in got]

    without, with_lift = order(0.0), order(0.5)
    assert without[0] == u1 and with_lift[0] == u1
    assert without.index(u2) >= 2  # unrelated turns sharing a word sit between the announcement and the detail
    assert with_lift.index(u2) == 1
