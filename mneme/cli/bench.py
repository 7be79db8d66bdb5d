"""``mneme bench``: performance figures (``store`` now; room for ``retrieval``)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``bench`` and its sub-benchmarks."""
    from mneme.evaluation.bench_store import register_bench

    parser = subparsers.add_parser("bench", help="measure performance (prints figures)")
    sub = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    register_bench(sub)
    from mneme.evaluation.bench_retrieval import register_retrieval

    register_retrieval(sub)
    from mneme.evaluation.bench_write import register_write

    register_write(sub)
    from mneme.evaluation.bench_serve import register_serve

    register_serve(sub)
    from mneme.evaluation.bench_ingest import register_ingest

    register_ingest(sub)
    from mneme.evaluation.bench_limits import register_limits

    register_limits(sub)
