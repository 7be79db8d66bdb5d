"""``mneme bench retrieval``: end-to-end recall latency at scale (embed the query, hybrid search, re-rank).

Builds N synthetic memories (Chinese and English, varied vocabulary) spread over many tenants, with one
measured tenant holding ``--share`` of them, in a temporary store of the configured kind; then times
``MemoryService.recall`` for that tenant. Prints JSON: ``{"memories", "latency_ms": {"p50", "p95"},
"ingest_per_s", "peak_rss_mb", "machine": {"cpus", "loadavg_1m", ...}, ...}``.
"""

from __future__ import annotations

import random
import resource
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mneme.clock import FixedClock
from mneme.evaluation.harness import add_json_option, emit, machine, percentile
from mneme.memory.base import Kind, MemoryRecord

_ZH_SUBJECTS = ["我", "我妈妈", "我的同事", "我朋友小王", "我们团队", "我女儿", "我男朋友", "我的老板"]
_ZH_VERBS = ["喜欢", "去了", "买了", "讨论了", "学习了", "推荐了", "想去", "计划", "讨厌", "养了"]
_ZH_OBJECTS = ["杭州西湖", "一只猫", "爵士乐", "川菜", "马拉松", "新项目的预算", "《百年孤独》", "钢琴课", "日语",
               "周末露营", "羽毛球", "咖啡店", "黄山", "量子计算", "利润率报表", "科幻电影", "瑜伽", "烘焙",
               "股票", "吉他"]
_EN_SUBJECTS = ["I", "My sister", "Our team", "My manager", "My friend Sam", "My son", "We", "My partner"]
_EN_VERBS = ["love", "visited", "bought", "discussed", "learned", "recommended", "plan to try", "hate", "adopted"]
_EN_OBJECTS = ["a golden retriever", "the Kyoto trip", "sourdough baking", "the Q3 budget", "rock climbing",
               "a vintage camera", "jazz piano", "the marathon in Berlin", "Python type hints", "a new bike",
               "the quarterly margin report", "hiking in Patagonia", "tennis lessons", "Korean dramas", "chess"]
_WHEN = ["昨天", "上周", "今天早上", "去年", "最近", "last week", "yesterday", "this morning", "in May", "recently"]


def synthetic_text(rng: random.Random) -> str:
    """One plausible memory sentence in Chinese or English."""
    if rng.random() < 0.5:
        return f"{rng.choice(_WHEN)}{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_VERBS)}{rng.choice(_ZH_OBJECTS)}，" \
               f"还提到了{rng.choice(_ZH_OBJECTS)}和编号{rng.randint(1, 99999)}。"
    return f"{rng.choice(_EN_SUBJECTS)} {rng.choice(_EN_VERBS)} {rng.choice(_EN_OBJECTS)} {rng.choice(_WHEN)}, " \
           f"and mentioned {rng.choice(_EN_OBJECTS)} (ref {rng.randint(1, 99999)})."


def run_retrieval_bench(n: int, *, tenants: int = 100, share: float = 0.01, queries: int = 200,
                        mode: str = "embedded", seed: int = 7, batch: int = 512,
                        progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Build ``n`` memories, time ``queries`` recalls for the measured tenant, and return the figures."""
    from mneme.cpu import limit_blas_threads
    from mneme.embeddings import load_embedder
    from mneme.memory.chroma import open_chroma_store
    from mneme.memory.inprocess import InProcessStore
    from mneme.memory.keyword import KeywordIndex
    from mneme.memory.service import MemoryService, RecallOptions

    rng = random.Random(seed)
    embedder = load_embedder("use-m3")
    clock = FixedClock(1_700_000_000.0)
    with tempfile.TemporaryDirectory(prefix="mneme-bench-") as tmp:
        store: Any = InProcessStore(embedder) if mode == "memory" else open_chroma_store(
            data_dir=Path(tmp), embedder=embedder, prefix="bench")
        service = MemoryService(store, keyword=KeywordIndex(Path(tmp) / "kw.sqlite3"), clock=clock)
        target_n = max(1, int(n * share)) if tenants > 1 else n
        owners = ["target"] * target_n + [f"user-{i % (tenants - 1)}" for i in range(n - target_n)] \
            if tenants > 1 else ["target"] * n
        rng.shuffle(owners)
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            chunk = owners[start:start + batch]
            records = [MemoryRecord(id=f"m{start + i}", user_id=u, kind=Kind.EPISODIC, text=synthetic_text(rng),
                                    created_at=clock() - rng.uniform(0, 200 * 86400),
                                    importance=rng.random(), thread_id="t")
                       for i, u in enumerate(chunk)]
            vectors = embedder.embed([r.text for r in records])
            records = [replace(r, embedding=v) for r, v in zip(records, vectors, strict=True)]
            service.indexed.add(records)
            if progress:
                progress(len(records))
        ingest_s = time.perf_counter() - t0
        # recall as `mneme serve` runs it: BLAS single-threaded (a query's embedding is tiny; see mneme.cpu)
        limit_blas_threads(1)
        opts = RecallOptions(k=10, include_documents=False, reinforce=False)
        qs = [synthetic_text(rng)[:30] for _ in range(queries)]
        service.recall("target", qs[0], options=opts)  # warm caches
        before = machine()
        lat = []
        for q in qs:
            t = time.perf_counter()
            service.recall("target", q, options=opts)
            lat.append((time.perf_counter() - t) * 1000.0)
        service.close()
    return {
        "memories": n, "tenants": tenants, "target_tenant_memories": target_n, "mode": mode,
        "queries": queries, "latency_ms": {"p50": round(percentile(lat, 50), 2), "p95": round(percentile(lat, 95), 2)},
        "ingest_per_s": round(n / ingest_s, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "machine": {**before, "loadavg_1m_after": machine()["loadavg_1m"]},
    }


def run_dense_bench(n: int, *, queries: int = 200, k: int = 30, dim: int = 512, seed: int = 7) -> dict[str, Any]:
    """The dense channel alone over one user's ``n`` cached rows (clustered synthetic unit vectors, no model):
    the float32 scan against the int8 first pass + float16 re-score (``vector_cache.QUANTIZED_MIN_ROWS``), and
    how far the latter's top ``k`` and scores are from the float32 scan's."""
    import numpy as np

    from mneme.memory.vector_cache import Snapshot, VectorCache, normalized

    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((200, dim)).astype(np.float32)
    rows = centers[rng.integers(200, size=n)] + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    ids = [f"r{i}" for i in range(n)]
    snap = VectorCache(max(n, 1)).snapshot(("bench", "target"), lambda: (ids, rows, [("", {})] * n))
    assert snap is not None
    brute = Snapshot(ids, rows)  # the float32 rows, scanned whole
    qs = [normalized(rows[rng.integers(n)] + 0.5 * rng.standard_normal(dim).astype(np.float32))[0]
          for _ in range(queries)]

    def timed(top: Callable[[Any, int], Any]) -> dict[str, float]:
        top(qs[0], k)
        lat = []
        for q in qs:
            t = time.perf_counter()
            top(q, k)
            lat.append((time.perf_counter() - t) * 1000.0)
        return {"p50": round(percentile(lat, 50), 2), "p95": round(percentile(lat, 95), 2)}

    pairs = [(snap.top(q, k), brute.top(q, k)) for q in qs]
    same = all([i for i, _ in got] == [i for i, _ in want] for got, want in pairs)
    recall = sum(len({i for i, _ in got} & {i for i, _ in want}) for got, want in pairs) / (k * len(pairs))
    exact = [dict(want) for _, want in pairs]
    error = max((abs(s - exact[j][i]) for j, (got, _) in enumerate(pairs) for i, s in got if i in exact[j]),
                default=0.0)
    return {"rows": n, "k": k, "queries": queries, "float32_scan_ms": timed(brute.top),
            "int8_first_pass_ms": timed(snap.top), "int8_used": snap.quant is not None,
            "stored_as": str(snap.vectors.dtype), "same_top_k_every_query": same,
            "recall_of_float32_top_k": round(recall, 4), "max_score_difference": float(f"{error:.2g}")}


def register_retrieval(sub: Any) -> None:
    """Add ``mneme bench retrieval``."""
    p = sub.add_parser("retrieval", help="end-to-end recall latency, ingest throughput and peak memory")
    p.add_argument("--memories", type=int, default=10_000, help="how many memories to build (default 10000)")
    p.add_argument("--tenants", type=int, default=100, help="how many tenants share them (default 100)")
    p.add_argument("--share", type=float, default=0.01,
                   help="fraction of the memories owned by the measured tenant (default 0.01; 1 = all)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--mode", choices=["embedded", "memory"], default="embedded")
    p.add_argument("--dense-only", action="store_true",
                   help="time only the dense channel over --memories cached rows of one user (no model, no store)")
    add_json_option(p)

    def handler(args: Any) -> int:
        from mneme.cli.progress import Progress

        if args.dense_only:
            emit(run_dense_bench(args.memories, queries=args.queries), args.json_out)
            return 0
        with Progress("bench retrieval: ingest", total=args.memories, unit="memory") as bar:
            result = run_retrieval_bench(args.memories, tenants=args.tenants, share=args.share,
                                         queries=args.queries, mode=args.mode, progress=bar.update)
        emit(result, args.json_out)
        return 0

    p.set_defaults(func=handler)
