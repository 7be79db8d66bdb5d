"""The SQLite thread store of ``mneme serve``: LangGraph's ``AsyncSqliteSaver``, loading and saving in fewer trips.

aiosqlite runs every call on its connection's own thread, one job each (a cursor, an execute, a fetch, a cursor's
close, a commit), and each job is a hand-over of the GIL from the event loop to that thread and back: loading a
thread's checkpoint took six jobs, saving one three, about nine per served turn. ``AsyncSqliteSaver`` here loads
with two (the checkpoint row, then its pending writes) and saves with two (the insert, the commit). The SQL, the
tables and the decoding are LangGraph's own (``langgraph.checkpoint.sqlite``), so either class reads what the other
wrote (``tests/test_sqlite_checkpoints.py``); everything else (listing, deleting, pending writes) is inherited.
"""

from __future__ import annotations

import json
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver as _LangGraphSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes, pending_writes_sql

_COLUMNS = "thread_id, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
_BY_ID = f"SELECT {_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
_LATEST = (f"SELECT {_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
           "ORDER BY checkpoint_id DESC LIMIT 1")
_INSERT = ("INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
           "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)")


class AsyncSqliteSaver(_LangGraphSaver):
    """``langgraph.checkpoint.sqlite.aio.AsyncSqliteSaver`` whose ``aget_tuple`` and ``aput`` take two jobs each."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's latest), with pending writes."""
        await self.setup()
        configurable = config["configurable"]
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        wanted = get_checkpoint_id(config)
        async with self.lock:
            if wanted:
                rows = await self.conn.execute_fetchall(_BY_ID, (str(configurable["thread_id"]), checkpoint_ns,
                                                                 wanted))
            else:
                rows = await self.conn.execute_fetchall(_LATEST, (str(configurable["thread_id"]), checkpoint_ns))
            found = next(iter(rows), None)
            if found is None:
                return None
            thread_id, checkpoint_id, parent_checkpoint_id, type_, checkpoint, metadata = found
            if not wanted:
                config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                           "checkpoint_id": checkpoint_id}}
            writes = await self.conn.execute_fetchall(
                pending_writes_sql(self._has_task_path),
                (str(config["configurable"]["thread_id"]), checkpoint_ns,
                 str(config["configurable"]["checkpoint_id"])))
        parent = ({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                    "checkpoint_id": parent_checkpoint_id}} if parent_checkpoint_id else None)
        return CheckpointTuple(
            config, self.serde.loads_typed((type_, checkpoint)),
            cast(CheckpointMetadata, json.loads(metadata) if metadata is not None else {}),
            cast(Any, parent), load_pending_writes(writes, self.serde))

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Save ``checkpoint`` under ``config``'s thread (an insert and a commit)."""
        await self.setup()
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, serialized_checkpoint = self.serde.dumps_typed(checkpoint)
        serialized_metadata = json.dumps(get_checkpoint_metadata(config, metadata),
                                         ensure_ascii=False).encode("utf-8", "ignore")
        async with self.lock:
            await self.conn.execute_fetchall(_INSERT, (
                str(thread_id), checkpoint_ns, checkpoint["id"], config["configurable"].get("checkpoint_id"),
                type_, serialized_checkpoint, serialized_metadata))
            await self.conn.commit()
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}
