"""``BatchingEmbedder``: concurrent calls share one model call, repeated texts are not embedded again."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from mneme.memory.base import EmbedderInfo
from mneme.memory.embedding_batcher import BatchingEmbedder
from mneme.testing import FakeEmbeddings


class SlowEmbeddings(FakeEmbeddings):
    """``FakeEmbeddings`` that takes 50 ms per call (a model call) and records each call's texts."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Record, wait, embed (or fail like an unreachable endpoint)."""
        self.calls.append(list(texts))
        time.sleep(0.05)
        if self.fail:
            raise ConnectionError("embedding endpoint down (test)")
        return super().embed(texts)


def test_concurrent_calls_share_model_calls_and_get_their_own_vectors() -> None:
    inner = SlowEmbeddings()
    batcher = BatchingEmbedder(inner)
    texts = [f"我第{i}次旅行去了村子 village {i}" for i in range(16)]
    out: dict[int, list[list[float]]] = {}
    barrier = threading.Barrier(16)

    def call(i: int) -> None:
        barrier.wait()
        out[i] = batcher.embed([texts[i]])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(out[i] == FakeEmbeddings().embed([texts[i]]) for i in range(16))  # each caller its own text's
    assert len(inner.calls) < 16 and sum(len(c) for c in inner.calls) == 16  # shared calls, each text once


def test_a_text_embedded_recently_is_not_embedded_again() -> None:
    inner = SlowEmbeddings()
    batcher = BatchingEmbedder(inner, cache_size=2)
    first = batcher.embed(["I like oolong tea", "我喜欢乌龙茶"])
    assert batcher.embed(["我喜欢乌龙茶", "I like oolong tea"]) == first[::-1]
    assert len(inner.calls) == 1
    batcher.embed(["a third text"])  # the cache holds 2: the least recently used (我喜欢乌龙茶) goes
    batcher.embed(["I like oolong tea", "我喜欢乌龙茶"])
    assert inner.calls[-1] == ["我喜欢乌龙茶"]


def test_a_model_error_reaches_every_caller_and_the_next_call_works() -> None:
    inner = SlowEmbeddings(fail=True)
    batcher = BatchingEmbedder(inner)
    with pytest.raises(ConnectionError):
        batcher.embed(["hello"])
    inner.fail = False
    assert batcher.embed(["hello"]) == FakeEmbeddings().embed(["hello"])


def test_it_keeps_the_wrapped_models_identity() -> None:
    inner = FakeEmbeddings(dimension=64, name="fake-64")
    assert BatchingEmbedder(inner).info == EmbedderInfo(name="fake-64", dimension=64)
