"""Documents: split a text into chunks and keep them as ``document`` records, shared or private.

A document is stored as chunks of whole paragraphs (sentences for long ones), one record per chunk, with
ids derived from the owner and the source so that ingesting the same source again replaces it (a shorter
version drops its old tail). Chunks are searched like memories but never fade (no forgetting curve).
``MemoryService.ingest_document`` delegates here; writes go through ``IndexedStore`` (store + keyword index).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from mneme.errors import InvalidInputError
from mneme.memory.base import SHARED_TENANT, Kind, MemoryRecord, validate_tenant
from mneme.memory.indexed import IndexedStore

MAX_DOCUMENT_CHARS = 5_000_000
EMBED_BATCH = 256
"""Chunks embedded and stored per call."""


def chunk_text(text: str, *, max_chars: int = 800) -> list[str]:
    """Split text into chunks of whole paragraphs (or sentences, for long ones) up to ``max_chars``."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    chunks: list[str] = []
    current = ""
    for para in paragraphs:
        pieces = [para] if len(para) <= max_chars else re.findall(r"[^。！？!?.\n]+[。！？!?.\n]*", para)
        for piece in pieces:
            while len(piece) > max_chars:
                chunks.append(piece[:max_chars])
                piece = piece[max_chars:]
            if current and len(current) + len(piece) + 2 > max_chars:
                chunks.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def ingest_document(indexed: IndexedStore, text: str, *, source: str, now: float,
                    user_id: str = SHARED_TENANT, title: str | None = None) -> list[str]:
    """Split a document into chunks and store them (shared by default, or private to ``user_id``)."""
    user_id = validate_tenant(user_id, allow_shared=True)
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InvalidInputError(f"{source}: document too large ({len(text)} chars; max {MAX_DOCUMENT_CHARS})")
    chunks = chunk_text(text)
    digest = hashlib.sha256(f"{user_id}\x00{source}".encode()).hexdigest()[:16]
    store = indexed.store
    old = [r.id for r in store.scan(user_id, kinds=[Kind.DOCUMENT], where={"source": source})]
    records = [
        MemoryRecord(id=f"doc-{digest}-{i}", user_id=user_id, kind=Kind.DOCUMENT, text=chunk,
                     created_at=now, importance=0.5,
                     metadata={"source": source, "title": title or source, "chunk": i})
        for i, chunk in enumerate(chunks)
    ]
    for start in range(0, len(records), EMBED_BATCH):
        batch = records[start:start + EMBED_BATCH]
        vectors = store.embedder.embed([r.text for r in batch])
        indexed.add([replace(r, embedding=v) for r, v in zip(batch, vectors, strict=True)])
    stale = sorted(set(old) - {r.id for r in records})
    if stale:  # a re-ingested, shorter document: drop its old tail
        indexed.delete(user_id, stale)
    return [r.id for r in records]


def list_documents(indexed: IndexedStore, user_id: str = SHARED_TENANT) -> list[dict[str, object]]:
    """The documents of ``user_id`` (shared by default), one entry per source: title, chunk count, ids."""
    user_id = validate_tenant(user_id, allow_shared=True)
    sources: dict[str, dict[str, object]] = {}
    ids: dict[str, list[str]] = {}
    for record in indexed.store.scan(user_id, kinds=[Kind.DOCUMENT]):
        source = str(record.metadata.get("source", ""))
        sources.setdefault(source, {"source": source, "title": str(record.metadata.get("title", source)),
                                    "created_at": record.created_at})
        ids.setdefault(source, []).append(record.id)
    return [{**sources[s], "chunks": len(ids[s]), "ids": sorted(ids[s])} for s in sorted(sources)]


def delete_document(indexed: IndexedStore, source: str, user_id: str = SHARED_TENANT) -> int:
    """Delete every chunk of the document ``source`` of ``user_id`` (shared by default); return how many."""
    user_id = validate_tenant(user_id, allow_shared=True)
    ids = [r.id for r in indexed.store.scan(user_id, kinds=[Kind.DOCUMENT], where={"source": source})]
    return indexed.delete(user_id, ids)
