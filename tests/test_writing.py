"""The writing policy: skip, redact, summarise negative exchanges, extract facts, one model call per turn."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mneme.memory.emotion import Emotion, detect_emotion
from mneme.memory.importance import score_importance
from mneme.memory.lowvalue import content_hash
from mneme.memory.writing import (
    TurnPlan,
    WritePolicy,
    aplan_turn,
    bench_plan_turn,
    extractive_summary,
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


def test_negative_exchange_without_model_keeps_only_an_extractive_summary() -> None:
    plan = plan_turn(NEGATIVE_ZH + "。我老板天天骂我，我真的受不了了。", "听起来你很辛苦。")
    assert plan.emotion.label == "negative"
    assert plan.episodic_text is None
    assert plan.summary_text is not None
    assert plan.summary_text.startswith("用户倾诉了负面情绪（")
    assert "老板天天骂我" not in plan.summary_text  # only the first sentence survives
    assert plan.summary_text.endswith("有时候会感到焦虑和心烦。")
    assert "听起来你很辛苦" not in plan.summary_text


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


def test_model_without_summary_for_negative_turn_falls_back_to_extractive() -> None:
    model = FakeChatModel(responses=[NO_FACTS])
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model)
    assert plan.summary_text and plan.summary_text.startswith("用户倾诉了负面情绪")
    assert plan.fallback and plan.model_calls == 1


def test_model_summary_is_clipped() -> None:
    model = FakeChatModel(responses=[{"summary": "很长的总结。" * 100, "facts": []}])
    plan = plan_turn(NEGATIVE_ZH, "抱抱", model=model)
    assert plan.summary_text is not None and len(plan.summary_text) <= 2 * WritePolicy().summary_chars_zh


def test_extractive_summary_is_clipped() -> None:
    emotion = detect_emotion("我很难过")
    text = extractive_summary("我很难过" + "，真的" * 50 + "。", emotion, language="zh", limit=20)
    assert text == "用户倾诉了负面情绪（难过）：我很难过" + "，真的" * 5 + "…"
    assert len(text.split("：", 1)[1]) == 20


def test_extractive_summary_without_a_clean_sentence_keeps_only_the_cues() -> None:
    emotion = Emotion("negative", 0.8, ["depressed", "blood"])
    text = extractive_summary("There was blood everywhere.", emotion, language="en", limit=200)
    assert text == "The user shared negative feelings (depressed)."


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
    assert plan.summary_text and plan.summary_text.startswith("用户倾诉了负面情绪")


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
