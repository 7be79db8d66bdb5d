"""What text stands for a record in search (both the dense and the keyword channel).

A turn's memory is searched by what it *tells*: the user's words, the reply without its questions, and
the question it answered. A reply's question ("你喜欢哪种菜系呢？") carries no information of its own, so
it is left out of that turn's search text; it is kept, as ``context``, on the next turn of the thread,
whose answer ("川菜和粤菜") only makes sense with it. The stored ``text`` is untouched: this only decides
what is matched.
"""

from __future__ import annotations

import re

from mneme.memory.base import Kind, MemoryRecord

CONTEXT_CHARS = 240
"""How much of the previous reply a turn keeps as context (its tail: where the question usually is)."""

_SENTENCE = re.compile(r"[^。！？!?.\n]+[。！？!?.]*|\n")
_LINE = re.compile(r"^(assistant|user): ?", re.M)


def without_questions(text: str) -> str:
    """``text`` without its sentences that end in a question mark."""
    kept = [s for s in _SENTENCE.findall(text) if not s.rstrip().endswith(("?", "？"))]
    return "".join(kept).strip()


def context_of(previous_reply: str | None) -> str:
    """The part of the previous reply a turn keeps as context: its tail, where the question usually is."""
    if not previous_reply:
        return ""
    return previous_reply.strip()[-CONTEXT_CHARS:]


def user_part(text: str) -> str:
    """An episode's user part ("user: …" before "\nassistant: …"): what the user said, not the reply."""
    return text.partition("\nassistant: ")[0]


def search_text(record: MemoryRecord) -> str:
    """The text embedded and indexed for ``record``."""
    if record.kind != Kind.EPISODIC:
        return record.text
    user, reply = user_part(record.text), record.text.partition("\nassistant: ")[2]
    parts = [str(record.metadata.get("context", "")), user.removeprefix("user: "), without_questions(reply)]
    return "\n".join(p for p in parts if p)
