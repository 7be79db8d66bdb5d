"""A streamed answer whose model breaks off midway (``FakeOpenAIServer`` ``Cut``: some words, then the connection
drops, cleanly or inside a chunked body).

Decision: a broken-off answer is never shown as an answer. The stream withdraws what it showed
(``{"reset": true, "reason": ...}``); the model is asked once more (a transient failure), and if it breaks off
again the labelled memory-only reply replaces it, with ``degraded`` set. After the last reset the deltas add up
to the final ``answer`` exactly. ``mneme chat`` (on a terminal it prints the answer as it streams; what a
terminal shows last is the reply), ``/agent/invoke``,
``/agent/stream`` and the playground end with the same reply; the half answer is neither kept in the thread
nor stored as the assistant's words.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from mneme.config import Settings
from mneme.graph import build_graph
from mneme.graph import degraded as labels
from mneme.http_turn import turn_runnable
from mneme.memory.base import Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.model_calls import ModelPolicy
from mneme.models import load_chat_model
from mneme.testing import Cut, FakeEmbeddings, FakeOpenAIServer

pytestmark = pytest.mark.slow  # importing the OpenAI SDK and a first streamed call take seconds
MNEME = str(Path(sys.executable).with_name("mneme"))
HALF = "Oolong tea comes from Fujian province and"
WHOLE = "Oolong is a partly oxidised tea."
LINE_EN = "[model unavailable: answering from memory]"
LINE_ZH = "[对话模型暂时不可用：以下根据记忆回答]"


def agent(server: FakeOpenAIServer) -> tuple[Any, MemoryService, Any]:
    service = MemoryService(InProcessStore(FakeEmbeddings()))
    model = load_chat_model(Settings(openai_base_url=server.url, chat_model="fake", model_timeout=10))
    graph = build_graph(model=model, service=service, checkpointer=InMemorySaver(),
                        model_policy=ModelPolicy.for_model(model, retry_backoff=0.05))
    return turn_runnable(graph, limits={"max_chars": 32000, "max_messages": 20}), service, graph


def stream(chain: Any, text: str, thread: str = "u1:t1") -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [event async for event in chain.astream({"messages": [{"role": "user", "content": text}]},
                                                       {"configurable": {"thread_id": thread, "user_id": "u1"}})]
    return asyncio.run(collect())


def shown_after_last_reset(events: list[dict[str, Any]]) -> str:
    last = max((i for i, e in enumerate(events) if e.get("reset")), default=-1)
    return "".join(e["delta"] for e in events[last + 1:] if "delta" in e)


@pytest.mark.parametrize("chunked", [False, True], ids=["clean-close", "chunked"])
def test_a_broken_off_answer_is_withdrawn_and_written_again(fake_openai: FakeOpenAIServer, chunked: bool) -> None:
    chain, service, _ = agent(fake_openai)
    fake_openai.script(Cut(after=4, text=f"{HALF} then more", chunked=chunked), WHOLE, {})
    events = stream(chain, "I like oolong tea, what is it?")
    final = events[-1]
    resets = [i for i, e in enumerate(events) if e.get("reset")]
    assert len(resets) == 1  # exactly one withdrawal, between the attempts
    before = "".join(e["delta"] for e in events[:resets[0]] if "delta" in e)
    assert before.split() == HALF.split()[:4]  # the words the first attempt did show
    assert final["answer"] == WHOLE == shown_after_last_reset(events) and final["degraded"] == []
    # the first attempt, the retry and the extraction: every request counted
    assert final["memory_report"]["model_calls"] == fake_openai.attempts == 3
    service.drain()
    assert all("Fujian" not in r.text for r in service.store.scan("u1", kinds=[Kind.EPISODIC]))


@pytest.mark.parametrize(("text", "line"), [("I like oolong tea, what is it?", LINE_EN),
                                             ("我喜欢乌龙茶，它是什么茶？", LINE_ZH)], ids=["en", "zh"])
def test_an_answer_that_keeps_breaking_off_becomes_the_labelled_memory_reply(
    fake_openai: FakeOpenAIServer, text: str, line: str
) -> None:
    chain, service, graph = agent(fake_openai)
    fake_openai.fail(Cut(after=5, text=f"{HALF} more words"))
    events = stream(chain, text)
    final = events[-1]
    assert final["answer"].startswith(line) and "Fujian" not in final["answer"]
    assert labels.MODEL_UNAVAILABLE in final["degraded"]
    assert shown_after_last_reset(events) == final["answer"]  # the half answers were withdrawn
    assert sum(1 for e in events if e.get("reset")) == 2  # after the first attempt, and for the memory reply
    assert final["memory_report"]["model_calls"] == fake_openai.attempts
    # the thread keeps the reply the user was given, not the half answer
    thread = graph.get_state({"configurable": {"thread_id": "u1:t1"}}).values["messages"]
    assert thread[-1].content == final["answer"]
    service.drain()
    assert all("Fujian" not in r.text for r in service.store.scan("u1"))


def test_a_complete_stream_is_not_withdrawn(fake_openai: FakeOpenAIServer) -> None:
    chain, _, _ = agent(fake_openai)
    fake_openai.script(WHOLE, {})
    events = stream(chain, "what is oolong?")
    assert not any(e.get("reset") for e in events)
    assert "".join(e["delta"] for e in events if "delta" in e) == events[-1]["answer"] == WHOLE


@pytest.mark.server
def test_chat_invoke_and_stream_end_with_the_same_reply(
    spawn_mneme_serve: Any, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.fail(Cut(after=3, text=f"{HALF} more", chunked=True))
    message = "我住在杭州，喜欢乌龙茶"
    server = spawn_mneme_serve({"OPENAI_BASE_URL": fake_openai.url, "MNEME_MODEL_TIMEOUT": "10"})
    headers = {"X-User-Id": "eve", "X-Thread-Id": "s1"}
    body = {"input": {"messages": [{"role": "user", "content": message}]}}
    with httpx.stream("POST", f"{server.url}/agent/stream", json=body, headers=headers, timeout=120) as r:
        assert r.status_code == 200
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    streamed = events[-1]
    invoked = httpx.post(f"{server.url}/agent/invoke", json=body, timeout=120,
                         headers={"X-User-Id": "ann", "X-Thread-Id": "s1"}).json()["output"]
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    env.update({"MNEME_DATA_DIR": str(tmp_path / "cli"), "MNEME_EMBEDDINGS": "fake", "LANGSMITH_TRACING": "false",
                "OPENAI_BASE_URL": fake_openai.url, "MNEME_MODEL_TIMEOUT": "10"})
    proc = subprocess.run([MNEME, "chat", "-u", "bo"], input=f"{message}\n".encode(), env=env,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    cli = proc.stdout.decode().strip()
    assert streamed["answer"].startswith(LINE_ZH) and "Fujian" not in streamed["answer"]
    assert shown_after_last_reset(events) == streamed["answer"]
    assert streamed["answer"] == invoked["answer"] == cli  # one reply, whichever way it was asked
    assert labels.MODEL_UNAVAILABLE in streamed["degraded"] and streamed["degraded"] == invoked["degraded"]
    assert "model unavailable" in proc.stderr.decode()


class Writes:
    """A terminal's stdout: every write kept apart, so streaming shows as several writes."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        return "".join(self.writes)


def chat_turn(graph: Any, text: str) -> tuple[str, Writes]:
    from mneme.cli.chat import stream_reply

    out = Writes()
    answer = stream_reply(graph, text, config={"configurable": {"thread_id": "u1:c1"}},
                          context={"user_id": "u1"}, out=out, shown=set())  # type: ignore[arg-type]
    return answer, out


def test_a_terminal_chat_prints_the_answer_as_the_model_writes_it(fake_openai: FakeOpenAIServer) -> None:
    _, _, graph = agent(fake_openai)
    fake_openai.script(WHOLE, {})
    answer, out = chat_turn(graph, "what is oolong?")
    assert answer == WHOLE and out.text == WHOLE + "\n"
    words = [w for w in out.writes if w.strip()]
    assert len(words) == len(WHOLE.split())  # word by word, as the fake model streams it


def test_a_terminal_chat_withdraws_a_broken_off_answer_and_ends_with_the_reply(
        fake_openai: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, graph = agent(fake_openai)
    fake_openai.script(Cut(after=4, text=f"{HALF} then more"), WHOLE, {})
    answer, out = chat_turn(graph, "I like oolong tea, what is it?")
    assert answer == WHOLE
    half, rest = out.text.split("\n", 1)
    assert half.split() == HALF.split()[:4] and rest == WHOLE + "\n"  # the last line printed is the reply
    assert "broke off" in capsys.readouterr().err


def test_a_terminal_chat_replaces_a_dead_stream_with_the_labelled_memory_reply(
        fake_openai: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, graph = agent(fake_openai)
    fake_openai.fail(Cut(after=5, text=f"{HALF} more words"))
    answer, out = chat_turn(graph, "I like oolong tea, what is it?")
    assert answer.startswith(LINE_EN) and "Fujian" not in answer
    assert out.text.endswith("\n" + answer + "\n")
    assert "model unavailable" in capsys.readouterr().err
