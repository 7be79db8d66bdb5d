"""Kin and pets by their other names (memory/kin.py): the keyword channel's query words, widened."""

from __future__ import annotations

import pytest

from mneme.clock import FixedClock
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.kin import about, widen
from mneme.memory.ranking import RecallOptions
from mneme.memory.service import MemoryService
from mneme.memory.tokenize import tokenize

NOW = 1_700_000_000.0


def test_a_family_member_is_also_searched_by_its_other_names_in_both_languages() -> None:
    assert {"wif", "妻子", "爱人"} <= set(widen(tokenize("我老婆叫什么")))
    assert {"老婆", "妻子"} <= set(widen(tokenize("What is my wife called?")))
    assert {"mother", "妈妈"} <= set(widen(tokenize("我妈叫什么")))  # jieba's 我妈 is a name too
    assert widen(tokenize("我的猫叫什么"))[:1] == tokenize("我的猫叫什么")  # the query's own words first
    assert widen(tokenize("我住在杭州")) == tokenize("我住在杭州")  # nothing to widen


def test_chinese_names_kin_more_narrowly_than_english() -> None:
    assert {"哥哥", "弟弟"} <= set(widen(tokenize("Tell me about my brother")))
    assert "弟弟" not in widen(tokenize("我哥哥叫什么")) and "brother" in widen(tokenize("我哥哥叫什么"))


def test_a_group_word_is_not_widened_but_says_what_is_about_it() -> None:
    terms = tokenize("我有孩子吗")
    assert widen(terms) == terms  # "kids" in memories full of kids would only blur the match
    kids = about(terms)
    assert kids is not None and all(kids.search(t) for t in ["我们有一个女儿", "My son Tom", "two daughters"])
    assert not any(kids.search(t) for t in ["a person I know", "Seasons change", "我有一只猫"])  # whole words
    family = about(tokenize("我的家人"))
    assert family is not None and all(family.search(t) for t in ["我妈妈是护士", "我哥哥在深圳", "My wife Anna"])
    pets = about(tokenize("我有宠物吗"))
    assert pets is not None and pets.search("我的猫叫咪咪") and pets.search("my dog Max")
    assert not any(pets.search(t) for t in ["今天看了熊猫", "吃了个热狗", "猫头鹰"])  # found in review
    assert pets.search("我养了一只柯基") and pets.search("我家的布偶猫")  # breeds are pets
    dog = about(tokenize("我的狗最近怎么样"))
    assert dog is not None and dog.search("我家柯基生病了") and dog.search("哈士奇又拆家了")
    assert not dog.search("我家布偶猫")
    said_otherwise = ["我买了个泰迪熊", "下个月去阿拉斯加旅游", "他染了一头金毛"]
    assert not any(dog.search(t) for t in said_otherwise)
    assert not any(family.search(t) for t in ["那个小哥哥很帅", "隔壁的老太太", "我爱人民", "大丈夫能屈能伸", "姑妈家"])
    for other in ["我的家庭住址是什么", "我们团队有几个成员", "家里的wifi密码是多少", "我住在杭州"]:
        assert about(tokenize(other)) is None, other  # jieba's sub-words of 家庭成员 stand for no kin


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
def test_kin_asked_in_one_language_finds_what_was_said_in_the_other() -> None:
    from mneme.embeddings import load_embedder

    service = MemoryService(InProcessStore(load_embedder("use-m3")), keyword=KeywordIndex(None),
                            clock=FixedClock(NOW))
    for text in ["我叫王小明，今年28岁", "My wife's name is Anna", "我们有一个女儿，叫朵朵", "我血型是O型",
                 "我最喜欢的电影是星际穿越"]:
        service.remember_turn("u", user_text=text, thread_id="t", now=NOW)
    service.remember_turn("u", user_text="我最近在学吉他", assistant_text="很好！学会了可以弹给妈妈和家人听。",
                          thread_id="t", now=NOW)
    strict = RecallOptions(k=4, reinforce=False, relevance_floor=True)

    def said(question: str, user: str = "u") -> list[str]:
        return [it.text for it in service.recall(user, question, options=strict)]

    assert "Anna" in said("我老婆叫什么")[0]  # not 女儿 for the shared 叫
    assert said("我有孩子吗")[0] == "user: 我们有一个女儿，叫朵朵"  # under the floor before: 孩子 is not 女儿
    family = said("我的家人")
    assert {"user: 我们有一个女儿，叫朵朵", "user: My wife's name is Anna"} <= set(family)
    assert not any("星际穿越" in t or "血型" in t or "吉他" in t for t in family)  # the reply's 家人 is not the user's
    assert said("我有孩子吗", user="v") == []
