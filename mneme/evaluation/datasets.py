"""Loaders for the evaluation formats (LoCoMo and MemoryBank), turned into one shape: conversations of
exchanges with their own timestamps and turn ids, and questions with evidence turn ids.

Only the dialogue is read: LoCoMo's ``observation``, ``session_summary`` and ``event_summary`` are the
dataset authors' extractions and are never touched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mneme.errors import InvalidInputError


@dataclass(kw_only=True)
class Exchange:
    """One turn as Mneme stores it: what the user said and the reply, with the dataset's turn ids."""

    user_text: str
    assistant_text: str
    turn_ids: list[str]
    timestamp: float
    thread_id: str


@dataclass(kw_only=True)
class Question:
    """A probing question with the turn ids that hold its answer."""

    text: str
    evidence: list[str]
    category: str
    answer: str = ""


@dataclass(kw_only=True)
class Conversation:
    """One user's (or one LoCoMo conversation's) history and the questions asked about it."""

    tenant: str
    exchanges: list[Exchange] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    asked_at: float = 0.0
    """When the questions are asked: just after the last exchange."""


LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}


def parse_locomo_datetime(text: str) -> float:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` into POSIX seconds (UTC)."""
    m = _LOCOMO_DATE.search(text)
    if not m:
        raise InvalidInputError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    mon = _MONTHS.get(month.lower()) or _MONTHS[next(k for k in _MONTHS if k.startswith(month.lower()[:3]))]
    return datetime(int(year), mon, int(day), h, int(minute), tzinfo=UTC).timestamp()


def _utterance(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:  # a shared photo is part of what was said
        text = f"{text} [shares a photo: {caption}]".strip()
    return f"{turn.get('speaker', '?')}: {text}"


def load_locomo(path: str | Path, *, include_adversarial: bool = False) -> list[Conversation]:
    """Read a LoCoMo file: each conversation pairs consecutive utterances into exchanges."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: expected a list of LoCoMo samples")
    out: list[Conversation] = []
    for sample in data:
        conv = sample["conversation"]
        tenant = re.sub(r"[^\w.@:+-]", "_", str(sample.get("sample_id", f"conv-{len(out)}")))
        c = Conversation(tenant=tenant)
        n = 1
        while f"session_{n}" in conv:
            turns = conv[f"session_{n}"] or []
            start = parse_locomo_datetime(conv.get(f"session_{n}_date_time", ""))
            i = 0
            while i < len(turns):
                group = [turns[i]]
                # an exchange: the opening speaker's utterance and the other speaker's reply
                if i + 1 < len(turns) and turns[i + 1]["speaker"] != turns[i]["speaker"]:
                    group.append(turns[i + 1])
                i += len(group)
                c.exchanges.append(Exchange(
                    user_text=_utterance(group[0]),
                    assistant_text=_utterance(group[1]) if len(group) > 1 else "",
                    turn_ids=[f"{tenant}/{t['dia_id']}" for t in group],
                    timestamp=start + 30.0 * i,
                    thread_id=f"{tenant}-s{n}",
                ))
            n += 1
        for q in sample.get("qa", []):
            cat = int(q.get("category", 0))
            if cat == 5 and not include_adversarial:
                continue
            evidence = [f"{tenant}/{e.strip()}" for e in q.get("evidence") or [] if isinstance(e, str)
                        and re.fullmatch(r"D\d+:\d+", e.strip())]
            c.questions.append(Question(text=str(q["question"]), evidence=evidence,
                                        category=LOCOMO_CATEGORIES.get(cat, str(cat)),
                                        answer=str(q.get("answer", q.get("adversarial_answer", "")))))
        c.asked_at = (max(e.timestamp for e in c.exchanges) if c.exchanges else 0.0) + 86400.0
        out.append(c)
    return out


def load_memorybank(history_path: str | Path, qa_path: str | Path) -> list[Conversation]:
    """Read MemoryBank's history and questions: one conversation per user, one thread per day."""
    history = json.loads(Path(history_path).read_text(encoding="utf-8"))
    qa = json.loads(Path(qa_path).read_text(encoding="utf-8"))
    out: dict[str, Conversation] = {}
    for n, (user, body) in enumerate(history.items()):
        tenant = f"mb-{n}"
        c = Conversation(tenant=tenant)
        for date in sorted(body.get("history", {})):
            day = datetime.fromisoformat(date).replace(hour=20, tzinfo=UTC).timestamp()
            for i, turn in enumerate(body["history"][date]):
                c.exchanges.append(Exchange(
                    user_text=str(turn.get("query", "")), assistant_text=str(turn.get("response", "")),
                    turn_ids=[f"{tenant}/{date}#{i}"], timestamp=day + 120.0 * i, thread_id=f"{tenant}-{date}",
                ))
        c.asked_at = (max(e.timestamp for e in c.exchanges) if c.exchanges else 0.0) + 86400.0
        out[user] = c
    for q in qa:
        owner = out.get(q["user"])
        if owner is None:
            raise InvalidInputError(f"question for unknown user {q['user']!r}")
        owner.questions.append(Question(
            text=str(q["question"]), category=str(q.get("category", "fact")), answer=str(q.get("answer", "")),
            evidence=[f"{owner.tenant}/{e['date']}#{int(e['turn'])}" for e in q.get("evidence", [])],
        ))
    return list(out.values())
