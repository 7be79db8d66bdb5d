"""Whether a turn is admitted into the thread: messages over the length limit never stay in it.

HTTP refuses such messages before the graph runs (``mneme.limits``); this is the same rule at the graph's
entry, for ``langgraph dev`` and Python callers. The input is already in the thread when the first node
runs, so ``check_input`` removes an over-long message (``RemoveMessage``) and hands the reason to
``reject_input`` (through ``Send``), which raises ``RequestTooLargeError``: the caller gets a clear error and
the thread is left as it was.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from mneme.errors import RequestTooLargeError
from mneme.graph.context import Context
from mneme.graph.state import State
from mneme.limits import check_size, content_chars

DEFAULT_MAX_MESSAGE_CHARS = 32_000
"""``MNEME_MAX_MESSAGE_CHARS``'s default, for graphs built without settings."""


def check_input(state: State, config: RunnableConfig, runtime: Runtime[Context], *,
                max_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> Command[Any]:
    """Go on to ``rewrite_query``, or remove over-long messages and go to ``reject_input`` with the reason."""
    too_long = []
    reason = ""
    for message in state.get("messages") or []:
        try:
            check_size(content_chars(message.content), max_chars)
        except RequestTooLargeError as exc:
            too_long.append(message)
            reason = reason or str(exc)
    if not too_long:
        return Command(goto="rewrite_query")
    return Command(update={"messages": [RemoveMessage(id=m.id) for m in too_long if m.id]},
                   goto=Send("reject_input", {"reason": reason}))


async def acheck_input(state: State, config: RunnableConfig, runtime: Runtime[Context], *,
                       max_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> Command[Any]:
    """Async twin of ``check_input``."""
    return check_input(state, config, runtime, max_chars=max_chars)


def reject_input(payload: dict[str, Any], config: RunnableConfig, runtime: Runtime[Context]) -> dict[str, Any]:
    """Raise the reason ``check_input`` found; the over-long message is already out of the thread."""
    raise RequestTooLargeError(str(payload.get("reason") or "message over MNEME_MAX_MESSAGE_CHARS"))


async def areject_input(payload: dict[str, Any], config: RunnableConfig, runtime: Runtime[Context]) -> dict[str, Any]:
    """Async twin of ``reject_input``."""
    return reject_input(payload, config, runtime)
