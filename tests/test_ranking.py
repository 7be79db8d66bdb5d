"""Ranking as pure functions over candidates: fusion, source weights, floor, forgetting, k and budget."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from mneme.memory import ranking
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.forgetting import DAY
from mneme.memory.ranking import Candidate, Recalled, RecallOptions, rank, select
from mneme.memory.timewindow import TimeWindow

NOW = 1_700_000_000.0


def _rec(rid: str, *, kind: Kind = Kind.EPISODIC, text: str = "x", created_at: float = NOW) -> MemoryRecord:
    return MemoryRecord(id=rid, user_id="u", kind=kind, text=text, created_at=created_at)


def test_fused_score_is_weighted_sum_of_normalised_channels() -> None:
    cands = [Candidate(_rec("a"), dense=0.9, keyword=2.0), Candidate(_rec("b"), dense=0.5, keyword=8.0),
             Candidate(_rec("c"), dense=0.7)]
    out = rank(cands, RecallOptions(forgetting=False), now=NOW)
    scores = {it.id: it.score for it in out}
    # a: dense 1.0, keyword 2/8; b: dense 0, keyword 1; c: dense 0.5, keyword 0
    assert abs(scores["a"] - (0.3 * 1.0 + 0.7 * 0.25)) < 1e-9
    assert abs(scores["b"] - 0.7) < 1e-9
    assert abs(scores["c"] - 0.15) < 1e-9
    assert [it.id for it in out] == ["b", "a", "c"]
    assert out[0].signals["keyword"] == 8.0 and out[2].signals["keyword"] == 0.0


def test_weight_zero_leaves_a_source_out_and_floor_drops_weak_items() -> None:
    cands = [Candidate(_rec("m"), dense=0.9), Candidate(_rec("d", kind=Kind.DOCUMENT), dense=0.8),
             Candidate(_rec("w"), dense=0.1)]
    out = rank(cands, RecallOptions(document_weight=0.0, forgetting=False), now=NOW)
    assert [it.id for it in out] == ["m", "w"]
    out = rank(cands, RecallOptions(score_floor=0.2, forgetting=False), now=NOW)
    assert [it.id for it in out] == ["m", "d"] and out[1].source == "document"


def test_forgetting_reorders_a_near_tie_only() -> None:
    old = replace(_rec("old", created_at=NOW - 400 * DAY))
    new = _rec("new", created_at=NOW)
    tie = [Candidate(old, dense=0.80, keyword=1.0), Candidate(new, dense=0.79, keyword=1.0),
           Candidate(_rec("low"), dense=0.1)]
    assert [it.id for it in rank(tie, RecallOptions(forgetting=False), now=NOW)][:2] == ["old", "new"]
    assert [it.id for it in rank(tie, RecallOptions(), now=NOW)][:2] == ["new", "old"]
    clear = [Candidate(old, dense=0.9, keyword=3.0), Candidate(new, dense=0.5, keyword=1.0),
             Candidate(_rec("low"), dense=0.1)]
    assert rank(clear, RecallOptions(), now=NOW)[0].id == "old"


def test_select_cuts_to_k_then_to_the_token_budget() -> None:
    cands = [Candidate(_rec(f"r{i}", text="记忆" * (i + 1)), dense=1.0 - i / 10) for i in range(6)]
    ranked = rank(cands, RecallOptions(forgetting=False), now=NOW)
    assert [it.id for it in select(ranked, RecallOptions(k=3))] == ["r0", "r1", "r2"]
    # r0 costs 2 tokens, r1 4, r2 6: a budget of 7 keeps r0 and r1 only
    assert [it.id for it in select(ranked, RecallOptions(k=3, max_context_tokens=7))] == ["r0", "r1"]


@given(st.lists(st.tuples(st.floats(0, 1), st.one_of(st.none(), st.floats(0, 20))), min_size=1, max_size=12))
def test_rank_is_sorted_and_keeps_every_candidate_by_default(channels: list[tuple[float, float | None]]) -> None:
    cands = [Candidate(_rec(f"c{i:02d}"), dense=d, keyword=k) for i, (d, k) in enumerate(channels)]
    out = rank(cands, RecallOptions(), now=NOW)
    assert sorted(it.id for it in out) == sorted(c.record.id for c in cands)
    assert all(a.score >= b.score for a, b in zip(out, out[1:], strict=False))
    assert all(-1e-9 <= it.score <= 1.0 + 1e-9 for it in out)


def _item(rid: str, kind: Kind, created_at: float, turns: list[str], *, thread: str = "t", source: str = "memory",
          span: tuple[float, float] | None = None) -> Recalled:
    meta = {} if span is None else {"event_start": span[0], "event_end": span[1]}
    return Recalled(id=rid, kind=kind, text=rid, score=1.0, source=source, created_at=created_at,
                    source_turns=turns, thread_id=thread, metadata=meta, signals={}, user_id="u")


def test_a_recap_tells_each_turn_once_newest_first_by_turn_ids_or_by_thread_and_moment() -> None:
    span = TimeWindow(NOW - 2 * DAY, NOW, "recent", "range")
    ranked = [
        _item("old", Kind.EPISODIC, NOW - 9 * DAY, ["t/1"]),             # outside the span: after, as it was
        _item("fact-a", Kind.FACT, NOW - DAY, ["t/5"]),                   # drawn from ep-a (turn ids): left out
        _item("ep-a", Kind.EPISODIC, NOW - DAY, ["t/5", "t/6"]),
        _item("fact-b", Kind.FACT, NOW - 1.5 * DAY, [], thread="s"),      # drawn from ep-b (thread, moment)
        _item("ep-b", Kind.EPISODIC, NOW - 1.5 * DAY, [], thread="s"),
        _item("fact-c", Kind.PREFERENCE, NOW - 0.5 * DAY, ["t/9"]),       # its turn is not listed: kept
        _item("doc", Kind.DOCUMENT, NOW - DAY, [], source="document"),    # documents are not what was said
    ]
    assert [it.id for it in ranking.recap_first(ranked, span)] == ["fact-c", "ep-a", "ep-b", "old", "doc"]


def test_plans_soonest_first_and_the_profile_first_each_part_in_its_order() -> None:
    ahead = TimeWindow(NOW, NOW + 365 * DAY, "ahead", "range")
    ranked = [_item("past", Kind.EPISODIC, NOW - DAY, [], span=(NOW - 3 * DAY, NOW - 2 * DAY)),
              _item("later", Kind.EPISODIC, NOW - DAY, [], span=(NOW + 30 * DAY, NOW + 31 * DAY)),
              _item("none", Kind.EPISODIC, NOW - DAY, []),
              _item("soon", Kind.EPISODIC, NOW - DAY, [], span=(NOW + DAY, NOW + 2 * DAY))]
    assert [it.id for it in ranking.plans_first(ranked, ahead)] == ["soon", "later", "past", "none"]
    mixed = [_item("ep", Kind.EPISODIC, NOW, []), _item("f1", Kind.FACT, NOW, []),
             _item("sum", Kind.SUMMARY, NOW, []), _item("p1", Kind.PREFERENCE, NOW, [])]
    assert [it.id for it in ranking.profile_first(mixed)] == ["f1", "p1", "ep", "sum"]
