"""``mneme reindex``: re-embed the whole store with the configured embedder (after changing MNEME_EMBEDDINGS)."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``reindex`` subcommand."""
    parser = subparsers.add_parser(
        "reindex", help="re-embed every stored record with the configured embedder",
        description="Re-embed every collection with MNEME_EMBEDDINGS's model. Old data is kept until each "
        "new collection is complete; an interrupted run is finished by running it again. Stop the app first.",
    )
    parser.add_argument("--force", action="store_true", help="re-embed collections already built with this model")
    parser.add_argument("--batch-size", type=int, default=256, help="records embedded per batch (default 256)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Re-embed and print how many records each collection got."""
    from mneme.config import Settings
    from mneme.memory.chroma import chroma_client, reindex_store
    from mneme.stores import settings_embedder

    settings = Settings.from_env()
    embedder = settings_embedder(settings)
    source = {"url": settings.chroma_url} if settings.chroma_url else {"data_dir": settings.data_dir}
    with chroma_client(**source) as (client, location):  # type: ignore[arg-type]
        done = reindex_store(
            client, embedder, prefix=settings.collection_prefix, location=location, force=args.force,
            batch_size=args.batch_size,
            progress=_progress if sys.stderr.isatty() else None,
        )
    print(json.dumps({"embedder": embedder.info.name, "reindexed": done}, ensure_ascii=False))
    return 0


def _progress(collection: str, done: int) -> None:
    print(f"\r{collection}: {done} re-embedded", end="", file=sys.stderr, flush=True)
