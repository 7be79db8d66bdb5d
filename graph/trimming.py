"""How a thread stays bounded: the last turns verbatim, older ones folded into a running summary.

A thread keeps its last ``thread_turns`` turns (a turn: a user message and what followed it) word for
word. Once a reply makes it hold more than ``thread_turns + max(1, thread_turns // 2)`` turns, every turn
before the last ``thread_turns`` is folded into ``State.summary`` and removed from the thread with
``RemoveMessage``; folding in batches costs one summary call per ``thread_turns // 2`` turns, not one per
turn. The model writes the summary when there is one; without one (or if it fails) the summary is
extractive: the folded user messages, clipped, newest kept when it grows past ``SUMMARY_MAX_CHARS``.
The rewrite and answer prompts see the summary and the recent turns.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from mneme.graph.context import Context, resolve_context
from mneme.graph.state import State
from mneme.model_calls import ModelCaller
from mneme.prompts import is_chinese
from mneme.prompts.thread import (
    EXTRACTIVE_HEADER,
    SUMMARIZE_THREAD_SYSTEM,
    SUMMARIZE_THREAD_USER,
    THREAD_SUMMARY,
    escape,
)

log = logging.getLogger(__name__)

SUMMARY_MAX_CHARS = 2000
"""Longest running summary kept (a model's longer answer is clipped; extractive lines drop oldest first)."""
LINE_MAX_CHARS = 200
"""Longest line one folded message contributes to an extractive summary."""
NOSTREAM = "nostream"


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content
                   if isinstance(p, str | dict))


def to_fold(messages: list[AnyMessage], keep_turns: int) -> list[AnyMessage]:
    """The messages to fold into the summary now (``[]`` while the thread is within its bound)."""
    keep = max(1, keep_turns)
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if len(starts) <= keep + max(1, keep // 2):
        return []
    return list(messages[:starts[-keep]])


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def extractive_summary(previous: str, folded: list[AnyMessage]) -> str:
    """The summary without a model: the earlier summary's lines, then each folded user message, clipped."""
    said = [_clip(_text(m), LINE_MAX_CHARS) for m in folded if isinstance(m, HumanMessage) and _text(m).strip()]
    lang = "zh" if any(is_chinese(s) for s in said) or is_chinese(previous) else "en"
    earlier = previous.splitlines()
    if earlier and earlier[0] in EXTRACTIVE_HEADER.values():
        lines = [line for line in earlier[1:] if line.strip()]
    else:  # a model's summary from before: keep it as one line
        lines = [f"- {_clip(previous, SUMMARY_MAX_CHARS // 2)}"] if previous.strip() else []
    lines += [f"- {s}" for s in said]
    header = EXTRACTIVE_HEADER[lang]
    while lines and len(header) + sum(len(line) + 1 for line in lines) > SUMMARY_MAX_CHARS:
        lines.pop(0)
    return "\n".join([header, *lines]) if lines else previous


def summary_prompt(previous: str, folded: list[AnyMessage]) -> list[BaseMessage]:
    """The model's prompt to fold ``folded`` into ``previous``."""
    turns = "\n".join(f"{'user' if isinstance(m, HumanMessage) else 'assistant'}: {escape(_text(m))}"
                      for m in folded if _text(m).strip())
    return [SystemMessage(SUMMARIZE_THREAD_SYSTEM),
            HumanMessage(SUMMARIZE_THREAD_USER.format(summary=escape(previous) or "(none)", turns=turns))]


def summary_messages(state: State) -> list[BaseMessage]:
    """What the answering model sees of the folded turns: the summary, tagged as data (``[]`` if none)."""
    summary = state.get("summary") or ""
    return [SystemMessage(THREAD_SUMMARY.format(summary=escape(summary)))] if summary.strip() else []


def _folded(summary: str, folded: list[AnyMessage]) -> dict[str, Any]:
    return {"summary": summary, "messages": [RemoveMessage(id=m.id) for m in folded if m.id]}


def _caller(model: BaseChatModel, caller: ModelCaller | None) -> ModelCaller:
    return caller if caller is not None and caller.model is model else ModelCaller(model)


def _plan(state: State, config: RunnableConfig, runtime: Runtime[Context]) -> tuple[list[AnyMessage], str]:
    ctx = resolve_context(runtime.context, config)
    return to_fold(list(state.get("messages") or []), ctx.thread_turns), state.get("summary") or ""


async def summarize_thread(state: State, config: RunnableConfig, runtime: Runtime[Context], *,
                           model: BaseChatModel | None, caller: ModelCaller | None = None) -> dict[str, Any]:
    """Fold the turns beyond the thread's bound into its running summary (nothing when within it).

    The model call runs under ``caller``'s policy (the extraction deadline); any failure folds extractively.
    """
    folded, previous = _plan(state, config, runtime)
    if not folded:
        return {}
    if model is not None:
        try:
            out, _ = await _caller(model, caller).ainvoke(
                "extraction", summary_prompt(previous, folded), config, model=model.with_config(tags=[NOSTREAM]))
            if _text(out).strip():
                return _folded(_text(out).strip()[:SUMMARY_MAX_CHARS], folded)
        except Exception:  # the thread must stay bounded even when the model is down
            log.warning("thread summary failed; folding extractively", exc_info=True)
    return _folded(extractive_summary(previous, folded), folded)


def summarize_thread_sync(state: State, config: RunnableConfig, runtime: Runtime[Context], *,
                          model: BaseChatModel | None, caller: ModelCaller | None = None) -> dict[str, Any]:
    """Sync twin of ``summarize_thread``."""
    folded, previous = _plan(state, config, runtime)
    if not folded:
        return {}
    if model is not None:
        try:
            out, _ = _caller(model, caller).invoke(
                "extraction", summary_prompt(previous, folded), config, model=model.with_config(tags=[NOSTREAM]))
            if _text(out).strip():
                return _folded(_text(out).strip()[:SUMMARY_MAX_CHARS], folded)
        except Exception:
            log.warning("thread summary failed; folding extractively", exc_info=True)
    return _folded(extractive_summary(previous, folded), folded)
