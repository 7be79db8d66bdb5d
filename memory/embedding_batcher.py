"""Embedding calls shared between concurrent turns: one model call for the texts of many, each text once.

Under load a server embeds many short texts at once: each turn's query (recall) and, a moment later, the
same turn's text again (its episodic record: in memory-only mode the record's search text *is* the
query). ``BatchingEmbedder`` wraps any embedder so that

- callers arriving while a model call runs wait and are then served by ONE call for all of them (the
  local model's cost per call is far above its cost per text, and it runs one call at a time anyway);
- a text embedded recently is answered from a small LRU of vectors (doubles, 4 KiB per 512-d vector)
  instead of the model.

Results are exactly the wrapped model's: a batch holds the same texts, a cached vector is the one the
model returned. ``info`` is the wrapped embedder's, so stores see the same model. The requests a shared
call sent to a remote endpoint are counted for every caller it served (``mneme.endpoint_attempts``).
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence

from mneme.endpoint_attempts import count_embedding, counting
from mneme.memory.base import Embedder, EmbedderInfo


class _Waiter:
    """One caller waiting for vectors, or for its turn to make the model call for everyone waiting."""

    __slots__ = ("error", "event", "lead", "requests", "texts", "vectors")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.event = threading.Event()
        self.lead = False
        self.vectors: list[list[float]] | None = None
        self.error: BaseException | None = None
        self.requests = 0
        """Requests the call that served this caller sent (its endpoint's, retries included)."""


class BatchingEmbedder:
    """An ``Embedder`` that coalesces concurrent calls into one and remembers recent vectors."""

    def __init__(self, inner: Embedder, *, cache_size: int = 2048) -> None:
        self.inner = inner
        self.cache_size = cache_size
        self.calls = 0
        """Calls made to the wrapped model (figures and tests)."""
        self._cache: OrderedDict[str, array[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._waiting: list[_Waiter] = []
        self._leading = False

    @property
    def info(self) -> EmbedderInfo:
        """The wrapped model's name and dimension."""
        return self.inner.info

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts``, in order: cached ones at once, the others in a shared model call."""
        texts = list(texts)
        if not texts:
            return []
        found: dict[str, list[float]] = {}
        with self._lock:
            for text in texts:
                hit = self._cache.get(text)
                if hit is not None:
                    self._cache.move_to_end(text)
                    found[text] = hit.tolist()
            missing = list(dict.fromkeys(t for t in texts if t not in found))
            if not missing:
                return [found[t] for t in texts]
            me = _Waiter(missing)
            self._waiting.append(me)
            if not self._leading:
                self._leading = me.lead = True
        while me.vectors is None and me.error is None:
            if me.lead:
                self._round()
            else:
                me.event.wait()
        count_embedding(me.requests)  # into the caller's own tally, whoever made the call
        if me.error is not None:
            raise me.error
        assert me.vectors is not None
        found.update(zip(missing, me.vectors, strict=True))
        return [found[t] for t in texts]

    def _round(self) -> None:
        """The leader's model call for every caller waiting now; then the next waiter leads (or nobody)."""
        with self._lock:
            batch, self._waiting = self._waiting, []
        unique = list(dict.fromkeys(t for w in batch for t in w.texts))
        vectors: dict[str, list[float]] = {}
        error: BaseException | None = None
        with counting() as tally:
            try:
                self.calls += 1
                vectors = dict(zip(unique, self.inner.embed(unique), strict=True))
            except BaseException as exc:  # every caller of this round sees the model's error
                error = exc
        with self._lock:
            for text, vector in vectors.items():
                self._cache[text] = array("d", vector)
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            if self._waiting:  # hand the lead on: nobody serves others for ever while its own caller waits
                nxt = self._waiting[0]
                nxt.lead = True
                nxt.event.set()
            else:
                self._leading = False
        for w in batch:
            w.lead = False
            w.requests = tally.embedding
            if error is not None:
                w.error = error
            else:
                w.vectors = [vectors[t] for t in w.texts]
            w.event.set()
