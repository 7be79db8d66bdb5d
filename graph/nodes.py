"""The agent's nodes: rewrite the query, recall, answer, remember. Each returns only what it changes.

Each node is an async function with a sync twin (``rewrite_query`` / ``rewrite_query_sync``) sharing
the same pure steps, so both ``graph.ainvoke`` (``langgraph dev``, LangServe) and ``graph.invoke`` work
without running event loops inside threads. Nodes receive their model and memory service from the
builder, never load them: a graph built with ``FakeChatModel`` and an in-process store is fully
testable. ``model=None`` is memory-only mode: no model calls, the reply is a labelled account of
what was recalled.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from mneme import tracing
from mneme.clock import Clock, system_clock, to_iso
from mneme.endpoint_attempts import counting
from mneme.errors import InvalidInputError, JournalWriteError, ModelUnavailableError
from mneme.graph import degraded, memory_only
from mneme.graph.context import Context, resolve_context, thread_id_of
from mneme.graph.referents import resolve_pronoun
from mneme.graph.state import State
from mneme.graph.trimming import summary_messages
from mneme.memory.lowvalue import is_low_value
from mneme.memory.service import MemoryService, Recalled, WriteReport
from mneme.memory.writing import clip_report
from mneme.model_calls import ModelCaller
from mneme.prompts import (
    GENERATE_SYSTEM,
    REWRITE_SYSTEM,
    REWRITE_USER,
    render_documents,
    render_memories,
    reply_texts,
)
from mneme.prompts.thread import REWRITE_SUMMARY, escape

log = logging.getLogger(__name__)
NOSTREAM = "nostream"
FROM_MEMORY = "mneme_from_memory"
"""``response_metadata`` key of a reply given from memory because the model was unavailable."""
"""LangGraph's tag for model calls whose tokens stay out of ``stream_mode="messages"``: only the answer streams."""

# Short follow-ups that lean on the previous turn ("它的利润率呢?", "what about it?").
_REFERENCE = re.compile(
    r"[它他她]|这个|那个|这些|那些|\b(it|its|they|them|their|that|this|those|these)\b"
    # a time or a place named before (那天我们吃了什么？ "What did I eat there?"), a follow-up that only asks for more
    r"|那天|那时|当时|那次|那会儿?|那里|那儿|那边|还有呢|然后呢|还有吗|还有别的|"
    r"\bthen\b|(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )\bthere\b(?!\s+(?:is|are|was|were)\b)"
    r"|\bwhat else\b|\banything else\b",
    re.IGNORECASE,
)


# -- message helpers ---------------------------------------------------------------------------------
def text_of(message: BaseMessage | None) -> str:
    """The plain text of a message (text parts of multimodal content joined); ``""`` for None."""
    if message is None:
        return ""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content
                   if isinstance(p, str | dict))


def latest_user_message(messages: list[AnyMessage]) -> HumanMessage | None:
    """The last human message of the thread, if the thread ends with one."""
    return messages[-1] if messages and isinstance(messages[-1], HumanMessage) else None


def recent_history(messages: list[AnyMessage], turns: int) -> list[BaseMessage]:
    """The last ``turns`` user/assistant turns before the latest message (tool and system messages out)."""
    if turns <= 0:
        return []
    earlier: list[BaseMessage] = [
        m for m in messages[:-1] if isinstance(m, HumanMessage | AIMessage) and text_of(m).strip()
    ]
    starts = [i for i, m in enumerate(earlier) if isinstance(m, HumanMessage)]
    return earlier[starts[-turns]:] if len(starts) >= turns else earlier


def _transcript(history: list[BaseMessage]) -> str:
    roles = ("user" if isinstance(m, HumanMessage) else "assistant" for m in history)
    return "\n".join(f"{role}: {text_of(m)}" for role, m in zip(roles, history, strict=True))


def _with_summary(state: State, transcript: str) -> str:
    """The rewriter's conversation: the thread's running summary (when turns were folded), then the turns."""
    summary = (state.get("summary") or "").strip()
    return f"{REWRITE_SUMMARY.format(summary=escape(summary))}\n{transcript}" if summary else transcript


# -- rewrite_query -----------------------------------------------------------------------------------
def _rewrite_plan(
    state: State, ctx: Context, model: BaseChatModel | None
) -> tuple[str, list[BaseMessage] | None]:
    """The message as a fallback query, and the rewrite prompt when the model is worth calling."""
    message = text_of(latest_user_message(state["messages"])).strip()
    history = recent_history(state["messages"], ctx.recent_turns)
    if not message or not history:  # first turn: nothing to resolve, skip the model
        return message, None
    if is_low_value(message) in _NOTHING_TO_RESOLVE:  # "谢谢！", "bye", "哈哈": nothing to recall, nothing to rewrite
        return message, None
    longer = recent_history(state["messages"], REFERENT_TURNS)
    if model is None:
        return _expand_without_model(message, history, longer), None
    prompt: list[BaseMessage] = [
        SystemMessage(REWRITE_SYSTEM),
        HumanMessage(REWRITE_USER.format(history=_with_summary(state, _transcript(history)), message=message)),
    ]
    # should the model fail: the message, with only a pronoun's family member put in (never a borrowed message)
    return resolve_pronoun(message, [text_of(m) for m in longer if isinstance(m, HumanMessage)]) or message, prompt


_NOTHING_TO_RESOLVE = frozenset({"thanks", "farewell", "laughter", "emoji", "punctuation", "empty"})
"""Low-value messages the rewrite leaves alone. Not acks and greetings: "好啊" / "sure" may accept an offer
("要我帮你回忆一下上次那家餐厅吗？"), which the rewrite turns into the query it accepts."""


REFERENT_TURNS = 10
"""How many of the user's turns back a pronoun's family member is looked for ("我女儿叫小美" … three turns about
other things … "她喜欢什么？"): more than the rewrite's ``recent_turns``, since a person named stays the referent."""


def _expand_without_model(message: str, history: list[BaseMessage], longer: list[BaseMessage]) -> str:
    """Rewrite without a model (memory-only mode): 她 / "his" as the family member the user named last in ``longer``
    ("她喜欢什么？" → "我女儿喜欢什么？": ``referents``); else a short follow-up with a reference borrows the previous
    user message's words from ``history`` (not a low-value one: "ok then" stays as it is, nothing is recalled for it).
    When the rewrite model fails, only the pronoun is resolved (``_rewrite_plan``): a borrowed message may be
    about something else."""
    resolved = resolve_pronoun(message, [text_of(m) for m in longer if isinstance(m, HumanMessage)])
    if resolved is not None:
        return resolved
    previous = next((text_of(m) for m in reversed(history) if isinstance(m, HumanMessage)), "")
    if previous and len(message) <= 40 and _REFERENCE.search(message) and not is_low_value(message):
        return f"{previous} {message}"
    return message


def _rewritten(out: BaseMessage, fallback: str, attempts: int) -> dict[str, Any]:
    query = text_of(out).strip().strip("\"'“”").strip()
    if not query or is_low_value(query) and not is_low_value(fallback):
        query = fallback  # an empty rewrite, or an "OK, noted." that would search for nothing, says nothing
    return {"query": query, **degraded.fresh(), "model_attempts": attempts}


def _attempts(exc: Exception) -> int:
    """Requests a failed call sent: ``ModelUnavailableError`` counts them; any other failure was one reply."""
    return exc.attempts if isinstance(exc, ModelUnavailableError) else 1


def _unrewritten(fallback: str, exc: Exception) -> dict[str, Any]:
    # a failed rewrite must not cost the user their answer: search with the message as written
    if not isinstance(exc, ModelUnavailableError):
        log.warning("query rewrite failed (%s: %s); using the message (a pronoun's family member put in)",
                    type(exc).__name__, exc)
    return {"query": fallback, **degraded.fresh(degraded.REWRITE_FAILED), "model_attempts": _attempts(exc)}


def _caller(model: BaseChatModel, caller: ModelCaller | None) -> ModelCaller:
    return caller if caller is not None and caller.model is model else ModelCaller(model)


async def rewrite_query(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *, model: BaseChatModel | None,
    caller: ModelCaller | None = None,
) -> dict[str, Any]:
    """Turn the latest message into a standalone query; the model runs only when there is history.

    Starts the turn's ``degraded`` list and model attempt count.
    """
    fallback, prompt = _rewrite_plan(state, resolve_context(runtime.context, config), model)
    if prompt is None or model is None:
        return {"query": fallback, **degraded.fresh(), "model_attempts": 0}
    try:
        out, attempts = await _caller(model, caller).ainvoke(
            "rewrite", prompt, config, model=model.with_config(tags=[NOSTREAM]))
    except Exception as exc:  # noqa: BLE001 - whatever the model did, the turn goes on
        return _unrewritten(fallback, exc)
    return _rewritten(out, fallback, attempts)


def rewrite_query_sync(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *, model: BaseChatModel | None,
    caller: ModelCaller | None = None,
) -> dict[str, Any]:
    """Sync twin of ``rewrite_query``."""
    fallback, prompt = _rewrite_plan(state, resolve_context(runtime.context, config), model)
    if prompt is None or model is None:
        return {"query": fallback, **degraded.fresh(), "model_attempts": 0}
    try:
        out, attempts = _caller(model, caller).invoke(
            "rewrite", prompt, config, model=model.with_config(tags=[NOSTREAM]))
    except Exception as exc:  # noqa: BLE001 - whatever the model did, the turn goes on
        return _unrewritten(fallback, exc)
    return _rewritten(out, fallback, attempts)


# -- retrieve ---------------------------------------------------------------------------------------
def memory_of(runtime: Runtime[Context], service: MemoryService) -> MemoryService:
    """The memory a run uses: the host's Mneme store (``runtime.store``, e.g. under ``langgraph dev``) when it
    provides one, else the service the graph was built with."""
    host = getattr(runtime.store, "service", None)
    return host if isinstance(host, MemoryService) else service


def _recalled(items: list[Recalled]) -> dict[str, Any]:
    out = []
    for item in items:
        data = item.as_dict()
        # Keep documents' titles and sources for citation; scalars only, so state stays JSON-ready.
        data["metadata"] = {k: v for k, v in item.metadata.items() if isinstance(v, str | int | float | bool)}
        out.append(data)
    return {"recalled": out}


def _unrecalled(state: State, exc: Exception, user_id: str, memory: MemoryService, ctx: Context) -> dict[str, Any]:
    # the store is down or frozen: answer without recall, and say so; the user's queued turns (on local
    # disk, not in the store yet) still count, so what they just said is not forgotten
    log.warning("recall failed for user %s; answering without recall: %s: %s", user_id, type(exc).__name__, exc)
    try:
        queued = memory.recall_pending(user_id, state.get("query", ""), options=ctx.to_recall_options())
    except Exception:  # noqa: BLE001
        queued = []
    return {**_recalled(queued), **degraded.add(state, degraded.STORE_UNAVAILABLE)}


async def retrieve(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *, service: MemoryService
) -> dict[str, Any]:
    """Recall the user's memories and documents for the query, with the run's recall options.

    A failing store is a degraded turn (answered without recall), never an error; bad input still raises.
    Starts the turn's count of embedding requests.
    """
    ctx = resolve_context(runtime.context, config)
    query = state.get("query", "")
    if not query.strip():
        return {"recalled": [], "embedding_attempts": 0}
    memory = memory_of(runtime, service)
    with counting() as sent:
        try:
            out = _recalled(await tracing.arecall(memory, ctx.user_id, query, options=ctx.to_recall_options()))
        except InvalidInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - any store failure: the turn goes on without recall
            out = _unrecalled(state, exc, ctx.user_id, memory, ctx)
    return {**out, "embedding_attempts": sent.embedding}


def retrieve_sync(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *, service: MemoryService
) -> dict[str, Any]:
    """Sync twin of ``retrieve``."""
    ctx = resolve_context(runtime.context, config)
    query = state.get("query", "")
    if not query.strip():
        return {"recalled": [], "embedding_attempts": 0}
    memory = memory_of(runtime, service)
    with counting() as sent:
        try:
            out = _recalled(tracing.recall(memory, ctx.user_id, query, options=ctx.to_recall_options()))
        except InvalidInputError:
            raise
        except Exception as exc:  # noqa: BLE001
            out = _unrecalled(state, exc, ctx.user_id, memory, ctx)
    return {**out, "embedding_attempts": sent.embedding}


# -- generate ----------------------------------------------------------------------------------------
def _generate_plan(state: State, ctx: Context, model: BaseChatModel | None,
                   clock: Clock) -> tuple[str | None, list[BaseMessage] | None]:
    """Either a finished answer (empty message, memory-only mode) or the prompt for the model."""
    latest = latest_user_message(state["messages"])
    message = text_of(latest).strip()
    recalled = state.get("recalled") or []
    if latest is None or not message:
        return reply_texts(message)["empty"], None
    if model is None:
        return memory_only_reply(message, recalled, write_memory=ctx.write_memory), None
    system = GENERATE_SYSTEM.format(
        today=to_iso(clock())[:10],
        memories=render_memories(r for r in recalled if r.get("source") != "document"),
        documents=render_documents(r for r in recalled if r.get("source") == "document"),
    )
    return None, [SystemMessage(system), *summary_messages(state), *recent_history(state["messages"], ctx.recent_turns),
                  latest]


def _answered(state: State, answer: str, attempts: int = 0, labels: tuple[str, ...] = (),
              streamed: BaseMessage | None = None, from_memory: bool = False) -> dict[str, Any]:
    """The answer, with the lines of this turn's user-visible degradations on top (in the user's language).

    An answer kept as the model ``streamed`` it keeps that message's id, so a stream shows it once.
    """
    marks = degraded.add(state, *labels)
    message = text_of(latest_user_message(state["messages"]))
    lines = degraded.reply_lines(marks["degraded"], message, skip=(degraded.MODEL_UNAVAILABLE,))
    answer = "\n".join([*lines, answer]) if lines else answer
    kept_id = streamed.id if streamed is not None and not lines else None
    meta = {FROM_MEMORY: True} if from_memory else {}
    reply = AIMessage(content=answer, id=kept_id, response_metadata=meta) if kept_id \
        else AIMessage(content=answer, response_metadata=meta)
    return {"answer": answer, "messages": [reply], **marks,
            "model_attempts": int(state.get("model_attempts") or 0) + attempts}


def _answered_from_memory(state: State, exc: Exception, *, write_memory: bool = True) -> dict[str, Any]:
    if not isinstance(exc, ModelUnavailableError):
        log.warning("the chat model's answer failed (%s: %s); answering from memory", type(exc).__name__, exc)
    reply = memory_only_reply(text_of(latest_user_message(state["messages"])).strip(), state.get("recalled") or [],
                              label=degraded.MODEL_UNAVAILABLE, write_memory=write_memory)
    return _answered(state, reply, _attempts(exc), (degraded.MODEL_UNAVAILABLE,), from_memory=True)


def _model_answered(state: State, out: BaseMessage, attempts: int, *, write_memory: bool) -> dict[str, Any]:
    """The model's answer; an empty one (no words, no tool calls) is no answer: the labelled memory-only reply."""
    if not text_of(out).strip() and not getattr(out, "tool_calls", None):
        log.warning("the chat model returned an empty answer; answering from memory")
        return _answered_from_memory(state, ModelUnavailableError("the chat model returned an empty answer",
                                                                  attempts=attempts), write_memory=write_memory)
    return _answered(state, text_of(out), attempts, streamed=out)


async def generate(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *,
    model: BaseChatModel | None, clock: Clock = system_clock, caller: ModelCaller | None = None,
) -> dict[str, Any]:
    """Answer from the recalled items (as tagged data) and recent turns; memory-only mode reports them.

    A model that is down, times out or fails gives the memory-only reply, labelled, never an error.
    """
    ctx = resolve_context(runtime.context, config)
    answer, prompt = _generate_plan(state, ctx, model, clock)
    if prompt is None or model is None:
        return _answered(state, answer or "")
    try:
        out, attempts = await _caller(model, caller).ainvoke("answer", prompt, config)
    except Exception as exc:  # noqa: BLE001 - a failed model call is a degraded answer, never an error
        return _answered_from_memory(state, exc, write_memory=ctx.write_memory)
    return _model_answered(state, out, attempts, write_memory=ctx.write_memory)


def generate_sync(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *,
    model: BaseChatModel | None, clock: Clock = system_clock, caller: ModelCaller | None = None,
) -> dict[str, Any]:
    """Sync twin of ``generate``."""
    ctx = resolve_context(runtime.context, config)
    answer, prompt = _generate_plan(state, ctx, model, clock)
    if prompt is None or model is None:
        return _answered(state, answer or "")
    try:
        out, attempts = _caller(model, caller).invoke("answer", prompt, config)
    except Exception as exc:  # noqa: BLE001 - a failed model call is a degraded answer, never an error
        return _answered_from_memory(state, exc, write_memory=ctx.write_memory)
    return _model_answered(state, out, attempts, write_memory=ctx.write_memory)


def memory_only_reply(message: str, recalled: list[dict[str, Any]], *, label: str | None = None,
                      write_memory: bool = False) -> str:
    """The reply without a chat model, in the user's language (``graph/memory_only.py``): what this turn is
    kept as (``write_memory``), then the relevant recalled memories and documents.

    ``label`` names a degradation (``MODEL_UNAVAILABLE``) whose line replaces the memory-only mode label.
    """
    first = degraded.reply_lines([label], message)[0] if label else reply_texts(message)["label"]
    kept = memory_only.kept_line(memory_only.turn_plan(message), reply_texts(message)) if write_memory else None
    return memory_only.render(message, recalled, first_line=first, kept=kept)


# -- write_memory ------------------------------------------------------------------------------------
def _write_plan(state: State, ctx: Context, model: BaseChatModel | None,
                config: RunnableConfig) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Either a finished report (nothing to store) or the ``remember_turn`` arguments."""
    messages = state["messages"]
    user_text = text_of(latest_user_message(messages[:-1])).strip() if messages else ""
    if not ctx.write_memory:
        return {"stored": [], "skipped": "disabled"}, {}
    if not user_text:
        return {"stored": [], "skipped": "empty"}, {}
    # Memory-only replies only echo what was recalled: storing them would nest old memories in new ones.
    from_memory = model is None or degraded.MODEL_UNAVAILABLE in (state.get("degraded") or [])
    answer = "" if from_memory else degraded.without_lines(state.get("answer", ""))
    # the turn's search context: the reply it answers, and who its 她 / "his" is ("她特别喜欢画画" is found by
    # "我女儿喜欢什么？" once it is also searched as "我女儿特别喜欢画画"; the stored text stays as said)
    said = [text_of(m) for m in recent_history(messages[:-1], REFERENT_TURNS) if isinstance(m, HumanMessage)]
    context = ["" if model is None else previous_reply(messages), resolve_pronoun(user_text, said) or ""]
    return None, {
        "user_text": user_text, "assistant_text": answer, "thread_id": thread_id_of(config),
        "turn_ids": [m.id for m in messages[-2:] if m.id], "model": model,
        "previous_reply": "\n".join(c for c in context if c),
    }


def previous_reply(messages: list[AnyMessage]) -> str:
    """The model's reply before this turn's message, from the thread itself (the turn's search context).

    ``messages`` ends with this turn's message and its answer. A reply given from memory (the model was down)
    only echoed memories, so it is no context.
    """
    earlier = messages[:-2]
    reply = earlier[-1] if earlier and isinstance(earlier[-1], AIMessage) else None
    if reply is None or reply.response_metadata.get(FROM_MEMORY):
        return ""
    return degraded.without_lines(text_of(reply))


def _bounded(kwargs: dict[str, Any], caller: ModelCaller | None) -> dict[str, Any]:
    """Route the extraction call through the model policy (deadline, cool-down, no retry of a dead model)."""
    model = kwargs.get("model")
    if model is not None:
        kwargs["model"] = _caller(model, caller).bounded("extraction")
    return kwargs


def _reported(state: State, report: WriteReport, clipped: dict[str, Any], embedded: int) -> dict[str, Any]:
    attempts = int(state.get("model_attempts") or 0) + report.model_calls
    embeddings = int(state.get("embedding_attempts") or 0) + embedded
    out: dict[str, Any] = {"memory_report": {
        "stored": list(report.stored), "skipped": report.skipped, "redactions": dict(report.redactions),
        "model_calls": attempts, "embedding_calls": embeddings,
        **({"queued": list(report.queued)} if report.queued else {}), **clipped},
        "model_attempts": attempts, "embedding_attempts": embeddings}
    if report.fallback:
        out.update(degraded.add(state, degraded.EXTRACTION_FAILED))
    return out


def _failed(exc: Exception, user_id: str, state: State, embedded: int) -> dict[str, Any]:
    if isinstance(exc, JournalWriteError):  # the turn was not kept at all: the caller must hear it, never a 200
        raise exc
    log.error("could not store the turn of user %s: %s", user_id, exc, exc_info=exc)
    embeddings = int(state.get("embedding_attempts") or 0) + embedded
    return {"memory_report": {"stored": [], "skipped": "error", "error": f"{type(exc).__name__}: {exc}",
                              "embedding_calls": embeddings}, "embedding_attempts": embeddings}


async def write_memory(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *,
    service: MemoryService, model: BaseChatModel | None, caller: ModelCaller | None = None,
) -> dict[str, Any]:
    """Acknowledge the turn: journal it (stored in a background batch) or, without a journal, store it now.

    Storage failures are logged and reported, never raised into the reply; a turn that cannot even be
    journaled raises ``JournalWriteError`` (nothing was kept, so no success may be returned).
    """
    ctx = resolve_context(runtime.context, config)
    done, kwargs = _write_plan(state, ctx, model, config)
    if done is not None:
        return {"memory_report": done}
    memory = memory_of(runtime, service)
    clipped = clip_report(kwargs["user_text"], memory.writing)  # said, never silent
    with counting() as sent:  # without a journal the turn's records are embedded now
        try:
            report = await tracing.aremember_turn(memory, ctx.user_id, **_bounded(kwargs, caller))
        except Exception as exc:  # memory is best effort: the user already has their answer
            return _failed(exc, ctx.user_id, state, sent.embedding)
    return _reported(state, report, clipped, sent.embedding)


def write_memory_sync(
    state: State, config: RunnableConfig, runtime: Runtime[Context], *,
    service: MemoryService, model: BaseChatModel | None, caller: ModelCaller | None = None,
) -> dict[str, Any]:
    """Sync twin of ``write_memory``."""
    ctx = resolve_context(runtime.context, config)
    done, kwargs = _write_plan(state, ctx, model, config)
    if done is not None:
        return {"memory_report": done}
    memory = memory_of(runtime, service)
    clipped = clip_report(kwargs["user_text"], memory.writing)
    with counting() as sent:
        try:
            report = tracing.remember_turn(memory, ctx.user_id, **_bounded(kwargs, caller))
        except Exception as exc:
            return _failed(exc, ctx.user_id, state, sent.embedding)
    return _reported(state, report, clipped, sent.embedding)
