"""A large tenant's keyword postings held in memory as arrays, and BM25 scored over them.

For a user with tens of thousands of memories, a keyword search over the SQLite index spends its time in
SQL, not in arithmetic: counting each query term's postings up to the budget (one range scan per term,
~9 ms for a query of 10 terms at 100k rows, load average ~7) and summing BM25 over the chosen terms'
thousands of postings with ``GROUP BY``. ``PostingCache`` reads such a tenant's postings once, when it is
first searched (as the vector cache loads its rows), into one sorted block of arrays (term -> a slice of
row ids, term frequencies and document lengths: 16 bytes a posting, ~16 MB for 100k memories); a term's
document frequency is then its slice's length, and a search is a few numpy operations (``score``), the same
BM25 as the SQL path.

Exactness: the SQLite file stays the truth and this is derived from it. The owning ``KeywordIndex`` applies
its own committed writes to the cached tenant (``add``/``remove``: the changed terms' postings are rebuilt
as small per-term overrides, never a reload for one turn's write) and drops a tenant on anything coarser;
``PRAGMA data_version`` tells it when another connection (another process) committed, and then everything
is dropped. Bounded by a total number of postings, least recently searched tenant first out.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MIN_DOCS = 5_000
"""Tenants with at least this many entries are searched over cached postings; smaller ones in SQL (already
~0.5 ms there, and their postings would only take memory)."""
DEFAULT_MAX_POSTINGS = 4_000_000
"""Postings held at most over all cached tenants (~64 MB; 100k conversation turns hold ~1M)."""


@dataclass(frozen=True)
class Postings:
    """One term's postings in one tenant: parallel arrays, row ids ascending."""

    rids: npt.NDArray[np.int64]
    tf: npt.NDArray[np.int32]
    dl: npt.NDArray[np.int32]

    @classmethod
    def of(cls, rows: Sequence[tuple[int, int, int]]) -> Postings:
        """From ``(rid, tf, dl)`` rows."""
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        arr = arr[np.argsort(arr[:, 0], kind="stable")]
        return cls(arr[:, 0].copy(), arr[:, 1].astype(np.int32), arr[:, 2].astype(np.int32))

    @property
    def df(self) -> int:
        """How many of the tenant's entries hold the term."""
        return int(self.rids.shape[0])

    def without(self, rids: Sequence[int]) -> Postings:
        """These postings minus those of ``rids``."""
        keep = ~np.isin(self.rids, np.asarray(rids, dtype=np.int64))
        return Postings(self.rids[keep], self.tf[keep], self.dl[keep])

    def plus(self, rows: Sequence[tuple[int, int, int]]) -> Postings:
        """These postings and ``(rid, tf, dl)`` rows of new row ids."""
        more = Postings.of(rows)
        rids = np.concatenate([self.rids, more.rids])
        order = np.argsort(rids, kind="stable")
        return Postings(rids[order], np.concatenate([self.tf, more.tf])[order],
                        np.concatenate([self.dl, more.dl])[order])


_EMPTY = Postings(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))


class TenantPostings:
    """Every posting of one tenant: a block read once, sorted by term, plus the terms changed since."""

    __slots__ = ("_dl", "_offsets", "_rids", "_terms", "_tf", "overrides")

    def __init__(self, rows: Iterable[tuple[str, int, int, int]], size: int) -> None:
        """From ``(term, rid, tf, dl)`` rows in ``(term, rid)`` order; ``size`` sizes the arrays (more rows
        than that grow them)."""
        self._rids = np.empty(size, dtype=np.int64)
        self._tf = np.empty(size, dtype=np.int32)
        self._dl = np.empty(size, dtype=np.int32)
        self._terms: dict[str, int] = {}
        starts: list[int] = []
        n = 0
        last: str | None = None
        for chunk in _chunks(rows, 20_000):
            if n + len(chunk) > self._rids.shape[0]:
                self._grow(n + len(chunk))
            terms, rids, tfs, dls = zip(*chunk, strict=True)
            self._rids[n : n + len(chunk)] = rids
            self._tf[n : n + len(chunk)] = tfs
            self._dl[n : n + len(chunk)] = dls
            for i, term in enumerate(terms):
                if term != last:
                    self._terms[term] = len(starts)
                    starts.append(n + i)
                    last = term
            n += len(chunk)
        self._offsets = np.asarray([*starts, n], dtype=np.int64)
        self._rids, self._tf, self._dl = self._rids[:n], self._tf[:n], self._dl[:n]
        self.overrides: dict[str, Postings] = {}
        """Terms whose postings changed since the block was read (by this process's own writes)."""

    @property
    def size(self) -> int:
        """Postings held (the block and the overrides)."""
        return int(self._rids.shape[0]) + sum(p.df for p in self.overrides.values())

    def get(self, term: str) -> Postings:
        """The postings of ``term`` (none if the tenant never used it)."""
        found = self.overrides.get(term)
        if found is not None:
            return found
        i = self._terms.get(term)
        if i is None:
            return _EMPTY
        a, b = int(self._offsets[i]), int(self._offsets[i + 1])
        return Postings(self._rids[a:b], self._tf[a:b], self._dl[a:b])

    def _grow(self, need: int) -> None:
        room = max(need, self._rids.shape[0] + self._rids.shape[0] // 8)
        for name in ("_rids", "_tf", "_dl"):
            old = getattr(self, name)
            grown = np.empty(room, dtype=old.dtype)
            grown[: old.shape[0]] = old
            setattr(self, name, grown)


class PostingCache:
    """``TenantPostings`` per tenant id, LRU-bounded by total postings. Not thread-safe: the owning index
    calls it under its own lock."""

    def __init__(self, max_postings: int = DEFAULT_MAX_POSTINGS) -> None:
        self.max_postings = max(0, max_postings)
        self._tenants: OrderedDict[int, TenantPostings] = OrderedDict()
        self.data_version: int | None = None
        """The connection's ``PRAGMA data_version`` the postings were read under."""
        self.too_big: dict[int, int] = {}
        """Tenants whose postings exceed the budget, with their entry count then (not counted again until it
        moves)."""

    def __contains__(self, tid: object) -> bool:
        return tid in self._tenants

    def __len__(self) -> int:
        return len(self._tenants)

    @property
    def postings(self) -> int:
        """Postings held now."""
        return sum(t.size for t in self._tenants.values())

    def get(self, tid: int) -> TenantPostings | None:
        """The cached postings of ``tid`` (marked recently used), or ``None``."""
        found = self._tenants.get(tid)
        if found is not None:
            self._tenants.move_to_end(tid)
        return found

    def put(self, tid: int, postings: TenantPostings) -> None:
        """Hold ``postings`` for ``tid``, least recently used tenants out until the budget holds (the newest
        stays only if it fits alone)."""
        self._tenants.pop(tid, None)
        if postings.size > self.max_postings:
            return
        self._tenants[tid] = postings
        total = self.postings
        while total > self.max_postings and len(self._tenants) > 1:
            _, old = self._tenants.popitem(last=False)
            total -= old.size

    def remove(self, rows: Iterable[tuple[int, str, int]]) -> None:
        """Follow a committed delete of ``(tid, term, rid)`` postings."""
        gone: dict[tuple[int, str], list[int]] = {}
        for tid, term, rid in rows:
            if tid in self._tenants:
                gone.setdefault((tid, term), []).append(rid)
        for (tid, term), rids in gone.items():
            tenant = self._tenants[tid]
            tenant.overrides[term] = tenant.get(term).without(rids)

    def add(self, rows: Iterable[tuple[int, str, int, int, int]]) -> None:
        """Follow a committed insert of ``(tid, term, rid, tf, dl)`` postings of new row ids."""
        new: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
        for tid, term, rid, tf, dl in rows:
            if tid in self._tenants:
                new.setdefault((tid, term), []).append((rid, tf, dl))
        for (tid, term), found in new.items():
            tenant = self._tenants[tid]
            tenant.overrides[term] = tenant.get(term).plus(found)

    def drop_tenant(self, tid: int) -> None:
        """Forget ``tid``'s postings."""
        self._tenants.pop(tid, None)

    def clear(self) -> None:
        """Forget everything."""
        self._tenants.clear()
        self.too_big.clear()


def score(chosen: Sequence[tuple[Postings, float]], *, k1: float, b: float, avgdl: float,
          ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """BM25 of every row holding a chosen term, as ``(rids, scores)`` in no particular order.

    ``chosen`` pairs each term's postings with its IDF; the per-posting term is the SQL path's
    ``w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``.
    """
    if not chosen:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    parts = []
    for postings, weight in chosen:
        tf = postings.tf.astype(np.float64)
        parts.append(weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * postings.dl / avgdl)))
    if len(chosen) == 1:  # one term: each row once already
        return chosen[0][0].rids, parts[0]
    uniq, inverse = np.unique(np.concatenate([p.rids for p, _ in chosen]), return_inverse=True)
    totals = np.bincount(inverse, weights=np.concatenate(parts), minlength=uniq.shape[0])
    return uniq.astype(np.int64, copy=False), totals.astype(np.float64, copy=False)


def best_first(rids: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], count: int,
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The ``count`` best of ``(rids, scores)``, best first, ties by rid (all rows tied with the last one
    too, so the order never depends on where a cut fell)."""
    if count < rids.shape[0]:
        kth = np.partition(scores, rids.shape[0] - count)[rids.shape[0] - count]
        keep = scores >= kth
        rids, scores = rids[keep], scores[keep]
    order = np.lexsort((rids, -scores))
    return rids[order], scores[order]


def idf(n: int, df: int) -> float:
    """Lucene's BM25 IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (always positive)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _chunks(rows: Iterable[tuple[str, int, int, int]], size: int) -> Iterator[list[tuple[str, int, int, int]]]:
    chunk: list[tuple[str, int, int, int]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
