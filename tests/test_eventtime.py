"""Event time (``memory/eventtime.py``): a memory is found for the time it tells of, not only when it was said.

Unit tests of the span read from the words (zh and en, "N weekends ago" / "N个周末前"), of the affinity
averaged over a span, and the whole path: a turn said eleven days after the weekend it tells of comes first for a
question naming that weekend's Saturday, ahead of turns said on other days with the same words.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneme.clock import FixedClock
from mneme.memory.base import Kind
from mneme.memory.eventtime import END, NAMES_TIME, START, event_affinity, event_span, event_time, span_of
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.ranking import RecallOptions
from mneme.memory.service import MemoryService
from mneme.memory.timewindow import DAY, TimeWindow, parse_time_window
from mneme.testing import FakeEmbeddings

WED_20 = datetime(2024, 3, 20, 19, 0, tzinfo=UTC).timestamp()  # a Wednesday evening


def days(span: tuple[float, float] | None) -> tuple[date, date] | None:
    if span is None:
        return None
    return datetime.fromtimestamp(span[0], UTC).date(), datetime.fromtimestamp(span[1], UTC).date()


@pytest.mark.parametrize(("text", "expected"), [
    ("两个周末前我们全家去山里露营了", (date(2024, 3, 9), date(2024, 3, 11))),
    ("I went camping with my family two weekends ago.", (date(2024, 3, 9), date(2024, 3, 11))),
    ("a couple of weekends ago we hiked", (date(2024, 3, 9), date(2024, 3, 11))),
    ("上周末我去看了周杰伦的演唱会", (date(2024, 3, 16), date(2024, 3, 18))),
    ("Lost my job as a banker yesterday", (date(2024, 3, 19), date(2024, 3, 20))),
    ("我三天前读完了《活着》", (date(2024, 3, 17), date(2024, 3, 18))),
    ("去年夏天我在青岛学会了游泳", (date(2023, 6, 1), date(2023, 9, 1))),
])
def test_the_span_a_turn_tells_of(text: str, expected: tuple[date, date]) -> None:
    assert days(event_span(text, WED_20)) == expected


@pytest.mark.parametrize("text", [
    "今天我去公园跑了一个小时", "I ran this morning", "这周我一直在加班", "this week was busy",
    "我有两个孩子", "Mondays are hard", "",
])
def test_no_span_when_the_words_name_no_time_or_only_the_day_they_were_said(text: str) -> None:
    assert event_span(text, WED_20) is None


def test_the_reply_is_read_when_the_user_names_no_time() -> None:
    assert days(event_span("还不错", WED_20, reply="你上周末去爬山了，感觉怎么样？")) == \
        (date(2024, 3, 16), date(2024, 3, 18))
    assert days(event_span("I went hiking yesterday", WED_20, reply="Last weekend too?")) == \
        (date(2024, 3, 19), date(2024, 3, 20))  # the user's own words come first


def test_affinity_is_the_time_affinity_averaged_over_the_span() -> None:
    day9 = parse_time_window("3月9日", WED_20)
    assert day9 is not None
    weekend = event_span("两个周末前", WED_20)
    assert weekend is not None
    # half the weekend is the 9th (1.0); the other half is within a day after it: exp(-d/3) averaged over d in [0, 1]
    assert event_affinity(weekend, day9) == pytest.approx(0.5 + 0.5 * 3 * (1 - 2.718281828 ** (-1 / 3)), rel=1e-6)
    june = TimeWindow(datetime(2023, 6, 1, tzinfo=UTC).timestamp(), datetime(2023, 7, 1, tzinfo=UTC).timestamp(), "6月")
    last_year = event_span("去年我换了工作", WED_20)
    assert last_year is not None
    assert 30 / 365 < event_affinity(last_year, june) < 30 / 365 + 0.02  # a month's share, plus a little decay
    next_year = (datetime(2024, 1, 1, tzinfo=UTC).timestamp(), datetime(2025, 1, 1, tzinfo=UTC).timestamp())
    assert event_affinity(next_year, TimeWindow(next_year[0] - 365 * DAY, next_year[0], "2023")) < 0.01


@given(st.floats(0, 1000), st.floats(0.01, 400), st.floats(0, 1000), st.floats(0.5, 400), st.floats(0, 10))
def test_affinity_is_in_the_unit_interval_and_one_inside(start: float, length: float, wstart: float,
                                                        wlength: float, decay: float) -> None:
    span = (start * DAY, (start + length) * DAY)
    window = TimeWindow(wstart * DAY, (wstart + wlength) * DAY, "w")
    a = event_affinity(span, window, decay_days=decay)
    assert 0.0 <= a <= 1.0
    if window.start <= span[0] and span[1] <= window.end:
        assert a == pytest.approx(1.0)


def test_stored_spans_are_read_back_only_when_valid() -> None:
    assert span_of({START: 1.0, END: 2.0}) == (1.0, 2.0)
    assert span_of({START: 2.0, END: 1.0}) is None
    assert span_of({START: "x", END: 2.0}) is None
    assert span_of({}) is None


CASES = {
    "zh": ("两个周末前我们全家去山里露营了，晚上看到了很多星星。", "3月9号那天我们全家做了什么？",
           ["我们全家去湖边钓鱼了，钓到三条鱼。", "我们全家一起看了一场电影。", "我们全家去奶奶家吃了饭。"]),
    "en": ("We went camping in the mountains as a family two weekends ago and saw lots of stars.",
           "What did we do as a family on March 9?",
           ["We went fishing at the lake as a family and caught three fish.",
            "We watched a movie together as a family.", "We had dinner at grandma's as a family."]),
}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_turn_is_found_for_the_weekend_it_tells_of(lang: str) -> None:
    told, question, others = CASES[lang]
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None),
                            clock=FixedClock(WED_20 + 7 * DAY))
    for n, text in enumerate(others):  # the same family, other days (two of them the very day it was told)
        service.remember_turn("u", user_text=text, assistant_text="", thread_id=f"o{n}",
                              now=WED_20 - (n - 1) * 3600.0 * (1 if n else 24 * 4))
    service.remember_turn("u", user_text=told, assistant_text="", thread_id="t", now=WED_20)
    got = service.recall("u", question, options=RecallOptions(k=4, reinforce=False, neighbour_share=0.0))
    assert got[0].text.removeprefix("user: ") == told
    assert got[0].signals["time"] > 0.9  # said eleven days after the 9th: by its own time it would be ~0.03
    assert all(it.signals["time"] < 0.3 for it in got[1:])


MAY_10 = datetime(2024, 5, 10, 9, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("text", "expected"), [
    ("5月20日我要去北京出差", (date(2024, 5, 20), date(2024, 5, 21))),
    ("我打算3月去日本看樱花", (date(2025, 3, 1), date(2025, 4, 1))),
    ("I'm going to Paris on June 3", (date(2024, 6, 3), date(2024, 6, 4))),
    ("We will move house on 2 February", (date(2025, 2, 2), date(2025, 2, 3))),
    # what happened keeps the latest such date behind
    ("5月2日我去了北京", (date(2024, 5, 2), date(2024, 5, 3))),
    ("3月我去日本看了樱花", (date(2024, 3, 1), date(2024, 4, 1))),
    ("I went to Paris on June 3", (date(2023, 6, 3), date(2023, 6, 4))),
    # relative expressions are not moved, plan or not
    ("上周我打算去爬山，结果下雨了", (date(2024, 4, 29), date(2024, 5, 6))),
    ("Two weekends ago I planned to go hiking", (date(2024, 4, 27), date(2024, 4, 29))),
    # ... also those a year later would name the same date one year on (days, months)
    ("昨天我本来要去北京，结果没去成", (date(2024, 5, 9), date(2024, 5, 10))),
    ("三天前我准备去看医生", (date(2024, 5, 7), date(2024, 5, 8))),
    ("上个月我打算去日本旅游，后来取消了", (date(2024, 4, 1), date(2024, 5, 1))),
    ("Yesterday I was going to call my mom but forgot", (date(2024, 5, 9), date(2024, 5, 10))),
    ("Two days ago I was going to go hiking", (date(2024, 5, 8), date(2024, 5, 9))),
    # a date without a year that comes round within the month is still its next occurrence
    ("5月11日我要去北京", (date(2024, 5, 11), date(2024, 5, 12))),
    ("6月1日我要去北京", (date(2024, 6, 1), date(2024, 6, 2))),
    # a bare weekday in a plan is the coming one; what happened, the last
    ("周日我要去看演唱会", (date(2024, 5, 12), date(2024, 5, 13))),
    ("We will go hiking on Sunday", (date(2024, 5, 12), date(2024, 5, 13))),
    ("We will go hiking on Sun", (date(2024, 5, 12), date(2024, 5, 13))),
    ("周日我去看了演唱会", (date(2024, 5, 5), date(2024, 5, 6))),
    # ... and so is a bare day of the month ("on the 14th", 14号): the coming one, else the last
    ("14号我要去北京", (date(2024, 5, 14), date(2024, 5, 15))),
    ("我打算2号去上海", (date(2024, 6, 2), date(2024, 6, 3))),
    ("I'm flying to Madrid on the 14th", (date(2024, 5, 14), date(2024, 5, 15))),
    ("I'll call her on the 31st", (date(2024, 5, 31), date(2024, 6, 1))),
    ("我2号去了上海", (date(2024, 5, 2), date(2024, 5, 3))),
    ("On the 2nd I went to the dentist", (date(2024, 5, 2), date(2024, 5, 3))),
    ("My daughter turns 7 on March 12", (date(2025, 3, 12), date(2025, 3, 13))),  # turning an age lies ahead
    # a bare day told as behind stays (found in review), one not told so is the coming one, plan or none
    ("14号我们吵了一架，我打算离婚", (date(2024, 4, 14), date(2024, 4, 15))),
    ("My dog died on the 14th and I will never forget it", (date(2024, 4, 14), date(2024, 4, 15))),
    ("14号我本来要去北京的", (date(2024, 4, 14), date(2024, 4, 15))),
    ("My interview is on the 25th", (date(2024, 5, 25), date(2024, 5, 26))),
    ("5号那天我去医院检查，医生说没事", (date(2024, 5, 5), date(2024, 5, 6))), ("我是5号到的北京", (date(2024, 5, 5),
                                                                                   date(2024, 5, 6))),
    ("I failed my driving test on the 3rd.", (date(2024, 5, 3), date(2024, 5, 4))),
    ("3号晚上我跟老公大吵一架", (date(2024, 5, 3), date(2024, 5, 4))),  # no word of plan: the last one
    ("My sister said she will come on the 14th.", (date(2024, 5, 14), date(2024, 5, 15))),
    ("14号就要考试了", (date(2024, 5, 14), date(2024, 5, 15))), ("我已经约好了14号去医院复查", (date(2024, 5, 14),
                                                                                     date(2024, 5, 15))),
    ("We're getting married on the 14th.", (date(2024, 5, 14), date(2024, 5, 15))),
    ("I got the offer on the 5th and will start in June", (date(2024, 5, 5), date(2024, 5, 6))),
    ("5号的家长会上老师批评了我儿子", (date(2024, 5, 5), date(2024, 5, 6))),  # 家长会 is no 会 of a plan
    ("14号我要过生日", (date(2024, 5, 14), date(2024, 5, 15))),
    ("14号他要过来", (date(2024, 5, 14), date(2024, 5, 15))),
    ("I'm going to get my car fixed on the 14th.", (date(2024, 5, 14), date(2024, 5, 15))),
    ("5号考试没考好，很难过", (date(2024, 5, 5), date(2024, 5, 6))),
    ("我14号会上班", (date(2024, 5, 14), date(2024, 5, 15))),
    ("We were going to meet on the 5th.", (date(2024, 5, 5), date(2024, 5, 6))),
    ("I'll never forget what happened on the 5th.", (date(2024, 5, 5), date(2024, 5, 6))),
    ("I'm worried about my exam on the 25th.", (date(2024, 5, 25), date(2024, 5, 26))),
    ("提醒我25号交房租", (date(2024, 5, 25), date(2024, 5, 26))),
    ("14号快到了", (date(2024, 5, 14), date(2024, 5, 15))),
    ("3月5号我准备了材料，领导说要重写", (date(2024, 3, 5), date(2024, 3, 6))),  # a 要 of someone else's
    ("She turned 7 on March 12", (date(2024, 3, 12), date(2024, 3, 13))),
    # words that look ahead name the span ahead (said on Friday 10 May)
    ("下周三我要去面试", (date(2024, 5, 15), date(2024, 5, 16))),
    ("明天我要去北京", (date(2024, 5, 11), date(2024, 5, 12))),
    ("We're thinking about going camping next month", (date(2024, 6, 1), date(2024, 7, 1))),
    ("My sister is visiting in two weeks, can't wait!", (date(2024, 5, 20), date(2024, 5, 27))),
    # preparing or training for it, looking forward to it: it lies ahead
    ("I'm training for the marathon in April", (date(2025, 4, 1), date(2025, 5, 1))),
    ("I'm looking forward to the concert on March 5th", (date(2025, 3, 5), date(2025, 3, 6))),
    ("我很期待3月的演唱会", (date(2025, 3, 1), date(2025, 4, 1))),
    ("我在为明年四月的马拉松训练", (date(2025, 4, 1), date(2025, 5, 1))),
    ("I ran the marathon in April", (date(2024, 4, 1), date(2024, 5, 1))),
    # a year named, or a plan that lies behind, is not moved (found in review)
    ("去年12月我准备考研", (date(2023, 12, 1), date(2024, 1, 1))),
    ("I was preparing for exams last December", (date(2023, 12, 1), date(2024, 1, 1))),
    ("I was looking forward to the concert on March 5th but it got cancelled", (date(2024, 3, 5), date(2024, 3, 6))),
    ("期待已久的演唱会3月5号终于看了", (date(2024, 3, 5), date(2024, 3, 6))),
    # ... but a plan with a 了 or 已经 of its own is still ahead (found in review)
    ("我打算3月去日本，已经请好假了", (date(2025, 3, 1), date(2025, 4, 1))),
    ("我要去日本了，3月出发", (date(2025, 3, 1), date(2025, 4, 1))),
    ("我已经报名了，4月要去跑马拉松", (date(2025, 4, 1), date(2025, 5, 1))),
    # breaks: 寒假 moves with 春节 (除夕 2025 is 28 January), a break one is heading home for lies ahead
    ("寒假打算去哈尔滨", (date(2025, 1, 7), date(2025, 2, 18))),
    ("暑假我要去云南", (date(2024, 7, 1), date(2024, 9, 1))), ("暑假我去了云南", (date(2023, 7, 1), date(2023, 9, 1))),
    ("I'm going home for winter break", (date(2024, 12, 18), date(2025, 1, 6))),
    ("I'm going through a hard time since Christmas", (date(2023, 12, 25), date(2023, 12, 26))),
    # what was prepared, or a trip back from it, lies behind (found in review)
    ("过年的时候我准备了很多年货", (date(2024, 2, 9), date(2024, 2, 17))),
    ("母亲节我准备了礼物", (date(2023, 5, 14), date(2023, 5, 15))),
    ("We're driving back from Thanksgiving at my parents'", (date(2023, 11, 23), date(2023, 11, 24))),
    ("I'm going to quit after Christmas", (date(2024, 12, 25), date(2024, 12, 26))),  # long past: the next
    ("我打算从3月5号开始健身", (date(2025, 3, 5), date(2025, 3, 6))),
    ("从3月5号开始我就想换工作，打算下个月辞职", (date(2024, 3, 5), date(2024, 3, 6))),  # since then (found in review)
    ("I'm driving to the hospital, my son broke his arm on March 3", (date(2024, 3, 3), date(2024, 3, 4))),
    ("I'm heading to work. On March 3 my boss yelled at me", (date(2024, 3, 3), date(2024, 3, 4))),
    ("I'm flying home on March 3", (date(2025, 3, 3), date(2025, 3, 4))),  # on the way, in the clause of the date
    ("母亲节我准备了礼物，她说不要", (date(2023, 5, 14), date(2023, 5, 15))),
    ("I'm flying home from Paris on January 3", (date(2025, 1, 3), date(2025, 1, 4))),
    ("我准备了礼物，打算3月5号送给她", (date(2025, 3, 5), date(2025, 3, 6))),  # a plan after what was prepared
    ("母亲节我准备了礼物，要送给妈妈", (date(2024, 5, 12), date(2024, 5, 13))),  # 要: still to give
    ("母亲节我准备了很重要的礼物", (date(2023, 5, 14), date(2023, 5, 15))),  # 重要 is no 要
])
def test_a_plan_names_the_next_such_date_what_happened_the_last(text: str, expected: tuple[date, date]) -> None:
    assert days(event_span(text, MAY_10)) == expected


@pytest.mark.parametrize(("text", "has_span", "named"), [
    ("今天我去了博物馆", False, True), ("I lost my job at Door Dash this month", False, True),
    ("昨天我去了博物馆", True, True), ("We went camping two weekends ago", True, True),
    ("我喜欢博物馆", False, False), ("I love camping", False, False)])
def test_event_time_says_whether_the_words_name_a_time_even_the_day_said(text: str, has_span: bool,
                                                                        named: bool) -> None:
    said = datetime(2023, 7, 17, 10, tzinfo=UTC).timestamp()
    span, names = event_time(text, said)
    assert (span is not None, names) == (has_span, named)
    assert span == event_span(text, said)


def test_a_turn_that_names_its_own_day_is_flagged_when_written() -> None:
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(WED_20))
    service.remember_turn("u", user_text="今天我去了博物馆", assistant_text="", thread_id="t", now=WED_20)
    service.remember_turn("u", user_text="我喜欢博物馆", assistant_text="", thread_id="t2", now=WED_20)
    flags = {r.text: r.metadata.get(NAMES_TIME) for r in service.store.scan("u", kinds=[Kind.EPISODIC])}
    assert flags["user: 今天我去了博物馆"] is True and flags["user: 我喜欢博物馆"] is None


@pytest.mark.parametrize(("text", "reply"), [
    ("I love camping in the mountains", "That sounds lovely! How are you feeling today?"),
    ("我喜欢露营", "听起来很棒！你今天感觉怎么样？"),
    ("My sister plays the cello", "Anything else I can help you with this week?"),
])
def test_a_reply_that_names_the_present_does_not_date_the_user_s_words(text: str, reply: str) -> None:
    said = datetime(2023, 7, 17, 10, tzinfo=UTC).timestamp()
    assert event_time(text, said, reply=reply) == (None, False)


def test_a_reply_s_span_still_dates_a_user_answer() -> None:
    span, _ = event_time("还不错", WED_20, reply="你上周末去爬山了，感觉怎么样？")
    assert days(span) == (date(2024, 3, 16), date(2024, 3, 18))


def test_a_festival_named_in_the_question_finds_the_turn_said_at_it() -> None:
    """春节 moves every year: the window is that year's Spring Festival holiday (10 Feb 2024 = 初一)."""
    festival = datetime(2024, 2, 12, 10, tzinfo=UTC).timestamp()
    later = datetime(2024, 3, 2, 10, tzinfo=UTC).timestamp()  # another visit, more recent
    asked = datetime(2024, 3, 14, 10, tzinfo=UTC).timestamp()
    for question in ("春节我回老家做了什么？", "What did I do at home over Chinese New Year?"):
        service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(asked))
        zh = question.startswith("春")
        service.remember_turn("u", user_text="回老家看爸妈了。" if zh else "I went home to see my parents.",
                              assistant_text="", thread_id="a", now=festival)
        service.remember_turn("u", user_text="回老家看了爸妈。" if zh else "I went home and saw my parents.",
                              assistant_text="", thread_id="b", now=later)
        timed = service.recall("u", question, options=RecallOptions(k=2, reinforce=False), now=asked)
        plain = service.recall("u", question, options=RecallOptions(k=2, reinforce=False, time_aware=False), now=asked)
        assert timed[0].thread_id == "a" and timed[0].signals["time"] == 1.0
        assert plain[0].thread_id == "b"  # without the festival's window the more recent visit wins


PLANS = {
    "zh": ("下周三我要去医院做体检，早上八点到。", "我今天有什么安排？",
           ["我去超市买了水果。", "我去医院看了牙。", "我去公园跑步了。"]),
    "en": ("I have a dentist appointment next Wednesday at nine.", "What do I have on today?",
           ["I bought fruit at the market.", "I went to the dentist about my tooth.", "I went running in the park."]),
}


def test_a_plan_after_a_time_just_past_leaves_it_there() -> None:
    dec_27 = datetime(2023, 12, 27, 12, tzinfo=UTC).timestamp()  # two days after Christmas
    told = event_span("I'm going back to work after Christmas", dec_27)
    assert days(told) == (date(2023, 12, 25), date(2023, 12, 26))
    jan_10 = datetime(2024, 1, 10, 12, tzinfo=UTC).timestamp()  # back at work after the holidays (found in review)
    assert days(event_span("I'm going back to work after Christmas", jan_10)) == (date(2023, 12, 25),
                                                                                 date(2023, 12, 26))
    mar_14 = datetime(2024, 3, 14, 12, tzinfo=UTC).timestamp()  # two weeks after the winter break ended
    assert days(event_span("这个寒假我打算去滑雪", mar_14)) == (date(2025, 1, 7), date(2025, 2, 18))  # a plan: the next


@pytest.mark.parametrize("lang", sorted(PLANS))
def test_a_plan_is_found_on_the_day_it_names(lang: str) -> None:
    """Said on Wednesday 20 March, "next Wednesday" is the 27th: asked that day what is on, it comes first."""
    plan, question, others = PLANS[lang]
    asked = WED_20 + 7 * DAY
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(asked))
    service.remember_turn("u", user_text=plan, assistant_text="", thread_id="p", now=WED_20)
    for n, text in enumerate(others):  # said since, closer to the day asked (the same place, a similar visit)
        service.remember_turn("u", user_text=text, assistant_text="", thread_id=f"o{n}", now=asked - (n + 3) * DAY)
    got = service.recall("u", question, options=RecallOptions(k=4, reinforce=False, neighbour_share=0.0))
    assert got[0].text.removeprefix("user: ") == plan
    assert got[0].signals["time"] > 0.9  # said a week before: by its own time it would be ~0.1
