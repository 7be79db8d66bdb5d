"""Is Mneme ready to serve: each dependency asked one small real question, under a deadline.

``/healthz`` says only that the process answers; ``/readyz`` and ``mneme doctor`` ask the memory store
(a filtered read), the embedder (one embedding), the checkpointer (one thread read), report the
write journal's backlog and, for the doctor, ask the chat model endpoint (its model list). A check that
fails or does not answer within ``CHECK_TIMEOUT`` seconds is reported by name with what went wrong;
nothing is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mneme.deadlines import call_with_deadline

CHECK_TIMEOUT = 5.0
PROBE_TENANT = "mneme-readyz-probe"
"""A user id no one has: reading it touches the store without reading anyone's memories."""
PROBE_THREAD = {"configurable": {"thread_id": "mneme-readyz-probe", "checkpoint_ns": ""}}


@dataclass(frozen=True)
class Check:
    """One dependency's answer."""

    name: str
    ok: bool
    detail: str
    ms: float


def _failure(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def store_probe(store: Any) -> Callable[[], str]:
    """A filtered read of the store (Chroma answers, or raises)."""
    def probe() -> str:
        from mneme.memory.base import Kind

        store.count(PROBE_TENANT, kinds=[Kind.EPISODIC])
        return str(getattr(store, "location", type(store).__name__))
    return probe


def embedder_probe(embedder: Any) -> Callable[[], str]:
    """One embedding of a short text, of the dimension the embedder declares.

    It asks the model itself, past a ``BatchingEmbedder``'s cache of recent vectors: a cached answer would say
    an embeddings endpoint that went down is fine.
    """
    model = getattr(embedder, "inner", embedder)

    def probe() -> str:
        vector = model.embed(["readiness probe 就绪检查"])[0]
        info = model.info
        if len(vector) != info.dimension:
            raise RuntimeError(f"{info.name} gave {len(vector)} numbers, not {info.dimension}")
        return f"{info.name} ({info.dimension}-d)"
    return probe


def checkpointer_probe(checkpointer: Any) -> Callable[[], str]:
    """One read of a thread no one uses (sync checkpointers)."""
    def probe() -> str:
        checkpointer.get_tuple(PROBE_THREAD)
        return type(checkpointer).__name__
    return probe


def acheckpointer_probe(checkpointer: Any) -> Callable[[], Awaitable[str]]:
    """One read of a thread no one uses (async checkpointers: the server's)."""
    async def probe() -> str:
        await checkpointer.aget_tuple(PROBE_THREAD)
        return type(checkpointer).__name__
    return probe


def journal_probe(service: Any) -> Callable[[], str]:
    """The write journal's backlog (turns acknowledged, not yet in the store) and the applier's last error."""
    def probe() -> str:
        journal = getattr(service, "journal", None)
        if journal is None:
            return "off (turns are stored synchronously)"
        waiting = journal.backlog()
        error = getattr(getattr(service, "applier", None), "last_error", None)
        return f"{waiting} turn(s) waiting to be stored" + (f"; last store error: {error}" if error else "")
    return probe


def journal_files_backlog(directory: Path) -> int:
    """Turns waiting in the journal files under ``directory`` (read-only: another process may own them)."""
    total = 0
    for path in sorted(Path(directory).glob("journal-*.sqlite3")):
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as conn:
            total += int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
    return total


def model_probe(base_url: str, api_key: str | None, model: str) -> Callable[[], str]:
    """The endpoint's model list (``GET {base_url}/models``): it answers, and says whether it has ``model``."""
    def probe() -> str:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=CHECK_TIMEOUT)
        response.raise_for_status()
        names = [str(m.get("id")) for m in (response.json().get("data") or []) if isinstance(m, dict)]
        listed = "listed" if model in names else f"not in its list of {len(names)}" if names else "no list"
        return f"{base_url} answers; model {model} {listed}"
    return probe


def run_checks(probes: Mapping[str, Callable[[], str]], *, timeout: float = CHECK_TIMEOUT) -> list[Check]:
    """Run each probe under the deadline (one after the other); failures are results, never raised."""
    out = []
    for name, probe in probes.items():
        started = time.perf_counter()
        try:
            detail, ok = call_with_deadline(probe, timeout, what=name), True
        except Exception as exc:  # noqa: BLE001 - a failed dependency is the answer, not an error
            detail, ok = _failure(exc), False
        out.append(Check(name, ok, detail, round((time.perf_counter() - started) * 1000, 1)))
    return out


async def arun_checks(probes: Mapping[str, Callable[[], str] | Callable[[], Awaitable[str]]], *,
                      timeout: float = CHECK_TIMEOUT) -> list[Check]:
    """``run_checks`` off the event loop: sync probes in threads, async ones awaited, all at once."""
    async def one(name: str, probe: Callable[[], Any]) -> Check:
        started = time.perf_counter()
        try:
            if asyncio.iscoroutinefunction(probe):
                detail = await asyncio.wait_for(probe(), timeout)
            else:
                detail = await asyncio.to_thread(call_with_deadline, probe, timeout, what=name)
            ok = True
        except TimeoutError:
            detail, ok = f"no answer within {timeout:g} s", False
        except Exception as exc:  # noqa: BLE001
            detail, ok = _failure(exc), False
        return Check(name, ok, str(detail), round((time.perf_counter() - started) * 1000, 1))

    return list(await asyncio.gather(*(one(n, p) for n, p in probes.items())))


def readiness(checks: list[Check]) -> tuple[int, dict[str, Any]]:
    """The HTTP status (200 ready, 503 not) and body of ``/readyz``."""
    failed = [c.name for c in checks if not c.ok]
    body = {"status": "unavailable" if failed else "ready", "failed": failed,
            "checks": {c.name: {k: v for k, v in asdict(c).items() if k != "name"} for c in checks}}
    return (503 if failed else 200), body
