"""Kin and pets by their other names (memory/kin.py): the keyword channel's query words, widened."""

from __future__ import annotations

import pytest

from mneme.clock import FixedClock
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.kin import widen
from mneme.memory.ranking import RecallOptions
from mneme.memory.service import MemoryService
from mneme.memory.tokenize import tokenize

NOW = 1_700_000_000.0


def test_a_family_member_is_also_searched_by_its_other_names_in_both_languages() -> None:
    assert {"wif", "妻子", "爱人"} <= set(widen(tokenize("我老婆叫什么")))
    assert {"老婆", "妻子"} <= set(widen(tokenize("What is my wife called?")))
    assert widen(tokenize("我的猫叫什么"))[:2] == tokenize("我的猫叫什么")  # the query's own words first
    assert widen(tokenize("我住在杭州")) == tokenize("我住在杭州")  # nothing to widen


def test_a_group_word_is_widened_to_its_members_only_when_the_user_never_used_it() -> None:
    terms = tokenize("我有孩子吗")
    assert {"女儿", "儿子", "son", "daughter"} <= set(widen(terms, lambda named: set()))
    assert widen(terms, lambda named: set(named)) == terms  # who talks of 孩子 finds 孩子 as it is
    asked: list[list[str]] = []
    widen(tokenize("我老婆叫什么"), lambda named: asked.append(named) or set())
    assert asked == []  # no group word: the index is not asked


@pytest.mark.slow  # loads the offline use-m3 model: the relevance floor is about a real embedder's cosines
def test_kin_asked_in_one_language_finds_what_was_said_in_the_other() -> None:
    from mneme.embeddings import load_embedder

    service = MemoryService(InProcessStore(load_embedder("use-m3")), keyword=KeywordIndex(None),
                            clock=FixedClock(NOW))
    for text in ["我叫王小明，今年28岁", "My wife's name is Anna", "我们有一个女儿，叫朵朵", "我血型是O型",
                 "我最喜欢的电影是星际穿越"]:
        service.remember_turn("u", user_text=text, thread_id="t", now=NOW)
    strict = RecallOptions(k=4, reinforce=False, relevance_floor=True)

    def said(question: str, user: str = "u") -> list[str]:
        return [it.text for it in service.recall(user, question, options=strict)]

    assert said("我老婆叫什么")[0] == "user: My wife's name is Anna"  # not 女儿 for the shared 叫
    assert said("我有孩子吗")[0] == "user: 我们有一个女儿，叫朵朵"  # under the floor before: 孩子 is not 女儿
    family = said("我的家人")
    assert {"user: 我们有一个女儿，叫朵朵", "user: My wife's name is Anna"} <= set(family)
    assert not any("星际穿越" in t or "血型" in t for t in family)
    assert said("我有孩子吗", user="v") == []
    assert service.keyword.used("u", ["女儿", "孩子", "wif"]) == {"女儿", "wif"}  # what u's memories hold
    assert service.keyword.used("v", ["女儿"]) == set()
