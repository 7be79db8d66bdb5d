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
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mneme.clock import Clock, system_clock
from mneme.memory import documents
from mneme.memory.base import (
    MEMORY_KINDS,
    SHARED_TENANT,
    Kind,
    MemoryRecord,
    MemoryStore,
    clean_text,
    validate_tenant,
)
from mneme.memory.forgetting import ForgettingPolicy
from mneme.memory.indexed import IndexedStore
from mneme.memory.indexing import context_of, search_text
from mneme.memory.keyword import KeywordEntry, KeywordIndex
from mneme.memory.lowvalue import is_low_value
from mneme.memory.ranking import Candidate, Recalled, RecallOptions, rank, select
from mneme.memory.redaction import redact
from mneme.memory.timewindow import parse_time_window
from mneme.memory.writing import TurnPlan, WritePolicy, aplan_turn, plan_turn

logger = logging.getLogger("mneme.memory.service")

__all__ = ["MemoryService", "RecallOptions", "Recalled", "WriteReport"]

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


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def _slot_id(user_id: str, kind: Kind, key: str) -> str:
    digest = hashlib.sha256(f"{user_id}\x00{kind}\x00{key}".encode()).hexdigest()[:20]
    return f"{kind.value[:4]}-{digest}"


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
    ) -> None:
        self.indexed = IndexedStore(store, keyword if keyword is not None else KeywordIndex(None))
        """The store and its keyword index, kept in step: every write that changes what is searchable."""
        self.store = store
        self.keyword = self.indexed.keyword
        self.clock = clock
        self.forgetting = forgetting or ForgettingPolicy()
        self.writing = writing or WritePolicy()
        self.model = model
        self._last_reply: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    # -- consistency (owned by IndexedStore; these names stay for callers) ------------------------
    def sync_keyword_index(self, *, force: bool = False, only_if_needed: bool = False) -> int:
        """Rebuild the keyword index from the store where they disagree (see ``IndexedStore.sync``)."""
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
        self._catch_up(user_id)
        if opts.include_documents:
            self._catch_up(SHARED_TENANT)  # documents another process ingested
        window = parse_time_window(query, now) if opts.time_aware else None
        kinds: list[Kind] = list(MEMORY_KINDS) + ([Kind.DOCUMENT] if opts.include_documents else [])
        # candidates per channel (the dense scores of this pool are min-max normalised: tuned with it)
        pool = max(30, 4 * opts.k)
        vector = self.store.embedder.embed([query])[0]
        dense = self.store.search(user_id, vector, kinds=kinds, k=pool, include_shared=opts.include_documents)
        keyword = self.keyword.search(user_id, query, kinds=[str(k) for k in kinds], k=pool,
                                      include_shared=opts.include_documents)
        records = {h.record.id: h.record for h in dense}
        dense_scores = {h.record.id: h.score for h in dense}
        missing = [i for i, _ in keyword if i not in records]
        if missing:  # keyword-only hits: read them from the collections of their kinds only
            kind_of = self.keyword.kinds_of(missing)
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
        if not records:
            return []
        candidates = [Candidate(rec, dense_scores.get(rid), keyword_scores.get(rid)) for rid, rec in records.items()]
        ranked = rank(candidates, opts, now=now, window=window, forgetting=self.forgetting)
        out = select(ranked, opts, embed=self.store.embedder.embed)
        if opts.reinforce:
            try:  # a side write: recall answers even when it fails (disk full, store read-only)
                self.reinforce(user_id, [it.id for it in out if it.source == "memory"], now=now)
            except Exception as exc:  # noqa: BLE001
                logger.warning("recall: could not reinforce the recalled memories of %s: %s: %s", user_id,
                               type(exc).__name__, exc)
        return out

    async def arecall(self, user_id: str, query: str, *, options: RecallOptions | None = None,
                      now: float | None = None) -> list[Recalled]:
        """Async twin of ``recall``."""
        return await asyncio.to_thread(self.recall, user_id, query, options=options, now=now)

    def reinforce(self, user_id: str, ids: Sequence[str], *, now: float | None = None) -> None:
        """Count a recall of these memories: access count up, last access reset (strengthens them)."""
        if not ids:
            return
        now = self.clock() if now is None else now
        current = {r.id: r for r in self.store.get(user_id, list(ids))}
        updates = {rid: {"last_accessed": now, "access_count": rec.access_count + 1}
                   for rid, rec in current.items() if rec.user_id == user_id}
        if updates:
            self.store.update_metadata(user_id, updates)

    # -- write ----------------------------------------------------------------------------------
    def remember_turn(self, user_id: str, *, user_text: str, assistant_text: str = "",
                      thread_id: str | None = None, now: float | None = None,
                      turn_ids: Sequence[str] = (), model: Any = None) -> WriteReport:
        """Store one turn of ``user_id`` as memory, following the writing policy."""
        user_id = validate_tenant(user_id)
        user_text, assistant_text = clean_text(user_text), clean_text(assistant_text)
        plan = plan_turn(user_text, assistant_text, policy=self.writing, model=model or self.model)
        return self._store_plan(user_id, plan, assistant_text=assistant_text, thread_id=thread_id,
                                now=self.clock() if now is None else now, turn_ids=turn_ids)

    async def aremember_turn(self, user_id: str, *, user_text: str, assistant_text: str = "",
                             thread_id: str | None = None, now: float | None = None,
                             turn_ids: Sequence[str] = (), model: Any = None) -> WriteReport:
        """Async twin of ``remember_turn`` (the model call is awaited; storage runs in a thread)."""
        user_id = validate_tenant(user_id)
        user_text, assistant_text = clean_text(user_text), clean_text(assistant_text)
        plan = await aplan_turn(user_text, assistant_text, policy=self.writing, model=model or self.model)
        now = self.clock() if now is None else now
        return await asyncio.to_thread(self._store_plan, user_id, plan, assistant_text=assistant_text,
                                       thread_id=thread_id, now=now, turn_ids=turn_ids)

    def _store_plan(self, user_id: str, plan: TurnPlan, *, assistant_text: str, thread_id: str | None,
                    now: float, turn_ids: Sequence[str]) -> WriteReport:
        report = WriteReport(redactions=dict(plan.redactions), model_calls=plan.model_calls,
                             fallback=plan.fallback)
        thread_key = (user_id, thread_id or "")
        previous = self._last_reply.get(thread_key)
        if assistant_text:
            with self._lock:
                self._last_reply[thread_key] = redact(assistant_text, self.writing.redaction).text
                self._last_reply.move_to_end(thread_key)
                while len(self._last_reply) > 10_000:
                    self._last_reply.popitem(last=False)
        if plan.skipped:
            report.skipped = plan.skip_reason
            return report
        # An exact repeat adds no episode, but may still change a fact ("我住在上海" again after a move).
        repeat = bool(plan.content_hash) and any(True for _ in self.store.scan(
            user_id, kinds=[Kind.EPISODIC, Kind.SUMMARY], where={"content_hash": plan.content_hash},
            batch_size=1))
        meta: dict[str, Any] = {"content_hash": plan.content_hash, "language": plan.language}
        for kind, n in plan.redactions.items():
            meta[f"redacted_{kind}"] = n
        if plan.fallback:
            meta["model_fallback"] = True
        base: dict[str, Any] = dict(user_id=user_id, created_at=now, thread_id=thread_id,
                                    source_turns=list(turn_ids), importance=plan.importance,
                                    emotion=plan.emotion.label)
        records: list[MemoryRecord] = []
        if plan.episodic_text and not repeat:
            context = context_of(previous)
            records.append(MemoryRecord(id=_new_id("ep"), kind=Kind.EPISODIC, text=plan.episodic_text,
                                        metadata={**meta, **({"context": context} if context else {})}, **base))
        if plan.summary_text and not repeat:
            records.append(MemoryRecord(id=_new_id("sum"), kind=Kind.SUMMARY, text=plan.summary_text,
                                        metadata=dict(meta), **base))
        for fact in plan.facts:
            kind = Kind.PREFERENCE if fact.kind == "preference" else Kind.FACT
            current = self.store.get_by_key(user_id, kind, fact.key)
            if current is None:  # a value gc archived is still the latest one: keep its history
                current = next(iter(self.store.get(user_id, [_slot_id(user_id, kind, fact.key)])), None)
            history = list(current.history) if current else []
            if current is not None and current.text == fact.text and not current.archived:
                continue  # the same value again: nothing new to keep (an archived one is revived)
            if current is not None and current.text != fact.text:
                history.append({"text": current.text, "created_at": current.created_at, "replaced_at": now})
            records.append(MemoryRecord(
                id=current.id if current else _slot_id(user_id, kind, fact.key), kind=kind, text=fact.text,
                key=fact.key, history=history,
                metadata={"value": fact.value[:500], "extracted_by": fact.source,
                          **({"polarity": fact.polarity} if fact.polarity else {})},
                **{**base, "importance": max(plan.importance, 0.6), "emotion": "neutral"},
            ))
        if not records:
            report.skipped = "repeat" if repeat else None
            return report
        vectors = self.store.embedder.embed([search_text(r) for r in records])
        records = [replace(r, embedding=v) for r, v in zip(records, vectors, strict=True)]
        self.indexed.add(records)
        report.stored = [r.id for r in records]
        return report

    # -- documents ------------------------------------------------------------------------------
    def ingest_document(self, text: str, *, source: str, user_id: str = SHARED_TENANT,
                        title: str | None = None, now: float | None = None) -> list[str]:
        """Split a document into chunks and store them (shared by default, or private to ``user_id``)."""
        return documents.ingest_document(self.indexed, text, source=source, user_id=user_id,
                                         title=title, now=self.clock() if now is None else now)

    # -- erase ----------------------------------------------------------------------------------
    def forget_user(self, user_id: str) -> int:
        """Erase everything kept about ``user_id``: every memory, the archive, private documents."""
        user_id = validate_tenant(user_id)
        n = self.indexed.delete_user(user_id)
        with self._lock:
            for key in [k for k in self._last_reply if k[0] == user_id]:
                del self._last_reply[key]
        return n

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete these records of ``user_id`` (never another user's); return how many were deleted."""
        user_id = validate_tenant(user_id)
        owned = [r.id for r in self.store.get(user_id, list(ids))]
        return self.indexed.delete(user_id, owned)

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

    def close(self) -> None:
        """Close the store and the keyword index."""
        self.indexed.close()
