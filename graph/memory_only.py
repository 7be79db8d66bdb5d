"""The memory-only reply: what Mneme says without a chat model, so that a person can use it.

Three parts, in the user's language: what this turn will be kept as (``kept``: the writing policy's plan,
pure and model-free, so it is known before the write happens: "记下了：用户住在柏林；用户是一名护士"); what was
recalled, only items that clear the relevance floor (``memory.relevance``: nothing listed rather than
noise), and for a statement only those that share a content word with it (``gist.content_words``: "我下周三要去北京出差"
lists the last trip to 北京, not "我叫李雷，是一名程序员": personal statements are all close to each other, and share
叫, 最近, 两岁); documents as their title
and the one sentence that best matches the question, not a flattened chunk (the sentence recall judged the chunk
by, ``memory.passages``, else the one sharing most words with it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mneme.clock import to_iso
from mneme.memory.gist import content_words
from mneme.memory.lowvalue import is_low_value, is_question
from mneme.memory.passages import sentences
from mneme.memory.tokenize import tokenize
from mneme.memory.writing import TurnPlan, WritePolicy, preview_plan
from mneme.prompts import MEMORY_ONLY_DOCUMENT, MEMORY_ONLY_ITEM, about_span, reply_texts


def turn_plan(message: str, *, policy: WritePolicy | None = None) -> TurnPlan:
    """What the writing policy keeps of this turn in memory-only mode (no model, no assistant text)."""
    return preview_plan(message, "", policy or WritePolicy())


def kept_line(plan: TurnPlan, texts: Mapping[str, str]) -> str | None:
    """The reply line that names what this turn is kept as, or ``None`` when it keeps nothing."""
    if plan.skipped:
        return None
    if plan.facts:
        return texts["kept"] + texts["joiner"].join(f.text for f in plan.facts)
    if plan.summary_text:
        return texts["kept_summary"]
    return texts["kept_turn"] if plan.episodic_text else None


def is_relevant(item: Mapping[str, Any]) -> bool:
    """Whether a recalled item cleared the relevance floor (items recalled without the signal count)."""
    return float((item.get("signals") or {}).get("relevant", 1.0)) > 0


def best_sentence(text: str, query: str) -> str:
    """The sentence of ``text`` sharing the most keyword tokens with ``query`` (the first on a tie); Markdown
    heading lines are not candidates (they repeat the title shown beside the sentence)."""
    wanted = set(tokenize(query))
    return max(sentences(text) or [text.strip()], key=lambda s: len(wanted & set(tokenize(s))))


def _when(record: Mapping[str, Any], texts: Mapping[str, str]) -> str:
    """The day a memory was said, and the time it tells of when that is another ("下个月18号考六级")."""
    said, about = to_iso(record["created_at"])[:10], about_span(record.get("metadata"))
    return f"{said}{texts['joiner']}{texts['about']}{about}" if about else said


def _flat(text: str, limit: int = 400) -> str:
    return " ".join(str(text).split())[:limit]


def render(message: str, recalled: Sequence[Mapping[str, Any]], *, first_line: str,
           kept: str | None = None) -> str:
    """The whole memory-only reply: ``first_line`` (the mode or a degradation label), what was kept, then
    the relevant memories and documents; says it found nothing only when it kept nothing either, and to a
    thanks, a greeting or a laugh (low-value, recalled for nothing) that there was nothing to keep."""
    texts = reply_texts(message)
    lines = [first_line] + ([kept] if kept else [])
    relevant = [r for r in recalled if is_relevant(r)]
    if not is_question(message):  # a statement: only what is about the same thing, not every other self-description
        words = content_words(message)  # (叫, 最近, 两岁 are shared by statements about anything)
        relevant = [r for r in relevant if words & content_words(str(r.get("text") or ""))]
    memories = [r for r in relevant if r.get("source") != "document"]
    documents = [r for r in relevant if r.get("source") == "document"]
    if memories:
        lines.append(texts["memories"])
        lines.extend(MEMORY_ONLY_ITEM.format(date=_when(r, texts), id=r["id"], text=_flat(r["text"]))
                     for r in memories)
    if documents:
        lines.append(texts["documents"])
        for d in documents:
            meta = d.get("metadata") or {}
            title = meta.get("title") or meta.get("source") or d.get("title") or ""
            lines.append(MEMORY_ONLY_DOCUMENT.format(title=_flat(title, 80), id=d["id"],
                                                     text=_flat(meta.get("passage")
                                                                or best_sentence(str(d["text"]), message))))
    if not relevant and not kept:
        lines.append(texts["nothing_to_keep"] if is_low_value(message) else texts["nothing"])
    return "\n".join(lines)
