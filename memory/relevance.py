"""Relevance floor: whether a recalled item has anything to do with the query at all.

Ranking normalises each channel over the candidates, so the best of a pool of unrelated items still scores well: a
user with three memories gets all three listed, whatever they ask. The floor is not a constant tuned on data
(cosines mean different things for different embedders and query lengths): it compares, per query, with texts known
to be unrelated. ``UNRELATED`` holds everyday sentences in Chinese and English about nothing a user would ask for;
the query's cosines to them estimate how close an unrelated text comes (mean μ, spread σ), and an item is *relevant*
when its cosine to the query is above μ + 3σ, where an unrelated text lands about once in a thousand (the usual
three-sigma rule; not fitted to any data set).

A null sample must look like what it is compared with: a user's memories are first-person statements ("我住在杭州")
or statements about the user ("用户是一名老师", "The user likes tea"), and a personal question ("我的猫叫什么？")
comes closer to any personal statement than to "the printer is out of paper": against impersonal texts only,
"我住在杭州，是一名老师" cleared the floor for "我的猫叫什么？". So each item is compared with unrelated texts of its
own form (``form_of``): episodes with mundane first-person statements (``FIRST_PERSON``), facts, preferences and
summaries with the same said of "the user" (``THIRD_PERSON``), documents with the impersonal ``UNRELATED``.

The floor is a signal (``signals["relevant"]``, 1 or 0) that callers
apply where noise costs a person: the memory-only reply lists nothing rather than noise, and
``RecallOptions.relevance_floor`` drops irrelevant items in recall itself.

A keyword-only hit (outside the dense channel's candidates) has a cosine below the lowest candidate's, so it counts
as relevant only when that lowest cosine is itself above the baseline.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from mneme.memory.base import Embedder, Kind

Form = Literal["first", "third", "impersonal"]

UNRELATED: tuple[str, ...] = (
    "今天下午下了一场小雨。", "会议室的投影仪坏了。", "火车晚点了十分钟。", "超市的苹果正在打折。",
    "请把窗户关上。", "桌子上有一本书。", "公交车站在路口的左边。", "打印机没有纸了。",
    "It rained for most of the afternoon.", "The projector in the meeting room is broken.",
    "The train was ten minutes late.", "Apples are on sale at the supermarket.", "Please close the window.",
    "There is a book on the table.", "The bus stop is on the left at the corner.", "The printer is out of paper.",
)

FIRST_PERSON: tuple[str, ...] = (
    "我买了一把雨伞。", "我喝了一杯水。", "我把钥匙放在桌子上了。", "我去超市买了鸡蛋。",
    "我关上了窗户。", "我的手机快没电了。", "我在等公交车。", "我把垃圾扔掉了。",
    "I bought an umbrella.", "I drank a glass of water.", "I left my keys on the table.",
    "I went to the supermarket for eggs.", "I closed the window.", "My phone battery is almost empty.",
    "I am waiting for the bus.", "I took out the trash.",
)
"""Mundane first-person statements. No times (昨天, 周末, this morning): a question about a time would find them
close and its real hits would fall under the floor ("我周末干什么？" lost "我周末常去爬山" with "我周末去超市…")."""
THIRD_PERSON: tuple[str, ...] = (
    "用户买了一把雨伞。", "用户喝了一杯水。", "用户把钥匙放在桌子上了。", "用户去超市买了鸡蛋。",
    "用户关上了窗户。", "用户的手机快没电了。", "用户在等公交车。", "用户把垃圾扔掉了。",
    "The user bought an umbrella.", "The user drank a glass of water.", "The user left the keys on the table.",
    "The user went to the supermarket for eggs.", "The user closed the window.",
    "The user's phone battery is almost empty.", "The user is waiting for the bus.", "The user took out the trash.",
)
"""The same said of the user, as facts, preferences and summaries are written."""
NULL_TEXTS: dict[Form, tuple[str, ...]] = {"first": FIRST_PERSON, "third": THIRD_PERSON, "impersonal": UNRELATED}
"""Unrelated texts per form of item (``form_of``)."""


def form_of(kind: Kind | str) -> Form:
    """The form of an item's text: an episode is the user's words, a document impersonal, the rest about the user."""
    if kind in (Kind.EPISODIC, "episodic"):
        return "first"
    return "impersonal" if kind in (Kind.DOCUMENT, "document") else "third"


SIGMAS = 3.0
"""How many spreads above the unrelated texts' mean cosine an item must be (the three-sigma rule)."""


class NullBaseline:
    """μ + 3σ of the cosines between a query and the unrelated texts of each form (embedded once, in one call)."""

    def __init__(self, embedder: Embedder, texts: Mapping[Form, Sequence[str]] | None = None) -> None:
        self._embedder = embedder
        self._sets = {form: list(t) for form, t in (texts or NULL_TEXTS).items()}
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()

    def _unit(self) -> np.ndarray:
        with self._lock:
            if self._matrix is None:
                m = np.asarray(self._embedder.embed([t for texts in self._sets.values() for t in texts]),
                               dtype=np.float32)
                m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
                self._matrix = m
            return self._matrix

    def floors(self, query_vector: Sequence[float]) -> dict[Form, float]:
        """Per form, the cosine above which an item is closer to the query than unrelated text comes: μ + 3σ."""
        q = np.asarray(query_vector, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return dict.fromkeys(self._sets, 1.0)  # a query that points nowhere finds nothing relevant
        cosines = self._unit() @ (q / norm)
        out: dict[Form, float] = {}
        start = 0
        for form, texts in self._sets.items():
            part = cosines[start:start + len(texts)]
            start += len(texts)
            out[form] = float(part.mean() + SIGMAS * part.std())
        return out

    def of(self, query_vector: Sequence[float]) -> float:
        """The floor for impersonal text (documents): ``floors(query_vector)["impersonal"]``."""
        return self.floors(query_vector)["impersonal"]


def relevant(dense: float | None, *, baseline: float, pool_min: float | None) -> bool:
    """Whether an item clears the floor: its cosine (or, for a keyword-only hit, the dense pool's lowest
    cosine, an upper bound of its own) is above ``baseline``."""
    if dense is not None:
        return dense > baseline
    return pool_min is not None and pool_min > baseline
