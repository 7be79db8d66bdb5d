"""Mneme: a LangGraph agent with a long-term memory that remembers, recalls and forgets like a person.

Public calls (imported lazily, so ``import mneme`` stays cheap)::

    build_graph(*, model=None, service=None, store=None, embedder=None, checkpointer=None, clock=None)
    build_builder(*, model=None, service=None, store=None, embedder=None, clock=None)
    Context(*, user_id, k=6, score_floor=0.0, mmr=False, ..., write_memory=True)
    load_chat_model(settings=None, *, model=None) -> BaseChatModel | None
    create_app(*, graph=None, ...) -> FastAPI            # LangServe app (mneme.serve)
    MemoryService(store, *, clock=system_clock)           # recall / remember_turn / ingest_document
"""

from __future__ import annotations

import importlib
from typing import Any

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
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mneme' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
