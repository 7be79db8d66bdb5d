"""Which callback handlers a served turn's graph run keeps: not LangServe's event log, which no one reads.

LangServe attaches an ``AsyncEventAggregatorCallback`` to every invoke, batch and stream run, to return the
run's callback events in the response when a route is added with ``include_callback_events=True``. Mneme's
routes never are (the events would show the graph's inner state: the whole thread), so every event the graph
emits (each node's start and end, each step's, each model call's) was copied into a list that was then
dropped: about a tenth of a served turn's event-loop CPU (measured with ``mneme bench serve``). Tracing
(LangSmith) and any other handler are kept.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.runnables import RunnableConfig


def without_event_log(config: RunnableConfig | None) -> RunnableConfig | None:
    """``config`` with LangServe's event aggregator taken out of its callbacks (the same ``config`` if absent).

    Applied where the served turn starts (``mneme.http_turn``), before its own run opens: LangGraph merges a
    run's callbacks with those of the run around it, so taking the log out further in would not keep it out.
    """
    if not config:
        return config
    callbacks = config.get("callbacks")
    if isinstance(callbacks, list):
        kept = [h for h in callbacks if not _is_event_log(h)]
        return config if len(kept) == len(callbacks) else {**config, "callbacks": kept}
    if isinstance(callbacks, BaseCallbackManager):
        logs = [h for h in callbacks.handlers if _is_event_log(h)]
        if not logs:
            return config
        manager = callbacks.copy()
        for handler in logs:
            manager.remove_handler(handler)
        return {**config, "callbacks": manager}
    return config


def _is_event_log(handler: Any) -> bool:
    try:
        from langserve.callbacks import AsyncEventAggregatorCallback
    except ImportError:  # pragma: no cover - LangServe is a dependency; the graph also runs without it
        return False
    return isinstance(handler, AsyncEventAggregatorCallback)
