"""Time expressions in a query ("上周三", "5月6号", "two days ago", "May 6th") as a window of time.

``parse_time_window(query, now, tz=...)`` finds the first time expression in the query (the earliest in
the text; the longest where two start together, so 上周三 beats 上周 and 2023年5月6日 beats 5月6日) and
returns the calendar span it names as ``[start, end)`` POSIX seconds in the given time zone, or None.

Conventions, chosen to be predictable:

- A date without a year is the most recent such date not after ``now`` ("May 6" said in January is last
  year's). A month alone ("5月", "in March") likewise; a bare weekday ("周三", "on Monday") is the most
  recent one on or before today. An explicit year is taken as written, even in the future.
- Weeks run Monday to Sunday. 上周 / "last week" is the previous calendar week; 上周三 is that week's
  Wednesday, but "last Monday" is the most recent Monday before today (English usage differs).
- A span named next to a date is that span: "the week before 27 June" is the 7 days before it, "the day after
  May 6" / 5月6日的第二天 the 7th, "the weekend before July 17" / 7月17日之前的那个周末 the Saturday and Sunday
  before it, 5月6日的前一天 the 5th (day, week, weekend, month; before or after).
- A day of the month alone (27号, 二十七号) is the most recent such day; 上个月27号 that day of last month; 4月27 /
  四月二十七 (no 日/号) the date. Parts of a month are its thirds: 初 / 上旬 / early / the beginning of (1st-10th),
  中旬 / mid / the middle of (11th-20th), 下旬 / 底 / 末 / late / the end of (21st-last). Holidays on fixed dates
  (元旦, 情人节, 五一 = May 1-5, 国庆节 = October 1-7, 圣诞, Christmas (Eve), Halloween, Valentine's Day, New Year's
  Day/Eve, 清明 = April 4-6) are their latest occurrence, or that of 去年/今年/last/this. So are the lunar ones, from a
  table of 2000-2050: 春节 / Chinese New Year (除夕 to 初七, the public holiday), 除夕, 元宵节, 端午, 七夕, 中秋 /
  Mid-Autumn Festival, 重阳节 (one day each).
- Not dates either: 3号线 (a metro line), 5号楼 (a building), 一五一十, 张国庆 (a name: 国庆 needs 节/假/期间).
- "N weekends ago" / N个周末前 is the Saturday and Sunday N weeks back (1 = last weekend = 上周末).
- "N days ago" / N天前 is that one day; "N weeks/months/years ago" the calendar week/month/year that
  contains the day N units back. "a few days ago" / 几天前 / 前几天 is the 7 days before today; "a few weeks ago" /
  几周前 / 几个星期前 the 4 weeks before that; 半个月前 the calendar week holding the day 15 days back.
- Seasons are the northern meteorological ones (spring = March to May … winter = December to February):
  去年夏天 / "last summer" is last year's, a bare 夏天 / "in the summer" the latest one begun. School breaks
  likewise: 暑假 = July and August, 寒假 = three weeks either side of 春节, "summer break / vacation / holidays" = June
  to August, "winter break" / "Christmas holidays" = 18 December to 5 January, "spring break" = March. 过年 is 春节
  (not in 逢年过节 / 过年过节: every holiday).
- Ahead: 明天 / 后天 / 大后天 / "tomorrow" / "the day after tomorrow"; 下周 / 下下周 / "next week" / "the week after
  next" (calendar weeks); 下周三 / "next Wednesday" that day of next week, "this coming Wednesday" the first one after
  today; 这周末 / "this weekend", 下周末 / "next weekend"; 下个月 / "next month", 明年 / "next year" (明年春天 is
  next year's spring; "next summer", "next Christmas", "next May" the first one after today); N天后 / "in two weeks" /
  "3 days from now" as N天前 / "ago" the other way, but only where the words look ahead (要, 会, 打算 … or no 了/过;
  will, going to, I'm …ing, a question): "后来三天后他就走了" and "I ran 20 miles in 3 days" name no date. 过几天 /
  "in a few days" is the 7 days after today.
- Vague spans behind: "a few / several / a couple (of) years ago" / 几年前 / 前几年 = the four calendar years from
  five to two years back; "a few months ago" / 几个月前 = the five calendar months before last month; "a while ago" /
  前阵子 / 前段时间 / 不久前 = 90 to 7 days back; "a decade ago", "a fortnight ago", "N units back" as "ago".
- Weekday abbreviations (Mon, Tue(s), Wed, Thu(rs), Fri, Sat, Sun) count only after last / this / next / on / past
  ("last Fri"), never alone ("I sat down", "the sun").
- Holidays on the n-th weekday of a month: Thanksgiving (US; 感恩节), Mother's Day / 母亲节, Father's Day / 父亲节;
  and the Fourth of July / Independence Day.
- Numeric dates with slashes are US order: 5/6 is May 6 (5/6/2023 too); ISO 2023-05-06 is unambiguous.
- Not dates: a bare number ("iPhone 6", "第5章"), a duration without 前/ago ("3天", "3 days"), lower-case
  "may" (the verb; only "May" is the month).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mneme.errors import InvalidInputError

DAY = 86_400.0


@dataclass(frozen=True)
class TimeWindow:
    """A span of time named in a query: ``[start, end)`` in POSIX seconds, and the words that named it."""

    start: float
    end: float
    expression: str
    granularity: str = "day"
    """``day``, ``week``, ``month``, ``year`` or ``range``: how precise the expression was."""

    def contains(self, ts: float) -> bool:
        """True when ``ts`` falls inside the window."""
        return self.start <= ts < self.end


Span = tuple[date, date, str]  # [first day, day after last), granularity

# -- numbers -------------------------------------------------------------------------------------

_ZH_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")} | {"零": 0, "两": 2}
_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
    "a couple": 2, "couple": 2,
}  # fmt: skip


def zh_number(text: str) -> int | None:
    """An integer written in digits or Chinese numerals (五, 十二, 二十五, 廿五, 二〇二三), else None."""
    if text.isdigit():
        return int(text)
    if not text or any(c not in _ZH_DIGITS and c not in "十廿" for c in text):
        return None
    if "十" not in text and "廿" not in text:  # digit by digit: 二〇二三
        return int("".join(str(_ZH_DIGITS[c]) for c in text))
    text = text.replace("廿", "二十")
    tens, _, ones = text.partition("十")
    if len(tens) > 1 or len(ones) > 1:
        return None
    return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)


# -- calendar spans -----------------------------------------------------------------------------


def _day(d: date) -> Span:
    return d, d + timedelta(days=1), "day"


def _week(d: date) -> Span:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=7), "week"


def _add_months(year: int, month: int, k: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + k
    return index // 12, index % 12 + 1


def _month(year: int, month: int) -> Span:
    ny, nm = _add_months(year, month, 1)
    return date(year, month, 1), date(ny, nm, 1), "month"


def _year(year: int) -> Span:
    return date(year, 1, 1), date(year + 1, 1, 1), "year"


def _recent_date(today: date, month: int, day: int) -> date | None:
    """The most recent month/day not after today (None for an impossible date like 2月30日)."""
    for year in range(today.year, today.year - 9, -1):  # 9 years back finds any Feb 29
        try:
            d = date(year, month, day)
        except ValueError:
            if month == 2 and day == 29:
                continue
            return None
        if d <= today:
            return d
    return None


def _dated(today: date, year: int | None, month: int, day: int) -> Span | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    if year is None:
        d = _recent_date(today, month, day)
        return None if d is None else _day(d)
    try:
        return _day(date(year, month, day))
    except ValueError:
        return None


def _recent_month(today: date, month: int) -> Span | None:
    if not 1 <= month <= 12:
        return None
    return _month(today.year if month <= today.month else today.year - 1, month)


def _weekday_in_week(today: date, weeks_back: int, weekday: int) -> Span:
    monday = today - timedelta(days=today.weekday() + 7 * weeks_back)
    return _day(monday + timedelta(days=weekday))


def _recent_weekday(today: date, weekday: int, *, strictly_before: bool) -> Span:
    back = (today.weekday() - weekday) % 7
    if back == 0 and strictly_before:
        back = 7
    return _day(today - timedelta(days=back))


def _ago(today: date, n: int, unit: str) -> Span | None:
    """The day, or the calendar week / month / year, holding the day ``n`` units before today (after it for a
    negative ``n``: 三天后, "in two weeks")."""
    if not -5000 <= n <= 5000 or not 1 <= today.year - n <= 9998:  # "2500 years ago" names no calendar year
        return None
    if unit.startswith(("day", "天")):
        return _day(today - timedelta(days=n))
    if unit.startswith(("week", "周", "星期", "礼拜", "個星期", "个星期", "个礼拜")):
        return _week(today - timedelta(days=7 * n))
    if unit.startswith(("month", "个月", "個月")):
        return _month(*_add_months(today.year, today.month, -n))
    return _year(today.year - n)


def _few_days(today: date) -> Span:
    return today - timedelta(days=7), today, "range"


def _few_weeks(today: date) -> Span:
    return today - timedelta(days=35), today - timedelta(days=7), "range"


def _few_days_ahead(today: date) -> Span:
    return today + timedelta(days=1), today + timedelta(days=8), "range"


def _a_while_ago(today: date) -> Span:
    return today - timedelta(days=90), today - timedelta(days=7), "range"


def _few_months_ago(today: date) -> Span:
    return date(*_add_months(today.year, today.month, -6), 1), date(*_add_months(today.year, today.month, -1), 1), \
        "range"


def _few_years_ago(today: date) -> Span:
    return date(today.year - 5, 1, 1), date(today.year - 1, 1, 1), "range"


# -- patterns ----------------------------------------------------------------------------------

_N = r"(?:\d{1,2}|[一二三四五六七八九十两廿〇零]{1,3})"
_ZY = r"(?:\d{4}|[〇零一二三四五六七八九]{4})"
_WD_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_WD_EN = {w: i for i, w in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}
"""Weekdays by their first three letters (Monday, Mon, "last Tues")."""
_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
# Month names are case-insensitive except May, which must be capitalised (else it is the verb).
_MON = (
    r"(?P<mon>(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)|May|MAY)\.?"
)
_EY = r"(?P<y>(?:19|20)\d{2})"
_EN_N = (
    r"(?P<n>\d{1,4}|(?i:a\s+couple\s+of|couple\s+of|a\s+couple|couple|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve))"
)
_WEEK_ZH = r"(?:周|星期|个星期|礼拜|个礼拜)"
_XIA = "(?<![一楼线乡地以天底私眼当剩留放坐写记拿停躺趴蹲按落])下"
"""下 of "next" (下周, 下个月, 下周三): not the 下 that ends another word (看一下, 楼下, 线下, 记下, 剩下)."""

Handler = Callable[[re.Match[str], date], Span | None]


def _int(m: re.Match[str], name: str) -> int | None:
    value = m.group(name)
    return None if value is None else zh_number(value)


def _mon(m: re.Match[str]) -> int:
    return _MONTHS[m.group("mon").lower()[:3]]


def _en_n(m: re.Match[str]) -> int:
    word = " ".join(m.group("n").lower().split())
    return int(word) if word.isdigit() else _EN_NUMBERS[word]


def _zh_full(m: re.Match[str], today: date) -> Span | None:
    y, mo, d = _int(m, "y"), _int(m, "m"), _int(m, "d")
    return None if y is None or mo is None or d is None else _dated(today, y, mo, d)


def _zh_md(m: re.Match[str], today: date) -> Span | None:
    mo, d = _int(m, "m"), _int(m, "d")
    return None if mo is None or d is None else _dated(today, None, mo, d)


def _zh_ym(m: re.Match[str], today: date) -> Span | None:
    y, mo = _int(m, "y"), _int(m, "m")
    return _month(y, mo) if y is not None and mo is not None and 1 <= mo <= 12 else None


def _zh_y(m: re.Match[str], today: date) -> Span | None:
    y = _int(m, "y")
    return _year(y) if y is not None and 1900 <= y <= 2200 else None


def _zh_m(m: re.Match[str], today: date) -> Span | None:
    mo = _int(m, "m")
    return None if mo is None else _recent_month(today, mo)


def _zh_ago(m: re.Match[str], today: date) -> Span | None:
    n = _int(m, "n")
    return None if n is None else _ago(today, n, m.group("u"))


def _zh_weekday(m: re.Match[str], today: date) -> Span | None:
    wd = _WD_ZH[m.group("wd")]
    rel = m.group("rel") or ""
    if rel.startswith("上"):
        return _weekday_in_week(today, rel.count("上"), wd)
    if rel.startswith("下"):  # 下周三 / 下下周五: that day of next week / the week after
        return _weekday_in_week(today, -rel.count("下"), wd)
    if rel:  # 这周三 / 本周三
        return _weekday_in_week(today, 0, wd)
    return _recent_weekday(today, wd, strictly_before=False)


def _en_weekday(m: re.Match[str], today: date) -> Span | None:
    wd = _WD_EN[m.group("wd").lower()[:3]]
    rel = " ".join((m.group("rel") or "").lower().split())
    if rel == "this":
        return _weekday_in_week(today, 0, wd)
    if rel == "next":  # that day of next week, as 下周三
        return _weekday_in_week(today, -1, wd)
    if rel.endswith(("coming", "upcoming")):  # the first one after today
        return _day(today + timedelta(days=(wd - today.weekday() - 1) % 7 + 1))
    return _recent_weekday(today, wd, strictly_before=rel in ("last", "past"))


def _en_ymd(m: re.Match[str], today: date) -> Span | None:
    return _dated(today, int(m.group("y")), int(m.group("m")), int(m.group("d")))


def _en_us(m: re.Match[str], today: date) -> Span | None:
    y = m.group("y")
    year = None if y is None else int(y) + (2000 if len(y) == 2 else 0)
    return _dated(today, year, int(m.group("m")), int(m.group("d")))


def _en_named(m: re.Match[str], today: date) -> Span | None:
    y = m.group("y")
    return _dated(today, None if y is None else int(y), _mon(m), int(m.group("d")))


def _en_month_year(m: re.Match[str], today: date) -> Span | None:
    return _month(int(m.group("y")), _mon(m))


_REL_YEARS = {"前年": 2, "去年": 1, "今年": 0, "明年": -1, "后年": -2, "last": 1, "this": 0, "next": -1}
"""How many years back a relative year word puts a month or a date named with it."""


def _rel_year_month(m: re.Match[str], today: date) -> Span | None:
    """去年三月 / 明年4月 / 去年5月20日 / "April next year" / "March of last year": that month (or day) of that year."""
    year = today.year - _REL_YEARS[m.group("rel").lower()]
    mon = m.groupdict().get("mon")
    if mon is not None and mon[0].islower() and not re.match(r"(?i)in|during", m.group()):
        return None  # "I joined the march last year": a month named so is capitalised
    month = _int(m, "m") if "m" in m.groupdict() and m.group("m") else _mon(m)
    day = _int(m, "d") if "d" in m.groupdict() else None
    if month is None or not 1 <= month <= 12:
        return None
    if day is not None:
        return _dated(today, year, month, day)
    part = m.groupdict().get("part")
    return _part_of(_month(year, month), part) if part else _month(year, month)


def _en_in_month(m: re.Match[str], today: date) -> Span | None:
    return _recent_month(today, _mon(m))


def _en_ago(m: re.Match[str], today: date) -> Span | None:
    return _ago(today, _en_n(m), m.group("u").lower())


_EN_AHEAD = re.compile(
    r"(?i)\b(?:will|shall|going\s+to|gonna|plan(?:s|ning)?|hope|want|about\s+to|scheduled|due|can['\u2019]?t\s+wait)\b"
    r"|['\u2019]ll\b|\b(?:i['\u2019]m|am|are|is|we['\u2019]re|you['\u2019]re)\s+\w+ing\b|\bfrom\s+now\b")
"""Words that put "in two weeks" ahead; without them it is a duration ("I ran 20 miles in 3 days")."""
_EN_PAST = re.compile(r"(?i)\b(?:did|was|were|had)\b")
_ZH_AHEAD = re.compile(
    r"(?<![重需主只不])要(?![求紧])|(?<![不])会(?![议计员场面话])|将(?:要|会)?|打算|准备|计划|就是|就到")
_ZH_DONE = re.compile(r"了|过(?![年节来去])")
_ZH_SENTENCE = re.compile(r"[^。！？!?\n]*")


def _en_ahead(text: str) -> bool:
    """Whether "in N days" in ``text`` lies ahead: a word that says so, or a question not about the past ("What am
    I doing in two weeks?", not "How far did I run in 3 days?")."""
    return _EN_AHEAD.search(text) is not None or ("?" in text and _EN_PAST.search(text) is None)


def _zh_ahead(m: re.Match[str]) -> bool:
    """Whether N天后 at ``m`` lies ahead: its sentence says nothing is done (了 / 过), or says 要 / 会 / 打算 …
    before it does ("三天后我要考试了"; not "三天后他就走了", "毕业三年后，我找到了一份重要的工作",
    "两周后我们在会议上见了面")."""
    rest = _ZH_SENTENCE.match(m.string, m.end())
    sentence = rest.group() if rest else ""
    done, ahead = _ZH_DONE.search(sentence), _ZH_AHEAD.search(sentence)
    return done is None or (ahead is not None and ahead.start() < done.start())


def _en_later(m: re.Match[str], today: date) -> Span | None:
    """"in two weeks" (said of what lies ahead), "3 days from now": as "ago", the other way."""
    if not _en_ahead(m.string):
        return None
    return _ago(today, -_en_n(m), m.group("u").lower())


def _zh_later(m: re.Match[str], today: date) -> Span | None:
    """三天后 / 两周以后 / 一个月后, said of what lies ahead: as 前, the other way. Told of what is done ("三天后他就
    走了": three days after something else) they are not dates."""
    if not _zh_ahead(m):
        return None
    n = _int(m, "n")
    return None if n is None else _ago(today, -n, m.group("u"))


def _zh_few_days_later(m: re.Match[str], today: date) -> Span | None:
    """几天后, said of what lies ahead (not "吵了一架，几天后就和好了"); 过几天 always looks ahead."""
    return _few_days_ahead(today) if m.group().startswith(("过", "再")) or _zh_ahead(m) else None


def _en_few_days_later(m: re.Match[str], today: date) -> Span | None:
    """"in a few days", said of what lies ahead (not "I finished the book in a few days")."""
    return _few_days_ahead(today) if _en_ahead(m.string) else None


def _en_next_month(m: re.Match[str], today: date) -> Span | None:
    """"next May": the first May after this month."""
    month = _mon(m)
    return _month(today.year if month > today.month else today.year + 1, month)


def _rolling(today: date, n: int, unit: str) -> Span | None:
    """The last ``n`` units up to and including today ("past 3 days", 最近三天)."""
    days = {"d": 1, "w": 7, "m": 30, "天": 1, "月": 30}.get(unit[0], 7) * n
    if unit.endswith("月"):
        days = 30 * n
    if not 0 < days <= 36_600:
        return None
    return today - timedelta(days=days - 1), today + timedelta(days=1), "range"


def _en_rolling(m: re.Match[str], today: date) -> Span | None:
    if m.group("n") is None and not m.group().lower().startswith(("the", "in")) and "past" not in m.group().lower():
        return None  # "last week" alone is the calendar week (a later rule); "the last week" is rolling
    n = 1 if m.group("n") is None else _en_n(m)
    return _rolling(today, n, m.group("u").lower())


def _zh_rolling(m: re.Match[str], today: date) -> Span | None:
    n = _int(m, "n")
    return None if n is None else _rolling(today, n, m.group("u"))


def _fixed(fn: Callable[[date], Span]) -> Handler:
    return lambda m, today: fn(today)


def _days_back(n: int) -> Handler:
    return _fixed(lambda t: _day(t - timedelta(days=n)))


def _weeks_back(n: int) -> Handler:
    return _fixed(lambda t: _week(t - timedelta(days=7 * n)))


def _months_back(n: int) -> Handler:
    return _fixed(lambda t: _month(*_add_months(t.year, t.month, -n)))


def _years_back(n: int) -> Handler:
    return _fixed(lambda t: _year(t.year - n))


def _weekend(n: int) -> Handler:
    def span(t: date) -> Span:
        saturday = t - timedelta(days=t.weekday() + 7 * n) + timedelta(days=5)
        return saturday, saturday + timedelta(days=2), "range"

    return _fixed(span)


def _zh_weekends_ago(m: re.Match[str], today: date) -> Span | None:
    """两个周末前 / 3个周末以前: the weekend that many weeks back (一个周末前 = 上周末)."""
    n = _int(m, "n")
    return _weekend(n)(m, today) if n else None


def _en_weekends_ago(m: re.Match[str], today: date) -> Span | None:
    """"two weekends ago": the weekend that many weeks back ("a weekend ago" = last weekend)."""
    return _weekend(_en_n(m))(m, today)


def _recent_day_of_month(today: date, day: int, months_back: int | None = None) -> Span | None:
    """27号: the most recent 27th not after today (or of the month ``months_back`` before this one: 上个月27号)."""
    if not 1 <= day <= 31:
        return None
    if months_back is not None:
        y, mo = _add_months(today.year, today.month, -months_back)
        return _dated(today, y, mo, day)
    for k in range(0, 4):  # the 31st may be three months back (from a 30-day month and February)
        y, mo = _add_months(today.year, today.month, -k)
        try:
            d = date(y, mo, day)
        except ValueError:
            continue
        if d <= today:
            return _day(d)
    return None


def _zh_day(m: re.Match[str], today: date) -> Span | None:
    d = _int(m, "d")
    rel = m.group("rel") or ""
    back = None if not rel else 2 if rel.startswith("上上") else 1 if rel.startswith("上") else \
        -1 if rel.startswith("下") else 0
    return None if d is None else _recent_day_of_month(today, d, back)


_PART = {"初": (1, 11), "上旬": (1, 11), "中旬": (11, 21), "下旬": (21, 32), "底": (21, 32), "末": (21, 32),
         "early": (1, 11), "beginning": (1, 11), "start": (1, 11), "mid": (11, 21), "middle": (11, 21),
         "late": (21, 32), "end": (21, 32)}
"""Parts of a month, as [first day, day after last): the thirds Chinese calls 上旬 / 中旬 / 下旬."""


def _part_of(span: Span | None, part: str) -> Span | None:
    if span is None:
        return None
    first, after, _ = span
    lo, hi = _PART[part.lower()]
    end = min(first + timedelta(days=hi - 1), after)
    return first + timedelta(days=lo - 1), end, "range"


def _zh_month_part(m: re.Match[str], today: date) -> Span | None:
    rel, mo = m.group("rel"), _int(m, "m")
    if mo is not None:
        span = _recent_month(today, mo)
    else:
        back = 2 if rel.startswith("上上") else 1 if rel.startswith("上") else -1 if rel.startswith("下") else 0
        span = _month(*_add_months(today.year, today.month, -back))
    return _part_of(span, m.group("part"))


def _en_month_part(m: re.Match[str], today: date) -> Span | None:
    y = m.group("y")
    span = _month(int(y), _mon(m)) if y else _recent_month(today, _mon(m))
    return _part_of(span, m.group("part"))


_HOLIDAYS: dict[str, tuple[int, int, int]] = {
    "元旦": (1, 1, 1), "情人节": (2, 14, 1), "妇女节": (3, 8, 1), "五一": (5, 1, 5), "劳动节": (5, 1, 5),
    "儿童节": (6, 1, 1), "清明": (4, 4, 3), "国庆": (10, 1, 7), "万圣节": (10, 31, 1), "平安夜": (12, 24, 1),
    "圣诞": (12, 25, 1),
    "new year's day": (1, 1, 1), "new year's eve": (12, 31, 1), "valentine's day": (2, 14, 1),
    "halloween": (10, 31, 1), "christmas eve": (12, 24, 1), "christmas": (12, 25, 1),
    "independence day": (7, 4, 1), "fourth of july": (7, 4, 1),
}
"""Holidays on fixed Gregorian dates: (month, day, days). 五一 and 国庆 are the public holidays (May 1-5, October
1-7); 清明 falls on April 4 or 5 (a solar term): April 4-6. Lunar ones are in ``_LUNAR``."""

_LUNAR_FIRST_YEAR = 2000
_LUNAR_DATES: dict[str, str] = {  # the Gregorian month and day (MMDD) of each year 2000-2050: a decade a line
    "new year": (
        "0205 0124 0212 0201 0122 0209 0129 0218 0207 0126 "
        "0214 0203 0123 0210 0131 0219 0208 0128 0216 0205 "
        "0125 0212 0201 0122 0210 0129 0217 0206 0126 0213 "
        "0203 0123 0211 0131 0219 0208 0128 0215 0204 0124 "
        "0212 0201 0122 0210 0130 0217 0206 0126 0214 0202 "
        "0123"
    ),
    "dragon boat": (
        "0606 0625 0615 0604 0622 0611 0531 0619 0608 0528 "
        "0616 0606 0623 0612 0602 0620 0609 0530 0618 0607 "
        "0625 0614 0603 0622 0610 0531 0619 0609 0528 0616 "
        "0605 0624 0612 0601 0620 0610 0530 0618 0607 0527 "
        "0614 0603 0622 0611 0531 0619 0608 0529 0615 0604 "
        "0623"
    ),
    "qixi": (
        "0806 0825 0815 0804 0822 0811 0731 0819 0807 0826 "
        "0816 0806 0823 0813 0802 0820 0809 0828 0817 0807 "
        "0825 0814 0804 0822 0810 0829 0819 0808 0826 0816 "
        "0805 0824 0812 0801 0820 0810 0828 0817 0807 0826 "
        "0814 0803 0822 0811 0731 0819 0808 0827 0816 0805 "
        "0823"
    ),
    "mid-autumn": (
        "0912 1001 0921 0911 0928 0918 1006 0925 0914 1003 "
        "0922 0912 0930 0919 0908 0927 0915 1004 0924 0913 "
        "1001 0921 0910 0929 0917 1006 0925 0915 1003 0922 "
        "0912 1001 0919 0908 0927 0916 1004 0924 0913 1002 "
        "0920 0910 0928 0917 1005 0925 0915 1004 0922 0911 "
        "0930"
    ),
    "double ninth": (
        "1006 1025 1014 1004 1022 1011 1030 1019 1007 1026 "
        "1016 1005 1023 1013 1002 1021 1009 1028 1017 1007 "
        "1025 1014 1004 1023 1011 1029 1018 1008 1026 1016 "
        "1005 1024 1012 1001 1020 1009 1027 1017 1007 1026 "
        "1014 1003 1022 1011 1029 1018 1008 1027 1016 1005 "
        "1024"
    ),
}
"""Lunar festivals by Gregorian date, 2000-2050: 正月初一, 五月初五, 七月初七, 八月十五, 九月初九 (made once from the
Chinese calendar with ``lunardate``, a GPL library not shipped with Mneme; the tests check known years)."""
_LUNAR: dict[str, tuple[str, int, int]] = {
    "春节": ("new year", -1, 8), "spring festival": ("new year", -1, 8), "chinese new year": ("new year", -1, 8),
    "lunar new year": ("new year", -1, 8), "过年": ("new year", -1, 8), "chinese new year's eve": ("new year", -1, 1),
    "lunar new year's eve": ("new year", -1, 1), "除夕": ("new year", -1, 1), "大年三十": ("new year", -1, 1),
    "大年初一": ("new year", 0, 1), "元宵节": ("new year", 14, 1), "lantern festival": ("new year", 14, 1),
    "端午": ("dragon boat", 0, 1), "dragon boat festival": ("dragon boat", 0, 1), "七夕": ("qixi", 0, 1),
    "中秋": ("mid-autumn", 0, 1), "mid-autumn festival": ("mid-autumn", 0, 1), "moon festival": ("mid-autumn", 0, 1),
    "重阳节": ("double ninth", 0, 1),
}
"""Lunar holidays: (festival, days from it, days). 春节 is the public holiday, 除夕 to 初七 (8 days)."""
_LUNAR_TABLE: dict[str, list[str]] = {festival: dates.split() for festival, dates in _LUNAR_DATES.items()}
_YEARS_BACK = {"去年": 1, "last": 1, "前年": 2, "今年": 0, "this": 0, "明年": -1}
"""How many years back 去年 / last, 前年, 今年 / this, 明年 put a holiday or a season."""


def _occurrence(m: re.Match[str], today: date, start_in: Callable[[int], date | None]) -> date | None:
    """The start of the holiday or season ``start_in(year)`` that ``m`` names: that of the year 去年 / 今年 / 明年 /
    last / this say (``_YEARS_BACK``); the first one after today for "next" ("next Christmas" said in July is this
    December's); else the latest begun."""
    rel = (m.group("rel") or "").lower()
    back = _YEARS_BACK.get(rel)
    if back is not None:
        return start_in(today.year - back)
    if rel == "next":
        for year in (today.year, today.year + 1):
            start = start_in(year)
            if start is not None and start > today:
                return start
        return None
    start = start_in(today.year)
    return start if start is not None and start <= today else start_in(today.year - 1)


def _lunar_start(name: str, year: int) -> date | None:
    festival, offset, _ = _LUNAR[name]
    index = year - _LUNAR_FIRST_YEAR
    dates = _LUNAR_TABLE[festival]
    if not 0 <= index < len(dates):
        return None  # outside the table: not parsed
    mmdd = dates[index]
    return date(year, int(mmdd[:2]), int(mmdd[2:])) + timedelta(days=offset)


def _lunar_holiday(m: re.Match[str], today: date) -> Span | None:
    """春节, 中秋, 端午, "Chinese New Year" …: that year's (去年 / 今年 / last / this), else the latest begun."""
    name = " ".join(m.group("h").lower().replace("\u2019", "'").split())  # the patterns match the keys exactly
    if name not in _LUNAR:
        return None
    start = _occurrence(m, today, lambda year: _lunar_start(name, year))
    if start is None:
        return None
    days = _LUNAR[name][2]
    return start, start + timedelta(days=days), "day" if days == 1 else "range"


def _holiday(m: re.Match[str], today: date) -> Span | None:
    name = " ".join(m.group("h").lower().replace("\u2019", "'").split())
    name = "christmas" if name.startswith("christmas") and "eve" not in name else name
    key = next((k for k in _HOLIDAYS if name.startswith(k)), None)
    if key is None:
        return None
    month, day, days = _HOLIDAYS[key]
    start = _occurrence(m, today, lambda year: date(year, month, day))
    if start is None:
        return None
    return start, start + timedelta(days=days), "day" if days == 1 else "range"


_NTH_WEEKDAY: dict[str, tuple[int, int, int]] = {
    "thanksgiving": (11, 3, 4), "感恩节": (11, 3, 4), "mother's day": (5, 6, 2), "母亲节": (5, 6, 2),
    "father's day": (6, 6, 3), "父亲节": (6, 6, 3),
}
"""Holidays on the n-th weekday of a month: (month, weekday, n). Thanksgiving (US) is the fourth Thursday of
November; Mother's Day and Father's Day (in China too) the second Sunday of May and the third Sunday of June."""


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _weekday_holiday(m: re.Match[str], today: date) -> Span | None:
    """Thanksgiving, Mother's Day, 父亲节 …: that year's (去年 / 今年 / 明年 / last / this / next), else the latest."""
    name = " ".join(m.group("h").lower().replace("\u2019", "'").replace("mothers", "mother's")
                    .replace("fathers", "father's").split())
    if name not in _NTH_WEEKDAY:
        return None
    month, weekday, n = _NTH_WEEKDAY[name]
    start = _occurrence(m, today, lambda year: _nth_weekday(year, month, weekday, n))
    return None if start is None else _day(start)


_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12,
                 "春": 3, "夏": 6, "秋": 9, "冬": 12}
"""First month of each (northern, meteorological) season: three months from there; winter runs into next year."""


def _season_span(year: int, first_month: int) -> Span:
    ny, nm = _add_months(year, first_month, 3)
    return date(year, first_month, 1), date(ny, nm, 1), "range"


def _season(m: re.Match[str], today: date) -> Span | None:
    """去年夏天 / "last summer": that season of that year; a bare one (夏天, "in the summer") the latest begun.

    "last winter" is the winter that began in December of last year (it ends in February of this year).
    """
    first = _SEASON_START[m.group("s").lower()]
    start = _occurrence(m, today, lambda year: date(year, first, 1))
    return None if start is None else _season_span(start.year, first)


_BREAKS: dict[str, tuple[int, int, int, int]] = {
    "暑假": (7, 1, 9, 1), "summer": (6, 1, 9, 1), "winter": (12, 18, 1, 6), "christmas": (12, 18, 1, 6),
    "spring": (3, 1, 4, 1),
}
"""School breaks on (roughly) fixed dates: (first month, day, month and day it ends before; into the next year when
the end comes first). 暑假 is July and August; "summer break / vacation / holidays" June to August; "winter break" and
"Christmas holidays" December 18th to January 5th; "spring break" March."""


def _winter_break_start(year: int) -> date | None:
    """寒假 of ``year``: three weeks before 春节 (to three weeks after)."""
    new_year = _lunar_start("春节", year)
    return None if new_year is None else new_year - timedelta(days=21)


def _school_break(m: re.Match[str], today: date) -> Span | None:
    """暑假, 寒假 (the six weeks around 春节), "summer vacation", "winter break", "spring break": that year's (去年 /
    last / this), else the latest begun."""
    name = m.group("b").lower()
    rel = m.group("rel") or ""
    if name == "寒假":
        def winter(year: int) -> Span | None:
            start = _winter_break_start(year)
            return None if start is None else (start, start + timedelta(days=42), "range")
        if rel in ("上个", "这个"):
            return _nearest_break(winter, today, ended=rel == "上个")
        start = _occurrence(m, today, _winter_break_start)
        return None if start is None else (start, start + timedelta(days=42), "range")
    first_month, first_day, end_month, end_day = _BREAKS[name]
    crosses = (end_month, end_day) < (first_month, first_day)

    def span_of(year: int) -> Span | None:
        return date(year, first_month, first_day), date(year + crosses, end_month, end_day), "range"

    if rel in ("上个", "这个"):  # the latest that has ended; the one under way, else the next
        return _nearest_break(span_of, today, ended=rel == "上个")
    if crosses and (today.month, today.day) < (end_month, end_day):
        today = date(today.year - 1, 12, 31)  # 2 January: still in the break that began in December
    start = _occurrence(m, today, lambda year: date(year, first_month, first_day))
    return None if start is None else span_of(start.year)


def _nearest_break(span_of: Callable[[int], Span | None], today: date, *, ended: bool) -> Span | None:
    """上个暑假: the latest break that has ended by ``today``; 这个暑假: the one under way or just over (within
    ``JUST_OVER_DAYS``: "这个暑假过得怎么样" in September), else the next."""
    spans = [s for s in (span_of(year) for year in range(today.year - 2, today.year + 2)) if s is not None]
    if ended:
        return max((s for s in spans if s[1] <= today), default=None, key=lambda s: s[0])
    recent = today - timedelta(days=JUST_OVER_DAYS)
    return min((s for s in spans if s[1] > recent), default=None, key=lambda s: s[0])


JUST_OVER_DAYS = 60
"""How long after a break 这个暑假 still means it."""


_RULES: list[tuple[re.Pattern[str], Handler]] = [
    (re.compile(p), h)
    for p, h in [
        # Chinese dates.
        (rf"(?P<y>{_ZY})\s*年\s*(?P<m>{_N})\s*月\s*(?P<d>{_N})\s*[日号號]", _zh_full),
        (rf"(?<![\d年第])(?P<m>{_N})\s*月\s*(?P<d>{_N})\s*[日号號]", _zh_md),
        (rf"(?P<y>{_ZY})\s*年\s*(?P<m>{_N})\s*月", _zh_ym),
        (rf"(?P<rel>前年|去年|今年|明年|后年)\s*的?(?P<m>{_N})\s*月份?"
         rf"(?:\s*(?P<d>{_N})\s*(?:[日号號]|(?=[，,。！!？?；;\s]|$))|\s*的?(?P<part>初|上旬|中旬|下旬|底|末))?",
         _rel_year_month),
        (rf"(?P<y>{_ZY})\s*年(?!代)", _zh_y),
        (rf"(?<![\d第上下这本每个個几])(?P<m>{_N})\s*月份?(?![\d一二三四五六七八九十]*\s*[日号號])", _zh_m),
        # 4月27 (no 日/号), 27号, 上个月27号, 5月初 / 下旬 / 底, 月底, 五一, 国庆, 去年圣诞节.
        (rf"(?<![\d年第])(?P<m>{_N})\s*月\s*(?P<d>{_N})(?![\d一二三四五六七八九十日号號天个個次人岁歲年周只位本])",
         _zh_md),
        (rf"(?P<rel>上上个?月|上个?月|上個月|这个?月|這個?月|本月|{_XIA}个?月|{_XIA}個月)\s*的?(?P<d>{_N})\s*[号號日]",
         _zh_day),
        (rf"(?<![\d月第个個几每上下这本前后號号])(?P<rel>)(?P<d>{_N})\s*[号號](?![码碼线線楼樓房门門车車位床])",
         _zh_day),
        (rf"(?:(?<![\d年第])(?P<m>{_N})\s*月份?|(?P<rel>上上个?月|上个?月|上個月|这个?月|這個?月|本月|{_XIA}个?月|{_XIA}個月|月))"
         r"\s*的?(?P<part>初|上旬|中旬|下旬|底|末)", _zh_month_part),
        (r"(?P<rel>去年|前年|今年|明年)?的?(?P<h>元旦|情人节|妇女节|(?<![一二三四五六七八九十])五一(?![一二三四五六七八九十])"
         r"|劳动节|儿童节|清明(?=节|假|期间|那)|国庆(?=节|假|长假|期间|那)|万圣节|平安夜|圣诞)", _holiday),
        (r"(?P<rel>去年|前年|今年|明年)?的?(?P<h>感恩节|母亲节|父亲节)", _weekday_holiday),
        (r"(?P<rel>去年|前年|今年|明年)?的?(?P<h>春节|除夕|大年三十|大年初一|元宵节|端午|七夕|中秋|重阳节"
         r"|(?<![逢不通错超度熬休经参加办开学难读写见])过年(?!过节|[轻龄度底关终级薪代货报纪]|少(?:轻|时|年)|假(?!期)))",
         _lunar_holiday),
        (r"(?P<rel>去年|前年|今年|明年|上个|这个)?的?(?P<b>(?<!避)暑假|寒假)", _school_break),
        (r"前些天|前些日子", _fixed(_few_days)),
        (r"前阵子|前一阵子?|前段时间|前一段时间|不久前", _fixed(_a_while_ago)),
        (r"几个月(?:以)?前|前几个月", _fixed(_few_months_ago)),
        (r"几年(?:以)?前|前几年", _fixed(_few_years_ago)),
        # Chinese relative days, weeks, months, years.
        (r"大前天", _days_back(3)),
        (r"前天|前日", _days_back(2)),
        (r"昨天|昨日|昨晚|昨儿", _days_back(1)),
        (r"今天|今日|今早|今晚|今儿", _days_back(0)),
        (r"明天|明日|明早|明晚|明儿", _days_back(-1)),
        # 后天 only on its own or after a word that can precede a day (我后天…, 在后天): not 饭后天天, 雨后天晴
        (r"(?:(?<![\u4e00-\u9fff])|(?<=[在到是等了我他她们你就也还要会说约和或跟]))后天(?![天气生性色晴])",
         _days_back(-2)),
        (r"大后天", _days_back(-3)),
        (r"过几天|过两天|再过几天|几天(?:以)?后", _zh_few_days_later),
        (rf"(?P<n>{_N})\s*(?P<u>天|周|个星期|個星期|星期|个礼拜|礼拜|个月|個月|年)\s*(?:以)?后(?![来面])", _zh_later),
        (rf"(?P<n>{_N})\s*(?P<u>天|周|个星期|個星期|星期|个礼拜|礼拜|个月|個月|年)\s*(?:以)?前", _zh_ago),
        (r"几天前|前几天|這幾天前", _fixed(_few_days)),
        (r"几(?:周|个星期|个礼拜)(?:以)?前|前几(?:周|个星期)", _fixed(_few_weeks)),
        (r"半个月(?:以)?前", lambda m, t: _week(t - timedelta(days=15))),
        (rf"(?:最近|过去|過去|近)\s*(?P<n>{_N})\s*(?P<u>天|周|个星期|個星期|星期|个月|個月)", _zh_rolling),
        (rf"(?P<rel>上上|上|{_XIA}下|{_XIA}|这|這|本)?个?{_WEEK_ZH}(?P<wd>[一二三四五六日天])", _zh_weekday),
        (rf"(?P<n>{_N})\s*个?周末(?:以)?前", _zh_weekends_ago),
        (r"上上周末|上上个?周末", _weekend(2)),
        (r"上周末|上个?周末", _weekend(1)),
        (r"这周末|這周末|这个周末|本周末", _weekend(0)),
        (rf"{_XIA}周末|{_XIA}个?周末", _weekend(-1)),
        (rf"{_XIA}下周|{_XIA}下个?(?:星期|礼拜)", _weeks_back(-2)),
        (rf"{_XIA}周|{_XIA}个?(?:星期|礼拜)", _weeks_back(-1)),
        (r"上上周|上上个?(?:星期|礼拜)", _weeks_back(2)),
        (r"上周|上个?(?:星期|礼拜)", _weeks_back(1)),
        (r"这周|這周|本周|这个?(?:星期|礼拜)", _weeks_back(0)),
        (r"上上个月", _months_back(2)),
        (r"上个月|上月|上個月", _months_back(1)),
        (r"这个月|本月|这月|這個月", _months_back(0)),
        (rf"{_XIA}下个月", _months_back(-2)),
        (rf"{_XIA}个月|{_XIA}月|{_XIA}個月", _months_back(-1)),
        (r"(?P<rel>去年|前年|今年|明年)?的?(?P<s>[春夏秋冬])(?:天|季)", _season),
        (r"大前年", _years_back(3)),
        (r"前年", _years_back(2)),
        (r"去年", _years_back(1)),
        (r"今年", _years_back(0)),
        (r"明年", _years_back(-1)),
        (r"(?:(?<![\u4e00-\u9fff])|(?<=[在到是等了我他她们你就也还要会说约和或跟]))后年(?![薪终底初中纪龄级])",
         _years_back(-2)),
        # English dates.
        (r"\b(?P<y>(?:19|20)\d{2})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})\b", _en_ymd),
        (r"(?<![\d/.])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:/(?P<y>\d{4}|\d{2}))?(?![\d/])", _en_us),
        (rf"\b{_MON}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+{_EY}\b)?", _en_named),
        (rf"\b(?i:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?i:of\s+)?{_MON}(?![a-z])(?:,?\s+{_EY}\b)?", _en_named),
        (rf"\b{_MON}\s*,?\s+{_EY}\b", _en_month_year),
        # "on the 14th": a day of the month alone, the most recent such day (as 14號); only where a sentence or a
        # clause may end after it, not "on the 3rd floor / shift / chapter", "on the 10th percentile"
        (r"(?i)\bon\s+the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\b(?=\s*(?:[,.;!?)]|$)|\s+(?:and|but|at|in|for|to|with|so"
         r"|because|when|if|i|we|he|she|they|you|my|our|this|next|last|again|too|what|who|where|why|how|after|before"
         r"|around|during|which|that|besides|while|until|till|or so|as an?|or (?:the )?\d{1,2}(?:st|nd|rd|th)\b"
         r"(?!\s+(?:floor|shift|grade|place|row)))\b)",
         lambda m, t: _recent_day_of_month(t, int(m.group("d")))),
        (rf"\b(?:(?i:in|during)\s+)?{_MON}\s+(?i:of\s+)?(?P<rel>(?i:last|this|next))\s+(?i:year)\b", _rel_year_month),
        (rf"\b(?i:in|during|since|last|this)\s+{_MON}(?![a-z])", _en_in_month),
        (rf"\b(?i:next)\s+{_MON}(?![a-z])", _en_next_month),
        (rf"\b(?i:in|during|since)\s+{_EY}\b", lambda m, t: _year(int(m.group("y")))),
        (rf"\b(?P<part>(?i:early|mid|late))[-\s]+{_MON}(?![a-z])(?:,?\s+{_EY}\b)?", _en_month_part),
        (rf"\b(?i:the\s+)?(?P<part>(?i:beginning|start|middle|end))\s+(?i:of)\s+{_MON}(?![a-z])(?:,?\s+{_EY}\b)?",
         _en_month_part),
        (r"(?i)\b(?:(?P<rel>last|this|next)\s+)?(?P<h>new\s+year['\u2019]s\s+(?:day|eve)|valentine['\u2019]?s\s+day"
         r"|halloween|christmas(?:\s+(?:eve|day))?|independence\s+day|fourth\s+of\s+july)\b", _holiday),
        (r"(?i)\b(?:(?P<rel>last|this|next)\s+)?(?P<h>thanksgiving|mother['\u2019]?s\s+day|father['\u2019]?s\s+day)\b",
         _weekday_holiday),
        (r"(?i)\b(?:(?P<rel>last|this|next)\s+)?(?P<h>(?:chinese|lunar)\s+new\s+year(?:['\u2019]s\s+eve)?|spring\s+festival|lantern\s+festival"
         r"|dragon\s+boat\s+festival|mid-autumn\s+festival|moon\s+festival)\b", _lunar_holiday),
        # English relative expressions.
        (r"(?i)\b(?:the\s+)?day\s+before\s+yesterday\b", _days_back(2)),
        (r"(?i)\byesterday\b|\blast\s+night\b", _days_back(1)),
        (r"(?i)\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", _days_back(0)),
        (r"(?i)\b(?:the\s+)?day\s+after\s+tomorrow\b", _days_back(-2)),
        (r"(?i)\btomorrow\b|\btmr\b", _days_back(-1)),
        (rf"\b(?i:in)\s+{_EN_N}\s+(?P<u>(?i:days?|weeks?|months?|years?))(?:['\u2019]?\s+(?i:time))?\b", _en_later),
        (rf"\b{_EN_N}\s+(?P<u>(?i:days?|weeks?|months?|years?))\s+(?i:from\s+now)\b", _en_later),
        (r"(?i)\bin\s+a\s+(?:few|couple\s+of)\s+days\b", _en_few_days_later),
        (r"(?i)\ba\s+decade\s+ago\b", _years_back(10)),
        (r"(?i)\ba\s+fortnight\s+ago\b", _weeks_back(2)),
        (r"(?i)\b(?:a\s+)?(?:few|several|couple\s+of|couple)\s+months\s+(?:ago|back)\b", _fixed(_few_months_ago)),
        (r"(?i)\b(?:a\s+)?(?:few|several|couple\s+of|couple|many)\s+years\s+(?:ago|back)\b|\byears\s+ago\b",
         _fixed(_few_years_ago)),
        (r"(?i)\ba\s+while\s+(?:ago|back)\b", _fixed(_a_while_ago)),
        (rf"\b{_EN_N}\s+(?P<u>(?i:days?|weeks?|months?|years?))\s+(?i:ago|back)\b", _en_ago),
        (r"(?i)\b(?:a\s+)?(?:few|several)\s+days\s+ago\b|\bthe\s+other\s+day\b", _fixed(_few_days)),
        (r"(?i)\b(?:a\s+)?(?:few|several|couple\s+of|couple)\s+weeks\s+(?:ago|back)\b", _fixed(_few_weeks)),
        (
            r"(?i)\b(?:(?P<rel>last|this\s+(?:coming|upcoming)|this|on|past|next|coming|upcoming)\s+)?"
            r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?!s)\b",
            _en_weekday,
        ),
        # abbreviations only after a word that makes them a day: "last Fri", "on Sat" (not "I sat", "the sun")
        (r"(?i)\b(?P<rel>last|this|past|next)\s+(?P<wd>mon|tues?|wed|thu|thurs?|fri|sat|sun)\b\.?", _en_weekday),
        (r"\b(?P<rel>[Oo]n)\s+(?P<wd>Mon|Tues?|Wed|Thu|Thurs?|Fri|Sat|Sun)\b\.?", _en_weekday),  # not "on sun"
        (r"(?i)\b(?:(?P<rel>last|this|next)\s+)?(?P<b>summer|winter|spring|christmas)\s+"
         r"(?:break|vacation|holidays?|recess)\b", _school_break),
        (r"(?i)\b(?:(?P<rel>last|this|next)\s+|(?:in|during|over)\s+the\s+)(?P<s>spring|summer|autumn|fall|winter)\b",
         _season),
        (r"(?i)\b(?:last|this\s+past|past)\s+weekend\b", _weekend(1)),
        (r"(?i)\b(?:this(?:\s+(?:coming|upcoming))?|the\s+(?:coming|upcoming))\s+weekend\b", _weekend(0)),
        (r"(?i)\bnext\s+weekend\b", _weekend(-1)),
        (r"(?i)\b(?:the\s+)?week\s+after\s+next\b", _weeks_back(-2)),
        (r"(?i)\bnext\s+week\b", _weeks_back(-1)),
        (r"(?i)\bnext\s+month\b", _months_back(-1)),
        (r"(?i)\bnext\s+year\b", _years_back(-1)),
        (rf"\b{_EN_N}\s+(?i:weekends?)\s+(?i:ago)\b", _en_weekends_ago),
        (r"(?i)\b(?:the\s+)?week\s+before\s+last\b", _weeks_back(2)),
        (rf"(?i:\b(?:in\s+)?the\s+)?\b(?i:last|past)\s+(?:{_EN_N}\s+)?(?P<u>(?i:days?|weeks?|months?))\b", _en_rolling),
        (r"(?i)\b(?:last|previous)\s+week\b", _weeks_back(1)),
        (r"(?i)\bthis\s+week\b", _weeks_back(0)),
        (r"(?i)\b(?:last|previous)\s+month\b", _months_back(1)),
        (r"(?i)\bthis\s+month\b", _months_back(0)),
        (r"(?i)\b(?:last|previous)\s+year\b", _years_back(1)),
        (r"(?i)\bthis\s+year\b", _years_back(0)),
    ]
]


_EN_ANCHOR = re.compile(r"(?i)\b(?:the\s+)?(?P<unit>day|week|weekend|month)\s+(?P<dir>before|after)\s+(?:the\s+)?$")
_ZH_ANCHOR = re.compile(
    r"^\s*(?:的|之|以)?(?:(?P<dir>前|后|後)的?那?一?个?(?P<unit>天|周末|周|星期|礼拜|月)|(?P<next>第二天|次日))")
_ZH_UNITS = {"天": "day", "周末": "weekend", "周": "week", "星期": "week", "礼拜": "week", "月": "month"}


def _next_to(span: Span, unit: str, before: bool) -> Span:
    """The day / week (7 days) / weekend (Saturday and Sunday) / calendar month just before or just after ``span``."""
    first, after, _ = span
    if unit == "day":
        return (first - timedelta(days=1), first, "day") if before else (after, after + timedelta(days=1), "day")
    if unit == "week":
        return (first - timedelta(days=7), first, "range") if before else (after, after + timedelta(days=7), "range")
    if unit == "weekend":
        if before:  # the Saturday and Sunday that end before the span's first day
            last = first - timedelta(days=1)
            sunday = last - timedelta(days=(last.weekday() - 6) % 7)
            return sunday - timedelta(days=1), sunday + timedelta(days=1), "range"
        saturday = after + timedelta(days=(5 - after.weekday()) % 7)
        return saturday, saturday + timedelta(days=2), "range"
    edge = first - timedelta(days=1) if before else after
    return _month(edge.year, edge.month)


def _anchored(query: str, start: int, end: int, span: Span) -> tuple[Span, str] | None:
    """A span named relative to the date at ``query[start:end]``: "the week before 27 June", "the day after
    May 6", "the weekend before July 17", "5月6日的前一天", "5月6号之前的那个周末", "5月6日的第二天"."""
    m = _EN_ANCHOR.search(query[:start])
    if m is not None:
        return _next_to(span, m.group("unit").lower(), m.group("dir").lower() == "before"), \
            query[m.start():end].strip()
    z = _ZH_ANCHOR.match(query[end:])
    if z is not None:
        if z.group("next"):
            return _next_to(span, "day", False), query[start:end + z.end()].strip()
        return _next_to(span, _ZH_UNITS[z.group("unit")], z.group("dir") == "前"), query[start:end + z.end()].strip()
    return None


def _zone(tz: str | tzinfo) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    if tz.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInputError(f"unknown time zone {tz!r}: use an IANA name like 'Asia/Shanghai'") from exc


_MAY_NAME_TIME = re.compile(
    r"\d|[年月日号號节旦五清国夜诞除午夕秋前几幾昨今明后过過近周期拜末春夏冬季天假]"
    r"|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|day|night|tonight|morning|afternoon|evening|tomorrow|tmr"
    r"|week|month|year|decade|fortnight|while|mon|tue|wed|thu|fri|sat|sun|spring|summer|autumn|fall|winter"
    r"|valentine|halloween|christmas|independence|fourth|thanksgiving|mother|father|lantern|dragon|moon)")
"""A character or word without which no rule of ``_RULES`` can match (each rule needs one of them): most texts
that name no time are told so by this one search instead of every rule's (~0.1 ms a text)."""


def parse_time_window(query: str, now: float, *, tz: str | tzinfo = "UTC") -> TimeWindow | None:
    """The time span the query names, as ``[start, end)`` POSIX seconds in ``tz``, or None if it names none.

    ``now`` anchors relative expressions ("yesterday", "上周"); see the module docstring for conventions.
    """
    if not query or _MAY_NAME_TIME.search(query) is None:
        return None
    zone = _zone(tz)
    today = datetime.fromtimestamp(now, zone).date()
    best: tuple[int, int, Span, str] | None = None
    for pattern, handler in _RULES:
        for m in pattern.finditer(query):
            if best is not None and (m.start(), -len(m.group())) >= best[:2]:
                continue
            span = handler(m, today)
            if span is not None:
                best = (m.start(), -len(m.group()), span, m.group().strip())
    if best is None:
        return None
    first, after, granularity = best[2]
    anchored = _anchored(query, best[0], best[0] - best[1], (first, after, granularity))
    if anchored is not None:  # "the week before 27 June", "5月6日的前一天": a span next to the date named
        (first, after, granularity), expression = anchored
        best = (best[0], best[1], best[2], expression)

    def ts(d: date) -> float:
        return datetime.combine(d, time.min, tzinfo=zone).timestamp()

    return TimeWindow(ts(first), ts(after), best[3], granularity)


AFFINITY_DECAY_DAYS = 3.0
"""Days over which a time outside a window fades to 1/e of the affinity of one inside it."""


def time_affinity(created_at: float, window: TimeWindow, *, decay_days: float = AFFINITY_DECAY_DAYS) -> float:
    """1.0 for a time inside the window, ``exp(-d / decay_days)`` at ``d`` days outside it, in [0, 1].

    With ``decay_days <= 0`` the edge is hard (0.0 outside). A non-finite time scores 0.0.
    """
    if not math.isfinite(created_at):
        return 0.0
    if window.start <= created_at < window.end:
        return 1.0
    distance = (window.start - created_at if created_at < window.start else created_at - window.end) / DAY
    if decay_days <= 0:
        return 0.0 if distance > 0 else 1.0
    return math.exp(-distance / decay_days)
