"""The memory service: the one object the graph, the CLI and evaluation use to remember and recall.

It joins a ``MemoryStore`` (records and vectors, the truth), a ``KeywordIndex`` (BM25, derived from the
store and rebuilt from it when they disagree), the writing policy and the forgetting curve. Nodes call
``recall`` and ``remember_turn``; they never talk to a backend directly.

Recall, in order: parse a time window from the query; embed the query once; take candidates from the
dense channel (the store) and the keyword channel (the index); rank them (``memory/ranking.py``: fusion,
time affinity, source weights, the bounded forgetting curve, MMR, k and the token budget, as pure
functions); reinforce what was recalled. ``RecallOptions`` and ``Recalled`` live in ``ranking`` and are
re-exported here.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mneme.clock import Clock, system_clock
from mneme.memory import documents
from mneme.memory.answertype import asks_feeling, asks_plans, asks_profile, asks_recap, asks_slot, asks_when
from mneme.memory.base import (
    MEMORY_KINDS,
    SHARED_TENANT,
    Kind,
    MemoryRecord,
    MemoryStore,
    ScoredRecord,
    clean_text,
    validate_tenant,
)
from mneme.memory.cached_records import clear as forget_decoded_rows
from mneme.memory.eventtime import END as EVENT_END
from mneme.memory.eventtime import NAMES_TIME, event_affinity, event_time
from mneme.memory.eventtime import START as EVENT_START
from mneme.memory.forgetting import ForgettingPolicy
from mneme.memory.indexed import IndexedStore
from mneme.memory.indexing import context_of, search_text
from mneme.memory.journal import JournalEntry, WriteJournal, new_entry_id, record_ids
from mneme.memory.keyword import KeywordEntry, KeywordIndex
from mneme.memory.kin import about, widen
from mneme.memory.lowvalue import is_low_value
from mneme.memory.neighbours import lift_neighbours
from mneme.memory.overlap import Beside, working
from mneme.memory.passages import judge_documents
from mneme.memory.ranking import (
    CANDIDATE_POOL,
    Candidate,
    Recalled,
    RecallOptions,
    plans_first,
    profile_first,
    rank,
    recap_first,
    select,
    slot_first,
)
from mneme.memory.redaction import forget_remembered, redact
from mneme.memory.relevance import Form, NullBaseline, form_of
from mneme.memory.timewindow import AFFINITY_DECAY_DAYS, DAY, TimeWindow, parse_time_window, time_affinity
from mneme.memory.tokenize import tokenize
from mneme.memory.writing import TurnPlan, WritePolicy, aplan_turn, forget_previews, plan_turn, preview_plan

if TYPE_CHECKING:
    from mneme.memory.applier import JournalApplier

logger = logging.getLogger("mneme.memory.service")

__all__ = ["MemoryService", "RecallOptions", "Recalled", "TurnRequest", "WriteReport"]

MAX_QUERY_CHARS = 4000


@dataclass(kw_only=True)
class WriteReport:
    """What ``remember_turn`` did with one turn."""

    stored: list[str] = field(default_factory=list)
    """Ids written (episodic, summary, facts, preferences)."""
    skipped: str | None = None
    """Why nothing was stored (``greeting``, ``thanks``, ``repeat``, ...), if so."""
    redactions: dict[str, int] = field(default_factory=dict)
    model_calls: int = 0
    fallback: bool = False
    queued: list[str] = field(default_factory=list)
    """Journal entries this turn was acknowledged as (journal mode): stored later, in a batch."""

    def as_dict(self) -> dict[str, Any]:
        """The ``memory_report`` a graph run returns."""
        out: dict[str, Any] = {"stored": list(self.stored), "skipped": self.skipped,
                               "redactions": dict(self.redactions), "model_calls": self.model_calls}
        if self.queued:
            out["queued"] = list(self.queued)
        return out


@dataclass(frozen=True, kw_only=True)
class TurnRequest:
    """One turn to remember (``remember_turns``, the journal's applier)."""

    user_id: str
    user_text: str
    assistant_text: str = ""
    thread_id: str | None = None
    turn_ids: tuple[str, ...] = ()
    now: float = 0.0
    """When the turn happened (the records' ``created_at``)."""
    id: str | None = None
    """A stable id (the journal entry's): records get ids derived from it, so a replay is idempotent."""
    redactions: dict[str, int] = field(default_factory=dict)
    """Identifiers already replaced in the texts before they were journaled, by kind."""
    previous_reply: str = ""
    """The assistant's reply before this turn in its thread, read from the thread by the caller: the turn's
    search context ("川菜和粤菜" answers "你喜欢哪种菜系？")."""

    @classmethod
    def of(cls, entry: JournalEntry) -> TurnRequest:
        """The request a journal entry holds."""
        return cls(user_id=entry.user_id, user_text=entry.user_text, assistant_text=entry.assistant_text,
                   thread_id=entry.thread_id, turn_ids=entry.turn_ids, now=entry.created_at, id=entry.id,
                   redactions=dict(entry.redactions), previous_reply=entry.previous_reply)


@dataclass
class _Batch:
    """What a batch of turns has planned so far: later turns of the batch read it before the store."""

    records: dict[str, MemoryRecord] = field(default_factory=dict)
    hashes: set[tuple[str, str]] = field(default_factory=set)
    stored_hashes: set[tuple[str, str]] = field(default_factory=set)
    """``(user, content hash)`` pairs of the batch's turns already in the store (read once, before planning)."""
    slots: dict[tuple[str, Kind, str], MemoryRecord] = field(default_factory=dict)
    replies: dict[tuple[str, str], str] = field(default_factory=dict)


RECAP_DAYS = (7, 30, 365)
"""How far back a recap question that names no time looks: the first of these spans (days) holding a memory."""
AHEAD_DAYS = 10 * 365
"""How far ahead a question about plans that names no time looks."""
RECAP_SLACK_DAYS = AFFINITY_DECAY_DAYS
"""How far beyond a named window a recap looks when the window holds nothing (``time_affinity``'s decay days)."""


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` characters of ``text``: what ``context_of`` keeps of a turn's context (the reply's question,
    then who a pronoun meant)."""
    return text[max(0, len(text) - chars):]


def _queued_kind(entry: JournalEntry) -> Kind:
    """The kind of record a queued turn will become: its episode, or (a confided worry) only its summary."""
    return Kind.EPISODIC if entry.preview.startswith("user:") else Kind.SUMMARY


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def _slot_id(user_id: str, kind: Kind, key: str) -> str:
    digest = hashlib.sha256(f"{user_id}\x00{kind}\x00{key}".encode()).hexdigest()[:20]
    return f"{kind.value[:4]}-{digest}"


def _forget_process_caches() -> None:
    """Empty the process caches that hold recent texts: raw messages (redaction, previews) and decoded rows
    (cached_records). Erasing a user and deleting a memory both call it: "forget my number" must not leave the
    number in this process's memory."""
    forget_remembered()
    forget_previews()
    forget_decoded_rows()


class MemoryService:
    """Remember and recall for many users over one store and one keyword index."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        keyword: KeywordIndex | None = None,
        clock: Clock = system_clock,
        forgetting: ForgettingPolicy | None = None,
        writing: WritePolicy | None = None,
        model: Any = None,
        journal: WriteJournal | None = None,
    ) -> None:
        """``journal=None`` writes each turn synchronously (tests, evaluation); with a journal, turns are
        acknowledged once journaled and a background thread stores them in batches (``open_service``)."""
        self.indexed = IndexedStore(store, keyword if keyword is not None else KeywordIndex(None))
        """The store and its keyword index, kept in step: every write that changes what is searchable."""
        self.store = store
        self.keyword = self.indexed.keyword
        self.clock = clock
        self.forgetting = forgetting or ForgettingPolicy()
        self.writing = writing or WritePolicy()
        self.model = model
        self.write_lock = threading.RLock()
        """Held while a batch is stored: erasure waits for an in-flight batch instead of racing it."""
        self.journal = journal
        self.applier: JournalApplier | None = None
        if journal is not None:
            from mneme.memory.applier import JournalApplier

            self.applier = JournalApplier(journal, self)
            self.applier.start()
        self._null: NullBaseline | None = None
        self._null_for: object = None

    # -- consistency (owned by IndexedStore; these names stay for callers) ------------------------
    def sync_keyword_index(self, *, force: bool = False, only_if_needed: bool = False) -> int:
        """Rebuild the keyword index from the store where they disagree (see ``IndexedStore.sync``)."""
        with self.write_lock:  # the journal's applier writes in the background
            return self.indexed.sync(force=force, only_if_needed=only_if_needed)

    def _catch_up(self, user_id: str) -> None:
        self.indexed.catch_up(user_id)

    @staticmethod
    def _entry(record: MemoryRecord) -> KeywordEntry:
        return IndexedStore.entry(record)

    # -- recall ---------------------------------------------------------------------------------
    def recall(self, user_id: str, query: str, *, options: RecallOptions | None = None,
               now: float | None = None) -> list[Recalled]:
        """The best few memories and documents of ``user_id`` for ``query``, best first."""
        user_id = validate_tenant(user_id)
        opts = options or RecallOptions()
        now = self.clock() if now is None else now
        query = clean_text(query or "").strip()[:MAX_QUERY_CHARS]
        if not query or opts.k <= 0 or is_low_value(query):
            return []  # "谢谢！" recalls nothing: listing memories for it would only be noise
        # Read-your-writes: queued turns first, so one applied meanwhile is found in the store instead.
        pool = max(CANDIDATE_POOL, 4 * opts.k)
        pending = self.journal.search(user_id, query, k=pool) if self.journal is not None else []
        pin = getattr(self.store, "pinned_stamps", None)  # server mode: one read of the change stamps per recall
        with working(), pin([user_id, SHARED_TENANT] if opts.include_documents else [user_id]) if pin \
                else nullcontext():
            return self._recall(user_id, query, opts, now, pending)

    def _recall(self, user_id: str, query: str, opts: RecallOptions, now: float,
                pending: list[tuple[JournalEntry, float]]) -> list[Recalled]:
        self._catch_up(user_id)
        if opts.include_documents:
            self._catch_up(SHARED_TENANT)  # documents another process ingested
        kinds: list[Kind] = list(MEMORY_KINDS) + ([Kind.DOCUMENT] if opts.include_documents else [])
        pool = max(CANDIDATE_POOL, 4 * opts.k)
        # the keyword channel's SQL runs beside the query's embedding (memory/overlap.py); its Python (the
        # query's words, its time window) here first: beside, it would hold the GIL the embedding waits for
        said = tokenize(query)
        terms = widen(said)  # kin and pets by their other names too (memory/kin.py)
        kin = about(said)
        window = parse_time_window(query, now) if opts.time_aware else None
        side = Beside(lambda: self._keyword_channel(user_id, query, terms, kinds, pool, opts))
        profile = asks_profile(query)
        slots = asks_slot(query)
        time_words = window.expression if window is not None else ""
        plans = opts.time_aware and asks_plans(query, time_words)
        recap = opts.time_aware and not plans and asks_recap(query, time_words)
        span: TimeWindow | None = None
        ahead: TimeWindow | None = None
        try:
            vector = self.store.embedder.embed([query])[0]
            dense = self.store.search(user_id, vector, kinds=kinds, k=pool, include_shared=opts.include_documents)
            if profile:  # "你对我了解多少？": every fact and preference is a candidate, not only those near its words
                dense += self.store.search(user_id, vector, kinds=[Kind.FACT, Kind.PREFERENCE], k=pool)
            elif slots:  # "What's my name?": the facts are candidates, the one filling the slot answers in any language
                dense += self.store.search(user_id, vector, kinds=[Kind.FACT], k=pool)
            if recap:  # "我昨天跟你说了什么": the memories made then are the candidates that answer
                span, made = self._made_in(user_id, vector, window, now, pool)
                dense += made
            if plans:  # "我接下来有什么安排？": those telling of an event ahead (or in the window named)
                ahead = window or TimeWindow(now, now + AHEAD_DAYS * DAY, "ahead", "range")
                told = [{EVENT_END: {"$gt": ahead.start}}, {EVENT_START: {"$lt": ahead.end}}]
                dense += self.store.search(user_id, vector, kinds=MEMORY_KINDS, k=pool, where={"$and": told})
        finally:
            side.wait()  # never leave it running past this recall, even when the dense channel failed
        keyword, kind_of = side.result()
        records = {h.record.id: h.record for h in dense}
        dense_scores = {h.record.id: h.score for h in dense}
        missing = [i for i, _ in keyword if i not in records]
        if missing:  # keyword-only hits: read them from the collections of their kinds only
            # (here rather than beside the embedding: reading the ~30 the dense channel did not find costs less
            # than reading all ~100 beside it, whose Python work slows the embedding down; measured)
            wanted = sorted({Kind(kind_of[i]) for i in missing if i in kind_of} & set(kinds))
            tenants = (user_id, SHARED_TENANT) if opts.include_documents and Kind.DOCUMENT in wanted else (user_id,)
            for tenant in tenants:
                for rec in self.store.get(tenant, missing, kinds=wanted if tenant == user_id else [Kind.DOCUMENT]):
                    records[rec.id] = rec
        keyword_scores = {i: s for i, s in keyword if i in records}
        stale = [i for i, _ in keyword if i not in records]
        if stale:  # deleted elsewhere (another process, a crash between writes): heal the index
            logger.debug("dropping %d stale keyword entries", len(stale))
            self.indexed.drop_stale(stale)
        floors = self._null_baseline().floors(vector)  # per form of item: episodes, facts, documents
        feeling = asks_feeling(query)
        pending = self._queued_by_meaning(user_id, vector, pending, floors, list(dense_scores.values()), opts,
                                          made_in=span, feeling=feeling)
        if not records and not pending:
            return []
        candidates = [Candidate(rec, dense_scores.get(rid), keyword_scores.get(rid)) for rid, rec in records.items()]
        baseline = floors["impersonal"]
        strict = opts.relevance_floor  # applied below, once documents are judged by their sentences too
        ranked = rank(candidates, replace(opts, relevance_floor=False), now=now, window=window,
                      forgetting=self.forgetting, baseline=floors, asks_when=asks_when(query),
                      asks_feeling=feeling, asks_profile=profile, recap=span, ahead=ahead, kin=kin,
                      slots=slots)
        if strict:  # a memory under the floor is dropped before it can lift a neighbour (documents: judged below)
            ranked = [it for it in ranked if it.source == "document" or it.signals.get("relevant", 1.0) > 0]
        if pending:
            ranked = sorted(ranked + self._pending_items(pending, opts, window, exclude=set(records)),
                            key=lambda it: (-it.score, it.id))
        ranked = lift_neighbours(ranked, share=opts.neighbour_share)
        if strict:  # the head that can be selected, documents judged by their best sentence, then the floor
            head = judge_documents(ranked[:4 * opts.k], vector, baseline, self.store.embedder.embed)
            ranked = [it for it in head + ranked[4 * opts.k:] if it.signals.get("relevant", 1.0) > 0]
        ordered = False  # an answer put first below: MMR would undo its order
        if slots:
            ranked, ordered = slot_first(ranked), True
        if profile:
            ranked, ordered = profile_first(ranked), True
        if span is not None:
            ranked, ordered = recap_first(ranked, span), True
        if ahead is not None:
            ranked, ordered = plans_first(ranked, ahead), True
        out = select(ranked, replace(opts, mmr=False) if ordered else opts, embed=self.store.embedder.embed)
        if not strict:
            out = judge_documents(out, vector, baseline, self.store.embedder.embed)  # by their best sentence
        if opts.reinforce:
            try:  # a side write: recall answers even when it fails (disk full, store read-only)
                self.reinforce(user_id, [it.id for it in out if it.source == "memory"
                                         and not it.metadata.get("queued")], now=now)
            except Exception as exc:  # noqa: BLE001
                logger.warning("recall: could not reinforce the recalled memories of %s: %s: %s", user_id,
                               type(exc).__name__, exc)
        return out

    def _made_in(self, user_id: str, vector: Sequence[float], window: TimeWindow | None, now: float, pool: int,
                 ) -> tuple[TimeWindow | None, list[ScoredRecord]]:
        """The span a recap question asks about and the user's memories made in it: the window it names
        ("昨天", "last week"; if that holds nothing, widened by the days a time affinity fades over, as a person
        asked about "two weeks ago" also tells of nine days ago), or, when it names none ("我们上次聊了什么？",
        "What have I been up to lately?"), the last week, else month, else year that holds any memory
        (``RECAP_DAYS``)."""
        if window is not None:
            near = RECAP_SLACK_DAYS * DAY
            spans = [window, TimeWindow(window.start - near, window.end + near, window.expression, "range")]
        else:
            spans = [TimeWindow(now - days * DAY, now + 1.0, "recent", "range") for days in RECAP_DAYS]
        for span in spans:
            made = [{"created_at": {"$gte": span.start}}, {"created_at": {"$lt": span.end}}]
            hits = self.store.search(user_id, vector, kinds=MEMORY_KINDS, k=pool, where={"$and": made})
            if hits:
                return span, hits
        return spans[0], []  # nothing stored in any: still the span (queued turns made in it answer)

    def _keyword_channel(self, user_id: str, query: str, terms: list[str], kinds: list[Kind], pool: int,
                         opts: RecallOptions) -> tuple[list[tuple[str, float]], dict[str, str]]:
        """The keyword channel's hits for the query's ``terms`` and each hit's kind (run beside the embedding:
        memory/overlap.py; SQLite lets go of the GIL while it searches)."""
        kind_of: dict[str, str] = {}
        keyword = self.keyword.search(user_id, query, kinds=[str(k) for k in kinds], k=pool,
                                      include_shared=opts.include_documents, kinds_found=kind_of, terms=terms)
        return keyword, kind_of

    def recall_pending(self, user_id: str, query: str, *, options: RecallOptions | None = None,
                       now: float | None = None) -> list[Recalled]:
        """Only the user's queued (journaled, not yet stored) turns that match ``query``: recall while the
        store is unreachable."""
        user_id = validate_tenant(user_id)
        opts = options or RecallOptions()
        query = clean_text(query or "").strip()[:MAX_QUERY_CHARS]
        if self.journal is None or not query or opts.k <= 0 or is_low_value(query):
            return []
        now = self.clock() if now is None else now
        window = parse_time_window(query, now) if opts.time_aware else None
        items = self._pending_items(self.journal.search(user_id, query, k=opts.k), opts, window, exclude=set())
        return select(sorted(items, key=lambda it: (-it.score, it.id)), opts)

    def _queued_by_meaning(self, user_id: str, vector: Sequence[float], hits: list[tuple[JournalEntry, float]],
                           floors: dict[Form, float], dense: list[float], opts: RecallOptions,
                           made_in: TimeWindow | None = None,
                           feeling: bool = False) -> list[tuple[JournalEntry, float]]:
        """``hits`` (queued turns sharing words with the query, with the share matched) joined with the queued
        turns whose embedding clears the relevance floor of their form: "What instrument am I learning?" finds
        the queued "我最近在学吉他" it shares no word with, as it will once the turn is stored. Each relevance is
        fused as ranking fuses a stored item's (the cosine normalised over the dense channel's range and the
        queued turns', weighted against the words' share), never below the share of words alone. Those made in
        ``made_in`` (the span a recap asks about: "我们上次聊了什么？") are kept whatever their words, and for a
        question about feelings (``feeling``: "我最近状态怎么样") the summaries of what the user confided,
        as stored ones are."""
        if self.journal is None or opts.memory_weight <= 0:
            return hits
        try:
            queued = self.journal.queued_vectors(user_id, self.store.embedder.embed)
        except Exception as exc:  # noqa: BLE001 - the words still find them; a failed embedding loses nothing
            logger.warning("recall: could not embed the queued turns of %s: %s: %s", user_id, type(exc).__name__, exc)
            return hits
        if not queued:
            return hits
        q = np.asarray(vector, dtype=np.float32)
        m = np.asarray([v for _, v in queued], dtype=np.float32)
        cosines = (m @ q) / np.maximum(np.linalg.norm(m, axis=1) * float(np.linalg.norm(q)), 1e-12)
        lo, hi = min([*dense, float(cosines.min())]), max([*dense, float(cosines.max())])
        words = {entry.id: share for entry, share in hits}
        kw = opts.keyword_weight
        out: list[tuple[JournalEntry, float]] = []
        for (entry, _), cosine in zip(queued, cosines.tolist(), strict=True):
            share = words.pop(entry.id, 0.0)
            kind = _queued_kind(entry)
            form = form_of(kind)
            d = (cosine - lo) / (hi - lo) if hi > lo else 1.0
            if (cosine > floors[form] or (made_in is not None and made_in.contains(entry.created_at))
                    or (feeling and kind == Kind.SUMMARY)):
                out.append((entry, max(share, (1 - kw) * d + kw * share)))
            elif share > 0:
                out.append((entry, share))
        out += [(entry, share) for entry, share in hits if entry.id in words]  # applied meanwhile: as they were
        out.sort(key=lambda h: (-h[1], -h[0].created_at))
        return out

    def _pending_items(self, hits: Sequence[tuple[JournalEntry, float]], opts: RecallOptions,
                       window: TimeWindow | None, *, exclude: set[str]) -> list[Recalled]:
        """Queued turns as recalled items: the query's share of words they hold, or the relevance
        ``_queued_by_meaning`` gave them, is their relevance (they are fresh, so the forgetting curve leaves
        them as they are). Ids are the records they will become."""
        out: list[Recalled] = []
        if opts.memory_weight <= 0:
            return out
        for entry, overlap in hits:
            ep_id, sum_id = record_ids(entry.id)
            kind = _queued_kind(entry)
            rid = ep_id if kind == Kind.EPISODIC else sum_id
            if rid in exclude or not entry.preview:
                continue
            relevance = overlap
            signals = {"keyword": overlap, "queued": 1.0}
            # when what it tells happened, as the stored record will hold it ("上周末…", "下个月18号…")
            event, _ = event_time(entry.user_text, entry.created_at, reply=entry.assistant_text)
            meta: dict[str, Any] = {"queued": True, **({EVENT_START: event[0], EVENT_END: event[1]} if event else {})}
            if window is not None:
                affinity = time_affinity(entry.created_at, window)
                if event is not None:
                    affinity = max(affinity, event_affinity(event, window))
                relevance += opts.time_weight * affinity
                signals["time"] = affinity
            relevance *= opts.memory_weight
            signals["relevance"] = relevance
            if relevance < opts.score_floor:
                continue
            out.append(Recalled(
                id=rid, kind=kind, text=entry.preview, score=relevance,
                source="memory", created_at=entry.created_at, source_turns=list(entry.turn_ids),
                thread_id=entry.thread_id, metadata=meta, signals=signals, user_id=entry.user_id))
        return out

    def _null_baseline(self) -> NullBaseline:
        embedder = self.store.embedder
        if self._null is None or self._null_for is not embedder:  # a reindex may swap the embedder
            self._null, self._null_for = NullBaseline(embedder), embedder
        return self._null

    async def arecall(self, user_id: str, query: str, *, options: RecallOptions | None = None,
                      now: float | None = None) -> list[Recalled]:
        """Async twin of ``recall``."""
        return await asyncio.to_thread(self.recall, user_id, query, options=options, now=now)

    def reinforce(self, user_id: str, ids: Sequence[str], *, now: float | None = None) -> None:
        """Count a recall of these memories: access count up, last access reset (strengthens them)."""
        if not ids:
            return
        now = self.clock() if now is None else now
        if self.applier is not None:  # with a journal, the background thread counts recalls in batches
            self.applier.touch(user_id, list(ids), now)
            return
        current = {r.id: r for r in self.store.get(user_id, list(ids))}
        updates = {rid: {"last_accessed": now, "access_count": rec.access_count + 1}
                   for rid, rec in current.items() if rec.user_id == user_id}
        if updates:
            self.store.update_metadata(user_id, updates)

    # -- write ----------------------------------------------------------------------------------
    def remember_turn(self, user_id: str, *, user_text: str, assistant_text: str = "",
                      thread_id: str | None = None, now: float | None = None,
                      turn_ids: Sequence[str] = (), model: Any = None, previous_reply: str = "") -> WriteReport:
        """Store one turn of ``user_id`` as memory now, following the writing policy (synchronous).

        ``previous_reply`` is the assistant's reply before this turn in its thread (the caller reads it from the
        thread): it becomes the turn's search context.
        """
        user_text, assistant_text = clean_text(user_text), clean_text(assistant_text)
        request = TurnRequest(user_id=validate_tenant(user_id), user_text=user_text, assistant_text=assistant_text,
                              thread_id=thread_id, now=self.clock() if now is None else now,
                              turn_ids=tuple(turn_ids), previous_reply=clean_text(previous_reply or ""))
        plan = plan_turn(user_text, assistant_text, policy=self.writing, model=model or self.model)
        return self.store_turns([request], [plan])[0]

    async def aremember_turn(self, user_id: str, *, user_text: str, assistant_text: str = "",
                             thread_id: str | None = None, now: float | None = None,
                             turn_ids: Sequence[str] = (), model: Any = None,
                             previous_reply: str = "") -> WriteReport:
        """Async twin of ``remember_turn`` (the model call is awaited; storage runs in a thread)."""
        user_text, assistant_text = clean_text(user_text), clean_text(assistant_text)
        request = TurnRequest(user_id=validate_tenant(user_id), user_text=user_text, assistant_text=assistant_text,
                              thread_id=thread_id, now=self.clock() if now is None else now,
                              turn_ids=tuple(turn_ids), previous_reply=clean_text(previous_reply or ""))
        plan = await aplan_turn(user_text, assistant_text, policy=self.writing, model=model or self.model)
        return (await asyncio.to_thread(self.store_turns, [request], [plan]))[0]

    def enqueue_turn(self, user_id: str, *, user_text: str, assistant_text: str = "",
                     thread_id: str | None = None, now: float | None = None,
                     turn_ids: Sequence[str] = (), model: Any = None, previous_reply: str = "") -> WriteReport:
        """Acknowledge a turn: journal it (redacted, fsync'd) and return; a background batch stores it.

        Without a journal this is ``remember_turn``. Raises ``JournalWriteError`` when the turn cannot be
        journaled: then nothing was kept and the caller must say so.
        """
        if self.journal is None:
            return self.remember_turn(user_id, user_text=user_text, assistant_text=assistant_text,
                                      thread_id=thread_id, now=now, turn_ids=turn_ids, model=model,
                                      previous_reply=previous_reply)
        entry, report = self._journal_entry(user_id, user_text, assistant_text, thread_id, now, turn_ids, model,
                                            previous_reply)
        if entry is not None:
            self.journal.append(entry)
        return report

    async def aenqueue_turn(self, user_id: str, *, user_text: str, assistant_text: str = "",
                            thread_id: str | None = None, now: float | None = None,
                            turn_ids: Sequence[str] = (), model: Any = None,
                            previous_reply: str = "") -> WriteReport:
        """Async twin of ``enqueue_turn``: awaits the group commit without holding a thread."""
        if self.journal is None:
            return await self.aremember_turn(user_id, user_text=user_text, assistant_text=assistant_text,
                                             thread_id=thread_id, now=now, turn_ids=turn_ids, model=model,
                                             previous_reply=previous_reply)
        entry, report = self._journal_entry(user_id, user_text, assistant_text, thread_id, now, turn_ids, model,
                                            previous_reply)
        if entry is not None:
            await asyncio.wrap_future(self.journal.submit(entry))
        return report

    def _journal_entry(self, user_id: str, user_text: str, assistant_text: str, thread_id: str | None,
                       now: float | None, turn_ids: Sequence[str], model: Any,
                       previous_reply: str = "") -> tuple[JournalEntry | None, WriteReport]:
        """The journal entry of a turn (redacted texts), or none when the policy skips the turn outright."""
        user_id = validate_tenant(user_id)
        user_text, assistant_text = clean_text(user_text), clean_text(assistant_text or "")
        if model is not None and self.applier is not None:
            self.applier.model = model  # the graph's model does the extraction when the batch is applied
        # The no-model plan: the skip decision (model-independent) and what recall shows while queued.
        preview = preview_plan(user_text, assistant_text, self.writing)
        report = WriteReport(redactions=dict(preview.redactions))
        if preview.skipped:
            report.skipped = preview.skip_reason
            return None, report
        # Redact exactly as the policy does (a generous prefix), so no identifier reaches the disk.
        ru = redact(user_text[: self.writing.max_user_chars * 2], self.writing.redaction)
        ra = redact((assistant_text or "")[: self.writing.max_assistant_chars * 2], self.writing.redaction)
        counts = dict(ru.counts)
        for kind, n in ra.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        entry = JournalEntry(id=new_entry_id(), user_id=user_id, user_text=ru.text, assistant_text=ra.text,
                             thread_id=thread_id, turn_ids=tuple(turn_ids), redactions=counts,
                             preview=preview.episodic_text or preview.summary_text or "",
                             created_at=self.clock() if now is None else now,
                             previous_reply=redact(_tail(clean_text(previous_reply or ""),
                                                         self.writing.max_assistant_chars),
                                                   self.writing.redaction).text)
        report.queued = [entry.id]
        return entry, report

    def drain(self, timeout: float | None = 30.0) -> bool:
        """Wait until every journaled turn is stored (or ``timeout`` seconds); True when none is left."""
        return True if self.applier is None else self.applier.drain(timeout)

    def remember_turns(self, requests: Sequence[TurnRequest], *, model: Any = None) -> list[WriteReport]:
        """Store many turns at once: one plan per turn, then ONE embedding call and ONE store write for all.

        Turns are applied in order, as if remembered one by one (a later turn's fact update sees an
        earlier one's in the same batch). Requests with an ``id`` get records ids derived from it, so
        storing the same request twice (a replay) writes the same records again, never duplicates.
        """
        plans = [plan_turn(r.user_text, r.assistant_text, policy=self.writing, model=model or self.model)
                 for r in requests]
        return self.store_turns(requests, plans)

    def plan(self, request: TurnRequest, *, model: Any = None) -> TurnPlan:
        """The writing policy's plan for one request (the one model call of a turn, when a model is set)."""
        plan = plan_turn(request.user_text, request.assistant_text, policy=self.writing, model=model or self.model)
        if request.redactions:  # redacted before journaling: the counts travel with the request
            merged = dict(request.redactions)
            for kind, n in plan.redactions.items():
                merged[kind] = merged.get(kind, 0) + n
            plan.redactions = merged
        return plan

    @working()  # a core taken: a recall meanwhile keeps its keyword channel inline (memory/overlap.py)
    def store_turns(self, requests: Sequence[TurnRequest], plans: Sequence[TurnPlan]) -> list[WriteReport]:
        """Store already planned turns: their records are embedded in one call and written in one batch."""
        batch = _Batch(stored_hashes=self._stored_hashes(requests, plans))
        reports: list[WriteReport] = []
        for request, plan in zip(requests, plans, strict=True):
            reports.append(self._plan_records(validate_tenant(request.user_id), plan, request, batch))
        records = list(batch.records.values())
        if records:
            vectors = self.store.embedder.embed([search_text(r) for r in records])
            self.indexed.add([replace(r, embedding=v) for r, v in zip(records, vectors, strict=True)])
        return reports

    def _plan_records(self, user_id: str, plan: TurnPlan, request: TurnRequest, batch: _Batch) -> WriteReport:
        """The records one planned turn adds to ``batch`` (read against the store and the batch so far)."""
        now, thread_id = request.now, request.thread_id
        report = WriteReport(redactions=dict(plan.redactions), model_calls=plan.model_calls,
                             fallback=plan.fallback)
        # The reply this turn answers: what the caller read from the thread; else, in a batch, the reply of the
        # same thread's turn just before (callers replaying a conversation in one batch).
        thread_key = (user_id, thread_id or "")
        previous = redact(request.previous_reply, self.writing.redaction).text if request.previous_reply \
            else batch.replies.get(thread_key)
        if request.assistant_text:
            batch.replies[thread_key] = redact(request.assistant_text, self.writing.redaction).text
        if plan.skipped:
            report.skipped = plan.skip_reason
            return report
        # An exact repeat adds no episode, but may still change a fact ("我住在上海" again after a move).
        repeat = bool(plan.content_hash) and ((user_id, plan.content_hash) in batch.hashes
                                              or (user_id, plan.content_hash) in batch.stored_hashes)
        meta: dict[str, Any] = {"content_hash": plan.content_hash, "language": plan.language}
        # when what it tells happened ("上周末…", "two weekends ago"), if not the day it was said
        event, named = event_time(request.user_text, now, reply=request.assistant_text)
        if event is not None:
            meta[EVENT_START], meta[EVENT_END] = event
        elif named:  # "today", "this month": it tells when, as its own time ("when" questions, answertype)
            meta[NAMES_TIME] = True
        for kind, n in plan.redactions.items():
            meta[f"redacted_{kind}"] = n
        if plan.fallback:
            meta["model_fallback"] = True
        base: dict[str, Any] = dict(user_id=user_id, created_at=now, thread_id=thread_id,
                                    source_turns=list(request.turn_ids), importance=plan.importance,
                                    emotion=plan.emotion.label)
        ep_id, sum_id = record_ids(request.id) if request.id else (_new_id("ep"), _new_id("sum"))
        records: list[MemoryRecord] = []
        if plan.episodic_text and not repeat:
            context = context_of(previous)
            records.append(MemoryRecord(id=ep_id, kind=Kind.EPISODIC, text=plan.episodic_text,
                                        metadata={**meta, **({"context": context} if context else {})}, **base))
        if plan.summary_text and not repeat:
            records.append(MemoryRecord(id=sum_id, kind=Kind.SUMMARY, text=plan.summary_text,
                                        metadata=dict(meta), **base))
        if plan.content_hash and (plan.episodic_text or plan.summary_text):
            batch.hashes.add((user_id, plan.content_hash))
        for fact in plan.facts:
            kind = Kind.PREFERENCE if fact.kind == "preference" else Kind.FACT
            current = self._current_slot(user_id, kind, fact.key, batch)
            history = list(current.history) if current else []
            if current is not None and request.id and request.id in {
                    current.metadata.get("entry"), *(h.get("entry") for h in history)}:
                continue  # a replayed journal entry: its value is already in (or behind) the slot
            if current is not None and current.text == fact.text and not current.archived:
                continue  # the same value again: nothing new to keep (an archived one is revived)
            if current is not None and current.text != fact.text:
                history.append({"text": current.text, "created_at": current.created_at, "replaced_at": now,
                                **({"entry": current.metadata["entry"]} if "entry" in current.metadata else {})})
            record = MemoryRecord(
                id=current.id if current else _slot_id(user_id, kind, fact.key), kind=kind, text=fact.text,
                key=fact.key, history=history,
                metadata={"value": fact.value[:500], "extracted_by": fact.source,
                          **({"polarity": fact.polarity} if fact.polarity else {}),
                          **({"entry": request.id} if request.id else {})},
                **{**base, "importance": max(plan.importance, 0.6), "emotion": "neutral"},
            )
            records.append(record)
            batch.slots[(user_id, kind, fact.key)] = record
        if not records:
            report.skipped = "repeat" if repeat else None
            return report
        for record in records:
            batch.records.pop(record.id, None)  # a slot updated twice in one batch: the later value, in order
            batch.records[record.id] = record
        report.stored = [r.id for r in records]
        return report

    def _stored_hashes(self, requests: Sequence[TurnRequest], plans: Sequence[TurnPlan]) -> set[tuple[str, str]]:
        """The ``(user, content hash)`` pairs of these turns that the store already holds as an episode or a
        summary: one read per collection for the whole batch when the store can (``existing_hashes``)."""
        pairs = [(validate_tenant(r.user_id), p.content_hash) for r, p in zip(requests, plans, strict=True)
                 if p.content_hash and not p.skipped]
        if not pairs:
            return set()
        batched = getattr(self.store, "existing_hashes", None)
        if batched is not None:
            return set(batched(pairs, kinds=[Kind.EPISODIC, Kind.SUMMARY]))
        return {pair for pair in set(pairs) if self._has_hash(*pair)}

    def _has_hash(self, user_id: str, digest: str) -> bool:
        return any(True for _ in self.store.scan(user_id, kinds=[Kind.EPISODIC, Kind.SUMMARY],
                                                 where={"content_hash": digest}, batch_size=1))

    def _current_slot(self, user_id: str, kind: Kind, key: str, batch: _Batch) -> MemoryRecord | None:
        """The fact or preference now held for ``key``: this batch's latest, else the store's."""
        held = batch.slots.get((user_id, kind, key))
        if held is not None:
            return held
        current = self.store.get_by_key(user_id, kind, key)
        if current is None:  # a value gc archived is still the latest one: keep its history
            current = next(iter(self.store.get(user_id, [_slot_id(user_id, kind, key)])), None)
        return current

    # -- documents ------------------------------------------------------------------------------
    def ingest_document(self, text: str, *, source: str, user_id: str = SHARED_TENANT,
                        title: str | None = None, now: float | None = None) -> list[str]:
        """Split a document into chunks and store them (shared by default, or private to ``user_id``)."""
        return documents.ingest_document(self.indexed, text, source=source, user_id=user_id,
                                         title=title, now=self.clock() if now is None else now)

    def ingest_documents(self, docs: Sequence[documents.Document], *, user_id: str = SHARED_TENANT,
                         now: float | None = None,
                         progress: Callable[[int], None] | None = None) -> documents.IngestResult:
        """Store many documents, their chunks embedded and written in batches (unchanged chunks skipped)."""
        return documents.ingest_documents(self.indexed, docs, user_id=user_id, progress=progress,
                                          now=self.clock() if now is None else now)

    def list_documents(self, user_id: str = SHARED_TENANT) -> list[dict[str, Any]]:
        """The shared documents (or ``user_id``'s private ones), one entry per source."""
        return documents.list_documents(self.indexed, user_id)

    def delete_documents(self, sources: Sequence[str], *, user_id: str = SHARED_TENANT) -> dict[str, int]:
        """Delete the shared (or ``user_id``'s private) documents named by source; an unknown source is an error."""
        return documents.delete_documents(self.indexed, sources, user_id=user_id)

    # -- erase ----------------------------------------------------------------------------------
    def forget_user(self, user_id: str) -> int:
        """Erase everything kept about ``user_id``: every memory, the archive, private documents."""
        user_id = validate_tenant(user_id)
        with self.write_lock:  # an in-flight batch lands first, then everything goes
            if self.journal is not None:
                self.journal.delete_user(user_id)  # queued turns too: nothing comes back after erasure
            n = self.indexed.delete_user(user_id)
        _forget_process_caches()
        return n

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete these records of ``user_id`` (never another user's); return how many were deleted."""
        user_id = validate_tenant(user_id)
        queued: list[str] = []
        if self.journal is not None:  # a recalled memory may still be a queued turn: drop the turn
            wanted = set(ids)
            with self.write_lock:
                queued = [e.id for e in self.journal.pending(user_id) if wanted & set(record_ids(e.id))]
                self.journal.done(queued)
        owned = [r.id for r in self.store.get(user_id, list(ids))]
        n = self.indexed.delete(user_id, owned)
        if n or queued:  # the deleted words may still be a key of a process cache (a raw message, a decoded row)
            _forget_process_caches()
        return n

    def restore(self, user_id: str, ids: Sequence[str], *, now: float | None = None) -> list[str]:
        """Bring archived records of ``user_id`` back into recall; return the ids restored.

        A restored memory counts as used now (last access reset), so the next ``gc`` does not archive it
        again at once. Ids that are live already, unknown or another user's are left out of the result.
        """
        user_id = validate_tenant(user_id)
        archived = [r.id for r in self.store.get(user_id, list(ids)) if r.archived]
        if not archived:
            return []
        self.indexed.restore(user_id, archived)
        now = self.clock() if now is None else now
        self.store.update_metadata(user_id, {rid: {"last_accessed": now} for rid in archived})
        return archived

    def close(self, *, drain_timeout: float = 10.0) -> None:
        """Store what is journaled (up to ``drain_timeout`` s; the rest stays for the next start), then close."""
        if self.applier is not None:
            self.applier.stop(drain_timeout)
        if self.journal is not None:
            self.journal.close()
        self.indexed.close()
