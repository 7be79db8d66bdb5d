"""``mneme bench store``: how fast the Chroma store adds and searches, embedding excluded.

N synthetic memories (Chinese and English text) spread over 100 tenants get precomputed random unit
vectors (512-d), so the figures measure the store alone. Reported: add throughput (records/s) and the
p50/p95 latency of one tenant's ``search`` (k=10, across the four memory kinds) in embedded mode and in
server mode (a temporary ``chroma run`` on a loopback port). Target: p95 <= 20 ms at 100,000 memories.

In server mode it also times the search that follows another process's write to the same tenant (a
second store object, as another app process would hold, adds one memory before each search): that search
reloads the changed rows, the price of answering from the same data in every process.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from mneme.evaluation.harness import add_json_option, emit
from mneme.memory.base import MEMORY_KINDS, EmbedderInfo, MemoryRecord, MemoryStore
from mneme.memory.chroma import open_chroma_store

TARGET_P95_MS = 20.0
_ZH = ["我昨天去了{p}和{w}一起{a}", "{w}说下周要去{p}出差", "我最近在学{s}，感觉挺难的", "周末想在{p}{a}",
       "我对{s}过敏", "{w}的生日是三月", "我更喜欢{s}而不是咖啡"]
_EN = ["I went to {p} with {w} to {a}", "{w} asked me about {s} again", "I prefer {s} over coffee",
       "Next week I fly to {p} for work", "My favourite thing about {p} is the food", "I am learning {s}"]
_FILL = {
    "p": ["北京", "上海", "杭州", "London", "Paris", "Tokyo", "成都", "Berlin"],
    "w": ["妈妈", "老王", "my sister", "Alice", "同事小李", "my boss", "Tom"],
    "a": ["爬山", "hiking", "吃火锅", "swimming", "看电影", "shopping"],
    "s": ["Python", "日语", "钢琴", "green tea", "抹茶", "chess", "游泳"],
}


class RandomEmbedder:
    """An embedder that is never called: every benchmark record carries its own vector."""

    def __init__(self, dimension: int) -> None:
        self.info = EmbedderInfo(name=f"bench-random-{dimension}", dimension=dimension)

    def embed(self, texts: Any) -> list[list[float]]:
        """Random unit vectors (only used if a record lacks one)."""
        return _unit(np.random.default_rng(), len(texts), self.info.dimension).tolist()


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def synthetic_text(rng: np.random.Generator) -> str:
    """One varied Chinese or English memory sentence."""
    template = str(rng.choice(_ZH if rng.random() < 0.5 else _EN))
    return template.format(**{key: str(rng.choice(values)) for key, values in _FILL.items()})


class ChromaProcess:
    """A ``chroma run`` subprocess on a free loopback port; ``start``/``stop`` keep path and port."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = Path(path)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ChromaProcess:
        """Start the server and wait until its heartbeat answers."""
        self.path.mkdir(parents=True, exist_ok=True)
        log = open(self.path.parent / f"chroma-{self.port}.log", "ab")  # noqa: SIM115 - the child owns it
        exe = Path(sys.executable).with_name("chroma")
        self._proc = subprocess.Popen(
            [str(exe), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self._proc.returncode}; see {log.name}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma run did not answer on {self.url} within {timeout:.0f}s")

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (tests freeze it with SIGSTOP)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def stop(self) -> None:
        """Terminate the server (kill it if it lingers) and wait for it."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _store(mode: str, workdir: Path, embedder: RandomEmbedder, url: str | None) -> Iterator[MemoryStore]:
    store: MemoryStore
    if mode == "embedded":
        store = open_chroma_store(data_dir=workdir / "embedded", embedder=embedder, prefix="bench")
    elif url:
        store = open_chroma_store(url=url, embedder=embedder, prefix=f"bench{int(time.time())}")
    else:
        server = ChromaProcess(workdir / "server").start()
        try:
            with _store(mode, workdir, embedder, server.url) as store:
                yield store
        finally:
            server.stop()
        return
    try:
        yield store
    finally:
        store.close()


def run_store_bench(
    n: int, mode: str = "embedded", *, tenants: int = 100, queries: int = 200, k: int = 10, dim: int = 512,
    batch: int = 1000, seed: int = 0, workdir: Path | None = None, url: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Add ``n`` memories over ``tenants`` users, then time ``queries`` searches of one user; return figures.

    ``mode`` is ``embedded`` (a fresh data directory) or ``server`` (``url``, else a temporary
    ``chroma run``). Embedding is excluded: records carry random unit vectors of ``dim`` dimensions.
    """
    if mode not in ("embedded", "server"):
        raise ValueError(f"mode must be 'embedded' or 'server', got {mode!r}")
    rng = np.random.default_rng(seed)
    embedder = RandomEmbedder(dim)
    with tempfile.TemporaryDirectory(prefix="mneme-bench-", dir=workdir) as tmp, \
            _store(mode, Path(tmp), embedder, url) as store:
        add_seconds = 0.0
        for start in range(0, n, batch):
            size = min(batch, n - start)
            vectors = _unit(rng, size, dim)
            records = [
                MemoryRecord(
                    id=f"m{start + i}", user_id=f"user-{(start + i) % tenants:03d}",
                    kind=MEMORY_KINDS[(start + i) % len(MEMORY_KINDS)], text=synthetic_text(rng),
                    created_at=1_700_000_000.0 + start + i, importance=float(rng.random()),
                    embedding=vectors[i].tolist(),
                )
                for i in range(size)
            ]
            began = time.perf_counter()
            store.add(records)
            add_seconds += time.perf_counter() - began
            if progress:
                progress(size)
        probes = _unit(rng, queries + 10, dim)
        for probe in probes[:10]:  # warm caches and load indexes before timing
            store.search("user-000", probe, k=k)
        latencies = []
        for probe in probes[10:]:
            began = time.perf_counter()
            hits = store.search("user-000", probe, k=k)
            latencies.append((time.perf_counter() - began) * 1000)
            assert all(h.record.user_id == "user-000" for h in hits)
        after_foreign = _after_foreign_writes(store, embedder, rng, k=k, dim=dim) if mode == "server" else []
    p95 = float(np.percentile(latencies, 95))
    extra: dict[str, Any] = {}
    if after_foreign:
        extra = {"search_after_other_process_write_p50_ms": round(statistics.median(after_foreign), 2),
                 "search_after_other_process_write_p95_ms": round(float(np.percentile(after_foreign, 95)), 2)}
    return {
        "mode": mode, "memories": n, "tenants": tenants, "dimension": dim, "k": k, "queries": queries,
        "add_records_per_s": round(n / add_seconds, 1) if add_seconds else None,
        "add_seconds": round(add_seconds, 2),
        "search_p50_ms": round(statistics.median(latencies), 2),
        "search_p95_ms": round(p95, 2),
        "search_max_ms": round(max(latencies), 2),
        "target_p95_ms": TARGET_P95_MS,
        "meets_target": p95 <= TARGET_P95_MS,
        **extra,
    }


def _after_foreign_writes(store: Any, embedder: RandomEmbedder, rng: np.random.Generator, *, k: int, dim: int,
                          rounds: int = 30) -> list[float]:
    """Search latencies of ``store`` right after a second store object (another process) wrote to the tenant."""
    other = open_chroma_store(url=store.location, embedder=embedder, prefix=store.prefix)
    try:
        latencies = []
        for i in range(rounds):
            vector = _unit(rng, 1, dim)[0]
            other.add([MemoryRecord(id=f"other-{i}", user_id="user-000", kind=MEMORY_KINDS[i % len(MEMORY_KINDS)],
                                    text=synthetic_text(rng), created_at=1_800_000_000.0 + i,
                                    embedding=vector.tolist())])
            began = time.perf_counter()
            hits = store.search("user-000", vector, k=k)
            latencies.append((time.perf_counter() - began) * 1000)
            assert hits and hits[0].record.id == f"other-{i}"  # the other process's write is seen at once
        return latencies
    finally:
        other.close()


def register_bench(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``store`` under ``mneme bench``."""
    parser = subparsers.add_parser("store", help="add throughput and search latency of the Chroma store")
    parser.add_argument("--memories", type=int, default=10_000, help="how many memories (default 10,000)")
    parser.add_argument("--tenants", type=int, default=100, help="spread over this many users (default 100)")
    parser.add_argument("--queries", type=int, default=200, help="timed searches (default 200)")
    parser.add_argument("--mode", choices=["embedded", "server", "both"], default="both")
    parser.add_argument("--url", help="use this running Chroma server for server mode")
    add_json_option(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from mneme.cli.progress import Progress

    modes = ["embedded", "server"] if args.mode == "both" else [args.mode]
    results = []
    for mode in modes:
        with Progress(f"bench store ({mode}): add", total=args.memories, unit="memory") as bar:
            results.append(run_store_bench(args.memories, mode, tenants=args.tenants, queries=args.queries,
                                           url=args.url, progress=bar.update))
    # one JSON document like every other bench: an object for one mode, a list for both
    emit(results[0] if len(results) == 1 else results, args.json_out)
    return 0
