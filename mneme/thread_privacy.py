"""What of a conversation thread reaches the disk: the same redaction as memory, applied as it is serialized.

A running request holds the user's raw message (the rewrite and answer calls need it: "format my phone
number"). Everything a checkpointer writes goes through its serializer, so ``RedactingSerializer`` redacts
there, with memory's policy (``mneme.memory.redaction``): every checkpoint and every pending write of the
SQLite or PostgreSQL thread store, including LangGraph's record of the run's input. The thread a later turn
loads therefore holds placeholders (``[手机号]``), never the identifier.

What it rewrites: message contents (LangChain messages and OpenAI-style ``{"role", "content"}`` dicts), and
the text channels of the state (``query``, ``answer``, the thread ``summary`` ...). Ids, versions and other
bookkeeping strings are left alone: redacting those could break the checkpointer.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from mneme.memory.redaction import DEFAULT_POLICY, RedactionPolicy, redact


class RedactingSerializer:
    """A checkpointer serializer that redacts personal data before ``inner`` (JsonPlus by default) writes it."""

    def __init__(self, inner: SerializerProtocol | None = None, *, policy: RedactionPolicy = DEFAULT_POLICY) -> None:
        self.inner: SerializerProtocol = inner or JsonPlusSerializer()
        self.policy = policy

    def _redact(self, text: str) -> str:
        # ``redact`` remembers recent texts itself (one process memo, emptied on erasure): the thread's earlier
        # messages, serialized again with every checkpoint, are not scanned again
        return redact(text, self.policy).text

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Serialize ``obj`` with its personal data replaced by placeholders."""
        return self.inner.dumps_typed(self.scrub(obj))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Deserialize as ``inner`` does (what was stored is already redacted)."""
        return self.inner.loads_typed(data)

    def scrub(self, obj: Any) -> Any:
        """A copy of ``obj`` (a checkpoint, or one channel's value or write) with texts redacted."""
        if isinstance(obj, str):  # a channel's value or write on its own: state text (query, answer, summary)
            return self._redact(obj)
        if isinstance(obj, dict) and isinstance(obj.get("channel_values"), dict):  # a whole checkpoint
            values = {k: self._redact(v) if isinstance(v, str) else self._walk(v)
                      for k, v in obj["channel_values"].items()}
            return {**obj, "channel_values": values}
        return self._walk(obj)

    def _walk(self, obj: Any) -> Any:
        # a part with nothing to redact is returned as it is, not copied: a thread's earlier messages, already
        # redacted when they were first written, are most of every checkpoint
        if isinstance(obj, BaseMessage):
            content = self._content(obj.content)
            return obj if content == obj.content else obj.model_copy(update={"content": content})
        if isinstance(obj, dict):
            if "content" in obj and ("role" in obj or "type" in obj):
                content = self._content(obj["content"])
                return obj if content == obj["content"] else {**obj, "content": content}
            walked = {k: self._walk(v) for k, v in obj.items()}
            return obj if all(walked[k] is v for k, v in obj.items()) else walked
        if isinstance(obj, list):
            items = [self._walk(v) for v in obj]
            return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            parts = tuple(self._walk(v) for v in obj)
            return obj if all(a is b for a, b in zip(parts, obj, strict=True)) else parts
        return obj

    def _content(self, content: Any) -> Any:
        if isinstance(content, str):
            return self._redact(content)
        if isinstance(content, list):
            return [self._redact(p) if isinstance(p, str) else
                    {**p, "text": self._redact(p["text"])} if isinstance(p, dict) and isinstance(p.get("text"), str)
                    else p for p in content]
        return content


def postgres_saver(conn: Any) -> Any:
    """A ``PostgresSaver`` on ``conn`` that redacts: it stores short text channels inline in the checkpoint
    row, past the serializer, so the checkpoint is redacted before it is handed over as well."""
    from langgraph.checkpoint.postgres import PostgresSaver

    class RedactingPostgresSaver(PostgresSaver):
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            return super().put(config, self.serde.scrub(checkpoint), metadata, new_versions)  # type: ignore[attr-defined]

    return RedactingPostgresSaver(conn, serde=RedactingSerializer())


def async_postgres_saver(conn: Any) -> Any:
    """The async twin of ``postgres_saver``."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    class RedactingAsyncPostgresSaver(AsyncPostgresSaver):
        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            return await super().aput(config, self.serde.scrub(checkpoint),  # type: ignore[attr-defined]
                                      metadata, new_versions)

    return RedactingAsyncPostgresSaver(conn, serde=RedactingSerializer())
