"""The relevance floor per form of item (memory/relevance.py): a personal question lists the user's memories that
answer it, not every first-person statement; documents keep the impersonal floor."""

from __future__ import annotations

from typing import Any

import pytest

from mneme.clock import FixedClock
from mneme.embeddings import load_embedder
from mneme.memory.base import Embedder, Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.relevance import NULL_TEXTS, UNRELATED, NullBaseline, form_of
from mneme.memory.service import MemoryService, RecallOptions
from mneme.testing import FakeEmbeddings

MEMORIES = ["我住在杭州，是一名老师", "我养了一只叫豆豆的猫", "我喜欢喝乌龙茶",
            "I live in Berlin and I work as a nurse", "我周末常去爬山"]
NOISE_FREE = {  # question -> words every listed memory must hold (one of them); nothing else may be listed
    "我的猫叫什么？": ("猫",),
    "我喜欢喝什么茶？": ("茶",),
    "我周末干什么？": ("周末",),
    "我的车是什么颜色？": (),
}


def service_with(embedder: Embedder, *, per_form: bool = True) -> MemoryService:
    service = MemoryService(InProcessStore(embedder), keyword=KeywordIndex(None), clock=FixedClock(1.7e9))
    if not per_form:  # the floor before: every item against impersonal sentences
        service._null = NullBaseline(embedder, dict.fromkeys(NULL_TEXTS, UNRELATED))
        service._null_for = embedder
    for n, text in enumerate(MEMORIES):
        service.remember_turn("u", user_text=text, assistant_text="", thread_id=f"t{n}")
    return service


def listed(service: MemoryService, question: str) -> list[str]:
    items = service.recall("u", question, options=RecallOptions(reinforce=False, relevance_floor=True))
    return [it.text for it in items]


def check(service: MemoryService) -> dict[str, Any]:
    bad: dict[str, Any] = {}
    for question, words in NOISE_FREE.items():
        got = listed(service, question)
        noise = [t for t in got if not any(w in t for w in words)]
        if noise or (words and not got):
            bad[question] = got
    return bad


def test_forms_of_items() -> None:
    assert form_of(Kind.EPISODIC) == "first"
    assert form_of(Kind.DOCUMENT) == "impersonal"
    assert {form_of(k) for k in (Kind.FACT, Kind.PREFERENCE, Kind.SUMMARY)} == {"third"}


def test_a_floor_per_form_and_the_impersonal_one_for_documents() -> None:
    embedder = FakeEmbeddings()
    baseline = NullBaseline(embedder)
    query = embedder.embed(["我的猫叫什么？"])[0]
    floors = baseline.floors(query)
    assert set(floors) == {"first", "third", "impersonal"}
    assert floors["first"] > floors["impersonal"]  # a first-person question is closer to first-person sentences
    assert baseline.of(query) == floors["impersonal"]


def test_personal_questions_list_only_what_answers_them_with_the_test_embedder() -> None:
    assert check(service_with(FakeEmbeddings())) == {}
    assert check(service_with(FakeEmbeddings(), per_form=False))  # one impersonal floor lists noise


@pytest.mark.slow  # loads the offline use-m3 model: the floor is about a real embedder's cosines
def test_personal_questions_list_only_what_answers_them() -> None:
    embedder = load_embedder("use-m3")
    assert check(service_with(embedder)) == {}
    before = check(service_with(embedder, per_form=False))  # why the per-form floor exists
    assert "我的猫叫什么？" in before and "我的车是什么颜色？" in before
    assert any("nurse" in t for t in listed(service_with(embedder), "what is my job"))


def test_with_the_floor_on_a_memory_under_it_lifts_no_neighbour(monkeypatch: pytest.MonkeyPatch) -> None:
    # the floor drops irrelevant memories before conversation neighbours share their lead (memory/neighbours.py)
    from mneme.memory import service as service_module

    seen: list[list[Any]] = []
    real = service_module.lift_neighbours

    def spy(ranked: Any, **kw: Any) -> Any:
        seen.append(list(ranked))
        return real(ranked, **kw)

    monkeypatch.setattr(service_module, "lift_neighbours", spy)
    service = service_with(FakeEmbeddings())
    got = listed(service, "我的猫叫什么？")
    assert got and all("猫" in t for t in got)
    assert seen and all(it.signals.get("relevant", 1.0) > 0 for it in seen[-1] if it.source == "memory")
    loose = service.recall("u", "我的猫叫什么？", options=RecallOptions(reinforce=False))
    assert any(it.signals.get("relevant") == 0.0 for it in loose)  # there were memories under the floor
