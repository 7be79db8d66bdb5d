"""``mneme serve --workers N``: several server processes on one port, for the cores one Python process cannot use.

One ``mneme serve`` process runs every turn's Python under one interpreter lock, so it uses about one core
however many the machine has (``mneme bench serve`` measures it). With ``--workers N`` the command binds the
port once and starts N worker processes on it (uvicorn's supervisor: the kernel hands each new connection to
one of them, a dead worker is replaced). Each worker is a whole ``mneme serve`` app: its own memory service,
write journal (one file per process, see ``mneme.memory.journal``), vector cache and checkpointer connection.

What they share, and why that is safe:
- long-term memory in a Chroma server (``MNEME_CHROMA_URL``): required, since embedded Chroma is opened by one
  process only. Each process's cache follows the others' writes through the store's change stamps.
- threads (SQLite under ``MNEME_DATA_DIR`` in WAL mode, or PostgreSQL), the keyword index and the API keys:
  files several processes may open at once.
- the admin token of ``server.json``: made by the parent, handed to the workers in their environment.

What changes: a turn is recallable at once by the worker that acknowledged it (its journal), and by the others
once its batch is stored (tens of ms); a connection stays with one worker, so one client's turns over a
keep-alive connection keep read-your-writes. Two turns of one thread sent at the same time may reach two
workers and are then not ordered (one process orders them; see ``mneme.http_turn``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from mneme.config import Settings
from mneme.errors import ConfigurationError

WORKER_OPTIONS = "MNEME_SERVE_WORKER_OPTIONS"
"""Environment variable carrying the parent's serve options (admin token, default user, dev auth) to workers."""
APP = "mneme.serve_workers:worker_app"
"""What uvicorn imports in each worker (a factory)."""


def check_workers(workers: int, settings: Settings) -> None:
    """Refuse ``--workers`` values the settings cannot serve (``ConfigurationError``)."""
    if workers < 1:
        raise ConfigurationError(f"--workers must be at least 1, got {workers}")
    if workers > 1 and not settings.chroma_url:
        raise ConfigurationError(
            f"--workers {workers} needs a Chroma server (MNEME_CHROMA_URL=http://host:port, e.g. from "
            "`chroma run --path DIR --port P`): embedded Chroma is opened by one process only")


def worker_environment(*, admin_token: str, default_user: str | None, insecure_dev_auth: bool) -> dict[str, str]:
    """The environment entries that give a worker the parent's serve options."""
    return {WORKER_OPTIONS: json.dumps({"admin_token": admin_token, "default_user": default_user,
                                        "insecure_dev_auth": insecure_dev_auth})}


def worker_app() -> Any:
    """The app of one worker: the settings from the environment, the serve options from the parent."""
    from mneme.auth import Authenticator
    from mneme.cpu import limit_blas_threads
    from mneme.serve import create_app

    try:
        options = json.loads(os.environ[WORKER_OPTIONS])
    except (KeyError, ValueError) as exc:
        raise ConfigurationError(f"{APP} is started by `mneme serve --workers N`, which sets {WORKER_OPTIONS}") \
            from exc
    limit_blas_threads(1)
    settings = Settings.from_env()
    authenticator = Authenticator.from_settings(settings, local_admin_token=options["admin_token"],
                                                default_user=options.get("default_user"))
    return create_app(authenticator=authenticator, settings=settings,
                      remote_dev_auth=bool(options.get("insecure_dev_auth")))
