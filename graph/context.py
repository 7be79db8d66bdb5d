"""Run settings (``context_schema``): who the user is and how to recall, set per run.

A run names its user in ``context`` (``graph.invoke(..., context={"user_id": "alice"})``) or, for servers
that only forward ``config`` (LangServe, older LangGraph clients), in ``config["configurable"]["user_id"]``.
``resolve_context`` merges the two in one place so every node sees the same answer. A user the server
authenticated (``configurable.langgraph_auth_user_id``, set by ``langgraph dev``/Platform auth and by
``mneme serve``, never taken from a client) wins over both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from mneme.errors import InvalidInputError, InvalidTenantError
from mneme.memory.base import validate_tenant
from mneme.memory.ranking import RecallOptions


@dataclass(kw_only=True)
class Context(RecallOptions):
    """Per-run settings of the Mneme agent: the user, the recall knobs (``RecallOptions``, declared and
    described once there) and how the graph uses the thread and memory."""

    user_id: str = field(default="", metadata={
        "description": "Whose memories to read and write (required; or config.configurable.user_id)."})
    recent_turns: int = field(default=3, metadata={
        "description": "How many recent turns of the thread the query rewriter sees."})
    thread_turns: int = field(default=8, metadata={
        "description": "Turns of the thread kept word for word (1-100); older ones are folded into a running "
                       "summary once it holds half as many again (graph.trimming)."})
    write_memory: bool = field(default=True, metadata={
        "description": "Store this turn as long-term memory after answering."})

    def __post_init__(self) -> None:
        # Bad knobs come from callers (HTTP bodies, CLI flags): reject them with a message, not a crash later.
        if not 1 <= int(self.k) <= 100:
            raise InvalidInputError(f"k must be between 1 and 100, got {self.k}")
        if not 0.0 <= float(self.mmr_lambda) <= 1.0:
            raise InvalidInputError(f"mmr_lambda must be between 0 and 1, got {self.mmr_lambda}")
        if self.memory_weight < 0 or self.document_weight < 0:
            raise InvalidInputError("memory_weight and document_weight must not be negative")
        if not 0.0 <= float(self.keyword_weight) <= 1.0:
            raise InvalidInputError(f"keyword_weight must be between 0 and 1, got {self.keyword_weight}")
        if not 0.0 <= float(self.answer_weight) <= 1.0:
            raise InvalidInputError(f"answer_weight must be between 0 and 1, got {self.answer_weight}")
        if not 0.0 <= float(self.neighbour_share) < 1.0:
            raise InvalidInputError(f"neighbour_share must be at least 0 and below 1, got {self.neighbour_share}")
        if not 1 <= int(self.thread_turns) <= 100:
            raise InvalidInputError(f"thread_turns must be between 1 and 100, got {self.thread_turns}")
        if self.recent_turns < 0 or self.max_context_tokens < 1:
            raise InvalidInputError("recent_turns must be >= 0 and max_context_tokens >= 1")

    def to_recall_options(self) -> RecallOptions:
        """The memory service's recall options for these settings."""
        return self.recall_options()


_FIELDS = {f.name: f for f in fields(Context)}


def _coerce(name: str, value: Any) -> Any:
    """Convert a configurable value (often a string from a header or form) to the field's type."""
    default = _FIELDS[name].default
    if isinstance(default, bool):
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    return str(value)


def resolve_context(context: Context | Mapping[str, Any] | None, config: Mapping[str, Any] | None) -> Context:
    """The run's settings: ``context`` first, then ``config["configurable"]`` for what it leaves unset;
    the authenticated user (``configurable.langgraph_auth_user_id``) over any ``user_id`` either names.

    Raises ``InvalidTenantError`` with a clear message when neither names a valid user.
    """
    if context is None:
        ctx = Context()
    elif isinstance(context, Context):
        ctx = context
    else:
        unknown = set(context) - set(_FIELDS)
        ctx = Context(**{k: v for k, v in context.items() if k not in unknown})
    configurable = dict((config or {}).get("configurable") or {})
    defaults = Context()
    overrides: dict[str, Any] = {}
    for name in _FIELDS:
        if name in configurable and configurable[name] is not None \
                and getattr(ctx, name) == getattr(defaults, name):
            try:
                overrides[name] = _coerce(name, configurable[name])
            except (TypeError, ValueError, OverflowError) as exc:
                raise InvalidInputError(f"configurable {name}={configurable[name]!r}: {exc}") from exc
    if configurable.get("langgraph_auth_user_id"):
        overrides["user_id"] = str(configurable["langgraph_auth_user_id"])
    if overrides:
        ctx = replace(ctx, **overrides)
    if not ctx.user_id:
        raise InvalidTenantError(
            "no user id for this run: pass context={'user_id': ...} or config.configurable.user_id "
            "(CLI: --user, HTTP: X-User-Id)"
        )
    validate_tenant(ctx.user_id)
    return ctx


def thread_id_of(config: Mapping[str, Any] | None) -> str | None:
    """The conversation thread of this run as its user named it (``config.configurable.thread_id``
    without the user scope ``mneme.threads`` adds), if any."""
    from mneme.threads import unscoped_thread_id

    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return unscoped_thread_id(str(value)) if value else None
