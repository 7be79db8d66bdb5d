"""Passages: a document chunk is judged, and shown, by its sentence that answers, not as a whole.

A chunk holds several paragraphs on several topics ("Vacation: 25 days …", "Expenses: keep receipts …"), so its
one vector is an average that sits far from any single question: "how many vacation days do I get" came to
0.24 of the handbook chunk that says it, under the relevance floor (0.29, ``memory.relevance``), and the
memory-only reply said it found nothing. A person reading the chunk would point at one sentence.

So, for a recalled document that failed the floor although the keyword channel matched it (a word of the
question is in it), its sentences are embedded (one call for all such items) and the chunk counts as relevant
when its best sentence clears the same floor; that sentence is kept as ``metadata["passage"]`` for whoever shows
the document (the memory-only reply shows a title and one sentence). Documents only the dense channel found
are left to the floor as they are: without a shared word nothing says a sentence would do better.

Headings are not sentences to show: a Markdown heading ("# Pizza night") repeats the title that is shown beside
it, so ``sentences`` leaves heading lines out (unless a chunk is nothing else).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mneme.memory.ranking import Recalled

_SENTENCE_RE = re.compile(r"[^。！？!?.\n]+[。！？!?.]*")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
MAX_SENTENCES = 24
"""Sentences of one chunk considered (a chunk is at most a few paragraphs; this bounds the embedding call)."""


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (Chinese and Western end marks, line breaks), Markdown heading lines left out
    unless there is nothing else; never empty for a non-empty text."""
    lines = str(text).splitlines()
    body = [ln for ln in lines if not _HEADING_RE.match(ln)]
    source = "\n".join(body if any(ln.strip() for ln in body) else lines)
    found = [s.strip() for s in _SENTENCE_RE.findall(source) if s.strip().strip("#").strip()]
    return found or ([str(text).strip()] if str(text).strip() else [])


def _unit(rows: Sequence[float] | Sequence[Sequence[float]]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12)


def judge_documents(items: list[Recalled], query_vector: Sequence[float], baseline: float,
                    embed: Callable[[list[str]], Sequence[Sequence[float]]]) -> list[Recalled]:
    """``items`` with each keyword-matched document that failed the floor judged by its best sentence (the
    module docstring): relevant when that sentence's cosine to the query clears ``baseline``."""
    todo = [it for it in items if it.source == "document" and it.signals.get("relevant", 1.0) == 0.0
            and it.signals.get("keyword", 0.0) > 0]
    if not todo:
        return items
    parts = [sentences(it.text)[:MAX_SENTENCES] for it in todo]
    flat = [s for p in parts for s in p]
    if not flat:
        return items
    cosines = _unit(embed(flat)) @ _unit(query_vector)
    at = 0
    for it, p in zip(todo, parts, strict=True):
        if not p:
            continue
        best = int(np.argmax(cosines[at:at + len(p)]))
        score = float(cosines[at + best])
        at += len(p)
        it.signals["passage"] = score
        if score > baseline:
            it.signals["relevant"] = 1.0
            it.metadata = {**it.metadata, "passage": p[best]}
    return items
