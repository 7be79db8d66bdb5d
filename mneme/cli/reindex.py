"""``mneme reindex``: re-embed the whole store with the configured embedder (after changing MNEME_EMBEDDINGS)."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``reindex`` subcommand."""
    parser = subparsers.add_parser(
        "reindex", help="re-embed every stored record with the configured embedder",
        description="Re-embed every collection with MNEME_EMBEDDINGS's model. Old data is kept until each "
        "new collection is complete; an interrupted run is finished by running it again. Stop the app first.",
    )
    parser.add_argument("--force", action="store_true", help="re-embed collections already built with this model")
    parser.add_argument("--batch-size", type=int, default=256, help="records embedded per batch (default 256)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Re-embed and print how many records each collection got."""
    from mneme.cli.progress import Progress
    from mneme.config import Settings
    from mneme.memory.chroma import chroma_client, reindex_store
    from mneme.stores import settings_embedder

    settings = Settings.from_env()
    embedder = settings_embedder(settings)
    source = {"url": settings.chroma_url} if settings.chroma_url else {"data_dir": settings.data_dir}
    with Progress("reindex", unit="record") as bar, chroma_client(**source) as (client, location):  # type: ignore[arg-type]
        seen: dict[str, int] = {}

        def progress(collection: str, done: int) -> None:
            bar.note(collection)
            bar.update(done - seen.get(collection, 0))
            seen[collection] = done

        done = reindex_store(client, embedder, prefix=settings.collection_prefix, location=location,
                             force=args.force, batch_size=args.batch_size, progress=progress)
    result = {"embedder": embedder.info.name, "reindexed": done}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    elif done:
        for name, count in done.items():
            print(f"{name}: {count:,} re-embedded with {embedder.info.name}")
    else:
        print(f"nothing to re-embed: every collection already uses {embedder.info.name} (--force to redo)")
    return 0
