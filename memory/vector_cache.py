"""An in-process cache of each tenant's rows (vectors, texts, metadata), so search need not ask Chroma to rank.

Chroma's ``query`` with a ``where`` filter scans metadata before it ranks, which dominates search time
for a store of many tenants (tens of ms at 100k rows, against ~1 ms for a dot product over one tenant's
rows), and every Chroma round trip costs milliseconds in server mode. ``VectorCache`` holds, per
``(collection id, tenant)``, the row ids, a float32 matrix of their unit-normalised embeddings and each
row's stored ``(text, metadata)``; the store ranks by a dot product and reads the winners from here.
Chroma stays the store of record: the cache is loaded lazily from it and never persisted.

Exactness within a process: every write path of ``ChromaStore`` calls ``upsert``/``update``/``remove``/
``invalidate`` after its Chroma write. Each key has a version bumped by every change (loaded or not), and
a load only installs what it read if the version did not move meanwhile, so a load racing a write never
installs stale rows. Entries are never mutated in place where a reader could see them (readers take a
``Snapshot`` under the lock and do the numpy work outside it).

Exactness across processes (server mode): each entry carries the ``stamp`` its caller read before loading
(see ``mneme.memory.stamps``); ``snapshot`` with a different stamp reloads, and ``restamp`` records a
process's own writes so they do not force a reload.

Memory is bounded by ``max_rows`` over all entries, least recently used first out; a single tenant larger
than the budget is not cached (search falls back to Chroma).
"""

from __future__ import annotations

import logging
import marshal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from mneme.memory.overlap import spare_threads

logger = logging.getLogger("mneme.memory.vector_cache")

DEFAULT_MAX_ROWS = 200_000
"""Default row budget (``Settings.cache_rows``): a cached row costs ~2 KiB of vector (512-d float32) plus its
text and metadata (~1 KiB for a conversation turn), so 200k rows stay near 600 MiB."""

Key = tuple[str, str]
"""``(collection id, tenant)``."""
Matrix = npt.NDArray[np.float32]
Stored = npt.NDArray[np.floating[Any]]
"""An entry's unit rows: float32, or float16 from ``QUANTIZED_MIN_ROWS`` rows on (``storage_dtype``)."""
Row = tuple[str, Mapping[str, Any]]
"""A row's stored text and flat metadata, as Chroma returns them (read-only: never mutate one)."""
Loaded = tuple[list[str], Any, Sequence[Row]]
"""What a loader returns: ids, their embeddings, their rows (a ``PackedRows`` is kept as it is)."""
Patch = tuple[Sequence[str], Loaded]
"""What a patch returns: the ids changed since an entry's stamp, and the current rows of those that exist."""


class PackedRows(Sequence[Row]):
    """Rows kept as one ``marshal`` blob each, decoded only when read.

    A row as Python objects (a text and a metadata dict of a dozen fields) costs ~2 KiB; packed, a few hundred
    bytes. Search reads the rows of its few winners only, so a 100k-row tenant keeps ~50 MB of rows instead of
    ~250 MB. Reading a row decodes a fresh ``(text, metadata)`` (~2 µs). Metadata holds Chroma's value types
    (str, int, float, bool, None, lists of them), which ``marshal`` encodes exactly.
    """

    __slots__ = ("_blobs",)

    def __init__(self, rows: Iterable[Row] = ()) -> None:
        self._blobs: list[bytes] = [_pack(row) for row in rows]

    def copy(self) -> PackedRows:
        """A copy whose changes a reader of this one never sees."""
        out = PackedRows()
        out._blobs = list(self._blobs)
        return out

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...

    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            return [unpack(blob) for blob in self._blobs[index]]
        return unpack(self._blobs[index])

    def blob(self, index: int) -> bytes:
        """The packed bytes of the row at ``index`` (a changed row is packed anew: new bytes)."""
        return self._blobs[index]

    def append(self, row: Row) -> None:
        """Add ``row`` at the end."""
        self._blobs.append(_pack(row))

    def extend(self, rows: Iterable[Row]) -> None:
        """Add ``rows`` at the end, in order."""
        self._blobs.extend(_pack(row) for row in rows)

    def put(self, index: int, row: Row) -> None:
        """Replace the row at ``index``."""
        self._blobs[index] = _pack(row)

    def take(self, positions: Sequence[int]) -> PackedRows:
        """The rows at ``positions``, in that order."""
        out = PackedRows()
        out._blobs = [self._blobs[i] for i in positions]
        return out


def _pack(row: Row) -> bytes:
    text, meta = row
    return marshal.dumps((text, dict(meta)))


def unpack(blob: bytes) -> Row:
    """A packed row's ``(text, metadata)``, decoded fresh."""
    text, meta = marshal.loads(blob)  # noqa: S302 - our own blobs, made in this process by _pack
    return text, meta


def normalized(vectors: Any) -> Matrix:
    """Rows scaled to unit length as float32 (a zero row stays zero, as it cannot point anywhere).

    Rows already of unit length (a page-by-page load normalised them) come back as they are, uncopied; so
    does a float16 matrix, which only a load makes (of rows it normalised first).
    """
    if isinstance(vectors, np.ndarray) and vectors.dtype == np.float16 and vectors.ndim == 2:
        return vectors  # type: ignore[return-value]
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if matrix.size and bool(np.all(np.abs(norms - 1.0) < 1e-5)):
        return matrix
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


QUANTIZED_MIN_ROWS = 20_000
"""From this many rows a snapshot ranks in two steps: an int8 copy of the rows is scanned with SIMD (SimSIMD's
batched int8 kernel) for the best ``candidates(k)``, then those are re-scored on the rows kept as float16 (half the
memory of float32: 100 MB instead of 200 MB at 100k rows; a cosine moves by ~1e-4, see ``storage_dtype``).
The int8 pass reads a quarter of the bytes, with integer SIMD: ~3x faster than the float32 scan at 100k rows;
below this size the float32 scan is fast enough, exact, and the two-step adds nothing."""


def storage_dtype(n: int) -> type[np.floating[Any]]:
    """How an entry of ``n`` rows keeps its unit vectors: float32 below ``QUANTIZED_MIN_ROWS``, float16 from
    there (the re-score of the int8 pass's candidates: cosines within ~1e-4 of float32's, so rows whose
    float32 cosines differ by less than that may swap; tested against the float32 ranking)."""
    return np.float16 if n >= QUANTIZED_MIN_ROWS else np.float32


def stored(matrix: Any, n: int) -> Stored:
    """``matrix`` (unit rows) in ``storage_dtype(n)``, converted a block at a time (no full-size temporary)."""
    dtype = storage_dtype(n)
    if matrix.dtype == dtype:
        return matrix  # type: ignore[no-any-return]
    out = np.empty(matrix.shape, dtype=dtype)
    for start in range(0, matrix.shape[0], _QUANT_BLOCK):
        out[start : start + _QUANT_BLOCK] = matrix[start : start + _QUANT_BLOCK]
    return out


def candidates(k: int) -> int:
    """How many int8 winners are re-scored exactly for a top ``k``: a wide margin (int8 moves a cosine by
    ~0.01 at most, so the exact top k lies well inside it)."""
    return max(4 * k, k + 256)


def quantized(matrix: Matrix, out: npt.NDArray[np.int8] | None = None) -> npt.NDArray[np.int8]:
    """Unit rows as int8 (scaled by 127; a unit vector's components lie in [-1, 1]), written into ``out`` if
    given. Converted a block of rows at a time: 100k rows at once would hold two float32 temporaries as large
    as the matrix."""
    if out is None:
        out = np.empty(matrix.shape, dtype=np.int8)
    for start in range(0, matrix.shape[0], _QUANT_BLOCK):
        block = matrix[start : start + _QUANT_BLOCK].astype(np.float32) * np.float32(127.0)
        np.rint(block, out=block)
        np.clip(block, -127, 127, out=block)
        out[start : start + _QUANT_BLOCK] = block
    return out


_QUANT_BLOCK = 4096


SPLIT_ROWS = 20_000
"""Rows from which an int8 scan is worth a second thread (below, starting it costs about what it saves)."""


def int8_scores(quant: npt.NDArray[np.int8], query8: npt.NDArray[np.int8]) -> npt.NDArray[np.float64]:
    """Every row's dot product with ``query8`` (exact integers, as float64).

    SimSIMD's batched int8 kernel, one thread: 4.3 ms for 100k x 512 here, against 10.6 ms for usearch's exact
    search (same scores; it pays a per-row dispatch and a heap); 8 ms on a machine whose SimSIMD has only its
    AVX2 ('haswell') kernel. A heavy user's scan (``SPLIT_ROWS`` rows and more) takes two threads while a core is
    spare (``overlap.spare_threads``: this the only recall in flight): 8 -> 4-5 ms there; a busy server keeps one.
    The integers are the same either way. If SimSIMD refuses the arrays (it does when
    usearch, which bundles another SimSIMD, was loaded first in the process), blocks of rows are converted to
    float32 and multiplied by BLAS: slower, the same integers (|sums| < 2^24, exact in float32).
    """
    import simsimd

    try:
        threads = spare_threads() if quant.shape[0] >= SPLIT_ROWS else 1
        return np.asarray(simsimd.cdist(query8.reshape(1, -1), quant, metric="dot", threads=threads))[0]
    except TypeError as exc:
        global _warned
        if not _warned:
            _warned = True
            logger.warning("SimSIMD's int8 kernel is unavailable (%s); scanning int8 rows with numpy", exc)
    q = query8.astype(np.float32)
    out = np.empty(quant.shape[0], dtype=np.float64)
    for start in range(0, quant.shape[0], _QUANT_BLOCK):
        out[start : start + _QUANT_BLOCK] = quant[start : start + _QUANT_BLOCK].astype(np.float32) @ q
    return out


_warned = False


def _int8_top(quant: npt.NDArray[np.int8], query: Matrix, count: int) -> npt.NDArray[np.int64]:
    """Positions of the ``count`` rows of ``quant`` with the highest int8 dot product with ``query`` (rows tied
    with the ``count``-th are cut in no set order; the float re-score after decides among the rest)."""
    scores = int8_scores(quant, quantized(query.reshape(1, -1))[0])
    if count >= scores.shape[0]:
        return np.arange(scores.shape[0], dtype=np.int64)
    return np.argpartition(-scores, count - 1)[:count].astype(np.int64)


@dataclass(frozen=True)
class Snapshot:
    """An immutable view of one entry: ``ids[i]`` is the row with vector ``vectors[i]`` and ``rows[i]``."""

    ids: Sequence[str]
    vectors: Stored
    rows: Sequence[Row] = ()
    """Each row's ``(text, metadata)``: a ``PackedRows`` in a cache entry (decoded when read)."""
    quant: npt.NDArray[np.int8] | None = None
    """The rows as int8 (large entries only): a fast first pass for ``top``."""

    def top(self, query: Matrix, k: int) -> list[tuple[int, float]]:
        """Positions of the ``k`` rows nearest ``query`` (unit length) by cosine similarity, best first.

        Scores are the float32 cosines; on a large entry (``QUANTIZED_MIN_ROWS``) the int8 pass's
        ``candidates(k)`` best, scored on their float16 rows (``storage_dtype``).
        """
        n = self.vectors.shape[0]
        if n == 0 or k <= 0:
            return []
        if self.quant is not None and self.quant.shape[0] == n and candidates(k) < n:
            pool = np.unique(_int8_top(self.quant, query, candidates(k)))
            scores = self.vectors[pool].astype(np.float32) @ query
            best = np.argpartition(-scores, k - 1)[:k] if k < len(pool) else np.arange(len(pool))
            order = best[np.lexsort((pool[best], -scores[best]))]
            return [(int(pool[i]), float(scores[i])) for i in order]
        scores = (self.vectors @ query).astype(np.float32, copy=False)
        best = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        order = best[np.lexsort((best, -scores[best]))]
        return [(int(i), float(scores[i])) for i in order]


class _Entry:
    """Rows of one key, with spare capacity so appends are amortised O(1)."""

    __slots__ = ("ids", "index", "loaded", "matrix", "n", "quant", "rows", "stamp")

    def __init__(self, ids: list[str], vectors: Stored, rows: Sequence[Row], stamp: Any = None) -> None:
        self.loaded = time.monotonic()
        self.ids = ids
        self.index = {rid: i for i, rid in enumerate(ids)}
        self.matrix = stored(vectors, len(ids))
        self.rows = rows if isinstance(rows, PackedRows) else PackedRows(rows)
        self.n = len(ids)
        self.stamp = stamp
        self.quant: npt.NDArray[np.int8] | None = None
        self._requantize()

    def _requantize(self) -> None:
        """Keep the int8 copy of a large entry in step with ``matrix`` (same capacity, same positions), and
        the matrix in its ``storage_dtype`` (a new array when that changes: readers keep the old one)."""
        self.matrix = stored(self.matrix, self.n)
        if self.n < QUANTIZED_MIN_ROWS:
            self.quant = None
        elif self.quant is None or self.quant.shape[0] != self.matrix.shape[0]:
            quant = np.zeros(self.matrix.shape, dtype=np.int8)  # rows past n are spare capacity
            quantized(self.matrix[: self.n], out=quant[: self.n])
            self.quant = quant

    def snapshot(self) -> Snapshot:
        # appends write beyond n and replacements copy, so this view never changes under a reader
        quant = self.quant[: self.n] if self.quant is not None else None
        return Snapshot(self.ids, self.matrix[: self.n], self.rows, quant)

    def upsert(self, ids: Sequence[str], vectors: Matrix, rows: Sequence[Row]) -> None:
        fresh: list[int] = []
        replaced = False
        for j, rid in enumerate(ids):
            i = self.index.get(rid)
            if i is None:
                fresh.append(j)
                continue
            if not replaced:  # copy-on-write: a reader may hold the old rows
                self.matrix = self.matrix.copy()
                self.rows = self.rows.copy()
                if self.quant is not None:
                    self.quant = self.quant.copy()
                replaced = True
            self.matrix[i] = vectors[j]
            self.rows.put(i, rows[j])
            if self.quant is not None:
                self.quant[i] = quantized(vectors[j : j + 1])[0]
        if not fresh:
            return
        need = self.n + len(fresh)
        if need > self.matrix.shape[0]:
            # an eighth more room: amortised O(1) appends without doubling a 100k-row matrix for one row
            room = max(need, self.matrix.shape[0] + self.matrix.shape[0] // 8, 16)
            grown = np.empty((room, vectors.shape[1]), dtype=self.matrix.dtype)
            grown[: self.n] = self.matrix[: self.n]
            self.matrix = grown
            if self.quant is not None:
                grown_quant = np.zeros((grown.shape[0], vectors.shape[1]), dtype=np.int8)
                grown_quant[: self.n] = self.quant[: self.n]
                self.quant = grown_quant
        for j in fresh:
            # a duplicate id within one call: the last vector wins, as in Chroma's upsert
            rid = ids[j]
            i = self.index.get(rid)
            if i is None:
                i = self.n
                self.index[rid] = i
                self.ids.append(rid)
                self.rows.append(rows[j])
                self.n += 1
            else:
                self.rows.put(i, rows[j])
            self.matrix[i] = vectors[j]
            if self.quant is not None:
                self.quant[i] = quantized(vectors[j : j + 1])[0]
        self._requantize()  # crossed QUANTIZED_MIN_ROWS: start the int8 copy

    def update(self, changes: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge metadata changes into rows, as Chroma does (a ``None`` value removes the field)."""
        hit = [(self.index[rid], fields) for rid, fields in changes.items() if rid in self.index]
        if not hit:
            return
        self.rows = self.rows.copy()  # copy-on-write
        for i, fields in hit:
            text, meta = self.rows[i]
            merged = {**meta, **fields}
            self.rows.put(i, (text, {key: value for key, value in merged.items() if value is not None}))

    def remove(self, ids: Sequence[str]) -> None:
        drop = {self.index[rid] for rid in ids if rid in self.index}
        if not drop:
            return
        keep = [i for i in range(self.n) if i not in drop]
        self.ids = [self.ids[i] for i in keep]
        self.rows = self.rows.take(keep)
        self.matrix = self.matrix[keep].copy() if keep else self.matrix[:0].copy()
        self.quant = self.quant[keep].copy() if self.quant is not None and keep else None
        self.index = {rid: i for i, rid in enumerate(self.ids)}
        self.n = len(self.ids)
        self._requantize()


class VectorCache:
    """Per-``(collection, tenant)`` rows, LRU-bounded by a total row count; thread-safe."""

    def __init__(self, max_rows: int | None = None, *, max_age: float | None = None) -> None:
        self.max_rows = DEFAULT_MAX_ROWS if max_rows is None else max(0, max_rows)
        self.max_age = max_age
        """Seconds an entry is trusted at most (server mode's backstop; ``None``: for ever)."""
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._versions: dict[Key, int] = {}
        self._too_big: dict[Key, tuple[int, Any]] = {}
        self._rows = 0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether the cache may hold anything (a zero budget turns it off)."""
        return self.max_rows > 0

    @property
    def rows(self) -> int:
        """Rows held now, over all entries."""
        with self._lock:
            return self._rows

    def keys(self) -> list[Key]:
        """Keys held now, least recently used first."""
        with self._lock:
            return list(self._entries)

    def snapshot(self, key: Key, load: Callable[[], Loaded], *, stamp: Any = None,
                 patch: Callable[[Any], Patch | None] | None = None) -> Snapshot | None:
        """The rows of ``key``, loading them with ``load() -> (ids, embeddings, rows)`` on a miss.

        ``stamp`` (server mode) is what the caller read of the key's change stamp *before* this call: an
        entry held under another stamp is stale. ``patch(old stamp)`` may bring it up to date by returning
        the ids changed since and the current rows of those that still exist; without it, or when it
        returns ``None``, the entry is reloaded. ``None`` when the cache is off or the key holds more rows
        than the whole budget.
        """
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get(key)
            young = entry is not None and (self.max_age is None or time.monotonic() - entry.loaded < self.max_age)
            if entry is not None and young and entry.stamp == stamp:
                self._entries.move_to_end(key)
                return entry.snapshot()
            version = self._versions.get(key, 0)
            stale = entry.stamp if entry is not None and young and patch is not None else None
        if stale is not None and patch is not None:
            fixed = self._patch(key, version, stale, stamp, patch)
            if fixed is not None:
                return fixed
        with self._lock:
            if self._entries.get(key) is entry and entry is not None:  # changed elsewhere (or too old): reload
                self._bump(key)
                self._drop(key)
            version = self._versions.get(key, 0)
            if self._too_big.get(key) == (version, stamp):
                return None
        ids, embeddings, rows = load()  # outside the lock: this is the slow Chroma read
        vectors = normalized(embeddings) if ids else np.zeros((0, 0), dtype=np.float32)
        entry = _Entry(list(ids), vectors, rows, stamp)
        snap = entry.snapshot()
        with self._lock:
            if self._versions.get(key, 0) != version:
                return snap  # a write landed while loading: answer from what was read, install nothing
            if entry.n > self.max_rows:
                self._too_big[key] = (version, stamp)
                return None
            old = self._entries.pop(key, None)
            if old is not None:  # another thread loaded it meanwhile
                self._rows -= old.n
            self._entries[key] = entry
            self._rows += entry.n
            self._evict()
        return snap

    def _patch(self, key: Key, version: int, old: Any, stamp: Any,
               patch: Callable[[Any], Patch | None]) -> Snapshot | None:
        """Bring an entry held under ``old`` up to ``stamp`` with only the rows that changed, if ``patch`` can."""
        result = patch(old)  # outside the lock: a primary-key read of the changed ids
        if result is None:
            return None
        changed, (ids, embeddings, rows) = result
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.stamp != old or self._versions.get(key, 0) != version:
                return None  # something moved meanwhile: reload instead
            if ids and entry.n and entry.matrix.shape[1] != normalized(embeddings).shape[1]:
                return None
            before = entry.n
            present = set(ids)
            entry.remove([rid for rid in changed if rid not in present])
            if ids:
                if entry.n == 0:
                    entry.matrix = np.zeros((0, normalized(embeddings).shape[1]), dtype=np.float32)
                entry.upsert(ids, normalized(embeddings), rows)
            entry.stamp = stamp
            self._bump(key)  # a load racing this patch installs nothing
            self._rows += entry.n - before
            self._entries.move_to_end(key)
            self._evict()
            return entry.snapshot() if key in self._entries else None

    def rows_of(self, key: Key, ids: Sequence[str]) -> dict[str, Row] | None:
        """The cached rows of ``ids`` under ``key`` (absent ids are not in the store), or ``None`` if not loaded.

        Only for a process that is the store's sole writer (embedded mode): no stamp is checked.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            return {rid: entry.rows[entry.index[rid]] for rid in ids if rid in entry.index}

    def positions_of(self, key: Key, ids: Sequence[str]) -> tuple[Sequence[Row], dict[str, int]] | None:
        """The rows of a loaded ``key`` (never changed in place) and the positions of those of ``ids`` it holds,
        or ``None`` if not loaded; ``rows_of`` without decoding. Same caveat: for the store's sole writer."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            return entry.rows, {rid: entry.index[rid] for rid in ids if rid in entry.index}

    def upsert(self, key: Key, ids: Sequence[str], embeddings: Any, rows: Sequence[Row]) -> None:
        """Replace or append rows of a loaded key (a key not loaded only records the change)."""
        if not ids:
            return
        vectors = normalized(embeddings)
        with self._lock:
            self._bump(key)
            entry = self._entries.get(key)
            if entry is None:
                return
            if entry.n and entry.matrix.shape[1] != vectors.shape[1]:
                self._drop(key)
                return
            if entry.n == 0:
                entry.matrix = np.zeros((0, vectors.shape[1]), dtype=np.float32)
            before = entry.n
            entry.upsert(ids, vectors, rows)
            self._rows += entry.n - before
            self._entries.move_to_end(key)  # a tenant being written to is active: evict others first
            self._evict()

    def update(self, key: Key, changes: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge metadata changes (``{id: {field: value or None}}``) into the rows of a loaded key."""
        if not changes:
            return
        with self._lock:
            self._bump(key)
            entry = self._entries.get(key)
            if entry is not None:
                entry.update(changes)

    def remove(self, key: Key, ids: Sequence[str]) -> None:
        """Forget rows of a loaded key."""
        if not ids:
            return
        with self._lock:
            self._bump(key)
            entry = self._entries.get(key)
            if entry is not None:
                before = entry.n
                entry.remove(ids)
                self._rows -= before - entry.n

    def restamp(self, key: Key, stamp: Callable[[Any], Any]) -> None:
        """Record this process's own published change on a loaded entry: ``entry.stamp = stamp(entry.stamp)``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.stamp = stamp(entry.stamp)

    def invalidate(self, key: Key) -> None:
        """Drop ``key``: the next search reloads it from Chroma."""
        with self._lock:
            self._bump(key)
            self._drop(key)

    def clear(self) -> None:
        """Drop everything (versions move on, so loads in flight install nothing)."""
        with self._lock:
            for key in list(self._entries) + list(self._versions):
                self._bump(key)
            self._entries.clear()
            self._too_big.clear()
            self._rows = 0

    def _bump(self, key: Key) -> None:
        self._versions[key] = self._versions.get(key, 0) + 1
        self._too_big.pop(key, None)

    def _drop(self, key: Key) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._rows -= entry.n

    def _evict(self) -> None:
        # least recently used first; the newest entry stays even if it alone fills the budget
        while self._rows > self.max_rows and len(self._entries) > 1:
            _, entry = self._entries.popitem(last=False)
            self._rows -= entry.n
        if self._rows > self.max_rows and self._entries:
            key, entry = self._entries.popitem(last=False)
            self._rows -= entry.n
            self._too_big[key] = (self._versions.get(key, 0), entry.stamp)
