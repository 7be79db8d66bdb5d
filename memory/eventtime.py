"""Event time: when what a memory tells happened, as opposed to when it was said.

"I went camping two weekends ago", said on 17 July, tells of the weekend of 8-9 July; "上周末我们去露营了",
said on a Monday, of the Saturday and Sunday before. A question that names a time ("When did Melanie go camping
in July?", "我上周末干什么了？") should find the turn that tells of that time, whenever it was said.

At write time ``event_span`` reads the first time expression in the user's words, else in the reply
(``timewindow``'s parser, anchored at the moment they were said), and keeps the span it names when it lies outside
the day the words were said (today, "this week" add nothing to the record's own time); the span is stored with the
record (``event_start`` / ``event_end`` metadata). At recall, ``event_affinity`` is the query window's
``time_affinity`` averaged over that span (an event "last year" is about a twelfth inside "in June"; a year next to
the window gains almost nothing, a weekend next to it about what a day would). Ranking takes the better of the
record's own time and its event time, so a mention can only gain from it.

Plans: the parser reads a date without a year as the latest such date not after the moment said, which is right
for what happened ("5月20日我去了北京", said in June) but not for a plan ("5月20日我要去北京", said on 10 May, is
this 20 May, not last year's). When the words say it is a plan (``PLAN_RE``: 打算, 准备, 计划, 要去 …, "will",
"going to", "plan to" …) and a date without a year came out in the past, the span is that date's next occurrence
(within the year ahead); a bare weekday ("周五", "on Friday") likewise the coming one. A date whose year is said
(去年12月, "last December") is never moved, nor one in a plan
that lies behind ("I was looking forward to … but it got cancelled", 期待已久的演唱会终于看了). Relative expressions
("上周", "two weekends ago") are left as they are; those that look ahead (明天, 下周三, 下个月, "next month", "in two
weeks", "tomorrow") name the span ahead themselves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from mneme.memory.timewindow import AFFINITY_DECAY_DAYS, DAY, TimeWindow, parse_time_window

START, END = "event_start", "event_end"
"""The metadata keys of a record's event span (POSIX seconds, ``[start, end)``)."""
NAMES_TIME = "names_time"
"""Metadata flag of a record whose words name a time but no span outside the day said ("today", "this month")."""

_ON_THE_WAY = r"\b(?:i'm|i am|we're|we are) (?:going|heading|flying|driving) (?:home|to|away|out|back(?!\s+from))\b"
"""On the way now, or soon ("I'm heading to work", "I'm flying home for Christmas"): a plan only for a time in the
same clause ("I'm driving to the hospital, my son broke his arm on March 3" moves nothing)."""
_ON_THE_WAY_RE = re.compile(_ON_THE_WAY, re.I)
_CLAUSE_MARK = re.compile(r"[,.;!?，。；！？\n]")
PLAN_RE = re.compile(
    r"打算|准备|计划|将要|将会|即将|想要去|要去|要来|要回|要到|会去|约好|预定|预约"
    r"|期待|备考"
    r"|\b(?:will|shall|going to|gonna|plan(?:ning|s)? to|about to|intend(?:s|ing)? to|scheduled"
    r"|training for|prepar(?:e|es|ing) for|getting ready for|looking forward to|coming up|upcoming|can'?t wait)\b"
    r"|'ll\b|\b(?:turns?|turning)\s+\d{1,3}\b|" + _ON_THE_WAY,
    re.IGNORECASE)
"""Words that make a sentence a plan: a date without a year in it lies ahead, not behind."""


def event_span(text: str, said_at: float, *, reply: str = "") -> tuple[float, float] | None:
    """The span of time ``text`` tells of, said at ``said_at`` (else the span ``reply`` names: "你上周末去爬山了？");
    None when they name none, or only the day it was said (or a span around it: this week, this year)."""
    return event_time(text, said_at, reply=reply)[0]


def event_time(text: str, said_at: float, *, reply: str = "") -> tuple[tuple[float, float] | None, bool]:
    """``event_span``'s span, and whether the user's words name a time at all ("today", "this month" name the time
    they were said: no span, but they tell when — ``answertype`` uses it). One parse of each text, as
    ``event_span``. A reply's span counts (the user's "还不错" to "你上周末去爬山了？"), but not a reply that only
    names the present: "How are you feeling today?" says nothing of when the user's words happened."""
    named: list[bool] = []
    found = _span(text, said_at, named)
    if found is None and reply:
        found = _span(reply, said_at)
    return found, any(named)


def _span(text: str, said_at: float, named: list[bool] | None = None) -> tuple[float, float] | None:
    window = parse_time_window(text, said_at)
    if named is not None:
        named.append(window is not None)
    if window is None or window.contains(said_at) or window.end <= window.start:
        return None
    if window.end <= said_at and _BARE_DAY.fullmatch(window.expression.strip()):
        if _bare_day_ahead(text, window):  # 14号, "on the 14th": the last one, or the coming one
            window = _next_day_of_month(window, said_at)
    elif window.end <= said_at and _plans(text, window) and not _PAST_PLAN.search(text) and not _since(
            text, window, said_at):
        window = _ahead(text, said_at, window)
    if window.start <= said_at - said_at % DAY < window.end:  # the day it was said ("今天", "this morning")
        return None
    return window.start, window.end


_PAST_IN_CLAUSE = re.compile(
    r"了|过(?!年|来|去|生日|节|日子)|已经|本来|原本|刚(?!好)|那天|那时|的时候|是[^，,。]{1,10}的"
    r"|(?<![要想会])(?:到|去|来|吃|买|见|做|办|回|交)的|没(?!空|时间|事|有空)|考砸|搞砸"
    r"|(?i:(?<!\bbe )(?<!\bget )(?<!getting )(?<!'re )(?<!'m )(?<!\bam )(?<!\bis )(?<!\bare )(?<!\bso )"
    r"(?<!\bvery )(?<!\bfeel )\b(?:[a-z]+ed|was|were|did|had|went|came|left|lost|said|told|met|saw|bought|paid|ate"
    r"|made|took|gave|broke|fell|won|fought|hit|ran|flew|quit|got(?!\s+(?:a|an|my)\b))\b)")
"""Words that put what a clause tells behind (了, 过, 那天, 是…的, "went", "failed"; not "I'm excited", "we're
getting married")."""
_STRONG_PLAN_ZH = re.compile(r"(?<!本来)(?<!原本)(?:要(?![是不])"
                             r"|(?<![长年约开晚聚舞唱动展宴社机协学工大])会(?!上(?![班门课学网午])|议|面|员|场)|将|打算|准备|计划"
                             r"|约好|预约|快到|就要)")
_STRONG_PLAN_EN = re.compile(r"(?i)(?<!\bwas )(?<!\bwere )\b(?:will|going to|gonna|plan(?:ning)? to|scheduled"
                             r"|about to|have to|need to|must)\b|'ll\b")
_NOW_OR_AHEAD = re.compile(r"(?i)\b(?:is|are|'s) (?:on|due)\b|\b(?:i've got|i have|we have|there's|i'm \w+ing"
                           r"|we're \w+ing|she's \w+ing|he's \w+ing|remind|appointment|exam|interview|deadline"
                           r"|worried about|nervous about)\b"
                           r"|有个|有一个|有场|有一场|提醒|考试|面试|复查|到期|交房租|交|有空|没空")
"""A bare day told as now or ahead: "My interview is on the 25th", "I'm seeing the doctor on the 25th",
我20号有个面试."""


def _bare_day_ahead(text: str, window: TimeWindow) -> bool:
    """Whether a bare day of the month (14号, "on the 14th") whose last occurrence is past means the coming one: a
    plan in its clause (14号要考试了; "she will come on the 14th"), else not when the clause tells it is behind (了,
    "died"), else when told as now or ahead (有个面试, "is on the 25th") or planned anywhere in ``text``."""
    clause = _clause_of(text, window)
    before = clause[:max(clause.find(window.expression), 0)]
    plan = _STRONG_PLAN_EN.search(before)
    if plan and not any(not re.search(r"(?i)\b(?:get|getting|have|having)\b(?:\s+\S+){0,3}\s*$", before[:p.start()])
                        for p in _PAST_IN_CLAUSE.finditer(before, plan.end())):
        return True  # not "will never forget what happened on the 5th"; "going to get my car fixed" is ahead
    if _STRONG_PLAN_ZH.search(clause) and not _PAST_IN_CLAUSE.search(re.sub(r"了|已经", "", clause)):
        return True  # 14号就要考试了, 已经约好了14号去复查: a 了 of what is ahead
    if _PAST_IN_CLAUSE.search(clause):
        return False
    return bool(_NOW_OR_AHEAD.search(clause)) or _plans(text, window) and not _PAST_PLAN.search(text)


def _clause_of(text: str, window: TimeWindow) -> str:
    """The clause of ``text`` (between ,.;!?，。；！？) that names ``window``; all of ``text`` if it cannot tell."""
    at = text.find(window.expression)
    if at < 0:
        return text
    starts = [m.end() for m in _CLAUSE_MARK.finditer(text, 0, at)]
    end = _CLAUSE_MARK.search(text, at + len(window.expression))
    return text[starts[-1] if starts else 0:end.start() if end else len(text)]


def _plans(text: str, window: TimeWindow) -> bool:
    """Whether ``text`` plans what happens at ``window``: a word of plan anywhere, or one of being on the way in the
    clause that names the time."""
    if any(not _ON_THE_WAY_RE.fullmatch(m.group()) for m in PLAN_RE.finditer(text)):
        return True
    return _ON_THE_WAY_RE.search(_clause_of(text, window)) is not None


LUNAR_SHIFT_DAYS = 45
"""How far a holiday's next occurrence may lie from one calendar year on (春节 moves by up to ~20 days)."""
_NAMES_YEAR = re.compile(r"(?i)(?<!过)年|上个|\byear\b|\b(?:last|this)\s+[a-z]")
"""An expression that says which year (去年三月, "last December"): a plan does not move it."""
_PAST_PLAN = re.compile(
    r"(?i)\b(?:was|were|had been|had)\s+(?:\w+\s+)?(?:looking forward|preparing|training|getting ready|planning)"
    r"|\b(?:back in|went badly|got cancell?ed|was cancell?ed|called off)\b"
    r"|终于(?!要|会|可以)|结果|后来|取消了|期待已久|(?:准备|打算|计划)(?:了|过)(?![^。！？!?]*(?:打算|计划|将要|要去|会去|要(?:送|给|带|拿|寄|交)))"
    r"|\bback from\b")
"""Words that tell the plan is behind ("I was looking forward to …", "期待已久的演唱会终于看了"): not moved ahead."""


_SINCE = re.compile(r"(?i)\bsince\s+(?:the\s+)?$|自从$")
_AFTER = re.compile(r"(?i)\bafter\s+(?:the\s+)?$|从$")
_SINCE_END = re.compile(r"\s*(?:开始|起|以来|到现在)")
JUST_AFTER_DAYS = 31
"""A plan "after Christmas" said within this many days of it is after the Christmas just past."""


def _since(text: str, window: TimeWindow, said_at: float) -> bool:
    """Whether the time is one the plan runs since ("自从春节以来"), or one just past that it comes after ("I'm going
    back to work after Christmas", said on 27 December): that time stays where it is."""
    at = max(text.find(window.expression), 0)
    before, after = text[:at], text[at + len(window.expression):]
    if _AFTER.search(before) and _SINCE_END.match(after) and not re.search(r"(?:打算|准备|计划|要|将|想)从$", before):
        return True  # 从春节开始我就想换工作: since (but 我打算从3月5号开始健身 is a plan)
    return bool(_SINCE.search(before) or _AFTER.search(before) and said_at - window.end < JUST_AFTER_DAYS * DAY)


_BARE_WEEKDAY = re.compile(
    r"(?i)(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)"
    r"\.?|(?:周|星期|礼拜)[一二三四五六日天]")


_BARE_DAY = re.compile(r"(?i)(?:on\s+the\s+)?\d{1,2}(?:st|nd|rd|th)|[\d一二三四五六七八九十]{1,3}\s*[号號日]")
"""A day of the month alone (14号, "on the 14th"): the coming one, unless told as behind."""


def _next_day_of_month(window: TimeWindow, said_at: float) -> TimeWindow:
    """The first day after the day ``said_at`` falls on that has ``window``'s day of the month."""
    start = datetime.fromtimestamp(window.start, UTC)
    y, m = start.year, start.month
    for _ in range(4):  # a 31st may be two months on
        m, y = (1, y + 1) if m == 12 else (m + 1, y)
        try:
            day = start.replace(year=y, month=m)
        except ValueError:
            continue
        if day.timestamp() > said_at:
            return TimeWindow(day.timestamp(), day.timestamp() + (window.end - window.start), window.expression,
                              window.granularity)
    return window


def _ahead(text: str, said_at: float, window: TimeWindow) -> TimeWindow:
    """The next occurrence of a date without a year that ``window`` read in the past, else ``window``: the same
    words read a year later name the same day one calendar year on only when the date had no year. A bare weekday
    in a plan ("周五我要去看演唱会", "I'm seeing her on Friday") is the coming one, a week after the last."""
    if _BARE_WEEKDAY.fullmatch(window.expression):
        return TimeWindow(window.start + 7 * DAY, window.end + 7 * DAY, window.expression, window.granularity)
    if _NAMES_YEAR.search(window.expression):  # 去年三月, "last December", "March of last year": its year is said
        return window
    said = datetime.fromtimestamp(said_at, UTC)
    try:
        later = said.replace(year=said.year + 1)
    except ValueError:  # 29 February
        later = said + timedelta(days=365)
    moved = parse_time_window(text, later.timestamp())
    if moved is None or moved.start <= said_at:
        return window
    start = datetime.fromtimestamp(window.start, UTC).date()
    try:
        one_year_on = start.replace(year=start.year + 1)
    except ValueError:
        return window
    if abs((datetime.fromtimestamp(moved.start, UTC).date() - one_year_on).days) > LUNAR_SHIFT_DAYS:
        return window  # a lunar holiday (春节, 寒假) falls up to a few weeks apart from one year to the next
    # "昨天" / "上个月" / "three days ago" a year later are also one year on: a relative expression names yet
    # another span when said a day or a month later, a date without a year only this one or its next occurrence
    for days in (1, 32):
        probe = parse_time_window(text, said_at + days * DAY)
        if probe is None or (probe.start, probe.end) not in ((window.start, window.end), (moved.start, moved.end)):
            return window
    return moved


def span_of(metadata: Mapping[str, Any]) -> tuple[float, float] | None:
    """A record's stored event span, if it has a valid one."""
    start, end = metadata.get(START), metadata.get(END)
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        return None
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return None
    return float(start), float(end)


def event_affinity(span: tuple[float, float], window: TimeWindow, *,
                   decay_days: float = AFFINITY_DECAY_DAYS) -> float:
    """How well an event over ``span`` falls in ``window``, in [0, 1]: ``timewindow.time_affinity`` averaged over
    the span (the event's moment taken as uniform over it). A span inside the window scores 1; "last year" scores
    about 1/12 for "in June"; a weekend just outside a window decays as a day would (``decay_days <= 0``: the
    share inside only)."""
    start, end = span
    length = end - start
    if length <= 0:
        return 0.0
    inside = max(0.0, min(end, window.end) - max(start, window.start))
    total = inside
    if decay_days > 0:
        tau = decay_days * DAY
        if start < window.start:  # the part before the window, from distance a to b before its start
            a, b = max(window.start - min(end, window.start), 0.0), window.start - start
            total += tau * (math.exp(-a / tau) - math.exp(-b / tau))
        if end > window.end:  # the part after the window
            a, b = max(max(start, window.end) - window.end, 0.0), end - window.end
            total += tau * (math.exp(-a / tau) - math.exp(-b / tau))
    return min(1.0, max(0.0, total / length))
