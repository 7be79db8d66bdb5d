"""``mneme serve``: the LangServe app (``/agent`` routes and playground) under uvicorn."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    p = subparsers.add_parser("serve", help="serve the agent over HTTP (LangServe, with a playground)")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--default-user", default=None,
                   help="user for requests without X-User-Id (demos and the playground only)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start uvicorn and serve until interrupted."""
    import uvicorn

    from mneme.serve import create_app

    app = create_app(default_user_id=args.default_user)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0
