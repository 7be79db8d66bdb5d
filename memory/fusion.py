"""Merging ranked lists from several retrievers, diversifying them, and fitting them into a prompt.

- ``rrf``: reciprocal rank fusion, ``score(d) = Σ_c weight_c / (k + rank_c(d))`` (rank from 1). Uses
  ranks only, so channels with incomparable scores (BM25, cosine, recency) mix without calibration.
- ``weighted_fusion``: a weighted sum of per-channel scores normalised to [0, 1] (min-max or rank), for
  when the scores' spread carries information RRF would throw away.
- ``mmr``: maximal marginal relevance, to stop five near-identical memories filling the context.
- ``fit_budget`` / ``count_tokens``: keep the best items that fit a token budget, counted offline
  (no tokenizer download): a CJK character is about one token, another word about 1.3.

Ties are broken deterministically: by the best rank an item reached in any channel, then by first
appearance (channel order, then rank), so results never depend on dict or hash order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Literal, TypeVar

import numpy as np

from mneme.errors import InvalidInputError

Id = TypeVar("Id", bound=Hashable)
T = TypeVar("T")


def _weight(weights: Mapping[str, float] | None, channel: str) -> float:
    w = 1.0 if weights is None else float(weights.get(channel, 1.0))
    if not w >= 0.0 or math.isinf(w):  # also rejects NaN
        raise InvalidInputError(f"fusion weight of {channel!r} must be a finite number >= 0, got {w}")
    return w


def rrf(
    rankings: Mapping[str, Sequence[Id]], *, k: int = 60, weights: Mapping[str, float] | None = None
) -> list[tuple[Id, float]]:
    """Reciprocal rank fusion of best-first rankings; ``(id, score)`` best first.

    A channel missing from ``weights`` weighs 1.0; weight 0 ignores a channel. An id repeated within
    one ranking counts at its first (best) position only.
    """
    if k < 0:
        raise InvalidInputError(f"rrf k must be >= 0, got {k}")
    scores: dict[Id, float] = {}
    best_rank: dict[Id, int] = {}
    order: dict[Id, int] = {}
    for channel, ranking in rankings.items():
        w = _weight(weights, channel)
        seen: set[Id] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            order.setdefault(item, len(order))
            best_rank[item] = min(best_rank.get(item, rank), rank)
            if w > 0:
                scores[item] = scores.get(item, 0.0) + w / (k + rank)
    ranked = [i for i in order if i in scores]
    ranked.sort(key=lambda i: (-scores[i], best_rank[i], order[i]))
    return [(i, scores[i]) for i in ranked]


def _normalise(scores: Mapping[Id, float], how: str) -> dict[Id, float]:
    finite = {i: float(s) for i, s in scores.items() if isinstance(s, int | float) and math.isfinite(s)}
    if not finite:
        return {}
    if how == "rank":
        ordered = sorted(finite, key=lambda i: -finite[i])
        n = len(ordered)
        return {i: (n - r) / n for r, i in enumerate(ordered)}
    lo, hi = min(finite.values()), max(finite.values())
    if hi == lo:  # one item or all tied: each is the channel's best
        return dict.fromkeys(finite, 1.0)
    return {i: (s - lo) / (hi - lo) for i, s in finite.items()}


def weighted_fusion(
    channels: Mapping[str, Mapping[Id, float]],
    weights: Mapping[str, float] | None = None,
    *,
    normalise: Literal["minmax", "rank"] = "minmax",
) -> list[tuple[Id, float]]:
    """Weighted sum of each channel's scores normalised to [0, 1]; ``(id, score)`` best first.

    ``minmax`` maps a channel's lowest score to 0 and highest to 1 (all-equal scores all get 1);
    ``rank`` gives the best of n items 1 and the worst 1/n. An id absent from a channel gets 0 there;
    non-finite scores are ignored. A channel missing from ``weights`` weighs 1.0.
    """
    if normalise not in ("minmax", "rank"):
        raise InvalidInputError(f"normalise must be 'minmax' or 'rank', got {normalise!r}")
    totals: dict[Id, float] = {}
    order: dict[Id, int] = {}
    best: dict[Id, float] = {}
    for channel, scores in channels.items():
        w = _weight(weights, channel)
        for item, s in _normalise(scores, normalise).items():
            order.setdefault(item, len(order))
            totals[item] = totals.get(item, 0.0) + w * s
            best[item] = max(best.get(item, 0.0), s)
    ranked = sorted(totals, key=lambda i: (-totals[i], -best[i], order[i]))
    return [(i, totals[i]) for i in ranked]


def mmr(
    candidates: Sequence[Id],
    relevance: Mapping[Id, float],
    vectors: Mapping[Id, Sequence[float]],
    *,
    lambda_: float = 0.7,
    k: int = 10,
) -> list[Id]:
    """Pick ``k`` candidates by maximal marginal relevance, in pick order.

    Each step takes the candidate maximising ``lambda_ * rel - (1 - lambda_) * max cosine to those
    already picked``. Relevance is min-max normalised over the candidates first so ``lambda_`` means
    the same for BM25, cosine or fused scores. A candidate without a vector is never penalised for
    similarity; one without a relevance counts as the least relevant. Ties go to the earlier candidate.
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise InvalidInputError(f"mmr lambda_ must be in [0, 1], got {lambda_}")
    items = list(dict.fromkeys(candidates))
    if k <= 0 or not items:
        return []
    rel_raw = [relevance.get(i, -math.inf) for i in items]
    finite = [r for r in rel_raw if math.isfinite(r)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 0.0)
    rel = np.array([((r - lo) / (hi - lo) if hi > lo else 1.0) if math.isfinite(r) else 0.0 for r in rel_raw])

    has_vec = [i in vectors and len(vectors[i]) > 0 for i in items]
    dims = {len(vectors[i]) for i, h in zip(items, has_vec, strict=True) if h}
    if len(dims) > 1:
        raise InvalidInputError(f"mmr vectors have different dimensions: {sorted(dims)}")
    dim = dims.pop() if dims else 1
    mat = np.zeros((len(items), dim))
    for row, (item, h) in enumerate(zip(items, has_vec, strict=True)):
        if h:
            v = np.asarray(vectors[item], dtype=float)
            norm = np.linalg.norm(v)
            mat[row] = v / norm if norm > 0 else 0.0

    picked: list[int] = []
    max_sim = np.full(len(items), -np.inf)  # highest similarity to anything picked so far
    available = np.ones(len(items), dtype=bool)
    for _ in range(min(k, len(items))):
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0)
        score = lambda_ * rel - (1.0 - lambda_) * penalty
        score[~available] = -np.inf
        best = int(np.argmax(score))  # argmax returns the first maximum: ties go to the earlier candidate
        picked.append(best)
        available[best] = False
        max_sim = np.maximum(max_sim, mat @ mat[best])
    return [items[p] for p in picked]


_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD_RE = re.compile(r"[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_PUNCT_RE = re.compile(r"[^\w\s]+|_+")


def count_tokens(text: str) -> int:
    """Approximate LLM tokens of ``text`` offline: 1 per CJK/kana/hangul character, 1.3 per other word,
    1 per run of punctuation. Errs high for English prose (real BPE is ~1.3 tokens per word)."""
    if not text:
        return 0
    cjk = len(_CJK_RE.findall(text))
    words = len(_WORD_RE.findall(text))
    punct = len(_PUNCT_RE.findall(text))
    return math.ceil(cjk + 1.3 * words + punct)


def fit_budget(
    items: Iterable[T],
    *,
    max_tokens: int,
    count_tokens: Callable[[T], int],
    stop_at_first_misfit: bool = False,
) -> list[T]:
    """Keep items, best first as given, while their token counts fit within ``max_tokens``.

    An item too big for what is left is skipped and smaller later ones may still fit, unless
    ``stop_at_first_misfit`` asks for a strict prefix of the ranking.
    """
    kept: list[T] = []
    left = max_tokens
    for item in items:
        cost = max(0, int(count_tokens(item)))
        if cost <= left:
            kept.append(item)
            left -= cost
        elif stop_at_first_misfit:
            break
    return kept
