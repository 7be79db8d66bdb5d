"""Mneme: a LangGraph agent with a long-term memory that remembers, recalls and forgets like a person.

Public calls (imported lazily, so ``import mneme`` stays cheap)::

    build_graph(*, model=None, service=None, store=None, embedder=None, checkpointer=None, clock=None)
    build_builder(*, model=None, service=None, store=None, embedder=None, clock=None)
    Context(*, user_id, k=6, score_floor=0.0, mmr=False, ..., write_memory=True)
    load_chat_model(settings=None, *, model=None) -> BaseChatModel | None
    create_app(*, graph=None, ...) -> FastAPI            # LangServe app (mneme.serve)
    MemoryService(store, *, clock=system_clock)           # recall / remember_turn / ingest_document
    MnemeStore(service=None, *, admin=False)              # Mneme's memory as a LangGraph BaseStore
    create_memory_tools(*, service=None, k=5, include_documents=True) -> [search_memory, save_memory, forget_memory]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy and editors see; at run time ``__getattr__`` imports on first use
    from mneme.config import Settings
    from mneme.graph.context import Context
    from mneme.graph.graph import build_builder, build_graph
    from mneme.graph.state import InputState, State
    from mneme.langgraph_store import MnemeStore
    from mneme.memory.service import MemoryService, RecallOptions
    from mneme.models import load_chat_model
    from mneme.serve import create_app
    from mneme.tools import create_memory_tools

__version__ = "0.1.0"

_EXPORTS = {
    "build_graph": "mneme.graph.graph",
    "build_builder": "mneme.graph.graph",
    "Context": "mneme.graph.context",
    "State": "mneme.graph.state",
    "InputState": "mneme.graph.state",
    "load_chat_model": "mneme.models",
    "create_app": "mneme.serve",
    "MemoryService": "mneme.memory.service",
    "RecallOptions": "mneme.memory.service",
    "Settings": "mneme.config",
    "MnemeStore": "mneme.langgraph_store",
    "create_memory_tools": "mneme.tools",
}

__all__ = [  # spelled out so linters and type checkers see the lazy exports (``_EXPORTS`` says where each lives)
    "__version__", "build_graph", "build_builder", "Context", "State", "InputState", "load_chat_model",
    "create_app", "MemoryService", "RecallOptions", "Settings", "MnemeStore", "create_memory_tools",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mneme' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
