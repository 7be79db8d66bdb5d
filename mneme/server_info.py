"""``$MNEME_DATA_DIR/server.json``: how a CLI on the same machine finds the running ``mneme serve``.

``mneme serve`` writes ``{"url", "pid", "admin_token"}`` (mode 0600: the token is an admin credential for
this server process only, made fresh at each start) and removes it on a clean exit. A reader checks that the
pid is alive, so a file left by a killed server is ignored.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

SERVER_FILE = "server.json"


def new_admin_token() -> str:
    """A fresh local admin token (sent as ``Authorization: Bearer <token>``)."""
    return "mneme-local-" + secrets.token_urlsafe(32)


def local_url(host: str, port: int) -> str:
    """The URL a process on this machine uses to reach a server bound to ``host:port``."""
    if host in ("0.0.0.0", "", "*"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def write_server_file(data_dir: Path, *, url: str, admin_token: str) -> Path:
    """Write ``server.json`` for this process (0600, replaced atomically); return its path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / SERVER_FILE
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"url": url, "pid": os.getpid(), "admin_token": admin_token}, f)
    os.replace(tmp, path)
    return path


def remove_server_file(data_dir: Path) -> None:
    """Remove ``server.json`` if this process wrote it."""
    path = data_dir / SERVER_FILE
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def read_server_file(data_dir: Path) -> dict[str, Any] | None:
    """The running server's ``{"url", "pid", "admin_token"}``, or None (no file, or its process is gone)."""
    try:
        info = json.loads((data_dir / SERVER_FILE).read_text(encoding="utf-8"))
        os.kill(int(info["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(info)
