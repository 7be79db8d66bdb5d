"""``mneme serve``: the LangServe app (``/agent`` routes, playground, memory API) under uvicorn.

Without API keys or JWT settings the server runs in dev mode (the caller names the user) and keeps to
loopback unless ``--insecure-dev-auth``. It writes ``server.json`` (``mneme.server_info``) for local admin CLIs.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import Any

from mneme.errors import ConfigurationError

log = logging.getLogger("mneme.serve")


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    p = subparsers.add_parser("serve", help="serve the agent over HTTP (LangServe, with a playground)")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--default-user", default=None,
                   help="dev mode: user for requests without X-User-Id (demos and the playground only)")
    p.add_argument("--insecure-dev-auth", action="store_true",
                   help="allow dev mode (no keys, no JWT: the caller names the user) on a non-loopback host")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes sharing the port (default 1); more than 1 needs MNEME_CHROMA_URL")
    p.set_defaults(func=run)


def is_loopback(host: str) -> bool:
    """True for hosts only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    """Start uvicorn and serve until interrupted; ``server.json`` exists while it serves."""
    import uvicorn

    from mneme.auth import Authenticator
    from mneme.config import Settings
    from mneme.cpu import limit_blas_threads
    from mneme.serve import create_app
    from mneme.serve_workers import check_workers
    from mneme.server_info import local_url, new_admin_token, remove_server_file, write_server_file

    settings = Settings.from_env()
    check_workers(args.workers, settings)
    limit_blas_threads(1)  # concurrent turns fill the cores; multi-threaded BLAS on tiny matrices only spins
    token = new_admin_token()
    authenticator = Authenticator.from_settings(settings, local_admin_token=token, default_user=args.default_user)
    if authenticator.dev_mode:
        if not is_loopback(args.host) and not args.insecure_dev_auth:
            raise ConfigurationError(
                f"refusing to serve {args.host} in dev mode (no API keys, no JWT settings: anyone could name any "
                "user). Create keys (`mneme keys create --user U`), set MNEME_JWT_*, or pass --insecure-dev-auth")
    else:
        print(f"mneme serve: {authenticator.describe()}", file=sys.stderr)
        if args.default_user:
            log.warning("--default-user is ignored: keys or JWTs are configured, so credentials name the user")
    class Server(uvicorn.Server):
        # uvicorn re-raises SIGTERM/SIGINT after its shutdown, so the file is written once the socket is bound
        # and removed in shutdown, not in a ``finally`` that a re-raised signal would skip.
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                write_server_file(settings.data_dir, url=local_url(args.host, args.port), admin_token=token)

        async def shutdown(self, sockets: Any = None) -> None:
            remove_server_file(settings.data_dir)
            await super().shutdown(sockets)

    if args.workers > 1:
        return _run_workers(args, settings, token)
    app = create_app(authenticator=authenticator, remote_dev_auth=args.insecure_dev_auth)
    Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="info")).run()
    return 0


def _run_workers(args: argparse.Namespace, settings: Any, token: str) -> int:
    """``--workers N``: bind the port here, serve it from N worker processes (``mneme.serve_workers``)."""
    import os

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from mneme.serve_workers import APP, worker_environment
    from mneme.server_info import local_url, remove_server_file, write_server_file

    os.environ.update(worker_environment(admin_token=token, default_user=args.default_user,
                                         insecure_dev_auth=args.insecure_dev_auth))
    config = uvicorn.Config(APP, factory=True, host=args.host, port=args.port, workers=args.workers,
                            log_level="info")
    sock = config.bind_socket()
    write_server_file(settings.data_dir, url=local_url(args.host, args.port), admin_token=token)
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        remove_server_file(settings.data_dir)
        sock.close()
    return 0
