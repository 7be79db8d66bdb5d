"""The graph's state: a narrow input (messages) and the full state the nodes fill in."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class InputState(TypedDict):
    """What a caller sends: the conversation's new messages (appended to the thread's history)."""

    messages: Annotated[list[AnyMessage], add_messages]


class State(InputState, total=False):
    """Everything a run knows; each node returns only the keys it changes."""

    query: str
    """The user's latest message rewritten as a standalone query (references resolved)."""
    recalled: list[dict[str, Any]]
    """Memories and documents recalled for ``query``: ``Recalled.as_dict()`` items, best first."""
    answer: str
    """The reply given to the user this turn."""
    memory_report: dict[str, Any]
    """What ``write_memory`` stored or skipped for this turn, or the error it swallowed."""
    summary: str
    """The thread's running summary of the turns folded out of it (``graph.trimming``); empty until the first fold."""
    degraded: list[str]
    """Labels of what failed this turn and how the turn went on without it ("model unavailable: answering
    from memory"); empty when nothing did. Reset by the turn's first node; add with ``graph.degraded.add``."""
    model_attempts: int
    """Chat model requests sent this turn (retries included; 0 while the model cools down); reset each turn."""
    embedding_attempts: int
    """Requests sent to a remote embeddings endpoint this turn (retries included; 0 for the local model);
    started by ``retrieve``, the turn's first node that embeds."""

