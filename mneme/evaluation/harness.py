"""Replay conversations through the real memory-writing path, then measure retrieval.

For each conversation (a tenant): every exchange goes through ``MemoryService.remember_turn`` at the
data's own time; then every question is asked at ``asked_at`` and the top-k recalled items are mapped
back to source turns through their provenance. recall@k = |evidence ∩ turns of the top k| / |evidence|,
averaged over questions that have evidence. Items from another tenant count as isolation violations.

``recall_at_budget`` is the same recall within a context budget of B tokens instead of k items: items are
taken in rank order as the agent fills its prompt (``ranking.select``: an item that does not fit what is
left is skipped, a smaller later one may still fit), counted with the prompt's tokenizer
(``fusion.count_tokens``). Budgets compare systems whose units (turns, facts, chunks) differ.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mneme.evaluation.datasets import Conversation
from mneme.memory.fusion import count_tokens, fit_budget
from mneme.memory.service import MemoryService, Recalled, RecallOptions


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation; 0 for no values."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def machine() -> dict[str, Any]:
    """What the figures were measured on, and how busy it was."""
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "platform": platform.platform(terse=True), "python": platform.python_version(),
            "loadavg_1m": round(load[0], 2)}


def emit(result: Any, json_out: str | Path | bool | None = None) -> None:
    """Print figures as JSON (and write them to ``json_out`` when it is a path): what eval and bench commands output.

    ``json_out`` is the value of a ``--json [FILE]`` option: ``True`` (the bare flag) or ``None`` only prints.
    """
    text = json.dumps(result, ensure_ascii=False, indent=2)
    print(text, flush=True)
    if json_out and not isinstance(json_out, bool):
        Path(json_out).write_text(text + "\n", encoding="utf-8")


def replay(service: MemoryService, conversations: Sequence[Conversation],
           progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write every exchange of every conversation into memory, in time order; return write counts."""
    counts: dict[str, int] = defaultdict(int)
    for conv in conversations:
        replies: dict[str | None, str] = {}  # each thread's last reply, as the agent reads it from the thread
        for ex in sorted(conv.exchanges, key=lambda e: e.timestamp):
            report = service.remember_turn(conv.tenant, user_text=ex.user_text, assistant_text=ex.assistant_text,
                                           thread_id=ex.thread_id, now=ex.timestamp, turn_ids=ex.turn_ids,
                                           previous_reply=replies.get(ex.thread_id, ""))
            if ex.assistant_text:
                replies[ex.thread_id] = ex.assistant_text
            counts["turns"] += 1
            counts["records"] += len(report.stored)
            if report.skipped:
                counts[f"skipped:{report.skipped}"] += 1
            if progress:
                progress(1)
    return dict(counts)


BUDGET_POOL = 25
"""Items recalled per question when budgets are measured (at least): enough to fill 1,000 tokens of turns."""


def evaluate(service: MemoryService, conversations: Sequence[Conversation], *, ks: Sequence[int] = (1, 5, 10, 25),
             budgets: Sequence[int] = (), forgetting: bool = True, options: RecallOptions | None = None,
             progress: Callable[[int], None] | None = None,
             on_question: Callable[[Conversation, int, list[Recalled]], None] | None = None) -> dict[str, Any]:
    """Ask every question of every conversation and report recall@k and recall within each token budget,
    by category, latency and isolation. ``on_question(conversation, index, recalled)`` sees each answer
    (``--langsmith`` logs them)."""
    ks = sorted(set(ks))
    budgets = sorted(set(budgets))
    kmax = max(ks) if not budgets else max(max(ks), BUDGET_POOL)
    budget_sum: dict[int, float] = defaultdict(float)
    by_cat_budget: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    budget_tokens: dict[int, list[int]] = defaultdict(list)
    recall_sum: dict[int, float] = defaultdict(float)
    by_cat: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    cat_n: dict[str, int] = defaultdict(int)
    tokens: dict[int, list[int]] = defaultdict(list)
    latencies: list[float] = []
    violations = 0
    n = 0
    options = replace(options or RecallOptions(), k=kmax, include_documents=False, forgetting=forgetting,
                      max_context_tokens=10**9, reinforce=False, mmr=False)
    for conv in conversations:
        for index, q in enumerate(conv.questions):
            t0 = time.perf_counter()
            items = service.recall(conv.tenant, q.text, options=options, now=conv.asked_at)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            if on_question:
                on_question(conv, index, items)
            if progress:
                progress(1)
            own_prefix = f"{conv.tenant}/"
            violations += sum(1 for it in items if any(not t.startswith(own_prefix) for t in it.source_turns))
            if not q.evidence:
                continue
            n += 1
            cat_n[q.category] += 1
            evidence = set(q.evidence)
            for k in ks:
                top = items[:k]
                turns = {t for it in top for t in it.source_turns}
                r = len(evidence & turns) / len(evidence)
                recall_sum[k] += r
                by_cat[q.category][k] += r
                tokens[k].append(sum(count_tokens(it.text) for it in top))
            for b in budgets:
                fitted = fit_budget(items, max_tokens=b, count_tokens=lambda it: count_tokens(it.text))
                turns = {t for it in fitted for t in it.source_turns}
                r = len(evidence & turns) / len(evidence)
                budget_sum[b] += r
                by_cat_budget[q.category][b] += r
                budget_tokens[b].append(sum(count_tokens(it.text) for it in fitted))
    def at_budget(sums: dict[int, float], count: int) -> dict[str, float]:
        return {str(b): round(sums[b] / count, 4) if count else 0.0 for b in budgets}

    return {
        "recall": {str(k): round(recall_sum[k] / n, 4) if n else 0.0 for k in ks},
        **({"recall_at_budget": at_budget(budget_sum, n),
            "budget_tokens_mean": {str(b): round(statistics.fmean(budget_tokens[b]), 1) if budget_tokens[b] else 0.0
                                   for b in budgets}} if budgets else {}),
        "by_category": {
            cat: {"recall": {str(k): round(by_cat[cat][k] / cat_n[cat], 4) for k in ks},
                  **({"recall_at_budget": at_budget(by_cat_budget[cat], cat_n[cat])} if budgets else {}),
                  "n": cat_n[cat]}
            for cat in sorted(cat_n)
        },
        "n_questions": n,
        "latency_ms": {"p50": round(percentile(latencies, 50), 2), "p95": round(percentile(latencies, 95), 2)},
        "context_tokens_mean": {str(k): round(statistics.fmean(tokens[k]), 1) if tokens[k] else 0.0 for k in ks},
        "isolation_violations": violations,
        "forgetting": forgetting,
    }


def add_json_option(parser: Any) -> None:
    """``--json [FILE]`` for a figures command: print the figures as JSON (always), and also write FILE if given."""
    parser.add_argument("--json", dest="json_out", nargs="?", const=True, default=None, metavar="FILE",
                        help="print the figures as JSON (the default output) and also write them to FILE if given")
