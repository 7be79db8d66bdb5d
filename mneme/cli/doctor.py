"""``mneme doctor``: what ``/readyz`` says, for someone at a terminal, plus the settings and the model endpoint.

It reads the settings, then asks each dependency one small question (``mneme.health``): the memory store,
the embedder, the checkpointer, the write journal's backlog and, when one is configured, the chat model
endpoint. When a running ``mneme serve`` owns the embedded data directory, the store, embedder and
checkpointer are that server's, so its ``/readyz`` answers for them. Exit code 0 when everything answers,
1 when something is down, 2 when the settings themselves are wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from typing import Any

from mneme.health import Check


def register(subparsers: Any) -> None:
    """Add the ``doctor`` subcommand."""
    p = subparsers.add_parser("doctor", help="check the store, embedder, checkpointer and model endpoint")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(func=run)


def _settings_check() -> tuple[Any, Check]:
    from mneme.config import Settings
    from mneme.errors import ConfigurationError

    try:
        settings = Settings.from_env()
    except ConfigurationError as exc:
        return None, Check("settings", False, str(exc), 0.0)
    mode = f"server {settings.chroma_url}" if settings.chroma_url else f"embedded in {settings.data_dir}"
    model = "memory-only (no model)" if settings.memory_only else \
        f"{settings.chat_model} at {settings.openai_base_url or 'api.openai.com'}"
    return settings, Check("settings", True, f"store {mode}; chat {model}; timeout {settings.model_timeout:g} s",
                           0.0)


def _from_running_server(settings: Any) -> list[Check] | None:
    """The checks of a live ``mneme serve`` that owns this data directory, from its ``/readyz``."""
    import httpx

    from mneme.server_info import read_server_file

    info = read_server_file(settings.data_dir)
    if not info:
        return None
    try:
        body = httpx.get(f"{info['url']}/readyz", timeout=10).json()
    except (httpx.HTTPError, ValueError) as exc:
        return [Check("server", False, f"mneme serve (pid {info.get('pid')}) at {info['url']} does not answer: "
                                       f"{exc}", 0.0)]
    checks = [Check("server", True, f"mneme serve (pid {info.get('pid')}) at {info['url']}", 0.0)]
    for name, c in (body.get("checks") or {}).items():
        checks.append(Check(name, bool(c.get("ok")), f"{c.get('detail')} (from the server)", float(c.get("ms", 0))))
    return checks


def _local_checks(settings: Any, stack: ExitStack) -> list[Check]:
    """Open the store (no journal: the doctor writes nothing) and the checkpointer, and ask them."""
    from mneme.errors import StoreLockedError
    from mneme.health import checkpointer_probe, embedder_probe, run_checks, store_probe
    from mneme.stores import open_service
    from mneme.threads import open_checkpointer

    try:
        service = open_service(settings, journal=False)
    except StoreLockedError as exc:
        return _from_running_server(settings) or [Check("memory_store", False, str(exc), 0.0)]
    except Exception as exc:  # noqa: BLE001 - a store that cannot open is the finding
        return [Check("memory_store", False, f"{type(exc).__name__}: {exc}", 0.0)]
    stack.callback(service.close)
    probes: dict[str, Any] = {"memory_store": store_probe(service.store),
                              "embedder": embedder_probe(service.store.embedder)}
    try:
        probes["checkpointer"] = checkpointer_probe(stack.enter_context(open_checkpointer(settings)))
    except Exception as exc:  # noqa: BLE001
        return [*run_checks(probes), Check("checkpointer", False, f"{type(exc).__name__}: {exc}", 0.0)]
    return run_checks(probes)


def _journal_check(settings: Any) -> Check | None:
    from mneme.health import journal_files_backlog
    from mneme.stores import journal_dir

    try:
        waiting = journal_files_backlog(journal_dir(settings))
    except Exception as exc:  # noqa: BLE001
        return Check("journal", False, f"{type(exc).__name__}: {exc}", 0.0)
    return Check("journal", True, f"{waiting} turn(s) waiting to be stored", 0.0)


def collect() -> list[Check]:
    """Every check, in the order they are printed."""
    from mneme.health import model_probe, run_checks

    settings, first = _settings_check()
    checks = [first]
    if settings is None:
        return checks
    with ExitStack() as stack:
        checks += _local_checks(settings, stack)
    journal = _journal_check(settings)
    if journal is not None:
        checks.append(journal)
    if not settings.memory_only:
        base = settings.openai_base_url or "https://api.openai.com/v1"
        checks += run_checks({"model": model_probe(base, settings.openai_api_key, settings.chat_model)},
                             timeout=min(settings.model_timeout, 10.0))
    return checks


def run(args: argparse.Namespace) -> int:
    """Print the checks; 0 when all pass, 1 when one fails, 2 when the settings are wrong."""
    checks = collect()
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], ensure_ascii=False, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            timing = f" ({c.ms:g} ms)" if c.ms else ""
            print(f"{'ok  ' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}{timing}")
        failed = [c.name for c in checks if not c.ok]
        print("all checks passed" if not failed else f"not ready: {', '.join(failed)}",
              file=sys.stdout if not failed else sys.stderr)
    if not checks[0].ok:
        return 2
    return 0 if all(c.ok for c in checks) else 1
