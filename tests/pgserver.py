"""A real PostgreSQL server for tests: initdb in a temporary directory, pg_ctl on a free loopback port.

PostgreSQL refuses to run as root, so as root the data directory is given to the ``postgres`` user and
the binaries run through ``runuser``. ``.ci/run`` installs the server with apt when it is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from mneme.evaluation.bench_store import free_port

BIN_DIRS = (Path("/usr/lib/postgresql/15/bin"), *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True))


def _bin_dir() -> Path:
    for candidate in BIN_DIRS:
        if (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql; .ci/run does it)")


class PostgresServer:
    """One throw-away PostgreSQL cluster; ``database()`` makes a fresh database and returns its URL."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.dir = Path(tempfile.mkdtemp(prefix="mneme-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresServer:
        """Create the cluster and start the server; returns once it accepts connections."""
        if self._as_root:
            shutil.chown(self.dir, user="postgres", group="postgres")
        self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-l", str(self.dir / "log"),
                  "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        return self

    def database(self) -> str:
        """A new empty database on this server; its URL."""
        import psycopg

        name = f"t{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        """Stop the server and remove its files."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)
