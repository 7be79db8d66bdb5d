"""Ranking: how recall's candidates become the best few items, as pure functions over candidates.

``MemoryService.recall`` gathers candidates (the dense channel's cosine scores, the keyword channel's BM25
scores, the records they point at); ``rank`` turns them into scored ``Recalled`` items, best first, and
``select`` diversifies (MMR, optional) and cuts to ``k`` and the token budget. Nothing here reads a store,
an index or a clock, so the maths can be tested and reused (evaluation, other stores) on its own.

The score of a candidate, in order: each channel normalised over the pool (dense min-max, keyword by its
maximum), fused ``(1 - keyword_weight)·dense + keyword_weight·keyword``; plus ``time_weight`` × the affinity
to a time window the query names (by the record's own time or the time it tells of, ``eventtime``); plus
``answer_weight`` when the query asks when and the record tells a time, asks how the user felt and the record is
the summary of a confided worry, or asks about the user as a whole and the record is a fact or preference
(``answertype``); times
the weight of its source (memory or document; weight 0 drops the source); bent by the bounded forgetting
curve (memories only); dropped below ``score_floor``.

``RecallOptions`` is the one definition of the recall knobs: the graph's ``Context`` (run settings)
extends it, so a knob is declared and described once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mneme.memory.answertype import PROFILE_KINDS, confides, describes_user, fills, tells_when
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.eventtime import event_affinity, span_of
from mneme.memory.forgetting import Fade, ForgettingPolicy, combine
from mneme.memory.fusion import count_tokens, fit_budget, mmr
from mneme.memory.indexing import user_part
from mneme.memory.relevance import Form, form_of, relevant
from mneme.memory.timewindow import TimeWindow, time_affinity

CANDIDATE_POOL = 100
"""Candidates each channel contributes, whatever ``k`` asks for (``4·k`` when that is more). The dense scores
are min-max normalised over this pool, so its size moves the ranking: a fixed pool makes a user's top 6 the
ranking ``mneme eval`` measures (it recalls 25 per question, 100 candidates). With the old ``max(30, 4·k)``,
k=6 ranked over 30 candidates and MemoryBank dev recall@1 was 0.714 instead of the measured 0.762."""


def _d(text: str) -> dict[str, str]:
    return {"description": text}


@dataclass(kw_only=True)
class RecallOptions:
    """How to recall: the knobs a caller tunes per run (the graph's ``Context`` extends this class)."""

    k: int = field(default=6, metadata=_d("How many memories and documents to recall at most."))
    score_floor: float = field(default=0.0, metadata=_d(
        "Drop recalled items whose final score is below this (scores are in [0, ~1.3])."))
    mmr: bool = field(default=False, metadata=_d("Diversify recalled items with maximal marginal relevance."))
    mmr_lambda: float = field(default=0.7, metadata=_d("MMR trade-off: 1 is pure relevance, 0 pure diversity."))
    memory_weight: float = field(default=1.0, metadata=_d("Weight of the user's memories (0 leaves them out)."))
    document_weight: float = field(default=1.0, metadata=_d("Weight of documents (0 leaves them out)."))
    include_documents: bool = field(default=True, metadata=_d(
        "Also search the documents (shared knowledge base and the user's private ones)."))
    forgetting: bool = field(default=True, metadata=_d(
        "Re-rank by the forgetting curve (re-orders near ties, never hides a clear match)."))
    time_aware: bool = field(default=True, metadata=_d(
        "Favour memories from a time window named in the query (昨天, 5月6号, last week)."))
    max_context_tokens: int = field(default=2000, metadata=_d(
        "Token budget of the recalled memories and documents put in the prompt."))
    reinforce: bool = field(default=True, metadata=_d(
        "Count a recall as an access (strengthens the recalled memories on the forgetting curve)."))
    keyword_weight: float = field(default=0.7, metadata=_d(
        "Share of the keyword channel in the fused relevance (the rest is the dense channel)."))
    time_weight: float = field(default=0.6, metadata=_d("Bonus for items inside a time window the query names."))
    answer_weight: float = field(default=0.2, metadata=_d(
        "Bonus, for a question asking when or how long, to items that tell a time or a duration; for a question "
        "about how the user felt, to the summaries of what they confided (memory/answertype.py); 0 turns it off."))
    neighbour_share: float = field(default=0.5, metadata=_d(
        "Share of a neighbouring turn's lead in relevance that an item inherits (same thread, adjacent, one "
        "sitting; memory/neighbours.py); 0 turns it off."))
    relevance_floor: bool = field(default=False, metadata=_d(
        "Drop items no closer to the query than everyday unrelated sentences are (memory/relevance.py); "
        "memory-only replies always apply it."))

    def recall_options(self) -> RecallOptions:
        """Just the recall knobs (a ``Context`` carries more), as a plain ``RecallOptions``."""
        return RecallOptions(**{name: getattr(self, name) for name in RECALL_FIELDS})


RECALL_FIELDS: tuple[str, ...] = tuple(RecallOptions.__dataclass_fields__)


@dataclass(kw_only=True)
class Recalled:
    """One recalled item, with where it came from and why it ranked where it did."""

    id: str
    kind: Kind
    text: str
    score: float
    source: str
    """``memory`` or ``document``."""
    created_at: float
    source_turns: list[str] = field(default_factory=list)
    thread_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    signals: dict[str, float] = field(default_factory=dict)
    """Per-channel evidence: ``dense``, ``keyword``, ``time``, ``retention``, ``relevance``."""
    user_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (for graph state and the CLI)."""
        return {
            "id": self.id, "kind": str(self.kind), "text": self.text, "score": round(self.score, 4),
            "source": self.source, "created_at": self.created_at, "source_turns": self.source_turns,
            "thread_id": self.thread_id, "signals": {k: round(v, 4) for k, v in self.signals.items()},
            "title": self.metadata.get("title"),
        }


@dataclass(frozen=True)
class Candidate:
    """A record one or both channels proposed, with its raw channel scores (``None``: not proposed)."""

    record: MemoryRecord
    dense: float | None = None
    """Cosine similarity from the dense channel."""
    keyword: float | None = None
    """BM25 score from the keyword channel."""


def rank(candidates: Iterable[Candidate], options: RecallOptions, *, now: float,
         window: TimeWindow | None = None, forgetting: ForgettingPolicy | None = None,
         baseline: float | Mapping[Form, float] | None = None, asks_when: str | None = None,
         asks_feeling: bool = False, asks_profile: bool = False, recap: TimeWindow | None = None,
         ahead: TimeWindow | None = None, kin: re.Pattern[str] | None = None,
         slots: tuple[str, ...] = ()) -> list[Recalled]:
    """Score every candidate as the module docstring says; all that pass the floor, best first (ties by id).

    ``asks_when`` is what the query asks for (``answertype.asks_when``: "when", "how long" or None);
    ``asks_feeling`` (``answertype.asks_feeling``) whether it asks how the user felt: the summaries of confided
    worries then get the answer bonus and count as relevant under the floor; ``asks_profile``
    (``answertype.asks_profile``) whether it asks about the user as a whole: facts and preferences then do
    (``profile_first`` puts them first); ``recap``, the span a question asks to recap (``answertype.asks_recap``:
    "我昨天跟你说了什么"): the memories made in it then do (``recap_first`` puts them first); ``ahead``, the span a
    question about plans looks at (``answertype.asks_plans``: "我下周有什么安排？"): the memories telling of an event
    in it then do (``plans_first`` puts them first). ``kin`` (``kin.about``: the names of the family members or pets
    the query names, or of the members of a group it names, as a pattern): a memory whose user's words hold one
    counts as relevant.
    ``slots`` (``answertype.asks_slot``: "我叫什么名字？" → name): the facts filling them get the bonus, count as
    relevant and are marked ``signals["slot"]`` (``slot_first`` puts them first).
    ``baseline`` (the query's cosine to unrelated texts, ``relevance.NullBaseline``; one floor, or one per form of
    item as ``NullBaseline.floors`` gives) adds the signal
    ``relevant`` (1 or 0) to each item; with ``options.relevance_floor`` irrelevant items are dropped.
    """
    cands = list(candidates)
    policy = forgetting or ForgettingPolicy()
    dense_scores = [c.dense for c in cands if c.dense is not None]
    lo = min(dense_scores, default=0.0)
    hi = max(dense_scores, default=1.0)
    kmax = max((c.keyword for c in cands if c.keyword is not None), default=0.0)
    pool_min = lo if dense_scores else None
    # the loop's invariants, once (recall ranks ~100-200 candidates a query; this loop is most of it)
    kw_weight = options.keyword_weight
    dense_weight = 1 - kw_weight
    when_bonus = options.answer_weight if asks_when or asks_feeling or asks_profile or recap or ahead or slots else 0.0
    fade = Fade(policy, now) if options.forgetting else None
    scored: list[Recalled] = []
    for cand in cands:
        rec = cand.record
        dense, keyword = cand.dense, cand.keyword
        d = 0.0 if dense is None else (dense - lo) / (hi - lo) if hi > lo else 1.0
        kw = (keyword or 0.0) / kmax if kmax > 0 else 0.0
        relevance = dense_weight * d + kw_weight * kw
        signals = {"dense": dense or 0.0, "keyword": keyword or 0.0}
        # a confided worry answers a question about how the user felt; a fact or preference one about the user
        answers = ((asks_feeling and confides(rec)) or (asks_profile and describes_user(rec))
                   or (recap is not None and rec.kind != Kind.DOCUMENT and recap.contains(rec.created_at))
                   or (ahead is not None and rec.kind != Kind.DOCUMENT and tells_of(rec.metadata, ahead)))
        slot = bool(slots) and fills(rec, slots)
        if slot:
            answers = True
            signals["slot"] = 1.0
        if baseline is not None:
            floor = baseline if isinstance(baseline, float | int) else baseline[form_of(rec.kind)]
            ok = relevant(dense, baseline=floor, pool_min=pool_min) or answers  # however far its words are
            if not ok and kin is not None and rec.kind != Kind.DOCUMENT:  # "我有孩子吗？" of "我们有一个女儿": a
                ok = kin.search(user_part(rec.text)) is not None  # name the query's kin word stands for
            if options.relevance_floor and not ok:
                continue
            signals["relevant"] = 1.0 if ok else 0.0
        if window is not None:
            affinity = time_affinity(rec.created_at, window)
            event = span_of(rec.metadata)
            if event is not None:  # what it tells of may lie elsewhere in time than when it was said
                affinity = max(affinity, event_affinity(event, window))
            relevance += options.time_weight * affinity
            signals["time"] = affinity
        if when_bonus and (answers or (asks_when and tells_when(rec, asks_when))):  # says when, or as above
            relevance += when_bonus
            signals["when"] = 1.0
        is_doc = rec.kind == Kind.DOCUMENT
        weight = options.document_weight if is_doc else options.memory_weight
        if weight <= 0:  # weight 0 switches a source off, it does not just sink it to score 0
            continue
        relevance *= weight
        signals["relevance"] = relevance
        score = relevance
        if fade is not None and not is_doc:
            r = fade.retention(rec)
            signals["retention"] = r
            score = combine(relevance, r, policy)
        if score < options.score_floor:
            continue
        scored.append(Recalled(
            id=rec.id, kind=rec.kind, text=rec.text, score=score, source="document" if is_doc else "memory",
            created_at=rec.created_at, source_turns=list(rec.source_turns), thread_id=rec.thread_id,
            metadata=dict(rec.metadata), signals=signals, user_id=rec.user_id,
        ))
    scored.sort(key=lambda it: (-it.score, it.id))
    return scored


def tells_of(metadata: Mapping[str, Any], span: TimeWindow) -> bool:
    """Whether a record's stored event span (``eventtime``) overlaps ``span``."""
    event = span_of(metadata)
    return event is not None and event[1] > span.start and event[0] < span.end


def _first(ranked: Sequence[Recalled], answers: Callable[[Recalled], bool],
           order: Callable[[Recalled], Any] | None = None) -> list[Recalled]:
    """``ranked`` with the items that ``answers`` first (sorted by ``order`` if given, else as ranked), then the
    rest as ranked: the answer to a question whose words name no topic for the scores to measure."""
    first = [it for it in ranked if answers(it)]
    rest = [it for it in ranked if not answers(it)]
    return (sorted(first, key=order) if order else first) + rest  # sorted is stable: ties keep their rank


def plans_first(ranked: Sequence[Recalled], span: TimeWindow) -> list[Recalled]:
    """``ranked`` with the memories that tell of an event in ``span`` first, soonest first, then the rest in their
    order: the answer to a question about what the user has ahead that names nothing else ("我接下来有什么安排？")."""
    return _first(ranked, lambda it: it.source == "memory" and tells_of(it.metadata, span),
                  lambda it: (span_of(it.metadata) or (0.0, 0.0))[0])


def recap_first(ranked: Sequence[Recalled], span: TimeWindow) -> list[Recalled]:
    """``ranked`` with the memories made in ``span`` first, newest first, then the rest in their order: the answer
    to a question that asks what was said or done then (``answertype.asks_recap``), whose words name no topic.
    What was said is told once: a fact or preference drawn from a turn whose episode (or summary) is listed is
    left out ("user: 我喜欢喝乌龙茶" says what "用户喜欢喝乌龙茶" says)."""
    made = [it for it in ranked if it.source == "memory" and span.contains(it.created_at)]
    told = {t for it in made if it.kind not in PROFILE_KINDS for t in it.source_turns}
    told_when = {(it.thread_id, it.created_at) for it in made if it.kind not in PROFILE_KINDS}

    def retold(it: Recalled) -> bool:  # drawn from a listed turn: by its turn ids, else by thread and moment
        if it.kind not in PROFILE_KINDS:
            return False
        return told.issuperset(it.source_turns) if it.source_turns else (it.thread_id, it.created_at) in told_when

    inside = sorted((it for it in made if not retold(it)), key=lambda it: (-it.created_at, it.id))
    return inside + [it for it in ranked if not (it.source == "memory" and span.contains(it.created_at))]


def slot_first(ranked: Sequence[Recalled]) -> list[Recalled]:
    """``ranked`` with the facts filling the slot a question asks for (``signals["slot"]``) first, each part in its
    order: "What's my name?" is answered by the name, whatever else shares its words."""
    return _first(ranked, lambda it: it.signals.get("slot") == 1.0)


def profile_first(ranked: Sequence[Recalled]) -> list[Recalled]:
    """``ranked`` with the facts and preferences first, each part in its order: the answer to a question about the
    user as a whole (``answertype.asks_profile``), which names no topic for the other items' scores to measure."""
    return _first(ranked, lambda it: it.kind in PROFILE_KINDS)


def select(ranked: Sequence[Recalled], options: RecallOptions, *,
           embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None) -> list[Recalled]:
    """The items to return from a ``rank`` result: MMR over the head (when asked, with ``embed``), then
    the first ``k`` that fit ``max_context_tokens``."""
    out = list(ranked)
    if options.mmr and embed is not None and len(out) > options.k:
        head = out[: max(options.k * 3, 10)]
        vectors: Mapping[str, Sequence[float]] = dict(
            zip([it.id for it in head], embed([it.text for it in head]), strict=True))
        order = mmr([it.id for it in head], {it.id: it.score for it in head}, vectors,
                    lambda_=options.mmr_lambda, k=options.k)
        by_id = {it.id: it for it in head}
        out = [by_id[i] for i in order]
    return fit_budget(out[: options.k], max_tokens=options.max_context_tokens,
                      count_tokens=lambda it: count_tokens(it.text))
