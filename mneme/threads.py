"""Conversation threads: whose they are, where they persist, and how to list or erase a user's threads.

A thread belongs to the user who opened it. The checkpointer never sees a client's thread id as is: it
sees ``scoped_thread_id(user, thread)`` = ``"<user>/<thread>"``. User ids cannot contain ``/``, so two
users naming the same thread id get two different threads, and a user's threads are exactly the keys
that start with ``"<user>/"`` (how ``threads_of`` and ``delete_threads`` find them). Thread ids are
checked, never cut: an over-long or malformed id is an ``InvalidInputError`` (HTTP 422).

Threads persist in a checkpointer chosen by the settings (``open_checkpointer`` / ``aopen_checkpointer``):
SQLite under ``MNEME_DATA_DIR`` by default (``langgraph-checkpoint-sqlite``), PostgreSQL when
``MNEME_POSTGRES_URL`` is set (``langgraph-checkpoint-postgres``), so several ``mneme serve`` processes
share threads. Both are LangGraph's own maintained savers; Mneme only picks and opens one.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from mneme.config import Settings
from mneme.errors import InvalidInputError, StoreUnavailableError
from mneme.memory.base import validate_tenant
from mneme.thread_privacy import RedactingSerializer, async_postgres_saver, postgres_saver

THREAD_ID_MAX = 128
"""Longest accepted thread id (characters); longer ids are rejected, never truncated."""
_THREAD_RE = re.compile(r"[\w.@:+\-]{1," + str(THREAD_ID_MAX) + "}")
SEPARATOR = "/"
"""Between the user and the thread in a checkpointer key; neither a user id nor a thread id contains it."""
SQLITE_FILE = "threads.sqlite3"
"""The SQLite checkpointer's file under ``MNEME_DATA_DIR``."""


def validate_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` if it is 1-128 letters, digits or ``_ . @ : + -``; else ``InvalidInputError``."""
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidInputError("a thread id must be a non-empty string")
    if len(thread_id) > THREAD_ID_MAX:
        raise InvalidInputError(
            f"thread id is {len(thread_id)} characters long; the limit is {THREAD_ID_MAX} (ids are never truncated)")
    if not _THREAD_RE.fullmatch(thread_id):
        raise InvalidInputError(
            f"invalid thread id {thread_id[:40]!r}: use 1-{THREAD_ID_MAX} letters, digits or _ . @ : + -")
    return thread_id


def new_thread_id() -> str:
    """A fresh thread id for a conversation the client did not name."""
    return f"t-{uuid.uuid4().hex}"


def scoped_thread_id(user_id: str, thread_id: str) -> str:
    """The checkpointer's key for ``user_id``'s thread ``thread_id``: another user's same id is another key."""
    return f"{validate_tenant(user_id)}{SEPARATOR}{validate_thread_id(thread_id)}"


def unscoped_thread_id(key: str) -> str:
    """The client's thread id inside a checkpointer key (``key`` itself when it is not scoped)."""
    return key.split(SEPARATOR, 1)[1] if SEPARATOR in key else key


def _prefix(user_id: str) -> str:
    return f"{validate_tenant(user_id)}{SEPARATOR}"


# -- listing and erasing a user's threads ---------------------------------------------------------------
def _keys_sync(checkpointer: BaseCheckpointSaver, prefix: str) -> list[str]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(checkpointer, InMemorySaver):
        return sorted(k for k in list(checkpointer.storage) if k.startswith(prefix))
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.cursor(transaction=False) as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE substr(thread_id, 1, ?) = ? "
                        "ORDER BY thread_id", (len(prefix), prefix))
            return [str(row[0]) for row in cur.fetchall()]
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # pragma: no cover - the dependency is declared
        PostgresSaver = None  # type: ignore[assignment,misc]  # noqa: N806
    if PostgresSaver is not None and isinstance(checkpointer, PostgresSaver):
        with checkpointer._cursor() as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE starts_with(thread_id, %s) "
                        "ORDER BY thread_id", (prefix,))
            return [str(row["thread_id"]) for row in cur.fetchall()]
    # Any other saver: walk its checkpoints (slow for big stores, but correct).
    return sorted({str(t.config["configurable"]["thread_id"]) for t in checkpointer.list(None)
                   if str(t.config["configurable"]["thread_id"]).startswith(prefix)})


async def _keys_async(checkpointer: BaseCheckpointSaver, prefix: str) -> list[str]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(checkpointer, AsyncSqliteSaver):
        await checkpointer.setup()
        async with checkpointer.lock, checkpointer.conn.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE substr(thread_id, 1, ?) = ? ORDER BY thread_id",
                (len(prefix), prefix)) as cur:
            return [str(row[0]) for row in await cur.fetchall()]
    if isinstance(checkpointer, AsyncPostgresSaver):
        async with checkpointer._cursor() as cur:
            await cur.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE starts_with(thread_id, %s) "
                              "ORDER BY thread_id", (prefix,))
            return [str(row["thread_id"]) for row in await cur.fetchall()]
    if isinstance(checkpointer, InMemorySaver):
        return _keys_sync(checkpointer, prefix)
    return sorted({str(t.config["configurable"]["thread_id"]) async for t in checkpointer.alist(None)
                   if str(t.config["configurable"]["thread_id"]).startswith(prefix)})


def threads_of(checkpointer: BaseCheckpointSaver, user_id: str) -> list[str]:
    """The thread ids (as the user named them) of ``user_id``'s threads, sorted.

    Read a thread's state with ``{"configurable": {"thread_id": scoped_thread_id(user_id, t)}}``.
    Use ``athreads_of`` with the async savers.
    """
    return [unscoped_thread_id(k) for k in _keys_sync(checkpointer, _prefix(user_id))]


async def athreads_of(checkpointer: BaseCheckpointSaver, user_id: str) -> list[str]:
    """Async twin of ``threads_of`` (for ``AsyncSqliteSaver`` / ``AsyncPostgresSaver`` too)."""
    return [unscoped_thread_id(k) for k in await _keys_async(checkpointer, _prefix(user_id))]


def delete_threads(checkpointer: BaseCheckpointSaver, user_id: str) -> int:
    """Erase every thread of ``user_id`` (checkpoints and pending writes); returns how many were erased."""
    keys = _keys_sync(checkpointer, _prefix(user_id))
    for key in keys:
        checkpointer.delete_thread(key)
    return len(keys)


async def adelete_threads(checkpointer: BaseCheckpointSaver, user_id: str) -> int:
    """Async twin of ``delete_threads``."""
    keys = await _keys_async(checkpointer, _prefix(user_id))
    for key in keys:
        await checkpointer.adelete_thread(key)
    return len(keys)


# -- opening the configured checkpointer ----------------------------------------------------------------
def sqlite_path(settings: Settings) -> Path:
    """Where the SQLite checkpointer keeps threads: ``MNEME_DATA_DIR/threads.sqlite3``."""
    return settings.data_dir / SQLITE_FILE


def describe_postgres(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return f"{parts.scheme}://{host}{':' + str(parts.port) if parts.port else ''}{parts.path}"


_SETUP_LOCK = 0x6D6E656D65  # "mneme": serialises the savers' schema migrations across processes


def _pg_unavailable(url: str, exc: Exception) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"cannot use PostgreSQL at {describe_postgres(url)} (MNEME_POSTGRES_URL) for threads: {exc}")


@contextmanager
def open_checkpointer(settings: Settings) -> Iterator[BaseCheckpointSaver]:
    """The settings' checkpointer for synchronous use (``mneme chat``), set up and closed on exit.

    PostgreSQL when ``settings.postgres_url`` is set, else SQLite under ``settings.data_dir``.
    """
    if settings.postgres_url:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        url = settings.postgres_url
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
                PostgresSaver(conn).setup()  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise _pg_unavailable(url, exc) from exc
        pool: ConnectionPool[Any] = ConnectionPool(
            url, min_size=1, max_size=4, open=True, timeout=10,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
        try:
            yield postgres_saver(pool)
        finally:
            pool.close()
        return
    path = sqlite_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    db.execute("PRAGMA secure_delete = ON")  # an erased thread's bytes are zeroed, not left in free pages
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        saver = SqliteSaver(db, serde=RedactingSerializer())
        saver.setup()
        yield saver
    finally:
        db.close()


@asynccontextmanager
async def aopen_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver]:
    """The settings' checkpointer for an event loop (``mneme serve``): a pool for PostgreSQL, else SQLite."""
    if settings.postgres_url:
        import psycopg
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        url = settings.postgres_url
        try:
            async with await psycopg.AsyncConnection.connect(
                    url, autocommit=True, connect_timeout=10, row_factory=dict_row) as conn:
                await conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
                await AsyncPostgresSaver(conn).setup()
        except psycopg.Error as exc:
            raise _pg_unavailable(url, exc) from exc
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url, min_size=1, max_size=8, open=False, timeout=10,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
        await pool.open()
        try:
            yield async_postgres_saver(pool)
        finally:
            await pool.close()
        return
    import aiosqlite

    from mneme.sqlite_checkpoints import AsyncSqliteSaver  # LangGraph's, in fewer trips to aiosqlite's thread

    path = sqlite_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(path), timeout=30) as conn:
        await conn.execute("PRAGMA secure_delete = ON")  # an erased thread's bytes are zeroed
        saver = AsyncSqliteSaver(conn, serde=RedactingSerializer())
        await saver.setup()
        yield saver

