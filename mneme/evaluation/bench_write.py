"""``mneme bench write``: how long writing a turn takes, without the model.

Two figures, each p50/p95 in milliseconds over varied Chinese and English turns:
``policy`` is the writing policy alone (filter, redaction, emotion, facts; ``plan_turn`` with no model);
``turn`` is the whole ``remember_turn`` (policy, embedding, the store and the keyword index) into a
temporary embedded Chroma: what a turn costs after the reply, when no model is configured.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mneme.evaluation.harness import add_json_option, emit, percentile
from mneme.memory.writing import _BENCH_TURNS, bench_plan_turn


def run_write_bench(n: int = 500, *, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Time the writing policy and whole turn writes; return the figures."""
    from mneme.clock import FixedClock
    from mneme.embeddings import load_embedder
    from mneme.memory.chroma import open_chroma_store
    from mneme.memory.keyword import KeywordIndex
    from mneme.memory.service import MemoryService

    policy = bench_plan_turn(n)
    embedder = load_embedder("use-m3")
    clock = FixedClock(1_700_000_000.0)
    turn_ms: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mneme-bench-") as tmp:
        service = MemoryService(open_chroma_store(data_dir=Path(tmp), embedder=embedder, prefix="bench"),
                                keyword=KeywordIndex(Path(tmp) / "kw.sqlite3"), clock=clock)
        service.remember_turn("warm", user_text="warm up 热身", assistant_text="ok")
        for i in range(n):
            user, assistant = _BENCH_TURNS[i % len(_BENCH_TURNS)]
            clock.advance(60)
            start = time.perf_counter()
            # a per-turn suffix: exact repeats are skipped, and would flatter the figure
            service.remember_turn(f"user-{i % 20}", user_text=f"{user} #{i}", assistant_text=assistant,
                                  thread_id="bench")
            turn_ms.append((time.perf_counter() - start) * 1000.0)
            if progress:
                progress(1)
        service.close()
    return {
        "turns": n,
        "policy_ms": {"p50": policy["p50"], "p95": policy["p95"]},
        "turn_ms": {"p50": round(percentile(turn_ms, 50), 2), "p95": round(percentile(turn_ms, 95), 2)},
        "model_calls": 0,
    }


def register_write(sub: Any) -> None:
    """Add ``mneme bench write``."""
    p = sub.add_parser("write", help="time the writing policy and whole turn writes (no model)")
    p.add_argument("--turns", type=int, default=500)
    add_json_option(p)

    def handler(args: Any) -> int:
        from mneme.cli.progress import Progress

        with Progress("bench write", total=args.turns, unit="turn") as bar:
            result = run_write_bench(args.turns, progress=bar.update)
        emit(result, args.json_out)
        return 0

    p.set_defaults(func=handler)
