"""A failing chat model never fails a turn: the real ``ChatOpenAI`` against ``FakeOpenAIServer``.

Every failure mode (5xx, hang, dropped connection, garbled body, refused connection) gives the memory-only
answer with its label, a ``degraded`` list, ``memory_report.model_calls`` equal to the requests the server
really received, and the turn is stored. The policy's rules (one retry of the answer on a transient failure,
none after a timeout, the cool-down) are checked by the server's own count.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from mneme.config import Settings
from mneme.errors import ModelUnavailableError
from mneme.graph import build_graph
from mneme.graph import degraded as labels
from mneme.memory.base import Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.model_calls import ModelCaller, ModelPolicy
from mneme.models import load_chat_model
from mneme.testing import Drop, FakeEmbeddings, FakeOpenAIServer, Garbage, Hang, Status

FAILURES = [Status(500), Status(503), Status(429), Hang(60), Drop(), Garbage()]
LINE_EN = "[model unavailable: answering from memory]"
LINE_ZH = "[对话模型暂时不可用：以下根据记忆回答]"


def chat_model(server: FakeOpenAIServer, timeout: float = 2.0) -> ChatOpenAI:
    settings = Settings(openai_base_url=server.url, chat_model="fake", model_timeout=timeout)
    model = load_chat_model(settings)
    assert isinstance(model, ChatOpenAI)
    return model


def agent(server: FakeOpenAIServer, *, cooldown: float = 0.0, timeout: float = 2.0) -> tuple[Any, MemoryService]:
    service = MemoryService(InProcessStore(FakeEmbeddings()))
    model = chat_model(server, timeout)
    policy = ModelPolicy.for_model(model, cooldown=cooldown, retry_backoff=0.05)
    return build_graph(model=model, service=service, checkpointer=InMemorySaver(), model_policy=policy), service


def turn(graph: Any, text: str, *, user: str = "u1", thread: str = "t1") -> dict[str, Any]:
    return graph.invoke({"messages": [{"role": "user", "content": text}]},  # type: ignore[no-any-return]
                        {"configurable": {"thread_id": thread}}, context={"user_id": user})


def stored_texts(service: MemoryService, user: str = "u1") -> list[str]:
    return [r.text for r in sorted(service.store.scan(user, kinds=[Kind.EPISODIC]), key=lambda r: r.created_at)]


def test_load_chat_model_sets_timeout_and_no_sdk_retries(fake_openai: FakeOpenAIServer) -> None:
    model = chat_model(fake_openai, timeout=7)
    assert model.request_timeout == 7 and model.max_retries == 0
    assert ModelPolicy.for_model(model).rewrite_timeout == 7 / 4


@pytest.mark.parametrize("failure", FAILURES, ids=repr)
def test_failing_model_gives_labelled_memory_answer_and_keeps_the_turn(
    fake_openai: FakeOpenAIServer, failure: Any
) -> None:
    graph, service = agent(fake_openai, timeout=1.0)
    fake_openai.script("Noted: you like oolong tea.", {"facts": []})
    first = turn(graph, "I like oolong tea")
    assert first["degraded"] == [] and first["answer"] == "Noted: you like oolong tea."

    fake_openai.fail(failure)
    before = fake_openai.attempts
    started = time.monotonic()
    out = turn(graph, "what tea do I like?")
    assert time.monotonic() - started < 10
    assert out["answer"].startswith(LINE_EN) and "oolong" in out["answer"]
    assert labels.MODEL_UNAVAILABLE in out["degraded"] and labels.REWRITE_FAILED in out["degraded"]
    # rewrite 1 try; the answer retries a transient failure once, never a timeout
    assert out["memory_report"]["model_calls"] == fake_openai.attempts - before
    assert fake_openai.attempts - before == (2 if isinstance(failure, Hang) else 3)

    stored_before = stored_texts(service)
    out = turn(graph, "I also like green tea")
    assert labels.MODEL_UNAVAILABLE in out["degraded"] and labels.EXTRACTION_FAILED in out["degraded"]
    assert out["memory_report"]["stored"], out["memory_report"]
    new = [t for t in stored_texts(service) if t not in stored_before]
    # the memory-only echo is not stored as the assistant's words
    assert new == ["user: I also like green tea"]
    assert any("green tea" in r.text for r in service.store.scan("u1", kinds=[Kind.PREFERENCE]))


def test_chinese_turn_gets_the_chinese_label(fake_openai: FakeOpenAIServer) -> None:
    graph, _ = agent(fake_openai)
    fake_openai.fail(Status(502))
    turn(graph, "我住在杭州")
    out = turn(graph, "我住在哪里？")
    assert out["answer"].startswith(LINE_ZH) and "杭州" in out["answer"]


def test_refused_connection(unused_url: str) -> None:
    service = MemoryService(InProcessStore(FakeEmbeddings()))
    model = load_chat_model(Settings(openai_base_url=f"{unused_url}/v1", model_timeout=2))
    graph = build_graph(model=model, service=service, model_policy=ModelPolicy(retry_backoff=0.05),
                        checkpointer=InMemorySaver())
    out = turn(graph, "I like oolong tea")
    assert out["answer"].startswith(LINE_EN) and out["degraded"][0] == labels.MODEL_UNAVAILABLE
    assert out["memory_report"]["model_calls"] == 3  # answer + its retry, then extraction once
    assert stored_texts(service) == ["user: I like oolong tea"]


def test_hang_trips_the_cooldown_and_recovery_ends_it(fake_openai: FakeOpenAIServer) -> None:
    graph, _ = agent(fake_openai, cooldown=600, timeout=1.0)
    fake_openai.fail(Hang(60))
    started = time.monotonic()
    out = turn(graph, "I like oolong tea")
    assert 0.9 < time.monotonic() - started < 5
    assert fake_openai.attempts == 1 and out["memory_report"]["model_calls"] == 1  # extraction not tried
    started = time.monotonic()
    for text in ("what tea do I like?", "and coffee?", "我喜欢咖啡"):
        out = turn(graph, text)
        assert labels.MODEL_UNAVAILABLE in out["degraded"] and out["memory_report"]["model_calls"] == 0
    assert time.monotonic() - started < 3 and fake_openai.attempts == 1  # no request while cooling down


def test_a_slow_rewrite_does_not_trip_the_cooldown(fake_openai: FakeOpenAIServer) -> None:
    model = chat_model(fake_openai, timeout=2.0)
    caller = ModelCaller(model, ModelPolicy.for_model(model, cooldown=600))
    fake_openai.fail(Hang(60))
    with pytest.raises(ModelUnavailableError) as err:
        caller.invoke("rewrite", [])
    assert err.value.attempts == 1 and not caller.down()
    fake_openai.fail(None)
    fake_openai.script("ok")
    assert caller.invoke("answer", [])[0].content == "ok"


def test_async_path_degrades_too(fake_openai: FakeOpenAIServer) -> None:
    graph, service = agent(fake_openai, timeout=1.0)
    fake_openai.fail(Hang(60))

    async def run() -> dict[str, Any]:
        return await graph.ainvoke(  # type: ignore[no-any-return]
            {"messages": [{"role": "user", "content": "我喜欢乌龙茶"}]},
            {"configurable": {"thread_id": "a"}}, context={"user_id": "u1"})

    started = time.monotonic()
    out = asyncio.run(run())
    assert time.monotonic() - started < 5
    assert out["answer"].startswith(LINE_ZH) and out["memory_report"]["model_calls"] == fake_openai.attempts == 2
    assert stored_texts(service) == ["user: 我喜欢乌龙茶"]


def test_streamed_answer_still_streams(fake_openai: FakeOpenAIServer) -> None:
    graph, _ = agent(fake_openai, timeout=10)  # a first structured stream imports much of the SDK
    fake_openai.script("one two three", {"facts": []})
    tokens = [chunk.content for chunk, meta in graph.stream(
        {"messages": [{"role": "user", "content": "count"}]}, {"configurable": {"thread_id": "s"}},
        context={"user_id": "u1"}, stream_mode="messages") if meta["langgraph_node"] == "generate"]
    # token by token, and the whole message is not sent again at the end
    assert "".join(str(t) for t in tokens) == "one two three" and len([t for t in tokens if t]) == 3


def test_an_empty_answer_is_labelled_and_answered_from_memory(fake_openai: FakeOpenAIServer) -> None:
    """A 200 whose content is empty is no answer (found by hand): the memory-only reply, labelled, the turn kept."""
    graph, service = agent(fake_openai)
    fake_openai.script("Noted: your horse is called Star.", {"facts": []})
    turn(graph, "My horse is called Star")
    fake_openai.script("What is my horse called?", "", {"facts": []})  # the rewrite, then an empty answer
    out = turn(graph, "what is my horse called?")
    assert out["answer"].startswith(LINE_EN) and "Star" in out["answer"]
    assert labels.MODEL_UNAVAILABLE in out["degraded"]
    assert out["messages"][-1].content == out["answer"]  # no empty message left in the thread


def test_a_rewrite_that_says_nothing_searches_with_the_message(fake_openai: FakeOpenAIServer) -> None:
    """A rewrite model answering "OK, noted." (low value: recall would search for nothing) is not the query."""
    graph, _ = agent(fake_openai)
    fake_openai.script("Noted.", {"facts": []})
    turn(graph, "My horse is called Star")
    fake_openai.script("OK, noted.", "Your horse is Star.", {"facts": []})
    out = turn(graph, "what is my horse called?")
    assert out["query"] == "what is my horse called?"
    assert any("Star" in r["text"] for r in out["recalled"])


def test_an_empty_answer_with_writing_off_says_nothing_was_kept(fake_openai: FakeOpenAIServer) -> None:
    graph, service = agent(fake_openai)
    fake_openai.script("", {"facts": []})  # the first turn: no rewrite, an empty answer
    out = graph.invoke({"messages": [{"role": "user", "content": "我住在柏林，我是一名护士"}]},
                       {"configurable": {"thread_id": "t1"}}, context={"user_id": "u1", "write_memory": False})
    assert out["answer"].startswith(LINE_ZH) and "记下了" not in out["answer"]
    assert not list(service.store.scan("u1", kinds=[Kind.EPISODIC]))
