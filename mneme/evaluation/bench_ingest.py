"""``mneme bench ingest``: how long ``mneme ingest`` takes for many small files, and where the time goes.

Writes ``--files`` synthetic Markdown files (Chinese and English; every third one in GBK, every fifth with a
UTF-8 BOM, so detection is on the path) of about ``--chunks`` chunks each into a temporary directory, then
ingests them into a fresh embedded Chroma the way the command does: read and decode every file, then
``MemoryService.ingest_documents`` (chunks embedded and stored in batches across files). ``--per-file``
ingests one file per call instead (the old path), for comparison. Then the same files are ingested again
(nothing changed, so nothing is re-embedded) and that time is reported too. The embedder is timed separately, so the
figures split the wall time into reading, embedding and storing (Chroma + keyword index). Prints JSON.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mneme.evaluation.bench_retrieval import synthetic_text
from mneme.evaluation.harness import add_json_option, emit
from mneme.memory.base import Embedder, EmbedderInfo


class _TimedEmbedder:
    """An embedder that adds up the time spent in it (and counts its calls)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0

    @property
    def info(self) -> EmbedderInfo:
        return self.inner.info

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        t = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t
            self.calls += 1


def write_files(directory: Path, files: int, chunks: int, *, seed: int = 11) -> int:
    """Write the synthetic files; returns the bytes written."""
    rng = random.Random(seed)
    written = 0
    for i in range(files):
        paragraphs = []
        for _ in range(chunks):
            para = ""
            while len(para) < 650:  # a paragraph of ~650-750 chars: one chunk each (chunks hold up to 800)
                para += synthetic_text(rng) + " "
            paragraphs.append(para.strip())
        text = f"# 文档 {i} / Document {i}\n\n" + "\n\n".join(paragraphs) + "\n"
        data = text.encode("gb18030") if i % 3 == 1 else ("\ufeff" + text if i % 5 == 0 else text).encode("utf-8")
        path = directory / f"doc{i:04d}.md"
        path.write_bytes(data)
        written += len(data)
    return written


def run_ingest_bench(files: int = 60, chunks: int = 10, *, embeddings: str = "use-m3",
                     per_file: bool = False) -> dict[str, Any]:
    """Ingest ``files`` generated files of ``chunks`` chunks each; return the figures."""
    from mneme.embeddings import load_embedder
    from mneme.memory.chroma import open_chroma_store
    from mneme.memory.documents import Document, markdown_title
    from mneme.memory.keyword import KeywordIndex
    from mneme.memory.service import MemoryService
    from mneme.testing import FakeEmbeddings
    from mneme.textfiles import read_text_file

    inner: Embedder = FakeEmbeddings(512) if embeddings == "fake" else load_embedder(embeddings)
    inner.embed(["warm up"])  # model load is not ingest time
    embedder = _TimedEmbedder(inner)
    with tempfile.TemporaryDirectory(prefix="mneme-bench-ingest-") as tmp:
        root = Path(tmp)
        (root / "files").mkdir()
        size = write_files(root / "files", files, chunks)
        store = open_chroma_store(data_dir=root / "data", embedder=embedder, prefix="bench")
        service = MemoryService(store, keyword=KeywordIndex(root / "kw.sqlite3"))
        cpu0, t0 = time.process_time(), time.perf_counter()
        docs = []
        for path in sorted((root / "files").iterdir()):
            read = read_text_file(path)
            docs.append(Document(text=read.text, source=str(path), title=markdown_title(read.text) or path.stem))
        read_s = time.perf_counter() - t0
        if per_file:
            ids = [service.ingest_document(d.text, source=d.source, title=d.title) for d in docs]
        else:
            ids = service.ingest_documents(docs).ids
        total_s = time.perf_counter() - t0
        cpu_s = time.process_time() - cpu0
        embedded = embedder.calls
        t1 = time.perf_counter()
        again = service.ingest_documents(docs)  # the same files again: nothing changed, nothing re-embedded
        again_s = time.perf_counter() - t1
        service.close()
    n = sum(len(i) for i in ids)
    return {
        "files": files, "chunks": n, "bytes": size, "embeddings": inner.info.name,
        "path": "per-file" if per_file else "batched", "embed_calls": embedded,
        "seconds": round(total_s, 2), "chunks_per_s": round(n / total_s, 1),
        "read_s": round(read_s, 3), "embed_s": round(embedder.seconds, 2),
        "store_s": round(total_s - read_s - embedder.seconds, 2), "cpu_s": round(cpu_s, 2),
        "unchanged_reingest_s": round(again_s, 2), "unchanged_reingest_chunks_skipped": again.unchanged,
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
    }


def register_ingest(sub: Any) -> None:
    """Add ``mneme bench ingest``."""
    p = sub.add_parser("ingest", help="ingest throughput for many small files (read, embed, store split)")
    p.add_argument("--files", type=int, default=60, help="how many files (default 60)")
    p.add_argument("--chunks", type=int, default=10, help="chunks per file (default 10)")
    p.add_argument("--embeddings", default="use-m3",
                   help="use-m3 (default), openai:<model>, or fake (hashed words: the store's share alone)")
    p.add_argument("--per-file", action="store_true", help="one ingest call per file (the old path), to compare")
    add_json_option(p)

    def handler(args: Any) -> int:
        emit(run_ingest_bench(args.files, args.chunks, embeddings=args.embeddings, per_file=args.per_file),
             args.json_out)
        return 0

    p.set_defaults(func=handler)
