"""API keys: who may call the servers, kept as hashes; in a SQLite file (0600) or in PostgreSQL.

A key reads ``mneme_<id>_<secret>``: the id is public (``mneme keys list`` / ``revoke`` name it), the secret is
32 random bytes and only its SHA-256 is stored, compared in constant time. A slow password hash buys nothing
for a secret with 256 bits of entropy. Once the store has any key (even a revoked one) the servers require
credentials: revoking the last key never silently re-opens a server.

Where keys live (``open_key_store``): ``MNEME_KEYS_FILE`` if set; else PostgreSQL when ``MNEME_POSTGRES_URL`` is
set, so every server process that shares threads shares keys too; else ``$MNEME_DATA_DIR/keys.sqlite3``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mneme.errors import StoreUnavailableError
from mneme.memory.base import validate_tenant

if TYPE_CHECKING:
    from mneme.config import Settings

KEY_PREFIX = "mneme_"

_SCHEMA = """CREATE TABLE IF NOT EXISTS mneme_api_keys (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, admin INTEGER NOT NULL DEFAULT 0, hash TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION, label TEXT NOT NULL DEFAULT '')"""
_COLUMNS = "id, user_id, admin, created_at, revoked_at, label"


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


def _row(row: Any) -> ApiKey:
    return ApiKey(id=row[0], user_id=row[1], admin=bool(row[2]), created_at=float(row[3]),
                  revoked_at=None if row[4] is None else float(row[4]), label=row[5])


class KeyStore:
    """The API keys in a SQLite file; every call opens its own connection (safe across threads and processes)."""

    placeholder = "?"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def location(self) -> str:
        """Where the keys are, for messages."""
        return str(self.path)

    def _present(self) -> bool:
        return self.path.exists()

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))  # born private, never world-readable
        with closing(sqlite3.connect(self.path, timeout=10)) as conn, conn:
            conn.execute(_SCHEMA)
            yield conn

    def _secure(self) -> None:
        os.chmod(self.path, 0o600)  # even if the file was made by hand

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.placeholder)

    def exists(self) -> bool:
        """True once any key was ever created here: the servers then require credentials."""
        if not self._present():
            return False
        with self._connect() as conn:
            return conn.execute("SELECT 1 FROM mneme_api_keys LIMIT 1").fetchone() is not None

    def create(self, user_id: str, *, admin: bool = False, label: str = "") -> tuple[ApiKey, str]:
        """A new key for ``user_id``: its listing and the full key (shown once, stored only as a hash)."""
        user_id = validate_tenant(user_id)
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        record = ApiKey(id=key_id, user_id=user_id, admin=admin, created_at=time.time(), revoked_at=None, label=label)
        with self._connect() as conn:
            conn.execute(self._sql("INSERT INTO mneme_api_keys (id, user_id, admin, hash, created_at, label) "
                                   "VALUES (?, ?, ?, ?, ?, ?)"),
                         (key_id, user_id, int(admin), _digest(secret), record.created_at, label))
        self._secure()
        return record, f"{KEY_PREFIX}{key_id}_{secret}"

    def list(self) -> list[ApiKey]:
        """Every key, oldest first (revoked ones too, marked)."""
        if not self._present():
            return []
        with self._connect() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM mneme_api_keys ORDER BY created_at, id").fetchall()
        return [_row(r) for r in rows]

    def revoke(self, key_id: str) -> bool:
        """Revoke a key by id; False when no live key has that id."""
        if not self._present():
            return False
        with self._connect() as conn:
            sql = "UPDATE mneme_api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
            cur = conn.execute(self._sql(sql), (time.time(), key_id))
            return bool(cur.rowcount > 0)

    def verify(self, key: str) -> ApiKey | None:
        """The live key ``key`` is, or None (unknown, revoked, malformed)."""
        if not key.startswith(KEY_PREFIX) or not self._present():
            return None
        key_id, sep, secret = key[len(KEY_PREFIX):].partition("_")
        if not sep or not secret:
            return None
        with self._connect() as conn:
            row = conn.execute(self._sql(f"SELECT {_COLUMNS}, hash FROM mneme_api_keys WHERE id = ?"),
                               (key_id,)).fetchone()
        given = _digest(secret)  # the same work whether or not the id exists
        if row is None or not hmac.compare_digest(row[6], given) or row[4] is not None:
            return None
        return _row(row)


class PostgresKeyStore(KeyStore):
    """The API keys in PostgreSQL (table ``mneme_api_keys``), shared by every process that uses the database."""

    placeholder = "%s"

    def __init__(self, url: str) -> None:
        self.url = url
        self._ready = False
        self._conn: Any = None
        self._lock = threading.Lock()

    @property
    def location(self) -> str:
        """The database, without its password."""
        from mneme.threads import describe_postgres

        return describe_postgres(self.url)

    def _present(self) -> bool:
        return True

    def _secure(self) -> None:
        pass

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        # One kept connection (autocommit) per store, used under a lock: a key check is one indexed read,
        # not a new connection per request. A broken connection is dropped and made again on the next call.
        import psycopg

        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self.url, connect_timeout=10, autocommit=True)
                if not self._ready:
                    with self._conn.transaction():
                        self._conn.execute("SELECT pg_advisory_xact_lock(7142)")  # two first starts: one CREATE
                        self._conn.execute(_SCHEMA)
                    self._ready = True
                yield self._conn
            except psycopg.OperationalError as exc:
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                raise StoreUnavailableError(
                    f"cannot read API keys from PostgreSQL at {self.location} (MNEME_POSTGRES_URL): {exc}") from exc


def open_key_store(settings: Settings) -> KeyStore:
    """The key store the settings name: ``MNEME_KEYS_FILE``, else PostgreSQL if configured, else the data dir."""
    if settings.keys_file is None and settings.postgres_url:
        return PostgresKeyStore(settings.postgres_url)
    return KeyStore(settings.key_path)
