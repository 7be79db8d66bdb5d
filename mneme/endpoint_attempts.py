"""Counting the requests a turn sends to the embeddings endpoint, retries included.

A node opens ``counting()`` around its work; every HTTP request the OpenAI embeddings client puts on the
wire while that tally is current adds one (an httpx request hook, so a retry, a refused connection or a
request that later timed out is counted as sent). The tally is a context variable holding a mutable
object, so it follows the work into ``asyncio.to_thread`` and ``call_with_deadline`` (both copy the
context). A call shared by concurrent turns (``BatchingEmbedder``) is credited to every turn that waited
on it: each of them needed those requests. The local model sends none, so it counts zero.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Tally", "count_embedding", "counting", "current"]


@dataclass
class Tally:
    """Requests sent while this tally was current."""

    embedding: int = 0
    """HTTP requests to the embeddings endpoint."""


_current: ContextVar[Tally | None] = ContextVar("mneme_endpoint_tally", default=None)


@contextmanager
def counting() -> Iterator[Tally]:
    """A fresh tally for the work inside the ``with`` block (nested blocks count apart)."""
    tally = Tally()
    token = _current.set(tally)
    try:
        yield tally
    finally:
        _current.reset(token)


def current() -> Tally | None:
    """The tally being counted into here, if any."""
    return _current.get()


def count_embedding(n: int = 1) -> None:
    """Add ``n`` embedding requests to the current tally (nothing happens outside ``counting``)."""
    tally = _current.get()
    if tally is not None and n:
        tally.embedding += n
