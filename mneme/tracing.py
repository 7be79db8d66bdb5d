"""Recall and the writing policy as LangSmith steps: what was recalled and why, what was kept and why.

A thin layer over ``MemoryService.recall`` / ``remember_turn`` (the nodes, the memory tools and
``MnemeStore`` call these instead), so a trace of a turn shows a ``mneme.recall`` retriever step with
every recalled id, score and per-channel signals, and a ``mneme.write`` step with the policy's decision
(kept or skipped, and why), the ids stored and the redaction *counts*. Raw text that may hold personal
data never enters a trace from here: the query is traced redacted, the turn being written only by its
length. The user id is run metadata (``user_id``), so traces filter by user.

With tracing off (``LANGSMITH_TRACING`` unset, the default) ``traceable`` is a plain call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from langsmith import traceable
from langsmith.run_helpers import LangSmithExtra
from langsmith.utils import tracing_is_enabled

from mneme.memory.redaction import redact
from mneme.memory.service import MemoryService, Recalled, RecallOptions, WriteReport

TEXT_CHARS = 200
"""How much of a recalled item's (already redacted) text a trace shows."""


def _recall_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    options = inputs.get("options")
    return {
        "query": redact(str(inputs.get("query") or "")).text,
        "user_id": inputs.get("user_id"),
        "options": asdict(options) if isinstance(options, RecallOptions) else None,
    }


def recalled_view(items: Sequence[Recalled]) -> list[dict[str, Any]]:
    """What a trace shows of recalled items: ids, kinds, scores, signals, a clipped text."""
    return [{
        "id": it.id, "kind": str(it.kind), "source": it.source, "score": round(it.score, 4),
        "signals": {k: round(v, 4) for k, v in it.signals.items()}, "text": it.text[:TEXT_CHARS],
    } for it in items]


def _recall_outputs(items: Any) -> dict[str, Any]:
    items = list(items or [])
    # ``documents`` in the shape LangSmith renders for retriever runs; ``recalled`` keeps the evidence
    return {
        "documents": [{"page_content": it.text[:TEXT_CHARS], "type": "Document",
                       "metadata": {"id": it.id, "kind": str(it.kind), "score": round(it.score, 4)}}
                      for it in items],
        "recalled": recalled_view(items),
    }


def write_decision(report: WriteReport) -> dict[str, Any]:
    """The writing policy's decision for a trace: kept or skipped and why, ids, redaction counts."""
    return {
        "decision": "kept" if report.stored else "queued" if report.queued else "skipped",
        "reason": report.skipped if not (report.stored or report.queued) else None,
        "stored": list(report.stored),
        "queued": list(report.queued),
        "redactions": dict(report.redactions),
        "model_calls": report.model_calls,
        "fallback": report.fallback,
    }


def _write_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    kwargs = inputs.get("kwargs") or {}
    return {
        "user_id": inputs.get("user_id"),
        "thread_id": kwargs.get("thread_id"),
        "user_chars": len(str(kwargs.get("user_text") or "")),
        "assistant_chars": len(str(kwargs.get("assistant_text") or "")),
    }


def _write_outputs(report: Any) -> dict[str, Any]:
    return write_decision(report) if isinstance(report, WriteReport) else {"output": None}


def _extra(user_id: str, source: str) -> LangSmithExtra:
    return LangSmithExtra(metadata={"user_id": user_id, "mneme_source": source})


@traceable(run_type="retriever", name="mneme.recall", process_inputs=_recall_inputs,
           process_outputs=_recall_outputs)
def _recall(service: MemoryService, user_id: str, query: str, options: RecallOptions | None) -> list[Recalled]:
    return service.recall(user_id, query, options=options)


@traceable(run_type="retriever", name="mneme.recall", process_inputs=_recall_inputs,
           process_outputs=_recall_outputs)
async def _arecall(service: MemoryService, user_id: str, query: str,
                   options: RecallOptions | None) -> list[Recalled]:
    return await service.arecall(user_id, query, options=options)


@traceable(run_type="chain", name="mneme.write", process_inputs=_write_inputs, process_outputs=_write_outputs)
def _remember(service: MemoryService, user_id: str, kwargs: dict[str, Any]) -> WriteReport:
    return service.enqueue_turn(user_id, **kwargs)  # journaled when the service has a journal


@traceable(run_type="chain", name="mneme.write", process_inputs=_write_inputs, process_outputs=_write_outputs)
async def _aremember(service: MemoryService, user_id: str, kwargs: dict[str, Any]) -> WriteReport:
    return await service.aenqueue_turn(user_id, **kwargs)


def recall(service: MemoryService, user_id: str, query: str, *, options: RecallOptions | None = None,
           source: str = "agent") -> list[Recalled]:
    """``service.recall`` as a traced ``mneme.recall`` step (``source`` says who asked: agent, tool, store)."""
    if not tracing_is_enabled():  # the traced wrapper costs a thread hop per call even when nothing is sent
        return service.recall(user_id, query, options=options)
    return _recall(service, user_id, query, options, langsmith_extra=_extra(user_id, source))


async def arecall(service: MemoryService, user_id: str, query: str, *, options: RecallOptions | None = None,
                  source: str = "agent") -> list[Recalled]:
    """Async twin of ``recall``."""
    if not tracing_is_enabled():
        return await service.arecall(user_id, query, options=options)
    return await _arecall(service, user_id, query, options, langsmith_extra=_extra(user_id, source))


def remember_turn(service: MemoryService, user_id: str, *, source: str = "agent", **kwargs: Any) -> WriteReport:
    """``service.enqueue_turn`` (journaled, or stored at once without a journal) as a traced ``mneme.write``
    step carrying the policy's decision."""
    if not tracing_is_enabled():
        return service.enqueue_turn(user_id, **kwargs)
    return _remember(service, user_id, kwargs, langsmith_extra=_extra(user_id, source))


async def aremember_turn(service: MemoryService, user_id: str, *, source: str = "agent",
                         **kwargs: Any) -> WriteReport:
    """Async twin of ``remember_turn``."""
    if not tracing_is_enabled():
        return await service.aenqueue_turn(user_id, **kwargs)
    return await _aremember(service, user_id, kwargs, langsmith_extra=_extra(user_id, source))
