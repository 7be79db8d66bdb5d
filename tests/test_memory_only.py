"""Memory-only replies a person can use: what was kept, a relevance floor, documents as title + sentence,
the mode label once per chat, questions without "?" not stored."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from mneme.cli.chat import label_once
from mneme.clock import FixedClock
from mneme.graph import nodes
from mneme.graph.context import Context
from mneme.graph.memory_only import best_sentence
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.lowvalue import is_question
from mneme.memory.passages import sentences
from mneme.memory.service import MemoryService, RecallOptions
from mneme.memory.writing import plan_turn
from mneme.prompts import MEMORY_ONLY_EN, MEMORY_ONLY_ZH

HANDBOOK = ("员工手册\n\n员工每年有十五天带薪年假，请假需提前三天在系统中提交申请。报销需在一个月内提交发票。\n\n"
            "办公室每周五下午四点打扫卫生。")
EN_HANDBOOK = ("# Employee handbook\n\nVacation: every employee gets 25 days of paid leave per year. Requests go to "
               "your manager two weeks ahead.\n\nExpenses: keep receipts; claims over 500 euros need the finance "
               "team's approval.")
PIZZA_NIGHT = "# Pizza night\nWe order pizza from Luigi's every Friday at 7 pm."


def _reply(message: str, recalled: list[dict[str, Any]], **ctx: Any) -> str:
    rt = Runtime(context=Context(user_id="alice", **ctx))
    out = nodes.generate_sync({"messages": [HumanMessage(message)], "recalled": recalled},
                              {"configurable": {"thread_id": "t"}}, rt, model=None)
    return str(out["answer"])


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        ("I live in Berlin and I work as a nurse", "Noted: The user lives in Berlin; The user is a nurse"),
        ("我住在柏林，我是一名护士", "记下了：用户住在柏林；用户是一名护士"),
        # the subject dropped after the first clause, as Chinese does
        ("我住在柏林，是护士，对花生过敏", "记下了：用户住在柏林；用户是一名护士；用户对花生过敏"),
        ("I'm allergic to peanuts and my daughter is called Lily",
         "Noted: The user is allergic to peanuts; The user's daughter is called Lily"),
    ],
)
def test_the_reply_names_what_the_turn_keeps(message: str, kept: str) -> None:
    answer = _reply(message, [])
    assert answer.splitlines()[1] == kept
    assert "no memories" not in answer and "还没有" not in answer  # a statement is not a failed search


def test_the_reply_keeps_nothing_when_writing_is_off_or_the_turn_only_asks() -> None:
    assert "Noted" not in _reply("I live in Berlin", [], write_memory=False)
    assert "记下了" not in _reply("我住在哪里", [])
    assert _reply("我今天很难过，被领导骂了", []).splitlines()[1] == MEMORY_ONLY_ZH["kept_summary"]


@pytest.mark.parametrize(("message", "texts"), [("谢谢！", MEMORY_ONLY_ZH), ("哈哈哈", MEMORY_ONLY_ZH),
                                               ("thanks!", MEMORY_ONLY_EN), ("hello", MEMORY_ONLY_EN)])
def test_a_thanks_or_greeting_is_told_there_was_nothing_to_keep_not_that_nothing_was_found(
        message: str, texts: dict[str, str]) -> None:
    answer = _reply(message, [])
    assert texts["nothing_to_keep"] in answer and texts["nothing"] not in answer
    assert MEMORY_ONLY_ZH["nothing"] in _reply("我的猫叫什么？", [])  # a question that finds nothing is told so


def test_an_item_shows_the_time_it_tells_of_beside_the_day_it_was_said() -> None:
    exam = {"id": "sum-1", "kind": "summary", "text": "用户倾诉了烦恼：因学业而紧张（涉及：六级）。", "score": 0.9,
            "source": "memory", "created_at": 1.7e9,  # 2023-11-14
            "metadata": {"event_start": 1699920000 + 65 * 86400, "event_end": 1699920000 + 66 * 86400}}
    assert "- (2023-11-14；说的是 2024-01-18) 用户倾诉了烦恼" in _reply("我六级什么时候考？", [exam])
    trip = {**exam, "text": "user: I went to Kyoto", "metadata": {"event_start": 1699920000 - 10 * 86400,
                                                                  "event_end": 1699920000 - 8 * 86400}}
    assert "- (2023-11-14; about 2023-11-04..2023-11-05) user: I went to Kyoto" in _reply("When did I go to Kyoto?",
                                                                                          [trip])
    said_that_day = {**exam, "metadata": {}}
    assert "- (2023-11-14) 用户倾诉了烦恼" in _reply("我六级什么时候考？", [said_that_day])


def test_an_item_below_the_relevance_floor_is_not_listed() -> None:
    noise = {"id": "ep-9", "kind": "episodic", "text": "user: 周五晚上叫了披萨", "score": 0.3, "source": "memory",
             "created_at": 1.7e9, "signals": {"dense": 0.05, "relevant": 0.0}}
    answer = _reply("我的猫叫什么？", [noise])
    assert "披萨" not in answer and "我记得" not in answer and MEMORY_ONLY_ZH["nothing"] in answer


@pytest.mark.parametrize(("message", "about", "other"), [
    ("我下周三要去北京出差", "user: 上次去北京出差住在国贸附近", "user: 我叫李雷，住在杭州，是一名程序员"),
    ("I'm flying to Berlin next Wednesday", "user: Last time in Berlin I stayed near Mitte",
     "user: My name is Lee, I live in Hangzhou and I'm a programmer"),
    # a word every statement may share (叫, 最近, 两岁, 我家, "today") does not make two about the same thing
    ("我家柯基叫年糕，今年两岁了", "user: 年糕昨天打了疫苗", "user: 我女朋友叫韩梅梅，今年两岁的侄子也在我家"),
    ("最近工作压力好大，经常加班", "user: 老板又让我加班", "user: 我最近在学游泳，每周去两次"),
    ("我的猫生病了", "user: 猫今天不吃饭", "user: 我的车明天要去保养"),
    ("I felt really tired at work today", "user: Work has been crazy since the reorg",
     "user: I felt really happy today at the beach"),
])
def test_a_statement_lists_only_memories_about_the_same_thing(message: str, about: str, other: str) -> None:
    items = [{"id": f"ep-{n}", "kind": "episodic", "text": text, "score": 0.5, "source": "memory",
              "created_at": 1.7e9, "signals": {"dense": 0.4, "relevant": 1.0}} for n, text in enumerate([other, about])]
    answer = _reply(message, items)
    assert about.removeprefix("user: ") in answer and other.removeprefix("user: ") not in answer
    question = "我上次去北京住在哪里？" if "北京" in message else "Where did I stay in Berlin last time?"
    assert other.removeprefix("user: ") in _reply(question, items)  # a question lists every relevant item
    request = "告诉我你记得的关于我的事" if "北京" in message else "Tell me what you remember about me"
    assert other.removeprefix("user: ") in _reply(request, items)  # and so does a request to recall


@pytest.fixture(scope="module")
def m3_service() -> MemoryService:
    from mneme.embeddings import load_embedder

    service = MemoryService(InProcessStore(load_embedder("use-m3")), keyword=KeywordIndex(None),
                            clock=FixedClock(1.7e9))
    service.ingest_document(HANDBOOK, source="handbook.md", title="员工手册")
    service.ingest_document(EN_HANDBOOK, source="employee-handbook.md", title="Employee handbook")
    service.ingest_document(PIZZA_NIGHT, source="pizza.md", title="Pizza night")
    service.remember_turn("alice", user_text="周五晚上我们叫了披萨外卖，很好吃", assistant_text="")
    service.remember_turn("alice", user_text="I ordered a pepperoni pizza on Friday", assistant_text="")
    return service


def _recalled(service: MemoryService, query: str) -> list[dict[str, Any]]:
    return [dict(it.as_dict(), metadata=it.metadata)
            for it in service.recall("alice", query, options=RecallOptions(reinforce=False))]


@pytest.mark.slow  # loads the offline use-m3 model: the floor is about a real embedder's cosines
@pytest.mark.parametrize("question", ["我的猫叫什么？", "What is my cat called?"])
def test_an_unanswerable_question_lists_no_unrelated_documents_or_notes(m3_service: MemoryService,
                                                                        question: str) -> None:
    recalled = _recalled(m3_service, question)
    assert recalled  # recall itself still ranks everything (the model may want it) ...
    answer = _reply(question, recalled)
    for noise in ("员工手册", "披萨", "pizza", "Pizza", "handbook"):  # ... the person sees none of it
        assert noise not in answer
    assert (MEMORY_ONLY_ZH if "猫" in question else MEMORY_ONLY_EN)["nothing"] in answer
    strict = m3_service.recall("alice", question, options=RecallOptions(reinforce=False, relevance_floor=True))
    assert strict == []


@pytest.mark.slow
def test_a_relevant_document_shows_its_title_and_sentence(m3_service: MemoryService) -> None:
    answer = _reply("年假有几天？", _recalled(m3_service, "年假有几天？"))
    (line,) = [x for x in answer.splitlines() if x.startswith("- 员工手册: ")]
    assert "员工每年有十五天带薪年假" in line
    assert "打扫卫生" not in line and "报销" not in line  # one sentence, not the flattened chunk
    assert "披萨" not in answer


@pytest.mark.slow
@pytest.mark.parametrize(("question", "title", "sentence"), [
    ("how many vacation days do I get", "Employee handbook",
     "Vacation: every employee gets 25 days of paid leave per year."),
    ("what about expenses", "Employee handbook",
     "Expenses: keep receipts; claims over 500 euros need the finance team's approval."),
    ("年假有几天", "员工手册", "员工每年有十五天带薪年假，请假需提前三天在系统中提交申请。"),
])
def test_a_long_chunk_is_judged_by_its_best_sentence(m3_service: MemoryService, question: str, title: str,
                                                     sentence: str) -> None:
    recalled = _recalled(m3_service, question)
    (doc,) = [r for r in recalled if r["title"] == title]
    assert doc["signals"]["relevant"] == 1.0
    answer = _reply(question, recalled)
    assert f"- {title}: {sentence} [" in answer
    assert "pizza" not in answer.lower() and "披萨" not in answer
    strict = m3_service.recall("alice", question, options=RecallOptions(reinforce=False, relevance_floor=True))
    assert title in {it.metadata.get("title") for it in strict}  # the floor in recall itself agrees
    assert all(it.metadata.get("title") != "Pizza night" for it in strict)


@pytest.mark.slow
def test_the_handbook_chunk_alone_is_below_the_floor_for_a_question_without_a_mark(
        m3_service: MemoryService) -> None:
    # why the sentence test exists: the whole chunk's cosine does not clear the floor for this question
    from mneme.memory.relevance import NullBaseline

    embedder = m3_service.store.embedder
    query = embedder.embed(["how many vacation days do I get"])[0]
    chunk = embedder.embed([EN_HANDBOOK])[0]
    cosine = float(sum(a * b for a, b in zip(query, chunk, strict=True)) /
                   (sum(a * a for a in query) ** 0.5 * sum(b * b for b in chunk) ** 0.5))
    assert cosine < NullBaseline(embedder).of(query)


@pytest.mark.slow
def test_a_heading_is_not_the_sentence_shown(m3_service: MemoryService) -> None:
    answer = _reply("when is pizza night?", _recalled(m3_service, "when is pizza night?"))
    assert "- Pizza night: We order pizza from Luigi's every Friday at 7 pm. [" in answer


def test_sentences_leave_headings_out_unless_there_is_nothing_else() -> None:
    assert sentences("# Pizza night\nWe order pizza. On Fridays!") == ["We order pizza.", "On Fridays!"]
    assert sentences("## 员工手册\n年假十五天。报销需要发票！") == ["年假十五天。", "报销需要发票！"]
    assert sentences("# Only a heading") == ["# Only a heading"]
    assert sentences("") == []


def test_best_sentence_prefers_the_one_sharing_the_question_terms() -> None:
    assert best_sentence("We open at nine. Annual leave is fifteen days. Lunch is at noon.",
                         "how many days of annual leave") == "Annual leave is fifteen days."


@pytest.mark.parametrize("text", ["我住在哪里", "what is my job", "你记得我的生日吗", "How old am I", "我几岁了",
                                  "你呢", "我的猫叫什么呢", "Will you remember this", "我该怎么办",
                                  "我叫啥", "我女儿叫啥来着", "我住哪", "我老家在哪儿",
                                  # asking to recall is asking
                                  "Tell me what you remember about me", "Remind me of my job", "回忆一下我的工作",
                                  "告诉我你记得的关于我的事", "列出我记得的所有事情",
                                  "年假有几天", "一年有几个月呢",  # a count that ends the sentence asks
                                  "我下周六要干嘛"])
def test_a_question_without_a_question_mark_is_not_stored(text: str) -> None:
    assert is_question(text)
    assert plan_turn(text, "").skip_reason == "question"


@pytest.mark.parametrize("text", ["我什么都吃", "我有几个好朋友", "我不知道他住在哪里", "I live in Berlin",
                                  "我这几天一直失眠", "我住在北京呢", "我不怎么喜欢吃辣", "我多少有点紧张",
                                  "前几天我搬到了杭州", "Will is my brother", "May loves jazz",
                                  "How I met my wife is a long story", "我最近没啥胃口", "哪怕下雨我也去跑步",
                                  "我啥都不怕", "我无论在哪都睡得着", "没干嘛，就在家躺着",
                                  "他问我干嘛去了", "他问我周末干嘛", "他问我几点回家",
                                  # a reminder to set is a plan, "Tell me about it" agrees
                                  "Remind me to buy milk tomorrow", "提醒我明天开会", "Tell me about it, what a day"])
def test_a_statement_with_an_interrogative_word_is_kept(text: str) -> None:
    assert not is_question(text)
    assert plan_turn(text, "").skip_reason is None


def test_the_mode_label_is_shown_once_per_chat() -> None:
    shown: set[str] = set()
    first = label_once(f"{MEMORY_ONLY_EN['label']}\nNoted this message.", shown)
    second = label_once(f"{MEMORY_ONLY_EN['label']}\nWhat I remember:", shown)
    other = label_once(f"{MEMORY_ONLY_ZH['label']}\n我记得：", shown)
    assert first.startswith(MEMORY_ONLY_EN["label"]) and second == "What I remember:"
    assert other == "我记得："  # once per chat, whichever language the later replies are in
    assert label_once("[model unavailable] x", shown) == "[model unavailable] x"  # degradations always said



@pytest.mark.parametrize("text", ["老板不让我请假，我能去投诉吗", "他问我借钱，我该怎么办", "他偏要去，我怎么劝他",
                                  "他问我这个你知道吗", "她问我在哪你说我要不要告诉她"])
def test_a_question_after_someone_else_s_words_is_a_question(text: str) -> None:
    assert is_question(text)  # 不让我, 问我, 偏要 only keep 干嘛 from asking (他问我干嘛去了)
