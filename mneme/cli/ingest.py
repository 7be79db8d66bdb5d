"""``mneme ingest PATH...``: add text and Markdown files (directories recursively) to the documents."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mneme.errors import InvalidInputError

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})


def register(subparsers: Any) -> None:
    """Add the ``ingest`` subcommand."""
    p = subparsers.add_parser("ingest", help="add text and Markdown files to the documents collection")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or directories (recursive)")
    p.add_argument("--user", "-u", default=None,
                   help="make the documents private to this user (default: shared with everyone)")
    p.set_defaults(func=run)


def find_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Text and Markdown files under ``paths`` (files named directly are taken whatever their suffix)."""
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in TEXT_SUFFIXES \
                        and not any(part.startswith(".") for part in child.relative_to(path).parts):
                    yield child
        elif path.is_file():
            yield path
        else:
            raise InvalidInputError(f"no such file or directory: {path}")


def title_of(path: Path, text: str) -> str:
    """A Markdown file's first heading, else the file name."""
    for line in text.splitlines()[:20]:
        if line.startswith("#"):
            return line.lstrip("#").strip() or path.stem
    return path.stem


def run(args: argparse.Namespace) -> int:
    """Ingest every file; report counts; returns the exit code (1 if some files were unreadable)."""
    from tqdm import tqdm

    from mneme.config import Settings
    from mneme.memory.base import SHARED_TENANT, validate_tenant
    from mneme.stores import open_service

    owner = validate_tenant(args.user) if args.user else SHARED_TENANT
    files = list(find_files(args.paths))
    service = open_service(Settings.from_env())
    chunks = failed = 0
    try:
        for path in tqdm(files, desc="ingest", unit="file", disable=not sys.stderr.isatty()):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                print(f"mneme: skipped {path}: {exc}", file=sys.stderr)
                failed += 1
                continue
            if not text.strip():
                continue
            ids = service.ingest_document(text, source=str(path), user_id=owner, title=title_of(path, text))
            chunks += len(ids)
    finally:
        service.close()
    scope = "shared" if owner == SHARED_TENANT else f"private to {owner}"
    print(f"ingested {len(files) - failed} files ({chunks} chunks, {scope})")
    return 1 if failed else 0
