"""``mneme eval locomo|memorybank``: replay a dataset through the memory-writing path, measure recall."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from mneme.evaluation.harness import add_json_option


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--k takes numbers like 1,5,10: {text!r}") from exc
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError("--k values must be >= 1")
    return ks


def _budgets(text: str) -> list[int]:
    if text.strip().lower() in ("", "none", "0"):
        return []
    try:
        budgets = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--budgets takes token counts like 250,500,1000: {text!r}") from exc
    if budgets and budgets[0] < 1:
        raise argparse.ArgumentTypeError("--budgets values must be >= 1")
    return budgets


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``eval locomo`` and ``eval memorybank``."""
    parser = subparsers.add_parser("eval", help="measure recall on LoCoMo or MemoryBank data")
    sub = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    lo = sub.add_parser("locomo", help="LoCoMo-format conversations")
    lo.add_argument("file", type=Path)
    lo.add_argument("--include-adversarial", action="store_true", help="also score category 5")
    mb = sub.add_parser("memorybank", help="MemoryBank-format history and questions")
    mb.add_argument("history", type=Path)
    mb.add_argument("qa", type=Path)
    for p in (lo, mb):
        p.add_argument("-k", "--k", type=_ks, default=[1, 5, 10, 25], help="cut-offs, e.g. 1,5,10,25")
        p.add_argument("--budgets", type=_budgets, default=[250, 500, 1000],
                       help="context-token budgets for recall_at_budget, e.g. 250,500,1000 ('none': off)")
        p.add_argument("--no-forgetting", action="store_true", help="rank without the forgetting curve")
        p.add_argument("--store", choices=["chroma", "memory"], default="chroma",
                       help="a temporary embedded Chroma (default) or the in-process store")
        p.add_argument("--langsmith", metavar="DATASET", default=None,
                       help="also push the questions and scores to LangSmith as an experiment on DATASET "
                            "(needs LANGSMITH_API_KEY)")
        add_json_option(p)
        p.set_defaults(func=_run)


def _run(args: Any) -> int:
    from mneme.clock import FixedClock
    from mneme.embeddings import load_embedder
    from mneme.evaluation.datasets import load_locomo, load_memorybank
    from mneme.evaluation.harness import emit, evaluate, replay
    from mneme.memory.chroma import open_chroma_store
    from mneme.memory.inprocess import InProcessStore
    from mneme.memory.keyword import KeywordIndex
    from mneme.memory.service import MemoryService

    if args.dataset == "locomo":
        conversations = load_locomo(args.file, include_adversarial=args.include_adversarial)
    else:
        conversations = load_memorybank(args.history, args.qa)
    from mneme.cli.progress import Progress

    rows = None
    if args.langsmith:
        from mneme.evaluation.experiment import ExperimentRows, langsmith_client

        client = langsmith_client()  # before the work: a missing key is said at once
        rows = ExperimentRows(ks=args.k)
    embedder = load_embedder("use-m3")
    with tempfile.TemporaryDirectory(prefix="mneme-eval-") as tmp:
        store: Any = InProcessStore(embedder) if args.store == "memory" else open_chroma_store(
            data_dir=Path(tmp), embedder=embedder, prefix="eval")
        service = MemoryService(store, keyword=KeywordIndex(Path(tmp) / "kw.sqlite3"), clock=FixedClock(0))
        turns = sum(len(c.exchanges) for c in conversations)
        questions = sum(len(c.questions) for c in conversations)
        try:
            with Progress(f"eval {args.dataset}: replay", total=turns, unit="turn") as bar:
                writes = replay(service, conversations, progress=bar.update)
            with Progress(f"eval {args.dataset}: recall", total=questions, unit="question") as bar:
                result = evaluate(service, conversations, ks=args.k, budgets=args.budgets,
                                  forgetting=not args.no_forgetting, progress=bar.update,
                                  on_question=rows.add if rows is not None else None)
        finally:
            service.close()
    result = {"dataset": args.dataset, "conversations": len(conversations), "writes": writes, **result}
    if rows is not None:
        from mneme.evaluation.experiment import push_experiment

        result["langsmith"] = push_experiment(rows.rows, result, dataset=args.langsmith, client=client)
    emit(result, args.json_out)
    return 0
