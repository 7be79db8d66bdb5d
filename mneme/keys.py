"""API keys: who may call the servers, kept as hashes in a small SQLite file (0600) under the data directory.

A key reads ``mneme_<id>_<secret>``: the id is public (``mneme keys list`` / ``revoke`` name it), the secret is
32 random bytes and only its SHA-256 is stored, compared in constant time. A slow password hash buys nothing
for a secret with 256 bits of entropy. Once a key file has any key (even a revoked one) the servers require
credentials: revoking the last key never silently re-opens a server.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from mneme.memory.base import validate_tenant

KEY_PREFIX = "mneme_"

_SCHEMA = """CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, admin INTEGER NOT NULL DEFAULT 0, hash TEXT NOT NULL,
    created_at REAL NOT NULL, revoked_at REAL, label TEXT NOT NULL DEFAULT '')"""


@dataclass(frozen=True)
class ApiKey:
    """One key as listed (never the secret)."""

    id: str
    user_id: str
    admin: bool
    created_at: float
    revoked_at: float | None
    label: str = ""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class KeyStore:
    """The API keys in ``path``; every call opens its own connection (safe across threads and processes)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @contextmanager
    def _connect(self, *, create: bool) -> Iterator[sqlite3.Connection]:
        if create and not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))  # born private, never world-readable
        with closing(sqlite3.connect(self.path, timeout=10)) as conn, conn:
            conn.execute(_SCHEMA)
            yield conn

    def exists(self) -> bool:
        """True once any key was ever created here: the servers then require credentials."""
        if not self.path.exists():
            return False
        with self._connect(create=False) as conn:
            return conn.execute("SELECT 1 FROM api_keys LIMIT 1").fetchone() is not None

    def create(self, user_id: str, *, admin: bool = False, label: str = "") -> tuple[ApiKey, str]:
        """A new key for ``user_id``: its listing and the full key (shown once, stored only as a hash)."""
        user_id = validate_tenant(user_id)
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        record = ApiKey(id=key_id, user_id=user_id, admin=admin, created_at=time.time(), revoked_at=None, label=label)
        with self._connect(create=True) as conn:
            conn.execute("INSERT INTO api_keys (id, user_id, admin, hash, created_at, label) VALUES (?, ?, ?, ?, ?, ?)",
                         (key_id, user_id, int(admin), _digest(secret), record.created_at, label))
        os.chmod(self.path, 0o600)
        return record, f"{KEY_PREFIX}{key_id}_{secret}"

    def list(self) -> list[ApiKey]:
        """Every key, oldest first (revoked ones too, marked)."""
        if not self.path.exists():
            return []
        with self._connect(create=False) as conn:
            rows = conn.execute("SELECT id, user_id, admin, created_at, revoked_at, label FROM api_keys "
                                "ORDER BY created_at, id").fetchall()
        return [ApiKey(id=r[0], user_id=r[1], admin=bool(r[2]), created_at=r[3], revoked_at=r[4], label=r[5])
                for r in rows]

    def revoke(self, key_id: str) -> bool:
        """Revoke a key by id; False when no live key has that id."""
        if not self.path.exists():
            return False
        with self._connect(create=False) as conn:
            cur = conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                               (time.time(), key_id))
            return cur.rowcount > 0

    def verify(self, key: str) -> ApiKey | None:
        """The live key ``key`` is, or None (unknown, revoked, malformed)."""
        if not key.startswith(KEY_PREFIX) or not self.path.exists():
            return None
        key_id, sep, secret = key[len(KEY_PREFIX):].partition("_")
        if not sep or not secret:
            return None
        with self._connect(create=False) as conn:
            row = conn.execute("SELECT id, user_id, admin, created_at, revoked_at, label, hash FROM api_keys "
                               "WHERE id = ?", (key_id,)).fetchone()
        if row is None:
            _digest(secret)  # same work for unknown ids
            return None
        if not hmac.compare_digest(row[6], _digest(secret)) or row[4] is not None:
            return None
        return ApiKey(id=row[0], user_id=row[1], admin=bool(row[2]), created_at=row[3], revoked_at=row[4], label=row[5])
