"""``mneme bench limits``: what oversized requests and long threads cost a real ``mneme serve``.

It starts ``mneme serve`` (memory-only mode, the default offline embedder, a temporary data directory), then:
sends ``--big`` requests whose body is ``--big-mb`` megabytes and reads the server's resident memory before and
after (each should be a 413, refused before the body is read); and plays one thread of ``--turns`` turns,
recording the response size at turns 5, 25 and the last, and the server's resident memory after them. Figures go to
stdout as JSON; the exit status is 1 when a big request was not refused or a response grew past twice turn 5's.
"""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import httpx

from mneme.evaluation.bench_serve import start_server
from mneme.evaluation.harness import add_json_option, emit


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return round(int(status.split("VmRSS:")[1].split()[0]) / 1024, 1)


def run_limits_bench(*, big: int = 20, big_mb: float = 5.0, turns: int = 300) -> dict[str, Any]:
    """Run the benchmark against a fresh ``mneme serve``; returns the figures."""
    with tempfile.TemporaryDirectory(prefix="mneme-bench-limits-") as tmp:
        proc, url = start_server(Path(tmp) / "data")
        try:
            headers = {"X-User-Id": "bench", "content-type": "application/json"}
            warm = {"input": {"messages": [{"role": "user", "content": "hello"}]}}
            httpx.post(f"{url}/agent/invoke", json=warm, headers=headers, timeout=120).raise_for_status()
            before = _rss_mb(proc.pid)
            body = (b'{"input": {"messages": [{"role": "user", "content": "'
                    + b"x" * int(big_mb * 1_000_000) + b'"}]}}')
            codes = [httpx.post(f"{url}/agent/invoke", content=body, headers=headers, timeout=120).status_code
                     for _ in range(big)]
            after = _rss_mb(proc.pid)
            sizes: dict[int, int] = {}
            marks = {5, 25, turns}
            out: dict[str, Any] = {}
            for turn in range(1, turns + 1):
                text = f"第{turn}轮：我今天读了第{turn}章，讲的是记忆与遗忘。" if turn % 2 else \
                    f"Turn {turn}: today I read chapter {turn}, about memory and forgetting."
                r = httpx.post(f"{url}/agent/invoke", headers={**headers, "X-Thread-Id": "long"}, timeout=120,
                               json={"input": {"messages": [{"role": "user", "content": text}]}})
                r.raise_for_status()
                out = r.json()["output"]
                if turn in marks:
                    sizes[turn] = len(r.content)
            final_rss = _rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "system": platform.platform(terse=True)},
        "big_requests": {"count": big, "mb_each": big_mb, "status_codes": sorted(set(codes)),
                         "rss_mb_before": before, "rss_mb_after": after},
        "thread": {"turns": turns, "response_bytes": {str(k): v for k, v in sorted(sizes.items())},
                   "last_answer_chars": len(str(out.get("answer", ""))), "rss_mb_after_turns": final_rss},
    }


def register_limits(sub: Any) -> None:
    """Add ``mneme bench limits``."""
    p = sub.add_parser("limits", help="oversized requests and long threads against a real `mneme serve`")
    p.add_argument("--big", type=int, default=20, help="oversized requests to send")
    p.add_argument("--big-mb", type=float, default=5.0, help="size of each oversized body, in MB")
    p.add_argument("--turns", type=int, default=300, help="turns of the one long thread")
    add_json_option(p)

    def handler(args: Any) -> int:
        result = run_limits_bench(big=args.big, big_mb=args.big_mb, turns=args.turns)
        emit(result, args.json_out)
        sizes = result["thread"]["response_bytes"]
        refused = result["big_requests"]["status_codes"] == [413]
        bounded = all(v <= 2 * sizes["5"] for v in sizes.values()) if "5" in sizes else True
        return 0 if refused and bounded else 1

    p.set_defaults(func=handler)
