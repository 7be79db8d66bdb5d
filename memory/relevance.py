"""Relevance floor: whether a recalled item has anything to do with the query at all.

Ranking normalises each channel over the candidates, so the best of a pool of unrelated items still scores well: a
user with three memories gets all three listed, whatever they ask. The floor is not a constant tuned on data
(cosines mean different things for different embedders and query lengths): it compares, per query, with texts known
to be unrelated. ``UNRELATED`` holds everyday sentences in Chinese and English about nothing a user would ask for;
the query's cosines to them estimate how close an unrelated text comes (mean μ, spread σ), and an item is *relevant*
when its cosine to the query is above μ + 3σ, where an unrelated text lands about once in a thousand (the usual
three-sigma rule; not fitted to any data set). The floor is a signal (``signals["relevant"]``, 1 or 0) that callers
apply where noise costs a person: the memory-only reply lists nothing rather than noise, and
``RecallOptions.relevance_floor`` drops irrelevant items in recall itself.

A keyword-only hit (outside the dense channel's candidates) has a cosine below the lowest candidate's, so it counts
as relevant only when that lowest cosine is itself above the baseline.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from mneme.memory.base import Embedder

UNRELATED: tuple[str, ...] = (
    "今天下午下了一场小雨。", "会议室的投影仪坏了。", "火车晚点了十分钟。", "超市的苹果正在打折。",
    "请把窗户关上。", "桌子上有一本书。", "公交车站在路口的左边。", "打印机没有纸了。",
    "It rained for most of the afternoon.", "The projector in the meeting room is broken.",
    "The train was ten minutes late.", "Apples are on sale at the supermarket.", "Please close the window.",
    "There is a book on the table.", "The bus stop is on the left at the corner.", "The printer is out of paper.",
)


SIGMAS = 3.0
"""How many spreads above the unrelated texts' mean cosine an item must be (the three-sigma rule)."""


class NullBaseline:
    """μ + 3σ of the cosines between a query and the ``UNRELATED`` texts (embedded once per embedder)."""

    def __init__(self, embedder: Embedder, texts: Sequence[str] = UNRELATED) -> None:
        self._embedder = embedder
        self._texts = list(texts)
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    def _unit(self) -> np.ndarray:
        with self._lock:
            if self._matrix is None:
                m = np.asarray(self._embedder.embed(self._texts), dtype=np.float32)
                m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
                self._matrix = m
            return self._matrix

    def of(self, query_vector: Sequence[float]) -> float:
        """The cosine above which an item is closer to the query than unrelated text comes: μ + 3σ."""
        q = np.asarray(query_vector, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return 1.0  # a query that points nowhere finds nothing relevant
        cosines = self._unit() @ (q / norm)
        return float(cosines.mean() + SIGMAS * cosines.std())


def relevant(dense: float | None, *, baseline: float, pool_min: float | None) -> bool:
    """Whether an item clears the floor: its cosine (or, for a keyword-only hit, the dense pool's lowest
    cosine, an upper bound of its own) is above ``baseline``."""
    if dense is not None:
        return dense > baseline
    return pool_min is not None and pool_min > baseline
