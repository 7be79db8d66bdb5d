"""Documents: split a text into chunks and keep them as ``document`` records, shared or private.

A document is stored as chunks of whole paragraphs (sentences for long ones), one record per chunk, with
ids derived from the owner and the source so that ingesting the same source again replaces it (a shorter
version drops its old tail). Chunks are searched like memories but never fade (no forgetting curve).
Many documents are ingested together: their chunks are embedded and stored in batches across documents
(one embedder call and one store write per batch), because a call per file made small files slow.
Listing and deleting are by source, per owner (shared or one user): what an administrator manages.
``MemoryService`` delegates here; writes go through ``IndexedStore`` (store + keyword index in step).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mneme.errors import InvalidInputError
from mneme.memory.base import SHARED_TENANT, Kind, MemoryRecord, MemoryStore, validate_tenant
from mneme.memory.indexed import IndexedStore

MAX_DOCUMENT_CHARS = 5_000_000
EMBED_BATCH = 256
"""Chunks embedded and stored per call."""
_SOURCES_PER_QUERY = 200
"""Sources named in one ``$in`` filter."""

_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


@dataclass(frozen=True, kw_only=True)
class Document:
    """A text to ingest, named by its source (a path, a URL); ``title`` defaults to the Markdown title."""

    text: str
    source: str
    title: str | None = None


def markdown_title(text: str) -> str | None:
    """The first Markdown heading (``# Title`` or a ``Title`` line underlined with ``===``) near the top."""
    lines = text.lstrip("\ufeff").splitlines()[:40]
    for i, line in enumerate(lines):
        match = _ATX.match(line)
        if match and match.group(1).strip("# \t"):
            return match.group(1).strip()
        if line.strip() and i + 1 < len(lines) and _SETEXT.match(lines[i + 1]) and lines[i + 1].strip()[0] == "=":
            return line.strip()
    return None


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


def document_records(doc: Document, *, user_id: str, now: float, max_chars: int = 800) -> list[MemoryRecord]:
    """The chunk records of ``doc`` for ``user_id`` (not embedded yet); ids are stable per owner and source."""
    chunks = chunk_text(doc.text, max_chars=max_chars)
    digest = hashlib.sha256(f"{user_id}\x00{doc.source}".encode()).hexdigest()[:16]
    title = doc.title or markdown_title(doc.text) or doc.source
    return [
        MemoryRecord(id=f"doc-{digest}-{i}", user_id=user_id, kind=Kind.DOCUMENT, text=chunk,
                     created_at=now, importance=0.5,
                     metadata={"source": doc.source, "title": title, "chunk": i})
        for i, chunk in enumerate(chunks)
    ]


def _chunks_of(store: MemoryStore, user_id: str, sources: Sequence[str]) -> list[MemoryRecord]:
    """Every stored chunk of these sources of ``user_id`` (live or archived)."""
    found: list[MemoryRecord] = []
    unique = list(dict.fromkeys(sources))
    for start in range(0, len(unique), _SOURCES_PER_QUERY):
        part = unique[start:start + _SOURCES_PER_QUERY]
        where: dict[str, Any] = {"source": part[0]} if len(part) == 1 else {"source": {"$in": part}}
        found.extend(store.scan(user_id, kinds=[Kind.DOCUMENT], where=where, archived=None))
    return found


@dataclass(frozen=True, kw_only=True)
class IngestResult:
    """What ``ingest_documents`` did: every document's chunk ids, and how many chunks were (re)written."""

    ids: list[list[str]]
    """Chunk ids per document, in the order given."""
    stored: int
    """Chunks embedded and written."""
    unchanged: int
    """Chunks already stored with the same text and title: not embedded again."""
    removed: int
    """Old chunks of re-ingested, now shorter documents, deleted."""


def _unchanged(old: MemoryRecord | None, new: MemoryRecord) -> bool:
    return old is not None and not old.archived and old.text == new.text \
        and old.metadata.get("title") == new.metadata["title"] and old.metadata.get("source") == new.metadata["source"]


def ingest_documents(indexed: IndexedStore, documents: Sequence[Document], *, now: float,
                     user_id: str = SHARED_TENANT, batch_size: int = EMBED_BATCH, max_chars: int = 800,
                     progress: Callable[[int], None] | None = None) -> IngestResult:
    """Store every document's chunks (shared by default, or private to ``user_id``), embedded in batches.

    Nothing is stored if a document is too large. A source given twice keeps its last text. A chunk already
    stored with the same text and title is left as it is (re-ingesting a folder re-embeds only what changed).
    ``progress`` is told how many chunks each batch settled; ``max_chars`` is the chunk size.
    """
    user_id = validate_tenant(user_id, allow_shared=True)
    for doc in documents:
        if len(doc.text) > MAX_DOCUMENT_CHARS:
            raise InvalidInputError(f"{doc.source}: document too large ({len(doc.text)} chars; "
                                    f"max {MAX_DOCUMENT_CHARS})")
    latest = {doc.source: doc for doc in documents}
    per_source = {source: document_records(doc, user_id=user_id, now=now, max_chars=max_chars)
                  for source, doc in latest.items()}
    records = [r for chunks in per_source.values() for r in chunks]
    old = {r.id: r for r in _chunks_of(indexed.store, user_id, list(latest))}
    changed = [r for r in records if not _unchanged(old.get(r.id), r)]
    if progress is not None and len(changed) < len(records):
        progress(len(records) - len(changed))
    embed = indexed.store.embedder.embed
    for start in range(0, len(changed), max(1, batch_size)):
        batch = changed[start:start + batch_size]
        vectors = embed([r.text for r in batch])
        indexed.add([replace(r, embedding=v) for r, v in zip(batch, vectors, strict=True)])
        if progress is not None:
            progress(len(batch))
    stale = sorted(set(old) - {r.id for r in records})
    if stale:  # a re-ingested, shorter document: drop its old tail
        indexed.delete(user_id, stale)
    return IngestResult(ids=[[r.id for r in per_source[doc.source]] for doc in documents], stored=len(changed),
                        unchanged=len(records) - len(changed), removed=len(stale))


def ingest_document(indexed: IndexedStore, text: str, *, source: str, now: float,
                    user_id: str = SHARED_TENANT, title: str | None = None) -> list[str]:
    """Split one document into chunks and store them (shared by default, or private to ``user_id``)."""
    return ingest_documents(indexed, [Document(text=text, source=source, title=title)], now=now,
                            user_id=user_id).ids[0]


def list_documents(indexed: IndexedStore, user_id: str = SHARED_TENANT) -> list[dict[str, Any]]:
    """The documents of ``user_id`` (shared by default), one entry per source: title, chunks, ids, when."""
    user_id = validate_tenant(user_id, allow_shared=True)
    by_source: dict[str, dict[str, Any]] = {}
    for record in indexed.store.scan(user_id, kinds=[Kind.DOCUMENT], archived=None):
        source = str(record.metadata.get("source", ""))
        entry = by_source.setdefault(source, {"source": source, "title": record.metadata.get("title") or source,
                                              "user_id": user_id, "chunks": 0, "ids": [],
                                              "created_at": record.created_at})
        entry["chunks"] += 1
        entry["ids"].append(record.id)
        entry["created_at"] = min(entry["created_at"], record.created_at)
    for entry in by_source.values():
        entry["ids"].sort(key=lambda i: (len(i), i))
    return sorted(by_source.values(), key=lambda d: d["source"])


def delete_document(indexed: IndexedStore, source: str, user_id: str = SHARED_TENANT) -> int:
    """Delete every chunk of the document ``source`` of ``user_id`` (shared by default); how many (0: none)."""
    user_id = validate_tenant(user_id, allow_shared=True)
    return indexed.delete(user_id, [r.id for r in _chunks_of(indexed.store, user_id, [source])])


def delete_documents(indexed: IndexedStore, sources: Sequence[str], *, user_id: str = SHARED_TENANT) -> dict[str, int]:
    """Delete every chunk of these sources of ``user_id`` (shared by default); chunks deleted, per source.

    A source with no chunks is an error and nothing is deleted, so a typo never passes for a success.
    """
    user_id = validate_tenant(user_id, allow_shared=True)
    found = _chunks_of(indexed.store, user_id, sources)
    counts = {source: 0 for source in dict.fromkeys(sources)}
    for record in found:
        source = str(record.metadata.get("source", ""))
        counts[source] = counts.get(source, 0) + 1
    missing = [s for s, n in counts.items() if n == 0]
    if missing:
        owner = "shared" if user_id == SHARED_TENANT else f"of user {user_id}"
        raise InvalidInputError(f"no document {', '.join(map(repr, missing))} ({owner}); nothing was deleted")
    indexed.delete(user_id, [r.id for r in found])
    return counts
