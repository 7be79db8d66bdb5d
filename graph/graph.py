"""Wiring: ``rewrite_query -> retrieve -> generate -> write_memory``, with injectable model and memory.

``build_graph`` is what code and tests call. ``make_graph()`` (served by ``langgraph dev`` through
``langgraph.json``) and the module attribute ``graph`` build the agent from the environment on first
use, so importing this module never opens a store or needs an API key.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime

from mneme.clock import Clock, system_clock
from mneme.graph import admission, nodes, trimming
from mneme.graph.context import Context
from mneme.graph.state import InputState, State
from mneme.memory.base import Embedder, MemoryStore
from mneme.memory.service import MemoryService
from mneme.model_calls import ModelCaller, ModelPolicy

GRAPH_NAME = "mneme"


def _service(service: MemoryService | None, store: MemoryStore | None, embedder: Embedder | None,
             clock: Clock | None) -> MemoryService:
    if service is not None:
        return service
    if store is None:
        if embedder is not None:
            from mneme.memory.inprocess import InProcessStore

            store = InProcessStore(embedder)
        else:
            from mneme.config import Settings
            from mneme.stores import open_service

            return open_service(Settings.from_env(), clock=clock or system_clock)
    return MemoryService(store, clock=clock or system_clock)


class _Node(Runnable[Any, Any]):
    """A node with its dependencies bound, runnable by both ``invoke`` and ``ainvoke``.

    A bare ``Runnable``: LangGraph already runs each node as a traced step of its own (named after the node,
    its model calls nested under it, ``get_runtime()`` set), so the node adds no callback run, config merge or
    signature inspection of its own; ``RunnableLambda`` did all three on every call, a tenth of a served
    turn's CPU (measured with ``mneme bench serve``).
    """

    def __init__(self, func: Callable[..., Any], afunc: Callable[..., Any], name: str) -> None:
        self._sync, self._async, self.name = func, afunc, name

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the sync body with the run's ``Runtime``."""
        return self._sync(input, ensure_config(config), get_runtime(Context))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the async body with the run's ``Runtime``."""
        return await self._async(input, ensure_config(config), get_runtime(Context))


def _node(func: Callable[..., Any], afunc: Callable[..., Any], **deps: Any) -> _Node:
    """A node with its dependencies bound (``partial``), runnable by both ``invoke`` and ``ainvoke``."""
    return _Node(partial(func, **deps), partial(afunc, **deps), name=afunc.__name__)


def build_builder(
    *, model: BaseChatModel | None = None, service: MemoryService | None = None,
    store: MemoryStore | None = None, embedder: Embedder | None = None, clock: Clock | None = None,
    model_policy: ModelPolicy | None = None,
    max_message_chars: int = admission.DEFAULT_MAX_MESSAGE_CHARS,
) -> StateGraph[State, Context, InputState, State]:
    """The uncompiled graph, for callers that add nodes or compile with their own options.

    Memory comes from ``service``, else a service over ``store``, else an in-process store over
    ``embedder``, else the store the environment configures. ``model=None`` is memory-only mode.
    ``model_policy`` sets the model calls' deadlines and retries (default: from the model's own timeout).
    """
    svc = _service(service, store, embedder, clock)
    caller = ModelCaller(model, model_policy) if model is not None else None
    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    builder.add_node("check_input", _node(admission.check_input, admission.acheck_input, max_chars=max_message_chars),
                     destinations=("rewrite_query", "reject_input"))
    builder.add_node("reject_input", _node(admission.reject_input, admission.areject_input))
    builder.add_node("rewrite_query",
                     _node(nodes.rewrite_query_sync, nodes.rewrite_query, model=model, caller=caller))
    builder.add_node("retrieve", _node(nodes.retrieve_sync, nodes.retrieve, service=svc))
    builder.add_node("generate", _node(nodes.generate_sync, nodes.generate, model=model, clock=svc.clock,
                                       caller=caller))
    builder.add_node("write_memory",
                     _node(nodes.write_memory_sync, nodes.write_memory, service=svc, model=model, caller=caller))
    builder.add_node("summarize_thread",
                     _node(trimming.summarize_thread_sync, trimming.summarize_thread, model=model, caller=caller))
    builder.add_edge(START, "check_input")
    builder.add_edge("rewrite_query", "retrieve")
    builder.add_edge("retrieve", "generate")
    builder.add_edge("generate", "write_memory")
    builder.add_edge("write_memory", "summarize_thread")
    builder.add_edge("summarize_thread", END)
    return builder


def build_graph(
    *, model: BaseChatModel | None = None, service: MemoryService | None = None,
    store: MemoryStore | None = None, embedder: Embedder | None = None,
    checkpointer: BaseCheckpointSaver | None = None, clock: Clock | None = None,
    model_policy: ModelPolicy | None = None,
    max_message_chars: int = admission.DEFAULT_MAX_MESSAGE_CHARS,
) -> CompiledStateGraph[State, Context, InputState, State]:
    """The compiled Mneme agent (see ``build_builder`` for where memory comes from and ``model_policy``).

    ``max_message_chars`` (``MNEME_MAX_MESSAGE_CHARS``): a longer message is refused at the graph's entry
    with ``RequestTooLargeError`` and removed from the thread.
    """
    builder = build_builder(model=model, service=service, store=store, embedder=embedder, clock=clock,
                            model_policy=model_policy, max_message_chars=max_message_chars)
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)


def graph_from_env() -> CompiledStateGraph[State, Context, InputState, State]:
    """The agent as the environment configures it (store, embedder, chat model); no checkpointer."""
    from mneme.config import Settings
    from mneme.models import load_chat_model
    from mneme.stores import shared_service

    settings = Settings.from_env()
    return build_graph(model=load_chat_model(settings), service=shared_service(),
                       max_message_chars=settings.max_message_chars)


_lock = threading.Lock()
_graph: CompiledStateGraph[State, Context, InputState, State] | None = None


def load_graph() -> CompiledStateGraph[State, Context, InputState, State]:
    """The environment's agent, built once per process on first call (thread-safe)."""
    global _graph
    with _lock:
        if _graph is None:
            _graph = graph_from_env()
    return _graph


async def make_graph() -> CompiledStateGraph[State, Context, InputState, State]:
    """``load_graph`` for ``langgraph.json``: the server calls this factory per run, in its event loop.

    LangGraph's server reads graphs from the module ``__dict__``, so the lazy ``graph`` attribute below
    cannot serve it; a factory can, still opens nothing at import, and builds off the event loop
    (loading the embedder and opening Chroma block).
    """
    if _graph is not None:
        return _graph
    from mneme.cpu import limit_blas_threads

    limit_blas_threads(1)  # a server: concurrent runs fill the cores (see mneme.cpu)
    return await asyncio.to_thread(load_graph)


def __getattr__(name: str) -> Any:
    # PEP 562: ``from mneme.graph.graph import graph`` builds the agent on first access, not at import.
    if name == "graph":
        return load_graph()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
