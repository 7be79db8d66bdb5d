"""How many threads the numerical libraries (OpenBLAS under numpy) may use in this process.

A server already runs many turns at once, and the matrices it multiplies per turn are tiny (one query's
tokens through the embedding model, one user's rows in the vector cache). Multi-threaded BLAS then buys
nothing and costs a lot: its worker threads spin while they wait for work, so under load each query's
embedding burnt ~20x the CPU time of a single-threaded one (measured with ``mneme bench serve``; figures
in the README). ``mneme serve`` therefore runs BLAS single-threaded; batch commands (ingest, reindex,
eval) keep the library's default, where large batches do use the cores.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def limit_blas_threads(threads: int = 1) -> bool:
    """Limit BLAS thread pools of this process to ``threads`` (``threadpoolctl``); False if it could not."""
    try:
        import numpy  # noqa: F401 - load OpenBLAS first: only loaded libraries can be limited
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads, user_api="blas")
    except Exception as exc:  # noqa: BLE001 - a missing library only costs speed
        log.warning("could not limit BLAS threads: %s", exc)
        return False
    return True
