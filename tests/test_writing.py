"""The writing policy: skip, redact, summarise negative exchanges, extract facts, one model call per turn."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mneme.memory.emotion import Emotion, detect_emotion
from mneme.memory.gist import clauses, gist_summary, quotes_detail
from mneme.memory.importance import score_importance
from mneme.memory.lowvalue import content_hash
from mneme.memory.writing import (
    TurnPlan,
    WritePolicy,
    aplan_turn,
    bench_plan_turn,
    plan_turn,
)
from mneme.testing import FakeChatModel

ID = "11010519491231002X"
NEGATIVE_ZH = "最近工作压力有些大，有时候会感到焦虑和心烦"
NEGATIVE_EN = "I'm so depressed. My boyfriend hit me and there was blood everywhere. I don't know what to do."
NO_FACTS: dict[str, object] = {"summary": None, "facts": []}


def _prompt(model: FakeChatModel, call: int = 0) -> str:
    return "\n".join(str(m.content) for m in model.calls[call])


# --- skipping ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["谢谢！", "好的", "ok thanks!", "👍", "  "])
def test_low_value_turns_are_skipped_without_a_model_call(text: str) -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan = plan_turn(text, "不客气", model=model)
    assert plan.skipped and plan.skip_reason
    assert plan.episodic_text is None and plan.summary_text is None and plan.facts == []
    assert plan.model_calls == 0 and model.calls == []


def test_skipping_can_be_turned_off() -> None:
    plan = plan_turn("谢谢！", "不客气", policy=WritePolicy(skip_low_value=False))
    assert not plan.skipped and plan.episodic_text == "user: 谢谢！\nassistant: 不客气"


# --- redaction ---------------------------------------------------------------------------------------


def test_all_identifiers_are_redacted_before_storing() -> None:
    plan = plan_turn(f"我的手机是13812345678，邮箱zhang@example.com，身份证{ID}", "好的，记下了")
    assert (
        plan.episodic_text
        == "user: 我的手机是[手机号]，邮箱[邮箱]，身份证[身份证号]\nassistant: 好的，记下了"
    )
    assert plan.redactions == {"phone": 1, "email": 1, "id_number": 1}
    assert plan.content_hash == content_hash("我的手机是[手机号]，邮箱[邮箱]，身份证[身份证号]")


def test_assistant_text_is_redacted_and_counted_too() -> None:
    plan = plan_turn("What's the support address?", "Write to help@example.com")
    assert plan.episodic_text == "user: What's the support address?\nassistant: Write to [EMAIL]"
    assert plan.redactions == {"email": 1}


def test_the_model_never_sees_identifiers() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan_turn(f"我叫张伟，手机13812345678，身份证{ID}", "好的", model=model)
    prompt = _prompt(model)
    assert "13812345678" not in prompt and ID not in prompt
    assert "[手机号]" in prompt and "[身份证号]" in prompt


def test_facts_come_from_redacted_text() -> None:
    plan = plan_turn("My name is Bob and my email is bob@example.com", "Hi Bob")
    assert all("bob@example.com" not in f.text for f in plan.facts)
    assert [(f.key, f.value) for f in plan.facts] == [("name", "Bob")]


def test_model_output_is_redacted_too() -> None:
    model = FakeChatModel(
        responses=[
            {
                "summary": None,
                "facts": [
                    {
                        "kind": "fact",
                        "key": "phone",
                        "value": "13812345678",
                        "text": "用户的手机是13812345678",
                    }
                ],
            }
        ]
    )
    plan = plan_turn("我的手机是13812345678", "好的", model=model)
    assert [(f.value, f.text) for f in plan.facts] == [("[手机号]", "用户的手机是[手机号]")]


# --- episodic text and negative exchanges ------------------------------------------------------------


def test_neutral_turn_is_stored_as_the_exchange() -> None:
    plan = plan_turn("明天去北京", "一路顺风！")
    assert plan.episodic_text == "user: 明天去北京\nassistant: 一路顺风！"
    assert plan.summary_text is None and plan.emotion.label == "neutral"


def test_assistant_text_can_be_left_out() -> None:
    plan = plan_turn(
        "I'm flying to Tokyo tomorrow", "Have a nice trip", policy=WritePolicy(store_assistant_text=False)
    )
    assert plan.episodic_text == "user: I'm flying to Tokyo tomorrow"


def test_negative_exchange_without_model_keeps_only_the_gist() -> None:
    plan = plan_turn(NEGATIVE_ZH + "。我老板天天骂我，我真的受不了了。", "听起来你很辛苦。")
    assert plan.emotion.label == "negative"
    assert plan.episodic_text is None
    assert plan.summary_text == "用户倾诉了烦恼：因工作被老板批评而压力大、焦虑、心烦（涉及：受不了）。"
    assert "听起来你很辛苦" not in plan.summary_text


ISSUE_ZH = "我今天真的太难过了，被领导当着全组的面骂了一顿，说我做的方案一无是处，我一晚上都睡不着，觉得自己特别失败。"
ISSUE_EN = ("I'm so sad today, my boss yelled at me in front of the whole team, said my proposal was worthless, "
            "I couldn't sleep all night and I feel like a total failure. What should I do?")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (ISSUE_ZH, "用户倾诉了烦恼：因工作被领导批评而难过；失眠、自我评价低（涉及：方案）。"),
        (ISSUE_EN, "The user confided a worry: feels sad about criticism from their boss (work); sleeplessness, "
                   "low self-worth; asks what to do (about: team, proposal)."),
        ("我和男朋友分手了，每天都在哭，吃不下饭，真的好痛苦，我该怎么办？",
         "用户倾诉了烦恼：因分手而痛苦；食欲差、哭泣；想知道该怎么办（涉及：男朋友）。"),
        ("I'm really anxious about my exams and I can't sleep. Any advice?",
         "The user confided a worry: feels anxious about school; sleeplessness; asks for advice (about: exams)."),
        ("我最近在准备一场重要的演讲，但是总感觉很紧张，怕自己在台上说错话或者忘词了。",
         "用户倾诉了烦恼：感到紧张（涉及：忘词、错话、演讲、准备）。"),
        # as people say it in chat: slang and self-judgement
        ("我好没用，方案又被老板否了，什么都做不好，我该怎么办啊",
         "用户倾诉了烦恼：因工作被老板批评而情绪低落；自我评价低；想知道该怎么办（涉及：方案）。"),
        ("I can't take it anymore, my manager keeps piling deadlines on me",
         "The user confided a worry: feels low about work; feeling overwhelmed (about: manager, piling, deadlines)."),
        ("ugh my manager keeps scheduling me on weekends and I'm exhausted",  # no "ugh" among the terms
         "The user confided a worry: feels exhausted about work (about: manager, scheduling, weekends)."),
        # tired, and what someone did to the user: named, not quoted
        ("我今天好累，被老板骂了一顿，说我写的代码全是bug", "用户倾诉了烦恼：因工作被老板批评而疲惫（涉及：代码）。"),
        ("最近老是被同事排挤，每天上班都好难受", "用户倾诉了烦恼：因工作被同事排挤而难受（涉及：上班）。"),
        ("I'm so tired, my boss yelled at me in front of everyone",
         "The user confided a worry: feels exhausted about criticism from their boss (work) (about: everyone)."),
        ("I got told off at work and I feel awful",
         "The user confided a worry: feels awful about being criticised (work)."),
        ("I'm being bullied at school and I feel so alone",
         "The user confided a worry: feels lonely about bullying (school)."),
        # 特别 is no negator; holding on no longer is an effect, picking on one an event
        ("最近上夜班特别累，感觉整个人都快撑不住了，护士长还老是挑我毛病",
         "用户倾诉了烦恼：因工作被护士长挑剔而疲惫；身心透支（涉及：夜班）。"),
        ("I've been so stressed lately, the principal keeps picking on me and I can't sleep",
         "The user confided a worry: feels stressed about being picked on by their principal; sleeplessness."),
        # the exam a worry is about stays findable (六级 is a numeral to jieba), not a verb's complement (吵得)
        ("下个月18号我要考六级，有点紧张", "用户倾诉了烦恼：因学业而紧张（涉及：六级）。"),
        ("明天要考驾照科目二，好紧张", "用户倾诉了烦恼：感到紧张（涉及：科目二、考驾照）。"),
        ("我室友老是半夜打游戏，吵得我睡不着，烦死了", "用户倾诉了烦恼：因人际关系而烦；失眠（涉及：打游戏、室友）。"),
        ("上周末他来杭州看我，我们吵了一架，我现在心里很乱", "用户倾诉了烦恼：因与人争吵而心烦意乱（涉及：杭州）。"),
        ("我有点着急，不知道该怎么跟他沟通", "用户倾诉了烦恼：感到着急；想知道该怎么办（涉及：沟通）。"),
        ("孩子成绩下滑得厉害，急死我了", "用户倾诉了烦恼：因学业而着急（涉及：成绩、下滑、孩子）。"),
        ("I sat alone at lunch again today and I feel so sad",  # sat: no SAT, no school
         "The user confided a worry: feels sad (about: alone, lunch)."),
        ("我爸在医院长期卧床，我很难过", "用户倾诉了烦恼：因家庭而难过（涉及：卧床、医院）。"),  # 院长 is no boss here
        ("My GRE is next Friday and I'm so nervous",
         "The user confided a worry: feels nervous about school (about: gre)."),
    ],
)
def test_a_negative_exchange_leaves_its_gist_and_none_of_its_clauses(message: str, expected: str) -> None:
    plan = plan_turn(message, "我在，慢慢说。")
    assert plan.summary_text == expected
    for clause in clauses(message):  # every clause, split on ，。！？,.!?
        assert clause not in plan.summary_text
    assert not quotes_detail(plan.summary_text, message, min_chars=1)


def test_a_model_summary_that_quotes_the_message_is_replaced_by_the_gist() -> None:
    quoting = {"summary": "用户说：被领导当着全组的面骂了一顿，觉得自己特别失败。", "facts": []}
    plan = plan_turn(ISSUE_ZH, "抱抱你", model=FakeChatModel(responses=[quoting]))
    assert plan.summary_text == "用户倾诉了烦恼：因工作被领导批评而难过；失眠、自我评价低（涉及：方案）。"
    assert plan.fallback and "verbatim" in (plan.fallback_reason or "")
    fine = {"summary": "用户倾诉了烦恼：因工作上受到批评而难过、失眠。", "facts": []}
    plan = plan_turn(ISSUE_ZH, "抱抱你", model=FakeChatModel(responses=[fine]))
    assert plan.summary_text == fine["summary"] and not plan.fallback


def test_the_summary_prompt_asks_for_a_gist_not_a_quote() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan_turn(ISSUE_EN, "I'm here.", model=model)
    prompt = _prompt(model)
    assert "word for word" in prompt and "feeling" in prompt and "asked for" in prompt


def test_negative_summary_leaves_graphic_detail_out() -> None:
    plan = plan_turn(NEGATIVE_EN, "I'm so sorry. You deserve to be safe.")
    assert plan.episodic_text is None
    assert plan.summary_text is not None
    for detail in ("hit me", "blood", "boyfriend"):
        assert detail not in plan.summary_text
    assert "depressed" in plan.summary_text


def test_negative_exchange_with_model_uses_its_summary_in_one_call() -> None:
    model = FakeChatModel(
        responses=[
            {
                "summary": "用户最近工作压力大，感到焦虑；助手建议了放松方法。",
                "facts": [],
            }
        ]
    )
    plan = plan_turn(NEGATIVE_ZH, "可以试试每天散步半小时。", model=model)
    assert plan.summary_text == "用户最近工作压力大，感到焦虑；助手建议了放松方法。"
    assert plan.episodic_text is None
    assert plan.model_calls == 1 and len(model.calls) == 1
    assert "NOT stored word for word" in _prompt(model)
    assert not plan.fallback


def test_neutral_turn_does_not_ask_for_a_summary() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan_turn("我住在上海", "好的", model=model)
    assert "no summary is needed" in _prompt(model)


def test_negative_exchange_drops_preferences_but_keeps_profile_facts() -> None:
    plan = plan_turn("我住在上海，最近失恋了很难过，我讨厌我的前任", "抱抱你")
    assert [(f.key, f.value) for f in plan.facts] == [("home_city", "上海")]
    assert plan.episodic_text is None and plan.summary_text


def test_model_without_summary_for_negative_turn_falls_back_to_the_gist() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model)
    assert plan.summary_text == "用户倾诉了烦恼：因工作而压力大、焦虑、心烦。"
    assert plan.fallback and plan.model_calls == 1


def test_model_summary_is_clipped() -> None:
    model = FakeChatModel(responses=[{"summary": "很长的总结。" * 100, "facts": []}])
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model)
    assert plan.summary_text is not None and len(plan.summary_text) <= 2 * WritePolicy().summary_chars_zh


def test_gist_is_clipped() -> None:
    emotion = detect_emotion("我很难过，很焦虑，很心烦")
    text = gist_summary(ISSUE_ZH, emotion, language="zh", limit=12)
    assert len(text) == 12 and text.endswith("…")


def test_gist_without_cause_or_cues_still_says_the_tone() -> None:
    assert gist_summary("There was blood everywhere.", Emotion("negative", 0.8, []), language="en",
                        limit=200) == "The user confided a worry: feels low."
    gist = gist_summary("唉。", Emotion("negative", 0.8, []), language="zh", limit=60)
    assert gist == "用户倾诉了烦恼：感到情绪低落。"


# --- facts -------------------------------------------------------------------------------------------


def test_moving_updates_the_same_key() -> None:
    first = plan_turn("我住在上海", "好的")
    second = plan_turn("我搬到北京了", "恭喜乔迁！")
    assert [(f.key, f.value) for f in first.facts] == [("home_city", "上海")]
    assert [(f.key, f.value) for f in second.facts] == [("home_city", "北京")]


def test_model_facts_merge_with_pattern_facts_for_missing_keys() -> None:
    model = FakeChatModel(
        responses=[
            {
                "summary": None,
                "facts": [
                    {
                        "kind": "preference",
                        "key": "pref:jazz",
                        "value": "jazz",
                        "text": "The user likes jazz",
                        "polarity": "likes",
                    }
                ],
            }
        ]
    )
    plan = plan_turn("I live in Berlin and I like jazz", "Nice!", model=model)
    assert {(f.key, f.source) for f in plan.facts} == {("pref:jazz", "model"), ("home_city", "pattern")}


def test_facts_only_from_patterns_when_the_policy_says_so() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan = plan_turn("我住在上海", "好的", model=model, policy=WritePolicy(use_model_for_facts=False))
    assert model.calls == [] and plan.model_calls == 0
    assert [f.key for f in plan.facts] == ["home_city"]


def test_summary_only_call_when_facts_are_not_from_the_model() -> None:
    model = FakeChatModel(
        responses=[
            {
                "summary": "用户感到焦虑。",
                "facts": [{"kind": "fact", "key": "job", "value": "医生", "text": "用户是一名医生"}],
            }
        ]
    )
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model, policy=WritePolicy(use_model_for_facts=False))
    assert plan.model_calls == 1 and plan.summary_text == "用户感到焦虑。"
    assert plan.facts == []  # the model's facts were not asked for


def test_no_model_call_when_neither_part_is_wanted() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    policy = WritePolicy(use_model_for_facts=False, use_model_for_summary=False)
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model, policy=policy)
    assert model.calls == [] and plan.summary_text


# --- model budget and failures -----------------------------------------------------------------------


@pytest.mark.parametrize("user", ["我住在上海", "I like jazz", NEGATIVE_ZH, "明天去北京", "What's 2+2?"])
def test_exactly_one_model_call_per_normal_turn(user: str) -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan = plan_turn(user, "ok", model=model)
    assert plan.model_calls == 1 and len(model.calls) == 1


def test_malformed_json_is_retried_once_then_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    model = FakeChatModel(responses=["{not json", "still {not json"])
    with caplog.at_level(logging.WARNING):
        plan = plan_turn("我住在上海，喜欢爵士乐", "好的", model=model)
    assert len(model.calls) == 2 and plan.model_calls == 2
    assert plan.fallback and plan.fallback_reason
    # The turn is not lost: the no-model path stored it.
    assert plan.episodic_text == "user: 我住在上海，喜欢爵士乐\nassistant: 好的"
    assert {f.key for f in plan.facts} == {"home_city", "pref:爵士乐"}
    assert any(r.name == "mneme.memory.extraction" for r in caplog.records)


def test_malformed_then_good_output_succeeds_on_the_retry() -> None:
    model = FakeChatModel(
        responses=[
            "oops",
            {
                "summary": None,
                "facts": [{"kind": "fact", "key": "home_city", "value": "上海", "text": "用户住在上海"}],
            },
        ]
    )
    plan = plan_turn("我住在上海", "好的", model=model)
    assert plan.model_calls == 2 and not plan.fallback
    assert [(f.key, f.source) for f in plan.facts] == [("home_city", "model")]


def test_model_raising_falls_back_and_keeps_the_negative_turn() -> None:
    model = FakeChatModel(responses=[RuntimeError("connection reset")])
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model)
    assert len(model.calls) == 2 and plan.fallback
    assert plan.episodic_text is None
    assert plan.summary_text and plan.summary_text.startswith("用户")


def test_schema_violation_falls_back() -> None:
    model = FakeChatModel(responses=[{"summary": 3, "facts": "none"}])
    plan = plan_turn("I live in Berlin", "ok", model=model)
    assert plan.fallback and [f.key for f in plan.facts] == ["home_city"]


# --- async twin --------------------------------------------------------------------------------------


def test_aplan_turn_matches_plan_turn() -> None:
    model = FakeChatModel(responses=[{"summary": "用户感到焦虑。", "facts": []}])
    plan = asyncio.run(aplan_turn(NEGATIVE_ZH, "抱抱", model=model))
    assert isinstance(plan, TurnPlan)
    assert plan.summary_text == "用户感到焦虑。" and plan.model_calls == 1
    sync = plan_turn("我住在上海", "好的")
    async_ = asyncio.run(aplan_turn("我住在上海", "好的"))
    assert async_ == sync


def test_aplan_turn_falls_back_and_skips() -> None:
    model = FakeChatModel(responses=["bad", "bad"])
    plan = asyncio.run(aplan_turn("I live in Berlin", "ok", model=model))
    assert plan.fallback and plan.model_calls == 2 and plan.episodic_text
    skipped = asyncio.run(aplan_turn("谢谢", "不客气", model=model))
    assert skipped.skip_reason == "thanks" and len(model.calls) == 2


# --- importance --------------------------------------------------------------------------------------


def test_importance_signals_rank_sensibly() -> None:
    neutral = detect_emotion("")
    plain = score_importance("今天天气不错", emotion=neutral, has_fact=False)
    fact = score_importance("我住在北京", emotion=neutral, has_fact=True)
    explicit = score_importance("记住，我对花生过敏", emotion=neutral, has_fact=True)
    sad = detect_emotion(NEGATIVE_ZH)
    negative = score_importance(NEGATIVE_ZH, emotion=sad, has_fact=False)
    assert 0 <= plain < fact < explicit <= 1
    assert negative > plain
    assert score_importance(
        "Remember: my exam is on Friday", emotion=neutral, has_fact=False
    ) > score_importance("the exam went fine", emotion=neutral, has_fact=False)


def test_importance_is_capped() -> None:
    text = "记住！别忘了！很重要！" + "我住在北京，3月5日搬家。" * 50
    assert score_importance(text, emotion=Emotion("negative", 1.0, ["x"]), has_fact=True) == 1.0


def test_plan_carries_importance() -> None:
    assert plan_turn("记住，我对花生过敏", "好的").importance > plan_turn("今天天气不错", "是的").importance


def test_bench_reports_percentiles() -> None:
    figures = bench_plan_turn(20)
    assert figures["n"] == 20 and 0 < figures["p50"] <= figures["p95"] <= figures["max"]
