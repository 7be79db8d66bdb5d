"""``mneme bench serve``: turns per second of a real ``mneme serve``, and proof that no turn is lost or leaked.

It starts ``mneme serve`` on a free loopback port (memory-only mode: no model endpoint; the default offline
embedder; embedded Chroma in a temporary data directory, or ``--chroma-url``), then runs two phases of
concurrent clients, each client a user of its own with a thread of its own, each turn one
``/agent/invoke`` stating something with a unique made-up name ("I visited a village called Bokamuri",
half of them in Chinese). Latency is measured at the client, from request to response. After the load,
it waits until every acknowledged turn (HTTP 200 with ``memory_report.queued`` or ``stored``) is in the
store (``GET /memories``: the journal has drained), then checks that each name is recalled for its own
user (``POST /memories/search``) and for no other user. The client runs in this process on the same
machine, so it shares the cores with the server; the server's own CPU time per turn is reported too.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mneme.cli.progress import Progress
from mneme.evaluation.bench_store import free_port
from mneme.evaluation.harness import add_json_option, emit, machine, percentile

_EN = "On trip {n} I visited a village called {token} and loved it."
_ZH = "我第{n}次旅行去了一个叫{token}的村子，很喜欢那里。"
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


@dataclass
class Phase:
    """One load phase: who said what, how long each turn took."""

    clients: int
    turns: int
    latencies_ms: list[float] = field(default_factory=list)
    acknowledged: dict[str, list[str]] = field(default_factory=dict)
    """user -> tokens of turns answered 200 with the turn queued or stored."""
    failed: int = 0
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    """CPU time the server process used during the phase (all its threads): less sensitive to other load."""
    store_cpu_s: float | None = None
    """Of ``server_cpu_s``, the part of a Chroma server the bench started (``--workers``), if any."""
    on_turn: Callable[[int], None] | None = None
    """Called after each turn (progress on a terminal)."""

    def figures(self) -> dict[str, Any]:
        """JSON-ready figures of this phase."""
        done = len(self.latencies_ms)
        return {
            "clients": self.clients, "turns": done, "failed": self.failed, "seconds": round(self.seconds, 2),
            "turns_per_s": round(done / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": round(percentile(self.latencies_ms, 50), 1),
            "p95_ms": round(percentile(self.latencies_ms, 95), 1),
            "server_cpu_ms_per_turn": round(1000 * self.server_cpu_s / done, 1) if done else 0.0,
            **({"of_which_chroma_ms_per_turn": round(1000 * self.store_cpu_s / done, 1) if done else 0.0}
               if self.store_cpu_s is not None else {}),
        }


def start_server(data_dir: Path, *, chroma_url: str | None = None, timeout: float = 180.0,
                 extra_env: dict[str, str] | None = None, workers: int = 1) -> tuple[subprocess.Popen[bytes], str]:
    """``mneme serve`` on a free port with only ``MNEME_DATA_DIR`` (and ``chroma_url``) set; its URL once healthy.

    ``workers`` > 1 starts ``mneme serve --workers N`` (needs ``chroma_url``); it is healthy once every worker
    answers ``/healthz``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_", "LANGSMITH_"))}
    env.update(MNEME_DATA_DIR=str(data_dir), LANGSMITH_TRACING="false", **(extra_env or {}))
    if chroma_url:
        env["MNEME_CHROMA_URL"] = chroma_url
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = open(data_dir / "serve.log", "ab")  # noqa: SIM115 - the child owns it
    exe = str(Path(sys.executable).with_name("mneme"))
    proc = subprocess.Popen([exe, "serve", "--port", str(port), "--workers", str(workers)], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mneme serve exited with {proc.returncode}; see {data_dir / 'serve.log'}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200 and _workers_ready(data_dir, workers):
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"mneme serve did not answer on {url} within {timeout:.0f}s")


def _workers_ready(data_dir: Path, workers: int) -> bool:
    """Whether every worker of ``mneme serve --workers N`` has started (uvicorn logs one line per worker)."""
    if workers <= 1:
        return True
    try:
        log = (data_dir / "serve.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return log.count("Application startup complete") >= workers


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``): a ``mneme serve --workers N`` parent and its workers."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


async def _client(http: httpx.AsyncClient, url: str, user: str, turns: int, phase: Phase) -> None:
    tokens = phase.acknowledged.setdefault(user, [])
    for n in range(turns):
        token = "".join(secrets.choice(_SYLLABLES) for _ in range(4)).capitalize()  # not a secret to redaction
        text = (_ZH if n % 2 else _EN).format(n=n + 1, token=token)
        body = {"input": {"messages": [{"role": "user", "content": text}]}}
        start = time.perf_counter()
        try:
            r = await http.post(f"{url}/agent/invoke", json=body,
                                headers={"X-User-Id": user, "X-Thread-Id": f"{user}-t"})
        except httpx.HTTPError:
            phase.failed += 1
            continue
        finally:
            if phase.on_turn is not None:
                phase.on_turn(1)
        phase.latencies_ms.append((time.perf_counter() - start) * 1000.0)
        report = (r.json().get("output") or {}).get("memory_report") or {} if r.status_code == 200 else {}
        if report.get("queued") or report.get("stored"):
            tokens.append(token)
        else:
            phase.failed += 1


def cpu_seconds(pid: int | Sequence[int]) -> float:
    """User + system CPU time of process ``pid`` (or of several) so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    for one in [pid] if isinstance(pid, int) else pid:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def run_phase(url: str, *, clients: int, turns: int, tag: str, pid: int | Sequence[int] | None = None,
                    on_turn: Callable[[int], None] | None = None, store_pid: int | None = None) -> Phase:
    """``clients`` concurrent users, ``turns`` turns each; latencies and acknowledged tokens.

    ``pid``: the server's process(es), whose CPU time is measured; ``store_pid``: the one among them that is a
    Chroma server (its share is reported apart).
    """
    phase = Phase(clients=clients, turns=turns, on_turn=on_turn)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    cpu = cpu_seconds(pid) if pid else 0.0
    store_cpu = cpu_seconds(store_pid) if store_pid else 0.0
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(_client(http, url, f"bench-{tag}-{c}", turns, phase) for c in range(clients)))
        phase.seconds = time.perf_counter() - start
    phase.server_cpu_s = cpu_seconds(pid) - cpu if pid else 0.0
    if store_pid:
        phase.store_cpu_s = cpu_seconds(store_pid) - store_cpu
    return phase


def _stored_text(url: str, user: str) -> str:
    r = httpx.get(f"{url}/memories", params={"limit": 1000}, headers={"X-User-Id": user}, timeout=60)
    r.raise_for_status()
    return " ".join(str(m.get("text", "")) for m in r.json()["memories"])


def verify(url: str, acknowledged: dict[str, list[str]], *, timeout: float = 120.0) -> dict[str, Any]:
    """Wait until every acknowledged token is stored, then check it is recalled by its user and by no other."""
    start = time.monotonic()
    missing: dict[str, list[str]] = dict(acknowledged)
    while missing and time.monotonic() - start < timeout:
        missing = {u: [t for t in ts if t not in text] for u, ts in missing.items()
                   for text in [_stored_text(url, u)] if any(t not in text for t in ts)}
        if missing:
            time.sleep(0.5)
    drained_s = time.monotonic() - start
    users = sorted(acknowledged)
    lost = sum(len(ts) for ts in missing.values())
    not_recalled = leaked = 0
    for i, user in enumerate(users):
        other = users[(i + 1) % len(users)] if len(users) > 1 else None
        for token in acknowledged[user]:
            mine = httpx.post(f"{url}/memories/search", json={"query": token, "k": 5},
                              headers={"X-User-Id": user}, timeout=60).json()["results"]
            if not any(token in str(item.get("text", "")) for item in mine):
                not_recalled += 1
            if other is not None:
                theirs = httpx.post(f"{url}/memories/search", json={"query": token, "k": 5},
                                    headers={"X-User-Id": other}, timeout=60).json()["results"]
                leaked += sum(token in str(item.get("text", "")) for item in theirs)
    return {"acknowledged": sum(len(ts) for ts in acknowledged.values()), "stored_within_s": round(drained_s, 1),
            "lost": lost, "not_recalled": not_recalled, "leaked": leaked}



def run_serve_bench(*, clients: int = 16, turns: int = 12, single_turns: int | None = None,
                    chroma_url: str | None = None, data_dir: Path | None = None, workers: int = 1) -> dict[str, Any]:
    """Start a server, run 1 client then ``clients`` clients, verify every acknowledged turn; the figures.

    ``workers`` > 1 serves with ``mneme serve --workers N`` over a Chroma server: ``chroma_url``, else a
    ``chroma run`` this starts (its CPU time is counted with the server's).
    """
    from mneme.evaluation.bench_store import ChromaProcess

    with tempfile.TemporaryDirectory(prefix="mneme-bench-serve-") as tmp:
        root = data_dir or Path(tmp) / "data"
        chroma = ChromaProcess(Path(tmp) / "chroma").start() if workers > 1 and not chroma_url else None
        url_of_chroma = chroma.url if chroma is not None else chroma_url
        proc = None
        try:
            proc, url = start_server(root, chroma_url=url_of_chroma, workers=workers)
            store_pid = chroma.pid if chroma is not None else None
            pids = process_tree(proc.pid) + ([store_pid] if store_pid else [])
            asyncio.run(run_phase(url, clients=2 * workers, turns=3, tag="warm"))  # load embedders, open collections
            before = machine()
            n1 = single_turns or turns * 4
            with Progress("bench serve: 1 client", total=n1, unit="turn") as bar:
                one = asyncio.run(run_phase(url, clients=1, turns=n1, tag="one", pid=pids, on_turn=bar.update,
                                            store_pid=store_pid))
            with Progress(f"bench serve: {clients} clients", total=clients * turns, unit="turn") as bar:
                many = asyncio.run(run_phase(url, clients=clients, turns=turns, tag="many", pid=pids,
                                             on_turn=bar.update, store_pid=store_pid))
            after = machine()
            checked = verify(url, {**one.acknowledged, **many.acknowledged})
        finally:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if chroma is not None:
                chroma.stop()
    store = "embedded Chroma" if not url_of_chroma else \
        "a chroma run it started, CPU counted with the server's" if chroma is not None else "chroma server"
    return {"server": f"mneme serve --workers {workers} (memory-only, use-m3, {store})",
            "machine": {**before, "loadavg_1m_after": after["loadavg_1m"]},
            "one_client": one.figures(), f"{clients}_clients": many.figures(), "memory": checked}


def register_serve(sub: Any) -> None:
    """Add ``mneme bench serve``."""
    p = sub.add_parser("serve", help="turns/s and latency of a real `mneme serve` under concurrent clients")
    p.add_argument("--clients", type=int, default=16, help="concurrent clients (users) of the second phase")
    p.add_argument("--turns", type=int, default=12, help="turns per client (the single client makes 4x as many)")
    p.add_argument("--chroma-url", default=None, help="use this Chroma server instead of embedded Chroma")
    p.add_argument("--workers", type=int, default=1,
                   help="`mneme serve --workers N`: N server processes over a Chroma server (--chroma-url, else "
                        "a `chroma run` the bench starts)")
    add_json_option(p)

    def handler(args: Any) -> int:
        result = run_serve_bench(clients=args.clients, turns=args.turns, chroma_url=args.chroma_url,
                                 workers=args.workers)
        emit(result, args.json_out)
        memory = result["memory"]
        return 0 if memory["lost"] == memory["leaked"] == memory["not_recalled"] == 0 else 1

    p.set_defaults(func=handler)
