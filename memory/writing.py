"""The memory-writing policy: turn one conversation turn into a plan of what to store (no store access).

``plan_turn(user_text, assistant_text, policy=..., model=None) -> TurnPlan`` decides, in this order:

1. Low-value turns (greetings, thanks, acks, emoji-only: ``lowvalue.is_low_value``) are skipped:
   ``skip_reason`` is set, nothing else is stored and no model is called.
2. Both texts are redacted (``redaction.redact``) BEFORE anything else reads them: emotion, patterns,
   the model prompt, the stored text and the content hash all see placeholders, never identifiers.
3. The user's message decides the tone (``emotion.detect_emotion``).
   - Neutral/positive: ``episodic_text`` is the exchange as ``"user: …\\nassistant: …"`` (lower-case
     English role labels in every language, so records read the same whatever the user speaks).
   - Negative: no episodic text. ``summary_text`` holds a short summary instead: the model's when one
     is given and it quotes none of the message's clauses verbatim, else the gist (``gist.gist_summary``:
     feeling, cause, effect and request named from lexicons, never the user's own sentences).
     Preferences are dropped too, as they would quote the raw detail ("I hate my ex who …"); profile
     facts (city, job ...) stay.
4. Facts and preferences (``extraction``): from patterns, or from the model when one is given, with
   pattern items added for keys the model did not return.
5. ``importance.score_importance`` scores the redacted user message.

Model budget: at most ONE structured call per turn (summary + facts in one schema, ``TurnMemoryOutput``);
none for skipped turns, or when the policy needs neither part from the model. Malformed output or a model
error is retried once; if the retry fails too the no-model path is used and ``fallback`` is set: the
turn is never lost. ``content_hash`` is the SHA-256 of the normalised, redacted user message, so the
caller can skip exact repeats without the hash ever being computed over identifiers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from mneme.errors import ModelOutputError
from mneme.memory.emotion import Emotion, detect_emotion
from mneme.memory.extraction import (
    Extracted,
    ModelFact,
    ainvoke_structured,
    extract_patterns,
    from_model_facts,
    invoke_structured,
    tag_safe,
)
from mneme.memory.gist import gist_summary, quotes_detail
from mneme.memory.importance import score_importance
from mneme.memory.lowvalue import content_hash, is_low_value, is_question
from mneme.memory.redaction import DEFAULT_POLICY, RedactionPolicy, language_of, redact
from mneme.prompts.writing import (
    SLOT_GUIDE,
    SUMMARY_NOT_WANTED,
    SUMMARY_WANTED,
    TURN_MEMORY_SYSTEM,
    TURN_MEMORY_USER,
)

logger = logging.getLogger("mneme.memory.writing")


@dataclass(frozen=True, kw_only=True)
class WritePolicy:
    """How a turn is turned into memories."""

    redaction: RedactionPolicy = DEFAULT_POLICY
    """Which identifiers are replaced by placeholders before anything else sees the text."""
    use_model_for_summary: bool = True
    """Let the model write the summary of a negative exchange (else an extractive summary)."""
    use_model_for_facts: bool = True
    """Let the model extract facts and preferences (patterns fill in keys it misses)."""
    store_assistant_text: bool = True
    """Include the assistant's (redacted) reply in the episodic record."""
    skip_low_value: bool = True
    """Skip greetings, thanks, acks and emoji-only turns."""
    max_user_chars: int = 32_000
    """Longer user messages are clipped (after redaction) in what is stored and sent to the extraction call.
    The serving limit (``MNEME_MAX_MESSAGE_CHARS``; ``open_service`` passes it): HTTP refuses longer messages
    (413), so only other callers (the CLI, Python) meet the clip, and ``clip_report`` says so."""
    max_assistant_chars: int = 2000
    """Longer assistant replies are clipped likewise."""
    summary_chars_zh: int = 60
    """Upper bound of a summary in Chinese characters."""
    summary_chars_en: int = 240
    """Upper bound of a summary in characters for other languages."""


class TurnMemoryOutput(BaseModel):
    """The single structured answer a model gives per turn: a summary (negative turns only) and facts."""

    summary: str | None = Field(default=None, description="short summary, only when asked for; else null")
    facts: list[ModelFact] = Field(default_factory=list, description="facts the user states about themselves")


@dataclass(kw_only=True)
class TurnPlan:
    """What to store for one turn. ``skip_reason`` set means: store nothing."""

    skip_reason: str | None = None
    """Why nothing is stored (``greeting``, ``thanks``, ``ack``, ``farewell``, ``empty``, ``emoji`` ...)."""
    content_hash: str = ""
    """SHA-256 of the normalised redacted user message: equal hashes mean an exact repeat."""
    episodic_text: str | None = None
    """``"user: …\nassistant: …"`` (redacted, clipped); ``None`` for skipped or negative turns."""
    summary_text: str | None = None
    """Negative turns only: the short summary stored instead of the exchange."""
    facts: list[Extracted] = field(default_factory=list)
    """Facts and preferences to upsert by ``key`` (from redacted text)."""
    importance: float = 0.0
    """In [0, 1], from ``importance.score_importance``."""
    emotion: Emotion = field(default_factory=lambda: Emotion("neutral", 0.0, []))
    """The tone of the user's message."""
    redactions: dict[str, int] = field(default_factory=dict)
    """Identifiers replaced in the user and assistant texts, by kind."""
    model_calls: int = 0
    """Model calls made: 0 (skipped or no model), 1, or 2 when the first answer was retried."""
    fallback: bool = False
    """True when the model's output was unusable (after a retry, or it lacked the summary asked for)
    and the no-model path filled in: the turn is still stored."""
    fallback_reason: str | None = None
    """What went wrong with the model, for logs and metadata."""
    language: str = "en"
    """``zh`` or ``en``: the language of the user's message."""

    @property
    def skipped(self) -> bool:
        """True when nothing is to be stored."""
        return self.skip_reason is not None


# --- the no-model parts -------------------------------------------------------------------------------


@dataclass
class _Draft:
    plan: TurnPlan
    user: str
    assistant: str
    pattern_facts: list[Extracted]
    ask_summary: bool
    ask_facts: bool


def clip_report(user_text: str, policy: WritePolicy) -> dict[str, Any]:
    """What the memory report says when a message is longer than memory keeps: ``{"clipped": True,
    "chars": N, "kept": M}`` (the first M of N characters are kept), else ``{}``."""
    chars = len((user_text or "").strip())
    return {"clipped": True, "chars": chars, "kept": policy.max_user_chars} if chars > policy.max_user_chars else {}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _draft(user_text: str, assistant_text: str, policy: WritePolicy, has_model: bool) -> _Draft | TurnPlan:
    """Everything before the model: skip check, redaction, emotion, patterns. Returns a plan when skipping."""
    user_text = user_text or ""
    assistant_text = assistant_text or ""
    if policy.skip_low_value:
        reason = is_low_value(user_text)
        if reason is not None:
            # Low-value texts are greeting words only, so hashing them raw reveals nothing.
            return TurnPlan(skip_reason=reason, content_hash=content_hash(user_text))
        if not assistant_text.strip() and _only_questions(user_text):
            # a bare question with no answer (memory-only mode) tells nothing about the user
            return TurnPlan(skip_reason="question", content_hash=content_hash(user_text))
    # Redact a generous prefix, then clip: a clip through an identifier falls outside what is kept.
    ru = redact(user_text[: policy.max_user_chars * 2], policy.redaction)
    ra = redact(assistant_text[: policy.max_assistant_chars * 2], policy.redaction)
    user = _clip(ru.text.strip(), policy.max_user_chars)
    assistant = _clip(ra.text.strip(), policy.max_assistant_chars)
    counts = dict(ru.counts)
    for kind, n in ra.counts.items():
        counts[kind] = counts.get(kind, 0) + n
    emotion = detect_emotion(user)
    plan = TurnPlan(
        content_hash=content_hash(user),
        emotion=emotion,
        redactions=counts,
        language=language_of(user),
    )
    ask_summary = has_model and emotion.is_negative and policy.use_model_for_summary
    ask_facts = has_model and policy.use_model_for_facts
    return _Draft(plan, user, assistant, extract_patterns(user), ask_summary, ask_facts)


_SENTENCE_RE = re.compile(r"[^。！？!?.\n]+[。！？!?.]*")


def _only_questions(text: str) -> bool:
    """True for bare questions, "?" or not ("我的猫叫什么名字？", "我住在哪里", "what is my job"); a question after
    a statement clause ("我明天去北京，要带伞吗？") tells something and is kept."""
    sentences = [s.strip().rstrip("。.！!") for s in _SENTENCE_RE.findall(text) if s.strip()]
    sentences = [s for s in sentences if s]
    return bool(sentences) and all(is_question(s) and not re.search(r"[，,；;：:]", s) for s in sentences)


def _messages(draft: _Draft) -> list[BaseMessage]:
    system = TURN_MEMORY_SYSTEM.format(
        slot_guide=SLOT_GUIDE,
        summary_instruction=SUMMARY_WANTED if draft.ask_summary else SUMMARY_NOT_WANTED,
    )
    user = TURN_MEMORY_USER.format(user_text=tag_safe(draft.user), assistant_text=tag_safe(draft.assistant))
    return [SystemMessage(content=system), HumanMessage(content=user)]


def _merge_facts(model_facts: list[Extracted], pattern_facts: list[Extracted]) -> list[Extracted]:
    seen = {f.key for f in model_facts}
    return model_facts + [f for f in pattern_facts if f.key not in seen]


def _redact_fact(f: Extracted, policy: RedactionPolicy) -> Extracted:
    # The model only saw redacted text, but it may still invent an identifier-shaped value.
    text = redact(f.text, policy).text
    value = redact(f.value, policy, language=language_of(f.text)).text
    return (
        f
        if (value, text) == (f.value, f.text)
        else Extracted(f.kind, f.key, value, text, f.polarity, f.source)
    )


def _finish(draft: _Draft, out: TurnMemoryOutput | None, policy: WritePolicy) -> TurnPlan:
    """Everything after the model: facts, summary or episodic text, importance."""
    plan = draft.plan
    facts = draft.pattern_facts
    if out is not None and draft.ask_facts:
        facts = _merge_facts([_redact_fact(f, policy.redaction) for f in from_model_facts(out.facts)], facts)
    negative = plan.emotion.is_negative
    if negative:
        facts = [f for f in facts if f.kind == "fact"]
        limit = policy.summary_chars_zh if plan.language == "zh" else policy.summary_chars_en
        summary = (out.summary or "").strip() if out is not None and draft.ask_summary else ""
        if draft.ask_summary and out is not None and not summary:
            plan.fallback, plan.fallback_reason = True, "the model returned no summary"
        if summary and quotes_detail(summary, draft.user):
            plan.fallback, plan.fallback_reason = True, "the model's summary quoted the message verbatim"
            summary = ""
        if summary:
            plan.summary_text = _clip(redact(summary, policy.redaction).text, limit * 2)
        else:
            plan.summary_text = gist_summary(draft.user, plan.emotion, language=plan.language, limit=limit)
    else:
        lines = [f"user: {draft.user}"]
        if policy.store_assistant_text and draft.assistant:
            lines.append(f"assistant: {draft.assistant}")
        plan.episodic_text = "\n".join(lines)
    plan.facts = facts
    plan.importance = score_importance(draft.user, emotion=plan.emotion, has_fact=bool(facts))
    return plan


def _failed(draft: _Draft, exc: ModelOutputError) -> None:
    draft.plan.model_calls = getattr(exc, "attempts", 2)  # an unreachable model is not asked twice
    draft.plan.fallback, draft.plan.fallback_reason = True, str(exc)[:300]
    logger.warning("turn memory: falling back to the no-model path (%s)", str(exc)[:300])


# --- public API ---------------------------------------------------------------------------------------


def plan_turn(
    user_text: str,
    assistant_text: str,
    *,
    policy: WritePolicy | None = None,
    model: Any | None = None,
) -> TurnPlan:
    """Plan what to store for one turn; at most one model call (plus one retry on bad output)."""
    policy = policy or WritePolicy()
    draft = _draft(user_text, assistant_text, policy, model is not None)
    if isinstance(draft, TurnPlan):
        return draft
    out: TurnMemoryOutput | None = None
    if draft.ask_summary or draft.ask_facts:
        try:
            out, draft.plan.model_calls = invoke_structured(
                model, TurnMemoryOutput, _messages(draft), what="turn memory"
            )
        except ModelOutputError as exc:
            _failed(draft, exc)
    return _finish(draft, out, policy)


def preview_plan(user_text: str, assistant_text: str, policy: WritePolicy) -> TurnPlan:
    """``plan_turn`` without a model, remembered per texts and policy: a served memory-only turn asks for the
    same plan twice (the reply's "kept" line, then the journal entry's skip decision and preview), each a
    redaction, low-value, emotion and pattern pass. Each caller gets its own plan (own lists and dicts): the
    remembered one is shared by every user who says the same words. Long texts are planned, not remembered (the
    keys would hold them whole: up to 32,000 characters a message)."""
    if len(user_text) + len(assistant_text) > _REMEMBERED_CHARS:
        return plan_turn(user_text, assistant_text, policy=policy, model=None)
    plan = _remembered_plan(user_text, assistant_text, policy)
    return replace(plan, facts=list(plan.facts), redactions=dict(plan.redactions),
                   emotion=replace(plan.emotion, cues=list(plan.emotion.cues)))


_REMEMBERED_CHARS = 8000


@functools.lru_cache(maxsize=256)
def _remembered_plan(user_text: str, assistant_text: str, policy: WritePolicy) -> TurnPlan:
    return plan_turn(user_text, assistant_text, policy=policy, model=None)


def forget_previews() -> None:
    """Drop the remembered plans (erasure: their keys are the raw texts of recent turns)."""
    _remembered_plan.cache_clear()


async def aplan_turn(
    user_text: str,
    assistant_text: str,
    *,
    policy: WritePolicy | None = None,
    model: Any | None = None,
) -> TurnPlan:
    """Async twin of ``plan_turn``: the model is called with ``ainvoke``, the rest runs in a thread."""
    policy = policy or WritePolicy()
    draft = await asyncio.to_thread(_draft, user_text, assistant_text, policy, model is not None)
    if isinstance(draft, TurnPlan):
        return draft
    out: TurnMemoryOutput | None = None
    if draft.ask_summary or draft.ask_facts:
        try:
            out, draft.plan.model_calls = await ainvoke_structured(
                model, TurnMemoryOutput, _messages(draft), what="turn memory"
            )
        except ModelOutputError as exc:
            _failed(draft, exc)
    return _finish(draft, out, policy)


_BENCH_TURNS: list[tuple[str, str]] = [
    ("谢谢！", "不客气。"),
    ("我叫张伟，今年30岁，住在北京，在腾讯工作。我喜欢爵士乐，不喜欢香菜。", "很高兴认识你，张伟！"),
    (
        "最近工作压力有些大，有时候会感到焦虑和心烦，晚上也睡不好。",
        "听起来你最近很辛苦，可以试试每天散步半小时。",
    ),
    (
        "我的手机是13812345678，邮箱zhang@example.com，身份证11010519491231002X，帮我记一下。",
        "好的，已记下。",
    ),
    ("My name is Alice, I live in Berlin and I work at Siemens as an engineer.", "Nice to meet you, Alice!"),
    (
        "I'm so stressed and anxious about the exam tomorrow, I can't sleep.",
        "That sounds hard. Try a short walk.",
    ),
    (
        "Can you recommend a good jazz album? I like Miles Davis and I don't like heavy metal.",
        "Try Kind of Blue.",
    ),
    (
        "my api_key=sk-proj-abcdefghijklmnop1234567890 and server 192.168.1.20, card 6222021234567894",
        "Noted.",
    ),
    ("明天下午三点要去医院复查，别忘了提醒我。" * 3, "好的，我会提醒你。"),
    ("What's the capital of Australia? " * 20, "Canberra. " * 40),
]


def bench_plan_turn(n: int = 1000) -> dict[str, float]:
    """Time ``plan_turn`` without a model over ``n`` varied turns, in milliseconds.

    Returns wall-clock ``p50``/``p95``/``max`` and the thread's CPU time ``cpu_p50``/``cpu_p95``: on a
    shared machine the wall-clock tail includes time the OS gave to other processes.
    """
    plan_turn("warm up", "warm up")  # compile the module-level regexes outside the timing
    wall: list[float] = []
    cpu: list[float] = []
    for i in range(n):
        user, assistant = _BENCH_TURNS[i % len(_BENCH_TURNS)]
        start, start_cpu = time.perf_counter(), time.thread_time()
        plan_turn(user, assistant)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.thread_time() - start_cpu) * 1000)
    wall.sort()
    cpu.sort()

    def p95(xs: list[float]) -> float:
        return round(xs[min(len(xs) - 1, int(len(xs) * 0.95))], 3)

    return {
        "n": float(n),
        "p50": round(statistics.median(wall), 3),
        "p95": p95(wall),
        "max": round(wall[-1], 3),
        "cpu_p50": round(statistics.median(cpu), 3),
        "cpu_p95": p95(cpu),
    }


if __name__ == "__main__":
    print(bench_plan_turn())
