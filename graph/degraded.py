"""Degraded turns: which dependency failed this turn, said to the caller instead of raised.

A turn goes on without a failed dependency and says so: ``State.degraded`` holds stable English labels
(the HTTP ``degraded`` field; clients may match on them), and the reply carries the label in the user's
language (``mneme.prompts.degraded``). The first node of a turn starts the list afresh; later nodes add
to it with ``add``. Labels are a fixed vocabulary, defined here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MODEL_UNAVAILABLE = "model unavailable: answering from memory"
"""The chat model failed (down, timed out, 5xx, unusable output): the answer is the memory-only reply."""
STORE_UNAVAILABLE = "memory store unavailable: answering without recall"
"""Recall failed (Chroma down or frozen): the answer is given without memories or documents."""
REWRITE_FAILED = "query rewrite unavailable: searching with the message as written"
"""The rewrite model call failed: recall searched with the user's message unchanged."""
EXTRACTION_FAILED = "memory extraction unavailable: facts taken by patterns"
"""The extraction model call failed: the turn was stored with the no-model writing path."""


def add(state: Mapping[str, Any], *labels: str) -> dict[str, list[str]]:
    """The state update adding ``labels`` to this turn's ``degraded`` list (each label once)."""
    current = list(state.get("degraded") or [])
    return {"degraded": current + [label for label in labels if label not in current]}


def fresh(*labels: str) -> dict[str, list[str]]:
    """The state update that starts a turn's ``degraded`` list (the turn's first node returns it)."""
    return {"degraded": list(dict.fromkeys(labels))}
