"""Choosing the memory backend from settings: a Chroma server when ``MNEME_CHROMA_URL`` is set, else embedded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mneme.clock import Clock, system_clock
from mneme.config import Settings
from mneme.embeddings import load_embedder
from mneme.memory.base import Embedder, MemoryStore

if TYPE_CHECKING:
    from mneme.memory.service import MemoryService


def settings_embedder(settings: Settings) -> Embedder:
    """The embedder ``MNEME_EMBEDDINGS`` names (loaded once per process)."""
    return load_embedder(settings.embeddings, api_key=settings.openai_api_key, base_url=settings.openai_base_url,
                         timeout=settings.embedding_timeout)


def open_store(settings: Settings, *, embedder: Embedder | None = None) -> MemoryStore:
    """Open the Chroma store the settings describe: server at ``chroma_url`` or embedded under ``data_dir``."""
    from mneme.memory.chroma import open_chroma_store

    embedder = embedder or settings_embedder(settings)
    if settings.chroma_url:
        return open_chroma_store(url=settings.chroma_url, embedder=embedder, prefix=settings.collection_prefix,
                                 cache_rows=settings.cache_rows, timeout=settings.chroma_timeout)
    return open_chroma_store(data_dir=settings.data_dir, embedder=embedder, prefix=settings.collection_prefix,
                             cache_rows=settings.cache_rows)


def keyword_index_path(settings: Settings) -> Path:
    """Where the keyword (BM25) index lives: beside embedded Chroma, or in the data dir in server mode."""
    name = "keyword.sqlite3" if not settings.chroma_url else f"keyword-{_url_slug(settings.chroma_url)}.sqlite3"
    return settings.data_dir / f"{settings.collection_prefix}-{name}"


def _url_slug(url: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in url.split("://", 1)[-1]).strip("_")[:60]


def journal_dir(settings: Settings) -> Path:
    """Where this store's write journals live (one file per live process; see ``mneme.memory.journal``)."""
    name = "journal" if not settings.chroma_url else f"journal-{_url_slug(settings.chroma_url)}"
    return settings.data_dir / f"{settings.collection_prefix}-{name}"


def open_service(settings: Settings, *, embedder: Embedder | None = None, model: Any = None,
                 clock: Clock = system_clock, journal: bool = True) -> MemoryService:
    """Open the memory service the settings describe: the store, its keyword index, checked against each other.

    ``journal`` (default): turns are acknowledged once written to this process's write journal and stored
    by a background thread in batches; queued turns an earlier run left behind are stored first.
    ``journal=False`` stores each turn synchronously.
    """
    from mneme.memory.embedding_batcher import BatchingEmbedder
    from mneme.memory.journal import open_journal
    from mneme.memory.keyword import KeywordIndex
    from mneme.memory.service import MemoryService
    from mneme.memory.writing import WritePolicy

    # concurrent turns share embedding calls, and a turn's text embedded for recall is not embedded again
    store = open_store(settings, embedder=BatchingEmbedder(embedder or settings_embedder(settings)))
    keyword = KeywordIndex(keyword_index_path(settings))
    try:
        queue = open_journal(journal_dir(settings)) if journal else None
    except BaseException:
        store.close()
        keyword.close()
        raise
    # With a server, other processes write too: recall checks the store's change stamps for each user.
    # memory keeps a message up to the serving limit, not a second, hidden one
    service = MemoryService(store, keyword=keyword, clock=clock, model=model,
                            writing=WritePolicy(max_user_chars=settings.max_message_chars), journal=queue)
    service.sync_keyword_index(only_if_needed=True)
    return service


_shared_lock = threading.Lock()
_shared: MemoryService | None = None


def shared_service() -> MemoryService:
    """The process's memory service from the environment, opened once (the agent and ``MnemeStore``).

    One service per process matters with embedded Chroma: two services over one data directory would each
    cache rows and index words the other does not see change.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = open_service(Settings.from_env())
    return _shared
