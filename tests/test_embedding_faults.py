"""An OpenAI-compatible embeddings endpoint misbehaving (``FakeOpenAIServer``): every request it receives is
counted in ``memory_report.embedding_calls``; an outage is a labelled turn, and queued turns wait for the
endpoint instead of being parked.

The embeddings go through the real ``OpenAIEmbeddings`` client to a real socket; the store is real
(embedded Chroma); the graph runs in memory-only mode (no chat model), so every request the fake counts
is an embedding request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from mneme import build_graph
from mneme.config import Settings
from mneme.embeddings import OpenAIEmbedder
from mneme.endpoint_attempts import counting
from mneme.errors import EmbedderUnavailableError
from mneme.graph import degraded as labels
from mneme.memory.embedding_batcher import BatchingEmbedder
from mneme.stores import open_service
from mneme.testing import Drop, FakeOpenAIServer, Hang, Status

pytestmark = pytest.mark.slow  # importing langchain_openai and opening Chroma take seconds


@pytest.fixture
def served(fake_openai: FakeOpenAIServer, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A memory-only graph over a service whose embedder is the fake endpoint (1 s timeout)."""
    journal = bool(getattr(request, "param", False))
    settings = Settings.from_env({"MNEME_EMBEDDINGS": "openai:fake-embed", "OPENAI_BASE_URL": fake_openai.url,
                                  "MNEME_DATA_DIR": str(tmp_path / "data"), "MNEME_EMBEDDING_TIMEOUT": "1"})
    service = open_service(settings, journal=journal)
    graph = build_graph(model=None, service=service, checkpointer=InMemorySaver())
    try:
        yield graph, service
    finally:
        service.close(drain_timeout=0)


def turn(graph: Any, fake: FakeOpenAIServer, text: str, user: str = "u1") -> tuple[dict[str, Any], int, float]:
    """One turn: its state, the embedding requests the fake received meanwhile, and the wall time."""
    before, started = fake.embedding_attempts, time.monotonic()
    state = graph.invoke({"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": "t"}},
                         context={"user_id": user})
    return state, fake.embedding_attempts - before, time.monotonic() - started


def test_embedding_calls_are_the_requests_the_endpoint_received(served: Any, fake_openai: FakeOpenAIServer) -> None:
    graph, _ = served
    seen = []
    for text, failure in [("I live in Berlin and I work as a nurse", None),
                          ("where do I live?", None),
                          ("I like oolong tea", Status(500)),     # retried once, recall and write each
                          ("我喜欢喝龙井茶", Status(503)),
                          ("what tea do I like?", Drop()),
                          ("我住在杭州，是一名护士", Hang(60)),    # 1 s timeout, never retried
                          ("what is my job?", None)]:
        fake_openai.fail_embeddings(failure)
        state, received, seconds = turn(graph, fake_openai, text)
        report = state["memory_report"]
        assert report["embedding_calls"] == received, (text, report)
        seen.append(received)
        if failure is None:
            assert labels.STORE_UNAVAILABLE not in state["degraded"]
        else:  # answered without recall, said so, within the timeout (no request held the turn longer)
            assert state["degraded"] == [labels.STORE_UNAVAILABLE] and state["answer"]
            assert seconds < 10
        if isinstance(failure, Status | Drop):
            assert received >= 2  # the retry is a real request, and it is counted
        if isinstance(failure, Hang):
            assert received == 2  # recall's and the write's one request each: a timeout is not retried
    assert all(n > 0 for n in seen)


@pytest.mark.parametrize("served", [True], indirect=True, ids=["journal"])
def test_queued_turns_wait_for_the_embeddings_endpoint_and_are_stored_when_it_returns(
    served: Any, fake_openai: FakeOpenAIServer
) -> None:
    graph, service = served
    fake_openai.fail_embeddings(Status(500))
    state, received, _ = turn(graph, fake_openai, "I like oolong tea")
    assert state["memory_report"]["queued"] and state["degraded"] == [labels.STORE_UNAVAILABLE]
    assert state["memory_report"]["embedding_calls"] == received == 2  # recall only: the write is journaled
    time.sleep(3)  # several failed batches: an outage is waited out, never the turn's fault (5 of those park it)
    (entry,) = service.journal.pending("u1")
    assert entry.attempts == 0 and not entry.failed
    assert "embeddings endpoint" in (service.applier.last_error or "")
    fake_openai.fail_embeddings(None)
    assert service.drain(30)
    assert "user: I like oolong tea" in [r.text for r in service.store.scan("u1")]


def test_a_call_shared_by_concurrent_turns_is_counted_for_each(fake_openai: FakeOpenAIServer) -> None:
    embedder = BatchingEmbedder(OpenAIEmbedder("fake-embed", base_url=fake_openai.url, api_key="x", timeout=10))
    fake_openai.embedding_delay = 1.0
    tallies: dict[str, int] = {}

    def embed(text: str) -> None:
        with counting() as sent:
            embedder.embed([text])
        tallies[text] = sent.embedding

    first = threading.Thread(target=embed, args=("one",))
    first.start()
    time.sleep(0.3)  # the others arrive while the first request runs: ONE more request serves all three
    others = [threading.Thread(target=embed, args=(t,)) for t in ("two", "三", "four")]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join(30)
    assert fake_openai.embedding_attempts == 2 == embedder.calls
    assert tallies == {"one": 1, "two": 1, "三": 1, "four": 1}
    with counting() as sent:  # answered from the batcher's cache: no request, none counted
        embedder.embed(["two"])
    assert sent.embedding == 0 and fake_openai.embedding_attempts == 2


def test_an_unreachable_endpoint_is_an_outage_and_a_refused_input_is_not(
    fake_openai: FakeOpenAIServer, unused_url: str
) -> None:
    down = OpenAIEmbedder("fake-embed", base_url=f"{unused_url}/v1", api_key="x", timeout=2, retry_backoff=0)
    with counting() as sent, pytest.raises(EmbedderUnavailableError, match="unavailable after 2 request"):
        down.embed(["hello"])
    assert sent.embedding == 2  # a refused connection is an attempt too
    fake_openai.fail_embeddings(Status(400, "input too long"))
    refused = OpenAIEmbedder("fake-embed", base_url=fake_openai.url, api_key="x", timeout=2)
    with counting() as sent, pytest.raises(Exception) as caught:
        refused.embed(["hello"])
    assert not isinstance(caught.value, EmbedderUnavailableError)  # a 4xx is about this input: not retried
    assert sent.embedding == fake_openai.embedding_attempts == 1


def test_the_sdk_retries_nothing_behind_mneme(fake_openai: FakeOpenAIServer) -> None:
    """The SDK's own retries (2 by default) would multiply requests uncounted; Mneme's one retry is all."""
    embedder = OpenAIEmbedder("fake-embed", base_url=fake_openai.url, api_key="x", timeout=2, retry_backoff=0)
    fake_openai.fail_embeddings(Status(500))
    with pytest.raises(EmbedderUnavailableError):
        embedder.embed(["hello"])
    assert fake_openai.embedding_attempts == 2
    assert httpx.get(f"{fake_openai.url}/models").status_code == 200  # chat side untouched by fail_embeddings


def test_readiness_asks_the_endpoint_not_the_cache_of_recent_vectors(fake_openai: FakeOpenAIServer) -> None:
    from mneme.health import embedder_probe

    embedder = BatchingEmbedder(OpenAIEmbedder("fake-embed", base_url=fake_openai.url, api_key="x", timeout=2,
                                               retry_backoff=0))
    probe = embedder_probe(embedder)
    assert "openai:fake-embed" in probe()
    fake_openai.fail_embeddings(Status(503))
    with pytest.raises(EmbedderUnavailableError):
        probe()
    fake_openai.fail_embeddings(None)
    assert "openai:fake-embed" in probe()
