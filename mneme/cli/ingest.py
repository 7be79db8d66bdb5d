"""``mneme ingest PATH...``: add text files (directories recursively) to the documents, shared or private.

Files are read whatever their encoding (``mneme.textfiles``: BOM, UTF-8, GB18030/GBK, UTF-16, … or
``--encoding``); a named path that is missing or not a regular file (``/dev/null``, a FIFO) stops the command
before anything is stored (exit 2); a file that turns out not to be text is skipped with its reason (exit 1
at the end). All chunks are then embedded and stored in batches across files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mneme.textfiles import check_regular

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})


def register(subparsers: Any) -> None:
    """Add the ``ingest`` subcommand."""
    p = subparsers.add_parser("ingest", help="add text and Markdown files to the documents collection")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="files (any name) or directories (their .txt/.md/.markdown/.rst/.text files, recursively)")
    p.add_argument("--user", "-u", default=None,
                   help="make the documents private to this user (default: shared with everyone)")
    p.add_argument("--encoding", "-e", default=None,
                   help="read every file in this encoding (default: detect it: BOM, UTF-8, GB18030/GBK, UTF-16, …)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def find_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Text files under ``paths`` (files named directly are taken whatever their suffix).

    Raises ``UnreadableFileError`` for a named path that does not exist or is neither a directory nor a
    regular file, before anything is read.
    """
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in TEXT_SUFFIXES \
                        and not any(part.startswith(".") for part in child.relative_to(path).parts):
                    yield child
        else:
            check_regular(path)
            yield path


def run(args: argparse.Namespace) -> int:
    """Ingest every file; report counts; returns the exit code (1 if some files were skipped as unreadable)."""
    import json

    from mneme.cli.documents import open_documents
    from mneme.cli.progress import Progress
    from mneme.errors import UnreadableFileError
    from mneme.memory.base import SHARED_TENANT, validate_tenant
    from mneme.memory.documents import Document, chunk_text, markdown_title
    from mneme.textfiles import read_text_file

    owner = validate_tenant(args.user) if args.user else SHARED_TENANT
    files = list(dict.fromkeys(find_files(args.paths)))
    docs: list[Document] = []
    skipped: dict[str, str] = {}
    empty: list[str] = []
    encodings: dict[str, int] = {}
    with Progress("ingest: read", total=len(files), unit="file") as bar:
        for path in files:
            bar.update()
            try:
                read = read_text_file(path, encoding=args.encoding)
            except UnreadableFileError as exc:
                skipped[str(path)] = str(exc)
                print(f"mneme: skipped {exc}", file=sys.stderr)
                continue
            if not read.text.strip():
                empty.append(str(path))
                continue
            encodings[read.encoding] = encodings.get(read.encoding, 0) + 1
            docs.append(Document(text=read.text, source=str(path), title=markdown_title(read.text) or path.stem))
    total = sum(len(chunk_text(d.text)) for d in docs)
    chunks = 0
    unchanged: int | None = 0  # None: a running server ingested them and did not say
    if docs:
        target = open_documents()  # the store, or the running mneme serve that holds it
        try:
            with Progress("ingest: embed and store", total=total, unit="chunk") as bar:
                chunks, unchanged = target.add(docs, owner, progress=bar.update)
        finally:
            target.close()
    scope = "shared" if owner == SHARED_TENANT else f"private to {owner}"
    if args.json:
        print(json.dumps({"files": len(docs), "chunks": chunks, "unchanged_chunks": unchanged, "user_id": owner,
                          "encodings": encodings,
                          "empty": empty, "skipped": skipped}, ensure_ascii=False))
    else:
        extra = "".join([f", {unchanged} unchanged" if unchanged else "",
                         f", {len(empty)} empty files" if empty else "",
                         f", {len(skipped)} skipped" if skipped else ""])
        print(f"ingested {len(docs)} files ({chunks} chunks, {scope}{extra})")
    return 1 if skipped else 0
