"""Low-value turns are skipped only when the whole message is a greeting, thanks, ack or empty."""

from __future__ import annotations

import pytest

from mneme.memory.lowvalue import content_hash, is_low_value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("你好", "greeting"),
        ("您好！", "greeting"),
        ("hi", "greeting"),
        ("Hello", "greeting"),
        ("Hi there 😊", "greeting"),
        ("谢谢", "thanks"),
        ("谢谢！", "thanks"),
        ("谢谢你！", "thanks"),
        ("多谢", "thanks"),
        ("thanks", "thanks"),
        ("Thank you so much!!", "thanks"),
        ("ok thanks!", "thanks"),
        ("好的，谢谢", "thanks"),
        ("好的", "ack"),
        ("好的呀", "ack"),
        ("嗯", "ack"),
        ("嗯嗯好的", "ack"),
        ("哦", "ack"),
        ("收到", "ack"),
        ("ok", "ack"),
        ("Okay.", "ack"),
        ("ok 👌", "ack"),
        ("在吗？", "greeting"),
        ("在不在呀", "greeting"),
        ("好嘞", "ack"),
        ("没问题！", "ack"),
        ("没事了，谢谢", "thanks"),
        ("不客气~", "ack"),
        ("no worries", "ack"),
        ("You're welcome!", "ack"),
        ("bye", "farewell"),
        ("再见", "farewell"),
        ("👍", "emoji"),
        ("👍👍🏻", "emoji"),
        ("", "empty"),
        ("   \n", "empty"),
        ("...", "punctuation"),
        ("？！", "punctuation"),
        # laughter on its own
        ("哈哈", "laughter"), ("哈哈哈哈哈！", "laughter"), ("嘿嘿", "laughter"), ("笑死我了", "laughter"),
        ("2333", "laughter"), ("lol", "laughter"), ("hahaha lol", "laughter"), ("LMAO 😂", "laughter"),
        ("hmm", "ack"), ("哈哈，好的", "ack"),
    ],
)
def test_low_value_messages_are_recognised(text: str, reason: str) -> None:
    assert is_low_value(text) == reason


def test_none_counts_as_empty() -> None:
    assert is_low_value(None) == "empty"


@pytest.mark.parametrize(
    "text",
    [
        "我喜欢爵士乐",
        "I'm sad",
        "明天去北京",
        "不好",
        "你好吗",
        "好想你",
        "hello, my name is Bob",
        "谢谢你的建议，我会试试",
        "okay so what about tomorrow",
        "his",  # contains "hi" but is not a greeting
        "ok, I moved to Berlin",
        "thanks, I'm vegan btw",
        "哈哈哈我升职了", "LOL that is so funny", "2023", "哈", "233",  # laughter with words, a year, one 哈, a room
        "没问题的话我们周五去杭州",  # more than an acknowledgement
        "在吗？我想问下我的快递到哪了",
        "no problem with peanuts for me",
        "👍" * 300,  # too long to even scan: never silently dropped
    ],
)
def test_meaningful_short_messages_are_kept(text: str) -> None:
    assert is_low_value(text) is None


def test_content_hash_ignores_case_and_whitespace() -> None:
    assert content_hash("I live in  Beijing\n") == content_hash("i live in beijing")
    assert content_hash("我住在北京") == content_hash(" 我住在北京 ")


def test_content_hash_differs_for_different_text_and_is_sha256_hex() -> None:
    h = content_hash("我住在北京")
    assert h != content_hash("我住在上海")
    assert len(h) == 64 and int(h, 16) >= 0
