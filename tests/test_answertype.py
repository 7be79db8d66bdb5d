"""A question that asks when is answered by the turn that says when (memory/answertype.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mneme.clock import FixedClock
from mneme.errors import InvalidInputError
from mneme.graph.context import Context
from mneme.memory.answertype import (
    asks_feeling,
    asks_plans,
    asks_profile,
    asks_recap,
    asks_slot,
    asks_when,
    confides,
    describes_user,
    fills,
    tells_when,
)
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.eventtime import END, NAMES_TIME, START
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.ranking import RecallOptions
from mneme.memory.service import MemoryService
from mneme.memory.timewindow import DAY
from mneme.testing import FakeEmbeddings

MON_17_JULY = 1689552000.0  # 2023-07-17 00:00 UTC


@pytest.mark.parametrize("query", [
    "When did Melanie go camping?", "when was Jon in Paris", "How long has Caroline had her friends?",
    "What day did we meet?", "我什么时候开始学钢琴的？", "我们哪天去的博物馆？", "我学画画多久了？",
    "那是哪一年的事？"])
def test_questions_that_ask_when(query: str) -> None:
    assert asks_when(query) == ("how long" if "long" in query or "多久" in query else "when")


@pytest.mark.parametrize("query", [
    "Where did Melanie go camping?", "What did Jon see in Paris?", "Who is Caroline's mentor?", "Whenever is fine.",
    "我在哪里学钢琴？", "我喜欢什么颜色？", "我上周末干什么了？"])
def test_questions_that_do_not(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(("query", "asked"), [
    # other ways people ask for a time than "when" (none of them is in the development sets)
    ("Which year did Lena adopt her first cat?", "when"), ("In which month did Omar move?", "when"),
    ("What week was the concert?", "when"), ("How many years ago did I start playing the guitar?", "when"),
    ("How many days did we stay in Paris?", "how long"), ("how many hours a week do I practise?", "how long"),
    ("我几月去的日本？", "when"), ("我是几号搬家的？", "when"), ("我们星期几见面？", "when"),
    ("我每天几点起床？", "when"), ("我几年前开始跑步的？", "when"), ("我学钢琴学了几年了？", "how long"),
    ("我们认识多少年了？", "how long"), ("我在上海住了几个月？", "how long"),
    # "几" that is not a question of time: these days, a few days ago, these points, which grade, which line
    ("这几天我做了什么？", None), ("前几天我去了哪里？", None), ("最近几年我去过哪些国家？", None),
    ("你觉得这几点建议怎么样？", None), ("我女儿上几年级？", None), ("我坐几号线上班？", None),
    ("How many kids does Melanie have?", None), ("How many times did we go to the beach?", None)])
def test_other_ways_of_asking_when(query: str, asked: str | None) -> None:
    assert asks_when(query) == asked


def record(text: str, **metadata: float) -> MemoryRecord:
    return MemoryRecord(id="r", user_id="u", kind=Kind.EPISODIC, text=text, created_at=0.0, metadata=dict(metadata))


@pytest.mark.parametrize("text", [
    "user: I've known these friends for 4 years.", "user: We have been married for a few years now.",
    "user: 我学钢琴三年了。", "user: 我们认识10年了", "user: 这个习惯坚持了两个月了", "user: 我在公园慢跑了一个小时",
    "user: 我学了三年钢琴", "user: I ran for an hour this morning"])
def test_a_duration_tells_how_long(text: str) -> None:
    assert tells_when(record(text), "how long")
    assert not tells_when(record(text), "when")  # "when" is answered by a time, not a duration


def test_a_stored_event_span_tells_when_and_plain_talk_does_not() -> None:
    assert tells_when(record("user: we went camping", **{START: 1.0, END: 2.0}))
    assert tells_when(MemoryRecord(id="r", user_id="u", kind=Kind.EPISODIC, text="user: 今天去露营了", created_at=0.0,
                                   metadata={NAMES_TIME: True}))  # names the day it was said
    assert not tells_when(record("user: we went camping", **{START: 2.0, END: 1.0}))  # not a valid span
    assert not tells_when(record("user: Camping is the best, I love camping in the mountains."))
    assert not tells_when(record("user: 露营真好玩，我最喜欢去山里露营。"))


CASES = {
    "zh": ("两个周末前我们全家去山里露营了。", "我们全家什么时候去露营的？",
           ["我们全家经常去露营的。", "露营的装备我们全家准备好了。"]),
    "en": ("We went camping as a family two weekends ago.", "When did we go camping as a family?",
           ["We love family camping.", "We got new camping gear for the family."]),
    "zh-几月": ("两个周末前我们全家去山里露营了。", "我们全家是几月去露营的？",
              ["我们全家经常去露营的。", "露营的装备我们全家准备好了。"]),
    "en-which-month": ("We went camping as a family two weekends ago.",
                       "In which month did we go camping as a family?",
                       ["We love family camping.", "We got new camping gear for the family."]),
}


@pytest.mark.parametrize("lang", sorted(CASES))
@pytest.mark.parametrize("weight", [0.0, 0.2])
def test_the_turn_that_says_when_comes_first(lang: str, weight: float) -> None:
    told, question, talk = CASES[lang]
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None),
                            clock=FixedClock(MON_17_JULY + 2 * DAY))
    for n, text in enumerate(talk):  # other days' talk about the topic, with more of the question's words
        service.remember_turn("u", user_text=text, assistant_text="", thread_id=f"o{n}",
                              now=MON_17_JULY - (n + 3) * DAY)
    service.remember_turn("u", user_text=told, assistant_text="", thread_id="t", now=MON_17_JULY)
    got = service.recall("u", question, options=RecallOptions(k=3, reinforce=False, neighbour_share=0.0,
                                                              answer_weight=weight))
    first = got[0].text.removeprefix("user: ")
    if weight:
        assert first == told and got[0].signals["when"] == 1.0
        assert all("when" not in it.signals for it in got[1:])
    else:  # without the answer type, the turns that repeat the topic's words win: the case is a real one
        assert first != told


def test_a_non_when_question_gets_no_bonus() -> None:
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(MON_17_JULY))
    service.remember_turn("u", user_text=CASES["en"][0], assistant_text="", thread_id="t", now=MON_17_JULY)
    got = service.recall("u", "Where did we go camping as a family?", options=RecallOptions(reinforce=False))
    assert got and "when" not in got[0].signals


def test_context_refuses_an_answer_weight_outside_the_unit_interval() -> None:
    with pytest.raises(InvalidInputError, match="answer_weight"):
        Context(user_id="u", answer_weight=1.5)
    assert Context(user_id="u", answer_weight=0.0).answer_weight == 0.0


@pytest.mark.parametrize(("query", "feeling"), [
    ("我最近心情怎么样？", True), ("我跟你倾诉过什么烦恼？", True), ("我上次为什么难过？", True),
    ("上次我为什么着急", True), ("我担心什么来着", True),
    ("我担心的那个面试是哪天", False), ("我最近在担心什么", True),
    ("我担心的事是什么", True), ("我女儿害怕什么", False), ("我老公生气的时候说了什么", False),
    ("我最近压力大吗？", True), ("How have I been feeling lately?", True), ("What was bothering me?", True),
    ("What did I say about my mood?", True),
    ("When was I sad?", True), ("我什么时候心情不好？", True), ("What made me sad?", True),
    # not about the user's feelings (found in review)
    ("高压锅的压力阀怎么调？", False), ("我的轮胎压力应该是多少？", False), ("How am I doing on my budget?", False),
    ("How do I feel about sushi?", False), ("Who was upset about the delay?", False), ("感受器是什么？", False),
    ("我的猫叫什么？", False), ("Where do I live?", False),
    ("我最近状态怎么样？", True), ("我最近过得怎么样", True), ("状态栏怎么设置", False), ("我的状态", False),
    ("帮我查一下我的状态怎么样", False), ("最近我的状态怎么样", True), ("你觉得我的状态怎么样？", True),
    # something chosen to suit the mood names it, but does not ask about it
    ("What music fits my mood?", False), ("推荐点适合我心情的歌", False), ("A movie for my mood tonight?", False),
    ("How is my mood lately?", True), ("我最近心情不好，适合做什么？", True), ("What's wrong with my mood?", True)])
def test_a_question_about_how_the_user_felt(query: str, feeling: bool) -> None:
    assert asks_feeling(query) is feeling
    assert asks_when(query) == ("when" if query in ("When was I sad?", "我什么时候心情不好？", "我担心的那个面试是哪天")
                                else None)


def test_a_confided_worry_is_what_answers_a_question_about_feelings() -> None:
    summary = MemoryRecord(id="s", user_id="u", kind=Kind.SUMMARY, text="用户倾诉了烦恼：因工作被老板批评而疲惫。",
                           created_at=0.0)
    assert confides(summary) and not confides(record("user: 我养了一只猫"))


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
@pytest.mark.parametrize("question", ["我最近心情怎么样？", "How have I been feeling lately?", "When was I sad?"])
def test_a_question_about_feelings_lists_the_summary_under_the_relevance_floor(question: str) -> None:
    from mneme.embeddings import load_embedder

    service = MemoryService(InProcessStore(load_embedder("use-m3")), keyword=KeywordIndex(None),
                            clock=FixedClock(MON_17_JULY))
    for text in ["我叫李雷，住在杭州，是一名程序员", "我养了一只橘猫叫大橘",
                 "我今天好累，被老板骂了一顿，说我写的代码全是bug", "I went hiking in the Alps last summer"]:
        service.remember_turn("u", user_text=text, assistant_text="", thread_id="t", now=MON_17_JULY)
    strict = RecallOptions(k=3, reinforce=False, relevance_floor=True)
    got = service.recall("u", question, options=strict)
    assert got and got[0].kind == Kind.SUMMARY and got[0].signals["when"] == 1.0
    for other in ["我的猫叫什么？", "高压锅的压力阀怎么调？", "How am I doing on my hiking?"]:  # no bonus, no pass
        # (but the fact holding the cat's name answers 我的猫叫什么？ as its slot: asks_slot)
        assert all("when" not in it.signals or it.signals.get("slot") == 1.0
                   for it in service.recall("u", other, options=strict))
    assert all(it.kind != Kind.SUMMARY for it in service.recall("u", "我的猫叫什么？", options=strict))


@pytest.mark.parametrize(("query", "profile"), [
    ("你对我了解多少？", True), ("你都记得我什么？", True), ("你还记得我吗", True), ("介绍一下我", True),
    ("关于我你知道什么", True), ("我是什么样的人？", True), ("我是谁", True), ("你知道我哪些事", True),
    ("What do you know about me?", True), ("What have I told you about myself?", True), ("Who am I?", True),
    ("Tell me what you know about me", True), ("Do you remember me?", True),
    ("用户的个人信息有哪些", True), ("What facts about the user are stored?", True),  # as the rewrite may say it
    # a topic is named: the topic decides, not the whole profile
    ("你记得我的猫吗", False), ("你知道我住哪吗", False), ("说说我的工作", False), ("我是一名护士", False),
    ("What do you know about my job?", False), ("Who am I meeting tomorrow?", False), ("我是谁的朋友", False),
    ("我知道你是谁", False), ("Tell me about Paris", False),
    ("你知道我什么时候生日吗", False), ("你知道我多少岁吗", False), ("你还记得我哪些朋友吗", False),  # found in review
    ("Tell me everything you know about Paris", False), ("怎么保护用户的个人信息", False),
    ("How do I edit the user profile page?", False)])
def test_a_question_about_the_user_as_a_whole(query: str, profile: bool) -> None:
    assert asks_profile(query) is profile


def test_facts_and_preferences_are_what_describe_the_user() -> None:
    fact = MemoryRecord(id="f", user_id="u", kind=Kind.FACT, text="用户住在杭州", created_at=0.0)
    pref = MemoryRecord(id="p", user_id="u", kind=Kind.PREFERENCE, text="用户喜欢喝乌龙茶", created_at=0.0)
    assert describes_user(fact) and describes_user(pref) and not describes_user(record("user: 我住在杭州"))


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
@pytest.mark.parametrize("question", ["你对我了解多少？", "What do you know about me?", "介绍一下我"])
def test_a_question_about_the_user_lists_what_is_known_of_them(question: str) -> None:
    from mneme.embeddings import load_embedder

    service = MemoryService(InProcessStore(load_embedder("use-m3")), keyword=KeywordIndex(None),
                            clock=FixedClock(MON_17_JULY))
    said = ["我是一名护士，在市医院上班", "我的猫叫豆豆", "我住在杭州", "我喜欢喝乌龙茶", "今天下雨了，出门忘带伞"]
    for text in said:
        service.remember_turn("u", user_text=text, assistant_text="", thread_id="t", now=MON_17_JULY)
    known = {r.text for r in service.store.scan("u", kinds=[Kind.FACT, Kind.PREFERENCE])}
    assert {"用户住在杭州", "用户的猫叫豆豆", "用户喜欢喝乌龙茶"} <= known
    strict = RecallOptions(k=10, reinforce=False, relevance_floor=True)
    got = service.recall("u", question, options=strict)
    assert known <= {it.text for it in got}  # every fact and preference, each counted relevant
    assert {it.kind for it in got[:len(known)]} <= {Kind.FACT, Kind.PREFERENCE}  # before any episode
    assert "雨" not in " ".join(it.text for it in got[:len(known)])
    topic = service.recall("u", "我的猫叫什么？", options=strict)  # a question with a topic is not a profile
    assert topic and "豆豆" in topic[0].text and all("乌龙茶" not in it.text for it in topic)
    assert service.recall("v", question, options=strict) == []  # another user knows nothing of u


@pytest.mark.parametrize(("query", "recap"), [
    ("我们上次聊了什么？", True), ("我昨天跟你说了什么", True), ("我最近在忙什么", True), ("这几天我都干了啥", True),
    ("上周我们聊了什么", True), ("最近发生了什么", True), ("你还记得我们聊过什么吗", True),
    ("我3月5日跟你说了什么", True),
    ("What did we talk about last time?", True), ("What have I been up to lately?", True),
    ("What did I tell you yesterday?", True), ("What did I do last weekend?", True),
    # a topic is named, or the assistant is asked about itself
    ("我昨天跟你说了我的猫什么", False), ("What did I say about my cat?", False), ("我上周去哪玩了", False),
    ("我在学校做了什么实验", False), ("我女儿最近在忙什么", False), ("你在忙什么", False),
    ("What have you been up to?", False), ("What did Caroline say?", False), ("What happened to my car?", False),
    ("我们聊过的那本书叫什么", False), ("我周末干什么？", False), ("What do I do on weekends?", False),
    ("我是做什么的", False), ("我是干什么的", False), ("你说什么？", False),  # found in review
    ("What have I done this week?", True), ("上次跟你聊了什么？", True), ("你还记得上次聊了什么吗", True)])
def test_a_question_that_asks_what_was_said_or_done_then(query: str, recap: bool) -> None:
    from mneme.memory.timewindow import parse_time_window

    window = parse_time_window(query, MON_17_JULY)
    assert asks_recap(query, window.expression if window else "") is recap


def said_days_ago(backend: str, tmp_path: Path, turns: list[tuple[int, str]], k: int,
                  ) -> tuple[MemoryService, Callable[..., list[str]]]:
    """A service over the real use-m3 model (``backend``: in-process or embedded Chroma) where user ``u`` said each
    text that many days before MON_17_JULY, and ``said(question, user="u")``: the texts recalled, floor applied."""
    from mneme.embeddings import load_embedder
    from mneme.memory.chroma import open_chroma_store

    embedder = load_embedder("use-m3")
    store = InProcessStore(embedder) if backend == "memory" else open_chroma_store(data_dir=tmp_path, embedder=embedder)
    service = MemoryService(store, keyword=KeywordIndex(None), clock=FixedClock(MON_17_JULY))
    for days, text in turns:
        service.remember_turn("u", user_text=text, thread_id=f"t{days}", now=MON_17_JULY - days * DAY + 3600)
    strict = RecallOptions(k=k, reinforce=False, relevance_floor=True)

    def said(question: str, user: str = "u") -> list[str]:
        return [it.text for it in service.recall(user, question, options=strict)]

    return service, said


DAYS_AGO = [(20, "我在准备考研，数学好难"), (9, "这周末去爬了黄山，风景很美"), (3, "我最近在学做蛋糕，第一次烤焦了"),
            (1, "今天面试了一家互联网公司，感觉还不错"), (1, "I went to the dentist and got a filling"),
            (1, "我住在杭州")]


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
@pytest.mark.parametrize("backend", ["memory", "chroma"])
def test_a_recap_lists_what_was_said_then_newest_first(backend: str, tmp_path: Path) -> None:
    service, said = said_days_ago(backend, tmp_path, DAYS_AGO, k=4)
    assert "用户住在杭州" in {r.text for r in service.store.scan("u", kinds=[Kind.FACT])}
    yesterday = said("我昨天跟你说了什么")  # that day only, both languages, what was said told once (not the fact)
    assert sorted(t[6:9] for t in yesterday) == ["I w", "今天面", "我住在"], yesterday
    lately = said("What have I been up to lately?")  # no time named: the last week, newest first
    assert len(lately) == 4 and "蛋糕" in lately[-1] and not any("考研" in t or "黄山" in t for t in lately)
    assert any("黄山" in t for t in said("What did I tell you two weeks ago?"))  # 9 days: the window, widened
    assert said("我的猫叫什么？") == []  # not a recap: the floor still holds
    assert said("我们上次聊了什么？", user="v") == []  # another user has said nothing


@pytest.mark.parametrize(("query", "plans"), [
    ("我接下来有什么安排？", True), ("我下周有什么计划", True), ("我之前说过要做什么", True), ("我明天要干什么", True),
    ("明天要干嘛", True), ("What are my plans?", True), ("What do I have coming up?", True), ("我明天要去哪里", True),
    ("What am I doing tonight?", True),
    ("What's on my schedule next week?", True), ("What are my plans for next year?", True),
    ("Where am I travelling next year?", True), ("我明年要去哪旅行？", True), ("我要去哪玩来着", True),
    ("Where am I going wrong with my diet?", False), ("Where am I heading in life?", False),
    ("What are my plans for my birthday?", False), ("我应该去哪旅行", False),
    # a topic is named (it ranks as any question), a statement, the assistant asked about itself
    ("我下周要去哪里出差", False), ("What am I doing wrong?", False), ("我要做什么菜", False),
    ("我不知道要做什么", False), ("My plans fell through", False), ("我打算明年去日本旅游", False),
    ("我的计划失败了", False), ("这个计划怎么样", False),
    ("我昨天做了什么", False), ("What did I do last weekend?", False), ("你有什么计划", False)])
def test_a_question_about_plans(query: str, plans: bool) -> None:
    from mneme.memory.timewindow import parse_time_window

    window = parse_time_window(query, MON_17_JULY)
    assert asks_plans(query, window.expression if window else "") is plans


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
@pytest.mark.parametrize("backend", ["memory", "chroma"])
def test_a_question_about_plans_lists_what_lies_ahead_soonest_first(backend: str, tmp_path: Path) -> None:
    plans = [(15, "我打算明年去日本旅游"), (10, "我明天要加班"), (8, "我喜欢喝乌龙茶"), (2, "我下周要去医院复查"),
             (1, "I'm flying to Paris next Friday")]
    _, said = said_days_ago(backend, tmp_path, plans, k=5)

    for question in ["我接下来有什么安排？", "What are my plans?"]:
        got = said(question)  # what lies ahead first, soonest first, in both languages: 下周 from 17 July, Paris on
        assert [t[6:9] for t in got[:3]] == ["我下周", "I'm", "我打算"], got  # the 21st, Japan next year
        assert not any("乌龙茶" in t for t in got)  # not a plan (加班 was for 8 July: after them, if at all)
    assert "Paris" in said("What's on my schedule next week?")[0]  # the window named: 21-27 July 2023
    assert said("我接下来有什么安排？", user="v") == []  # another user has no plans of u's


@pytest.mark.parametrize(("query", "slots"), [
    ("我叫什么名字？", ("name",)), ("What's my name?", ("name",)), ("我多大了", ("age",)), ("How old am I?", ("age",)),
    ("我的生日是哪天", ("birthday",)), ("When is my birthday?", ("birthday",)), ("我住在哪里", ("home_city",)),
    ("What is my birthday?", ("birthday",)), ("我生日啥时候", ("birthday",)), ("我生日在哪个月", ("birthday",)),
    ("我生日是几月", ("birthday",)),
    ("Do you remember my birthday?", ("birthday",)),
    ("any food I don't eat?", ("diet",)), ("What should I do for my birthday?", ()),
    ("我生日想去哪玩", ()), ("Do you remember my birthday party last year?", ()), ("What's my birthday wish?", ()),
    ("Where do I live?", ("home_city",)), ("Where am I from?", ("hometown",)), ("我是做什么的", ("job",)),
    ("What do I do for work?", ("job",)), ("我在哪上班", ("workplace", "work_city")), ("我对什么过敏", ("allergy:",)),
    ("What am I allergic to?", ("allergy:",)), ("我在学什么", ("learning:",)), ("我老婆叫什么", ("partner",)),
    ("What's my wife's name?", ("partner",)), ("我女儿叫什么名字", ("family:女儿", "family:daughter", "family:闺女")),
    ("我哥哥叫什么", ("family:哥哥", "family:brother")), ("我的宠物叫什么", ("pet:",)),
    ("我在哪个城市工作", ("workplace", "work_city")), ("Do I have any allergies?", ("allergy:",)),
    ("我学什么专业的？", ("major",)), ("What's my major?", ("major",)), ("我的专业课很难", ()),
    ("what can't I eat?", ("diet", "allergy:")), ("我有什么不能吃的", ("diet", "allergy:")), ("我不吃什么", ("diet",)),
    ("我在哪上大学", ("school",)), ("我是哪个大学的？", ("school",)), ("Where do I go to college?", ("school",)),
    ("What university do I attend?", ("school",)), ("我的大学生活怎么样", ()),
    ("What college do I want to apply to?", ()),
    ("我男朋友在哪工作", ("work:男朋友", "job:男朋友")), ("What does my wife do with her free time?", ()),
    ("What does my wife do for fun?", ()),
    ("What does my husband do now?", ("work:husband", "work:老公", "work:丈夫", "job:husband", "job:老公", "job:丈夫")),
    ("Where does my husband work?", ("work:husband", "work:老公", "work:丈夫", "job:husband", "job:老公", "job:丈夫")),
    ("我有什么忌口吗？", ("diet",)), ("What foods don't I eat?", ("diet",)),
    ("孕妇有什么忌口", ()), ("狗狗有什么忌口", ()), ("What dietary supplements should I take?", ()),
    ("Do I have any dietary restrictions?", ("diet",)), ("我读什么专业好", ()),
    ("我妈妈的生日是哪天", ("birthday:妈妈", "birthday:mother", "birthday:mom", "birthday:mum", "birthday:母亲",
                           "birthday:妈", "birthday:我妈", "birthday:老妈")),
    ("When's my wife's birthday?", ("birthday:wife", "birthday:老婆", "birthday:妻子", "birthday:爱人", "birthday:太太",
                                    "birthday:媳妇")),
    ("我哥的生日是哪天？", ("birthday:哥哥", "birthday:brother")), ("When is my mom's birthday party?", ()),
    ("我妈的生日礼物买什么好", ()),
    ("When is my mom's birthday gifts due?", ()), ("When is my mom's birthday brunch?", ()),
    ("我哥的生日是啥时候？", ("birthday:哥哥", "birthday:brother")),
    ("我姐的生日在几月", ("birthday:姐姐", "birthday:sister")),
    ("What date is my son's birthday?", ("birthday:son", "birthday:儿子")),
    ("Do you know when my son's birthday is?", ("birthday:son", "birthday:儿子")),
    ("When is my kid's birthday?", ("birthday:孩子", "birthday:宝宝", "birthday:kid", "birthday:kids", "birthday:baby",
                                    "birthday:son", "birthday:儿子", "birthday:daughter", "birthday:女儿",
                                    "birthday:闺女")),
    ("我有哪些忌口", ("diet",)), ("我吃东西有什么忌口吗", ("diet",)), ("我学什么专业的好", ()),
    # statements, another person's slot, the assistant's, and what is not a name or a slot (found in review)
    ("我叫王小明", ()), ("My name is Anna", ()), ("我的工作很累", ()), ("我老婆叫小红", ()), ("你叫什么名字", ()),
    ("What did Caroline say?", ()), ("我女儿是什么时候出生的？", ()),
    ("我老婆是什么星座", ()),
    ("我哥的狗叫什么", ()), ("我叫什么外卖好", ()), ("My mom called me today, what should I say?", ()),
    ("我住哪个酒店", ()), ("我多大的时候学会游泳的", ()), ("我生日那天去哪吃饭", ())])
def test_a_question_about_one_thing_the_user_told(query: str, slots: tuple[str, ...]) -> None:
    assert asks_slot(query) == slots


@pytest.mark.parametrize(("query", "key", "filled"), [
    ("我的狗叫什么？", "pet:金毛狗", True), ("What is my dog called?", "pet:狗", True),
    ("我的狗叫什么？", "pet:猫", False),
    ("我女儿叫什么名字", "family:daughter", True), ("我女儿叫什么名字", "family:妈妈", False),
    ("我哥哥叫什么", "family:弟弟", False), ("Who is my brother?", "family:弟弟", True),
    ("我的宠物叫什么", "pet:猫", True),
    # a pet kept under its breed is the kind asked after (柯基 is a dog), not another kind
    ("我的狗叫什么？", "pet:柯基", True), ("What's my dog called?", "pet:golden retriever", True),
    ("我的狗叫什么？", "pet:布偶猫", False), ("What is my cat called?", "pet:husky", False),
    ("我家柯基叫什么名字？", "pet:狗", True), ("What is my golden retriever's name?", "pet:golden retriever", True),
    ("我家柯基叫什么名字？", "pet:金毛", False), ("What's my husky called?", "pet:golden retriever", False),
    ("我的猫叫什么？", "pet:熊猫", False),
    # a family member's birthday is theirs: never the user's own, nor another member's
    ("我的生日是哪天", "birthday:妈妈", False), ("When is my mom's birthday?", "birthday", False),
    ("我妈的生日是哪天", "birthday:mom", True), ("我老妈的生日是几月几号", "birthday:妈妈", True),
    ("我哥的生日是哪天", "birthday:弟弟", False), ("When is my son's birthday?", "birthday:儿子", True)])
def test_a_family_member_or_pet_slot_is_that_one_by_any_of_its_names(query: str, key: str, filled: bool) -> None:
    fact = MemoryRecord(id="f", user_id="u", kind=Kind.FACT, text="t", created_at=0.0, key=key)
    assert fills(fact, asks_slot(query)) is filled


def test_a_food_the_user_does_not_eat_answers_a_diet_question() -> None:
    def pref(text: str) -> MemoryRecord:
        return MemoryRecord(id="p", user_id="u", kind=Kind.PREFERENCE, text=text, created_at=0.0, key="pref:x")

    assert fills(pref("用户不吃辣"), ("diet",)) and fills(pref("The user doesn't eat pork"), ("diet",))
    assert not fills(pref("用户喜欢辣"), ("diet",)) and not fills(pref("The user dislikes jazz"), ("diet",))
    assert not fills(pref("用户说她儿子不吃辣"), ("diet",)) and not fills(pref("用户不喜欢不吃早饭的人"), ("diet",))


def test_a_fact_fills_a_slot_by_its_key_or_the_key_s_prefix() -> None:
    def fact(key: str | None, kind: Kind = Kind.FACT) -> MemoryRecord:
        return MemoryRecord(id="f", user_id="u", kind=kind, text="t", created_at=0.0, key=key)

    assert fills(fact("name"), ("name",)) and fills(fact("allergy:花生"), ("allergy:",))
    assert not fills(fact("nickname"), ("name",)) and not fills(fact("allergy"), ("allergy:",))
    assert not fills(fact(None), ("name",)) and not fills(fact("pref:tea", Kind.PREFERENCE), ("pref:",))


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
def test_a_slot_question_is_answered_by_its_fact_in_any_language(tmp_path: Path) -> None:
    _, said = said_days_ago("memory", tmp_path, [(30, "我叫王小明，今年28岁"), (25, "My wife's name is Anna"),
                                                 (15, "我老家是四川成都的"), (5, "I'm allergic to peanuts"),
                                                 (4, "我哥哥的狗叫旺财"), (3, "我的猫叫咪咪")], k=3)
    assert said("What's my name?")[0] == "用户的名字是王小明"  # not "My wife's name is Anna" for the shared word
    assert said("我老婆叫什么")[0] == "The user's wife is called Anna"
    assert said("How old am I?")[0] == "用户今年28岁"
    assert said("Where am I from?")[0] == "用户来自四川成都"
    assert said("我对什么过敏")[0] == "The user is allergic to peanuts"
    assert "狗" not in said("我的猫叫什么")[0] and "咪咪" in said("我的猫叫什么")[0]  # that pet, not any pet
    assert said("What's my name?", user="v") == []


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
def test_a_student_s_school_major_diet_and_state_are_found(tmp_path: Path) -> None:
    _, said = said_days_ago("memory", tmp_path, [
        (30, "你好，我是小雨，今年大三，在武汉读书"), (25, "我的专业是计算机，但我其实更喜欢画画"),
        (20, "我男朋友叫阿杰，他在深圳工作"), (10, "我不吃辣"),
        (2, "我最近失眠很严重，一想到考研就焦虑，晚上翻来覆去睡不着")], k=3)
    assert said("我叫什么名字？")[0] == "用户的名字是小雨"
    assert said("我在哪里上学？")[0] == "用户在武汉读书"
    assert said("我学什么专业的？")[0] == "用户的专业是计算机"
    assert said("我有什么忌口吗？")[0] == "用户不吃辣"
    assert said("我最近状态怎么样？")[0].startswith("用户倾诉了")  # the summary of what they confided


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
def test_a_family_member_s_birthday_is_theirs_not_the_user_s(tmp_path: Path) -> None:
    _, said = said_days_ago("memory", tmp_path, [(40, "我的生日是5月1日"), (30, "我妈的生日是3月3号，我想给她准备礼物"),
                                                 (20, "My wife's birthday is on June 5"), (5, "我最近在学吉他")], k=3)
    assert said("我妈的生日是哪天？")[0] == "用户的妈妈的生日是3月3号"
    assert said("When is my mom's birthday?")[0] == "用户的妈妈的生日是3月3号"  # in either language
    assert said("我老婆的生日是什么时候？")[0] == "The user's wife's birthday is June 5"
    assert said("我的生日是哪天？")[0] == "用户的生日是5月1日"  # the user's own, not the mother's


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
def test_a_pet_told_of_by_its_breed_answers_a_question_about_its_kind(tmp_path: Path) -> None:
    _, said = said_days_ago("memory", tmp_path, [(20, "I have a golden retriever called Max"),
                                                 (12, "我老婆叫小红"), (9, "我家的布偶猫叫雪球"),
                                                 (3, "We went hiking with the kids on Sunday")], k=3)
    assert said("What's my dog called?")[0] == "The user's golden retriever is called Max"
    assert said("我的猫叫什么名字？")[0] == "用户的布偶猫叫雪球"  # the cat, not the dog
    assert said("我的狗叫什么名字？")[0] == "The user's golden retriever is called Max"  # in either language
