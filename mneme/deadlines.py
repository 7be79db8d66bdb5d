"""Bounding a blocking call that has no timeout of its own (a frozen server, a model client without one).

``call_with_deadline`` runs the call in a daemon thread and stops waiting after the deadline: the caller
gets ``DeadlineExceeded`` on time, the abandoned call ends on its own (at its client's timeout, if any),
and a daemon thread never keeps the process from exiting.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """A call did not return within its deadline."""


def call_with_deadline(fn: Callable[[], T], timeout: float | None, *, what: str = "the call") -> T:
    """``fn()``, or ``DeadlineExceeded`` after ``timeout`` seconds (``None``: wait for ever, in this thread)."""
    if timeout is None:
        return fn()
    box: dict[str, Any] = {}
    done = threading.Event()
    ctx = contextvars.copy_context()  # the caller's context (run config, tracing) goes with the call

    def target() -> None:
        try:
            box["value"] = ctx.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="mneme-deadline", daemon=True).start()
    if not done.wait(timeout):
        raise DeadlineExceeded(f"{what}: no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
