"""Memory tools a model can call: ``search_memory``, ``save_memory``, ``forget_memory``.

``create_memory_tools()`` returns LangChain tools for any tool-calling agent (e.g. LangGraph's
``create_react_agent``): the model decides, in the hot path, what to look up, keep or drop, beside (or
instead of) Mneme's own writing policy. Whose memory a call touches comes from the run, never from the
model's arguments: the authenticated user of a LangGraph server run (``configurable.langgraph_auth_user_id``),
else ``context.user_id`` (a ``Context`` or a dict), else ``configurable.user_id``. A run with none of them fails
with ``InvalidTenantError``.

Search is Mneme's recall (traced as ``mneme.recall``, counted as an access); a saved memory is an item of
``("memories", user_id, kind)`` written through ``MnemeStore`` (redacted, indexed like the agent's);
forget deletes only the run's user's own records.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from langgraph.runtime import get_runtime

from mneme import tracing
from mneme.errors import InvalidTenantError
from mneme.langgraph_store import MnemeStore
from mneme.memory.base import validate_tenant
from mneme.memory.service import MemoryService, RecallOptions
from mneme.store_items import MEMORIES, item_id

SEARCH_DESCRIPTION = (
    "Search the user's long-term memory (facts, preferences, earlier conversations, documents). "
    "Returns JSON items with id, kind, text, score and date, best first."
)
SAVE_DESCRIPTION = (
    "Save something worth remembering about the user for future conversations (a fact or a preference), "
    "written as a short standalone sentence. Returns the new memory's id."
)
FORGET_DESCRIPTION = "Delete one of the user's memories by its id (from search_memory or save_memory)."


def user_of(config: RunnableConfig | None = None) -> str:
    """The user of the current run: the server's authenticated user, else the context's, else ``configurable``'s."""
    if config is None:
        try:
            config = get_config()
        except RuntimeError:
            config = None
    configurable = (config or {}).get("configurable") or {}
    try:
        runtime = get_runtime()
    except RuntimeError:  # called outside a graph run
        runtime = None
    context = getattr(runtime, "context", None)
    # the server's authenticated user wins (as in ``resolve_context``): a client cannot claim another's id
    candidates: list[Any] = [
        configurable.get("langgraph_auth_user_id"),
        context.get("user_id") if isinstance(context, Mapping) else getattr(context, "user_id", None),
        configurable.get("user_id"),
    ]
    user = next((c for c in candidates if isinstance(c, str) and c), None)
    if user is None:
        raise InvalidTenantError("no user id for this run: pass context={'user_id': ...} or "
                                 "config.configurable.user_id (the model cannot choose whose memory it reads)")
    return validate_tenant(user)


def _render(hits: list[Any]) -> str:
    from mneme.clock import to_iso

    return json.dumps([{"id": h.id, "kind": str(h.kind), "text": h.text, "score": round(h.score, 3),
                        "date": to_iso(h.created_at)[:10]} for h in hits], ensure_ascii=False)


def create_memory_tools(
    *, service: MemoryService | None = None, k: int = 5, include_documents: bool = True,
) -> list[BaseTool]:
    """``[search_memory, save_memory, forget_memory]`` over ``service`` (default: the environment's memory).

    Args:
        service: the memory to use; ``None`` opens the environment's (``MnemeStore()``'s).
        k: how many items ``search_memory`` returns at most.
        include_documents: whether ``search_memory`` also searches documents.

    Example::

        from langgraph.prebuilt import create_react_agent
        from mneme.tools import create_memory_tools

        agent = create_react_agent(model, create_memory_tools())
        agent.invoke({"messages": [("user", "记住我喜欢爬山")]}, config={"configurable": {"user_id": "alice"}})
    """
    store = MnemeStore(service)
    memory = store.service
    options = RecallOptions(k=k, include_documents=include_documents)

    def search_memory(query: str, config: RunnableConfig) -> str:
        return _render(tracing.recall(memory, user_of(config), query, options=options, source="tool"))

    async def asearch_memory(query: str, config: RunnableConfig) -> str:
        return _render(await tracing.arecall(memory, user_of(config), query, options=options, source="tool"))

    def _save_args(content: str, kind: str, config: RunnableConfig) -> tuple[tuple[str, ...], str, str]:
        namespace = (MEMORIES, user_of(config), kind)
        key = f"tool-{uuid.uuid4().hex[:16]}"
        return namespace, key, item_id(namespace[1], namespace, key)

    def save_memory(content: str, config: RunnableConfig,
                    kind: Literal["fact", "preference"] = "fact") -> str:
        namespace, key, rid = _save_args(content, kind, config)
        store.put(namespace, key, {"text": content, "saved_by": "model"})
        return json.dumps({"saved": rid})

    async def asave_memory(content: str, config: RunnableConfig,
                           kind: Literal["fact", "preference"] = "fact") -> str:
        namespace, key, rid = _save_args(content, kind, config)
        await store.aput(namespace, key, {"text": content, "saved_by": "model"})
        return json.dumps({"saved": rid})

    def forget_memory(memory_id: str, config: RunnableConfig) -> str:
        return json.dumps({"deleted": memory.delete(user_of(config), [memory_id])})

    async def aforget_memory(memory_id: str, config: RunnableConfig) -> str:
        import asyncio

        user = user_of(config)
        return json.dumps({"deleted": await asyncio.to_thread(memory.delete, user, [memory_id])})

    return [
        StructuredTool.from_function(search_memory, coroutine=asearch_memory, name="search_memory",
                                     description=SEARCH_DESCRIPTION),
        StructuredTool.from_function(save_memory, coroutine=asave_memory, name="save_memory",
                                     description=SAVE_DESCRIPTION),
        StructuredTool.from_function(forget_memory, coroutine=aforget_memory, name="forget_memory",
                                     description=FORGET_DESCRIPTION),
    ]
