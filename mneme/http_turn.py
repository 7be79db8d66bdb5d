"""One HTTP turn: what a request may carry, which run settings it may set, and what the response holds.

- In: new messages only (OpenAI- or LangChain-style), at most ``MNEME_MAX_REQUEST_MESSAGES`` of them,
  each at most ``MNEME_MAX_MESSAGE_CHARS`` characters (``mneme.limits``; over a limit: 413, nothing stored).
- Run settings: the graph's ``Context`` fields (``k``, ``include_documents``, ``write_memory`` …) in
  LangServe's ``config.configurable``; an unknown name or a bad value is a 422, never ignored. The user is
  never a setting: it comes from the caller's identity; the thread is ``X-Thread-Id`` or
  ``configurable.thread_id``, always the caller's own (``mneme.serve``).
- Out: this turn only: ``{"answer", "thread_id", "recalled", "memory_report", "degraded", "messages"}``
  with ``messages`` holding this turn's reply, never the thread's history (which the checkpointer keeps).
  ``stream`` first yields ``{"delta": text}`` chunks of the reply as the model writes it, then that object.
  ``{"reset": true, "reason": ...}`` withdraws the deltas sent so far: the model's answer broke off midway and
  is written again, or replaced by the labelled memory-only reply. After the last reset the deltas add up to
  the object's ``answer`` exactly, so a client may show them as they come and never keep a broken-off half.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import fields
from typing import Annotated, Any, Literal

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_messages,
)
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, ensure_config
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from mneme.errors import InvalidInputError
from mneme.graph.context import Context, resolve_context
from mneme.langserve_events import without_event_log
from mneme.limits import check_messages
from mneme.threads import unscoped_thread_id

AUTH_CONFIGURABLE = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")
"""Configurable keys only the server sets: a client's values are dropped (see ``graph.context.resolve_context``)."""
IDENTITY_KEYS = frozenset({"user_id", "thread_id", *AUTH_CONFIGURABLE})
"""``configurable`` keys the caller's identity decides; a body's values for them are overridden, not used."""
RUN_SETTINGS = tuple(f.name for f in fields(Context) if f.name not in IDENTITY_KEYS)
"""The run settings a client may set per request (the ``Context`` fields but the user)."""


class OpenAIMessage(BaseModel):
    """A message as OpenAI's API writes it: ``{"role": "user", "content": "..."}``."""

    role: Literal["user", "assistant", "system", "human", "ai"]
    content: str | list[Any]


def _message_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "openai" if "role" in value else str(value.get("type", "human"))
    return str(getattr(value, "type", "human"))


Message = Annotated[
    Annotated[HumanMessage, Tag("human")] | Annotated[AIMessage, Tag("ai")]
    | Annotated[SystemMessage, Tag("system")] | Annotated[OpenAIMessage, Tag("openai")],
    Discriminator(_message_kind),
]


class ChatRequest(BaseModel):
    """The agent's input: this turn's new messages (the thread keeps the earlier ones)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(min_length=1, description="New messages; the last is the user's turn.")


class TurnOutput(BaseModel):
    """What a turn returns over HTTP: this turn only."""

    answer: str = Field(description="The reply.")
    thread_id: str = Field(description="The thread this turn belongs to: send it as X-Thread-Id to go on.")
    recalled: list[dict[str, Any]] = Field(description="Memories and documents recalled for this turn.")
    memory_report: dict[str, Any] = Field(description="What this turn stored or skipped as long-term memory.")
    degraded: list[str] = Field(description="What failed this turn and how it went on without it; empty if nothing.")
    messages: list[AIMessage] = Field(description="This turn's reply as a message (never the whole thread).")


def run_settings(configurable: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings named in a request's ``configurable``, checked; identity keys are left out.

    Raises ``InvalidInputError`` for a name that is not a run setting or a value ``Context`` refuses.
    """
    unknown = sorted(set(configurable) - set(RUN_SETTINGS) - IDENTITY_KEYS)
    if unknown:
        raise InvalidInputError(
            f"unknown run setting(s) {', '.join(unknown)} in config.configurable; "
            f"the run settings are: {', '.join(RUN_SETTINGS)}")
    chosen = {k: v for k, v in configurable.items() if k in RUN_SETTINGS and v is not None}
    resolve_context(None, {"configurable": {**chosen, "user_id": "check"}})  # the values' types and ranges
    return chosen


def shape_turn(state: Mapping[str, Any], thread_key: str) -> dict[str, Any]:
    """The response of a finished turn: the reply and its reports, not the thread's history."""
    messages: list[BaseMessage] = list(state.get("messages") or [])
    reply = [messages[-1]] if messages and isinstance(messages[-1], AIMessage) else []
    return {
        "answer": str(state.get("answer", "")),
        "thread_id": unscoped_thread_id(thread_key),
        "recalled": list(state.get("recalled") or []),
        "memory_report": dict(state.get("memory_report") or {}),
        "degraded": list(state.get("degraded") or []),
        "messages": reply,
    }


def _graph_input(payload: Any, limits: Mapping[str, int]) -> dict[str, Any]:
    raw = payload.messages if isinstance(payload, ChatRequest) else (payload or {}).get("messages") or []
    messages = convert_to_messages([m.model_dump() if isinstance(m, OpenAIMessage) else m for m in raw])
    if not messages:
        raise InvalidInputError("a request needs at least one message")
    check_messages(messages, max_chars=limits["max_chars"], max_messages=limits["max_messages"])
    return {"messages": messages}


def turn_runnable(graph: Runnable | Callable[[], Runnable], *, limits: Mapping[str, int]) -> Runnable:
    """The runnable behind the HTTP routes: check the input, run one turn of the graph, shape the output.

    ``graph`` may be a callable returning the graph, for apps that compile it once their checkpointer is
    open. Turns of one thread run one at a time in this process (a double submit cannot interleave them).
    """
    locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def resolve() -> Runnable:
        return graph if isinstance(graph, Runnable) else graph()

    def prepare(payload: Any, config: RunnableConfig) -> tuple[dict[str, Any], str, Context]:
        thread_key = str((config.get("configurable") or {}).get("thread_id") or "")
        if not thread_key:
            raise InvalidInputError("no thread for this turn (the server sets config.configurable.thread_id)")
        return _graph_input(payload, limits), thread_key, resolve_context(None, config)

    def lock_for(thread_key: str) -> asyncio.Lock:
        lock = locks.get(thread_key)
        if lock is None:
            lock = locks[thread_key] = asyncio.Lock()
        return lock

    async def arun(payload: Any, config: RunnableConfig) -> dict[str, Any]:
        graph_input, thread_key, context = prepare(payload, config)
        async with lock_for(thread_key):
            # the thread is checkpointed once, when the turn ends (not after every node): a turn that dies
            # half-way was never acknowledged, and per-step writes were a sixth of a served turn's CPU
            state = await resolve().ainvoke(graph_input, config, context=context, durability="exit")
        return shape_turn(state, thread_key)

    async def astream(payload: Any, config: RunnableConfig) -> AsyncIterator[dict[str, Any]]:
        graph_input, thread_key, context = prepare(payload, config)
        state: dict[str, Any] = {}
        shown = StreamedReply()
        async with lock_for(thread_key):
            async for mode, chunk in resolve().astream(graph_input, config, context=context, durability="exit",
                                                       stream_mode=["messages", "values"]):
                if mode == "values":
                    state = chunk
                    continue
                message, meta = chunk
                if meta.get("langgraph_node") == "generate" and isinstance(message, AIMessageChunk):
                    for event in shown.add(message.id, message.text):
                        yield event
        turn = shape_turn(state, thread_key)
        for event in shown.settle(turn["answer"], turn["degraded"]):
            yield event
        yield turn

    def run(payload: Any, config: RunnableConfig) -> dict[str, Any]:
        graph_input, thread_key, context = prepare(payload, config)
        return shape_turn(resolve().invoke(graph_input, config, context=context), thread_key)

    chain = _StreamingLambda(run, afunc=arun, name="mneme_turn")
    chain.streamer = astream
    return chain.with_types(input_type=ChatRequest, output_type=TurnOutput)  # type: ignore[arg-type]


RETRIED = "the model's answer broke off; it is written again"
"""``reason`` of a reset before a new attempt of the model's answer."""


class StreamedReply:
    """What a stream has shown of the reply, and the events that keep it equal to the reply in the end.

    Deltas of one model attempt (one message id) are passed on; a new attempt after text was shown first
    withdraws it (``reset``). At the end, deltas that do not add up to the answer (the model failed and the
    memory-only reply replaced them, or a label line was put on top) are withdrawn and the answer sent whole.
    """

    def __init__(self) -> None:
        self.text = ""
        self.attempt: str | None = None

    def add(self, attempt: str | None, delta: str) -> list[dict[str, Any]]:
        """The events for one streamed chunk of attempt ``attempt`` (a message id)."""
        events: list[dict[str, Any]] = []
        if attempt is not None and attempt != self.attempt:
            if self.text:
                events.append({"reset": True, "reason": RETRIED})
                self.text = ""
            self.attempt = attempt
        if delta:
            self.text += delta
            events.append({"delta": delta})
        return events

    def settle(self, answer: str, degraded: list[str]) -> list[dict[str, Any]]:
        """The events that make what was shown the final ``answer`` (none when it already is, or nothing was)."""
        if not self.text or self.text == answer:
            return []
        self.text = answer
        reason = "; ".join(degraded) or "the reply was completed after it streamed"
        return [{"reset": True, "reason": reason}, *([{"delta": answer}] if answer else [])]


class _StreamingLambda(RunnableLambda):  # type: ignore[type-arg]
    """A turn whose ``astream`` yields the reply's tokens as the model writes them, then the turn's object.

    Every entry point runs without LangServe's unread event log (``mneme.langserve_events``).
    """

    streamer: Callable[[Any, RunnableConfig], AsyncIterator[dict[str, Any]]] | None = None

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """One turn (sync)."""
        return super().invoke(input, without_event_log(config), **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """One turn."""
        return await super().ainvoke(input, without_event_log(config), **kwargs)

    async def astream(  # type: ignore[override]
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        """``{"delta": text}`` chunks of the reply (when a model streams it), then the ``TurnOutput`` object."""
        config = without_event_log(config)
        if self.streamer is None:  # a plain lambda: its one output
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk
            return
        async for chunk in self.streamer(input, ensure_config(config)):
            yield chunk
