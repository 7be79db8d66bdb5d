"""``FakeOpenAIServer`` drives the real ``ChatOpenAI`` (OpenAI SDK over a socket): replies, streaming,
structured output, tool calls, and each failure mode with the attempts the SDK really made."""

from __future__ import annotations

import time

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from mneme.testing import Drop, FakeOpenAIServer, Garbage, Hang, Status, ToolCall


class City(BaseModel):
    city: str


def chat(server: FakeOpenAIServer, **kwargs: object) -> ChatOpenAI:
    options: dict[str, object] = {"max_retries": 0, "timeout": 5, **kwargs}
    return ChatOpenAI(model="fake", base_url=server.url, api_key="x", **options)  # type: ignore[arg-type]


def test_scripted_text_structured_and_tool_replies(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("你好，世界", {"city": "杭州"}, ToolCall("search", {"q": "猫"}), "last one repeats")
    model = chat(fake_openai)
    assert model.invoke("hi").content == "你好，世界"
    assert model.with_structured_output(City).invoke("where?") == City(city="杭州")
    tool = {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}}
    calls = model.bind_tools([tool]).invoke("find").tool_calls
    assert [(c["name"], c["args"]) for c in calls] == [("search", {"q": "猫"})]
    assert model.invoke("a").content == model.invoke("b").content == "last one repeats"
    bodies = fake_openai.chat_requests()
    assert fake_openai.attempts == len(bodies) == 5
    assert bodies[0]["messages"][-1] == {"role": "user", "content": "hi"}
    assert "response_format" in bodies[1] and "tools" in bodies[2]


def test_streaming_arrives_in_pieces(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script("one two three")
    chunks = [c.content for c in chat(fake_openai).stream("count")]
    assert "".join(str(c) for c in chunks) == "one two three"
    assert len([c for c in chunks if c]) == 3
    assert fake_openai.chat_requests()[0]["stream"] is True


def test_function_calling_structured_output(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script({"city": "北京"})
    out = chat(fake_openai).with_structured_output(City, method="function_calling").invoke("where?")
    assert out == City(city="北京")


@pytest.mark.parametrize("failure", [Status(500), Status(503), Drop(), Garbage()], ids=repr)
def test_failures_raise_and_each_try_is_counted(fake_openai: FakeOpenAIServer, failure: object) -> None:
    fake_openai.fail(failure)  # type: ignore[arg-type]
    with pytest.raises(Exception):  # noqa: B017 - the SDK's error types differ per failure
        chat(fake_openai, max_retries=2).invoke("hi")
    # The SDK retries 5xx and dropped connections (1 + 2 tries); a 200 with garbage is not retried.
    assert fake_openai.attempts == (1 if isinstance(failure, Garbage) else 3)
    fake_openai.fail(None)
    assert chat(fake_openai).invoke("hi").content == "好的。"


def test_hang_is_cut_by_the_client_timeout(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail(Hang(60))
    started = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017
        chat(fake_openai, timeout=0.5).invoke("hi")
    assert time.monotonic() - started < 5
    assert fake_openai.attempts == 1


def test_handler_sees_the_request(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = lambda body: f"echo {body['messages'][-1]['content']}"
    assert chat(fake_openai).invoke("ping").content == "echo ping"


def test_embeddings_endpoint(fake_openai: FakeOpenAIServer) -> None:
    from langchain_openai import OpenAIEmbeddings

    emb = OpenAIEmbeddings(model="fake", base_url=fake_openai.url, api_key="x",  # type: ignore[arg-type]
                           check_embedding_ctx_length=False, max_retries=0)
    vectors = emb.embed_documents(["a b", "a b", "c"])
    assert vectors[0] == vectors[1] != vectors[2] and fake_openai.embedding_attempts == 1
