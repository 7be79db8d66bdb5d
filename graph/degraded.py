"""Degraded turns: which dependency failed this turn, said to the caller instead of raised.

A turn goes on without a failed dependency and says so: ``State.degraded`` holds stable English labels
(the HTTP ``degraded`` field; clients may match on them), and the reply carries the label in the user's
language (``mneme.prompts.degraded``). The first node of a turn starts the list afresh; later nodes add
to it with ``add``. Labels are a fixed vocabulary (``mneme.prompts.degraded``):

- ``MODEL_UNAVAILABLE``: the chat model failed (down, timed out, 5xx): the answer is the memory-only reply.
- ``STORE_UNAVAILABLE``: recall failed (Chroma down or frozen): the answer is given without recall.
- ``REWRITE_FAILED``: the rewrite call failed: recall searched with the message as written.
- ``EXTRACTION_FAILED``: the extraction call failed: the turn was stored by the no-model path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mneme.prompts import is_chinese
from mneme.prompts.degraded import (
    DEGRADED_LINES,
    EXTRACTION_FAILED,
    MODEL_UNAVAILABLE,
    REWRITE_FAILED,
    STORE_UNAVAILABLE,
)

__all__ = ["EXTRACTION_FAILED", "MODEL_UNAVAILABLE", "REWRITE_FAILED", "STORE_UNAVAILABLE", "add", "fresh",
           "reply_lines", "without_lines"]

_LINES = frozenset(line for by_language in DEGRADED_LINES.values() for line in by_language.values())


def add(state: Mapping[str, Any], *labels: str) -> dict[str, list[str]]:
    """The state update adding ``labels`` to this turn's ``degraded`` list (each label once)."""
    current = list(state.get("degraded") or [])
    return {"degraded": current + [label for label in labels if label not in current]}


def fresh(*labels: str) -> dict[str, list[str]]:
    """The state update that starts a turn's ``degraded`` list (the turn's first node returns it)."""
    return {"degraded": list(dict.fromkeys(labels))}


def reply_lines(labels: list[str], message: str, *, skip: tuple[str, ...] = ()) -> list[str]:
    """The lines a reply starts with for ``labels``, in the language of ``message``."""
    language = "zh" if is_chinese(message) else "en"
    return [DEGRADED_LINES[label][language] for label in labels if label in DEGRADED_LINES and label not in skip]


def without_lines(answer: str) -> str:
    """``answer`` without the degradation lines ``reply_lines`` put on top: what the assistant said, as memory
    and as the next turn's context keep it (the label is for the reader of this reply only)."""
    lines = answer.split("\n")
    start = 0
    while start < len(lines) and lines[start] in _LINES:
        start += 1
    return "\n".join(lines[start:]) if start else answer
