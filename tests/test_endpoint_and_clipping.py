"""Issue 13 item 6: embeddings through OPENAI_BASE_URL need no key (like chat); a clipped message is said.

The embeddings go through the real ``OpenAIEmbeddings`` client to ``FakeOpenAIServer`` on a loopback port.
Clipping runs the real graph (``FakeChatModel``, in-process store) and the real ``mneme chat``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from mneme import build_graph
from mneme.config import Settings
from mneme.errors import ConfigurationError
from mneme.memory.base import Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.stores import open_service, settings_embedder
from mneme.testing import FakeChatModel, FakeEmbeddings, FakeOpenAIServer

MNEME = str(Path(sys.executable).with_name("mneme"))


@pytest.mark.slow  # importing langchain_openai alone takes seconds
def test_openai_embeddings_at_a_base_url_need_no_key(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    settings = Settings.from_env({"MNEME_EMBEDDINGS": "openai:nomic-embed-text", "OPENAI_BASE_URL": fake_openai.url,
                                  "MNEME_DATA_DIR": str(tmp_path / "data")})
    assert settings.openai_api_key is None
    embedder = settings_embedder(settings)
    vectors = embedder.embed(["我住在杭州", "I live in Hangzhou"])
    assert len(vectors) == 2 and len(vectors[0]) == embedder.info.dimension > 0
    assert fake_openai.embedding_attempts >= 1
    bodies = [r.body for r in fake_openai.requests if r.path.endswith("/embeddings")]
    assert bodies and bodies[-1]["model"] == "nomic-embed-text"

    # the whole memory path runs on it: write, then recall
    service = open_service(settings, embedder=embedder)
    try:
        report = service.remember_turn("u1", user_text="我住在杭州，喜欢喝龙井茶")
        assert report.stored
        assert service.recall("u1", "龙井茶")
    finally:
        service.close()


def test_openai_embeddings_without_key_or_base_url_say_what_to_set() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY .*or OPENAI_BASE_URL"):
        settings_embedder(Settings.from_env({"MNEME_EMBEDDINGS": "openai:text-embedding-3-small"}))


def _graph(limit: int | None = None) -> tuple[object, MemoryService]:
    from mneme.memory.writing import WritePolicy

    service = MemoryService(InProcessStore(FakeEmbeddings()),
                            writing=WritePolicy(max_user_chars=limit) if limit else None)
    model = FakeChatModel(responses=["收到。"], structured_responses=[{}])
    return build_graph(model=model, service=service, checkpointer=InMemorySaver()), service


def _say(graph: object, text: str, thread: str = "t1") -> dict[str, object]:
    state = graph.invoke({"messages": [{"role": "user", "content": text}]},  # type: ignore[attr-defined]
                         {"configurable": {"thread_id": thread}}, context={"user_id": "u1"})
    report: dict[str, object] = state["memory_report"]
    return report


def test_a_long_message_is_kept_whole_up_to_the_serving_limit() -> None:
    graph, service = _graph()
    text = "我在写一本关于杭州茶园的小说。" * 400  # 6,000 characters: over the old hidden 4,000 cut
    report = _say(graph, text)
    assert "clipped" not in report and report["stored"]
    (episode,) = service.store.scan("u1", kinds=[Kind.EPISODIC])
    assert text in episode.text


def test_a_clipped_message_is_said_in_the_memory_report() -> None:
    graph, service = _graph(limit=1000)
    text = "我喜欢在西湖边散步，" * 150  # 1,500 characters
    report = _say(graph, text)
    assert report["clipped"] is True and report["chars"] == 1500 and report["kept"] == 1000
    (episode,) = service.store.scan("u1", kinds=[Kind.EPISODIC])
    kept = episode.text.removeprefix("user: ").split("\nassistant:")[0]
    assert len(kept) <= 1000 and text.startswith(kept.rstrip("…"))
    assert "clipped" not in _say(graph, "我也喜欢龙井茶", thread="t2")  # a short one says nothing


@pytest.mark.slow
def test_mneme_chat_says_a_message_is_too_long_and_keeps_a_long_one_whole(tmp_path: Path) -> None:
    """The CLI has one limit, the serving one: over it the message is refused with a line saying so (nothing
    stored); under it, even far past the old hidden 4,000 characters, memory keeps it whole."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(MNEME_DATA_DIR=str(tmp_path / "data"), MNEME_EMBEDDINGS="fake", MNEME_MAX_MESSAGE_CHARS="6000",
               LANGSMITH_TRACING="false")
    too_long = "I keep a diary about the tea gardens near Hangzhou. " * 120  # 6,240 characters
    long = "我在写一本关于杭州茶园的小说，" * 350  # 5,250 characters
    proc = subprocess.run([MNEME, "chat", "-u", "u1"], input=f"{too_long}\n{long}\n", env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"message is {len(too_long):,} characters long; the limit is 6,000 (MNEME_MAX_MESSAGE_CHARS)" \
        in proc.stderr
    listed = subprocess.run([MNEME, "memories", "list", "-u", "u1", "--json"], env=env, capture_output=True,
                            text=True, timeout=300)
    episodes = [m["text"] for m in json.loads(listed.stdout) if m["kind"] == "episodic"]
    assert not any("diary" in t for t in episodes)
    assert any(long.strip() in t for t in episodes)
