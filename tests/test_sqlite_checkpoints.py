"""mneme's AsyncSqliteSaver loads and saves in fewer aiosqlite jobs and reads and writes what LangGraph's does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver as LangGraphSaver

from mneme.sqlite_checkpoints import AsyncSqliteSaver
from mneme.thread_privacy import RedactingSerializer


def _checkpoint(n: int, text: str) -> Any:
    cp = empty_checkpoint()
    cp["id"] = f"1ef-{n:04d}"
    cp["channel_values"] = {"messages": [HumanMessage(text, id=f"h{n}"), AIMessage(f"reply {n}", id=f"a{n}")],
                            "query": text}
    cp["channel_versions"] = {"messages": n, "query": n}
    return cp


def _config(thread: str, checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def _scenario(path: Path) -> None:
    async with aiosqlite.connect(str(path)) as conn:
        ours = AsyncSqliteSaver(conn, serde=RedactingSerializer())
        theirs = LangGraphSaver(conn, serde=RedactingSerializer())
        await ours.setup()
        jobs: list[str] = []
        real = conn._execute

        async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
            jobs.append(getattr(fn, "__name__", "?"))
            return await real(fn, *args, **kwargs)

        conn._execute = counted  # type: ignore[method-assign]
        saved = await ours.aput(_config("alice:t1"), _checkpoint(1, "我住在杭州，电话13812345678"), {"step": 1}, {})
        assert len(jobs) == 2  # an insert and a commit (LangGraph's: three)
        await ours.aput(_config("alice:t1", saved["configurable"]["checkpoint_id"]), _checkpoint(2, "I keep bees"),
                        {"step": 2}, {})
        await theirs.aput_writes(_config("alice:t1", "1ef-0002"), [("messages", ["pending"])], "task-1")
        jobs.clear()
        mine = await ours.aget_tuple(_config("alice:t1"))
        assert len(jobs) == 2  # the row and its pending writes (LangGraph's: six)
        jobs.clear()
        lg = await theirs.aget_tuple(_config("alice:t1"))
        assert len(jobs) > 2
        assert mine is not None and lg is not None
        assert mine.config == lg.config and mine.parent_config == lg.parent_config
        assert mine.checkpoint == lg.checkpoint and mine.metadata == lg.metadata
        assert mine.pending_writes == lg.pending_writes == [("task-1", "messages", ["pending"])]
        assert mine.checkpoint["id"] == "1ef-0002" and mine.parent_config is not None
        assert "13812345678" not in str((await ours.aget_tuple(_config("alice:t1", "1ef-0001"))).checkpoint)  # type: ignore[union-attr]
        older = await ours.aget_tuple(_config("alice:t1", "1ef-0001"))
        assert older is not None and older.checkpoint["channel_values"]["messages"][1].content == "reply 1"
        assert older.parent_config is None and older.config == _config("alice:t1", "1ef-0001")
        # what LangGraph's saver wrote, this one reads; an unknown thread or id is None
        await theirs.aput(_config("bob:t9"), _checkpoint(7, "hello"), {"step": 7}, {})
        bobs = await ours.aget_tuple(_config("bob:t9"))
        assert bobs is not None and bobs.checkpoint["channel_values"]["query"] == "hello"
        assert await ours.aget_tuple(_config("nobody:t0")) is None
        assert await ours.aget_tuple(_config("alice:t1", "1ef-9999")) is None


def test_fewer_jobs_and_the_same_rows_as_langgraph_s_saver(tmp_path: Path) -> None:
    asyncio.run(_scenario(tmp_path / "threads.sqlite"))
