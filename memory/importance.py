"""Importance: how much a turn deserves to be kept, from cheap signals, in [0, 1].

The score starts at ``BASE`` and adds, capped at 1:

    explicit request   +0.35  记住 / 记得 / 别忘了 / 重要; remember / don't forget / important
    fact or preference +0.20  the turn states something about the user (name, city, likes ...)
    emotion            +0.25 x intensity for a negative tone, +0.15 x intensity for a positive one
                               (emotional events are remembered better by people too)
    specifics          +0.10  numbers, dates or times ("3月5日", "tomorrow", "下周"), or a proper name
    length             +0.10 x min(1, length / 200 characters): a longer message usually says more

A plain short remark scores about 0.2; "记住，我对花生过敏" about 0.8. Forgetting reads the score to
decide how fast a memory fades, so the signals favour what a person would be upset to see forgotten.
"""

from __future__ import annotations

import re

from mneme.memory.emotion import Emotion

BASE = 0.2
EXPLICIT = 0.35
HAS_FACT = 0.2
NEGATIVE_EMOTION = 0.25
POSITIVE_EMOTION = 0.15
SPECIFICS = 0.1
LENGTH = 0.1
LENGTH_FULL_AT = 200

_EXPLICIT_RE = re.compile(
    r"记住|记得|别忘|不要忘|务必|一定要|很重要|重要的是|请注意"
    r"|(?<![a-z])(?:remember|don'?t forget|do not forget|important|keep in mind|make a note|note that"
    r"|never forget)(?![a-z])",
    re.IGNORECASE,
)
_SPECIFICS_RE = re.compile(
    r"\d|[一二三四五六七八九十两]+(?:月|号|日|点|岁|年)|今天|明天|后天|昨天|下周|下个月|明年"
    r"|周[一二三四五六日末]|星期"
    r"|(?<![a-z])(?:today|tomorrow|yesterday|tonight|next (?:week|month|year)"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|january|february|march|april|june|july|august|september|october|november"
    r"|december)(?![a-z])",
    re.IGNORECASE,
)
# A capitalised word that does not start a sentence: a name, place or brand.
_PROPER_NAME_RE = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")


def score_importance(text: str, *, emotion: Emotion, has_fact: bool) -> float:
    """Score how important the (redacted) user message is, in [0, 1]; see the module docstring."""
    score = BASE
    if _EXPLICIT_RE.search(text):
        score += EXPLICIT
    if has_fact:
        score += HAS_FACT
    if emotion.label == "negative":
        score += NEGATIVE_EMOTION * emotion.score
    elif emotion.label == "positive":
        score += POSITIVE_EMOTION * emotion.score
    if _SPECIFICS_RE.search(text) or _PROPER_NAME_RE.search(text):
        score += SPECIFICS
    score += LENGTH * min(1.0, len(text.strip()) / LENGTH_FULL_AT)
    return round(max(0.0, min(1.0, score)), 4)
