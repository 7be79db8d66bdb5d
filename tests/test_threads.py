"""Threads: scoped per user, checked ids, listed and erased per user, persisted in SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from mneme.config import Settings
from mneme.errors import ConfigurationError, InvalidInputError, StoreUnavailableError
from mneme.graph import build_graph
from mneme.memory.inprocess import InProcessStore
from mneme.testing import FakeChatModel, FakeEmbeddings
from mneme.threads import (
    THREAD_ID_MAX,
    adelete_threads,
    aopen_checkpointer,
    athreads_of,
    delete_threads,
    open_checkpointer,
    scoped_thread_id,
    threads_of,
    unscoped_thread_id,
    validate_thread_id,
)


def test_the_same_thread_id_of_two_users_is_two_keys() -> None:
    assert scoped_thread_id("alice", "t1") != scoped_thread_id("bob", "t1")
    assert unscoped_thread_id(scoped_thread_id("alice:x", "t1")) == "t1"
    # a user id that is another's prefix cannot reach into the other's threads
    assert not scoped_thread_id("alice2", "t").startswith("alice/")


@pytest.mark.parametrize("bad", ["", "a/b", "x" * (THREAD_ID_MAX + 1), "has space", "new\nline", "trailing\n", 7])
def test_bad_thread_ids_are_rejected_not_cut(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        validate_thread_id(bad)


def test_long_ids_sharing_a_prefix_stay_apart() -> None:
    a, b = "p" * THREAD_ID_MAX, "p" * (THREAD_ID_MAX - 1) + "q"
    assert scoped_thread_id("u", a) != scoped_thread_id("u", b)
    with pytest.raises(InvalidInputError, match="never truncated"):
        scoped_thread_id("u", a + "tail")


def test_chinese_thread_ids_are_fine() -> None:
    assert unscoped_thread_id(scoped_thread_id("张三", "项目讨论")) == "项目讨论"


def _talk(saver: BaseCheckpointSaver, user: str, thread: str, text: str = "你好") -> None:
    graph = build_graph(store=InProcessStore(FakeEmbeddings()), checkpointer=saver)
    config = {"configurable": {"thread_id": scoped_thread_id(user, thread)}}
    graph.invoke({"messages": [{"role": "user", "content": text}]}, config, context={"user_id": user})


@contextmanager
def _saver(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver]:
    if kind == "memory":
        yield InMemorySaver()
        return
    settings = Settings(data_dir=tmp_path / "data")
    if kind == "postgres":
        settings = Settings(data_dir=tmp_path / "data",
                            postgres_url=request.getfixturevalue("postgres_server").database())
    with open_checkpointer(settings) as saver:
        yield saver


@pytest.mark.parametrize("kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def test_threads_of_and_delete_threads_touch_one_user_only(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    with _saver(kind, tmp_path, request) as saver:
        _talk(saver, "alice", "t1")
        _talk(saver, "alice", "t2", "我住在杭州")
        _talk(saver, "alice2", "t3")
        _talk(saver, "bob", "t1")
        assert threads_of(saver, "alice") == ["t1", "t2"]
        assert threads_of(saver, "alice2") == ["t3"]
        assert delete_threads(saver, "alice") == 2
        assert threads_of(saver, "alice") == []
        assert threads_of(saver, "bob") == ["t1"]
        bob = saver.get_tuple({"configurable": {"thread_id": scoped_thread_id("bob", "t1")}})
        assert bob is not None and bob.checkpoint["channel_values"]["messages"]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def test_a_thread_persists_when_the_checkpointer_is_reopened(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("postgres_server").database() if kind == "postgres" else None
    settings = Settings(data_dir=tmp_path / "data", postgres_url=url)
    model = FakeChatModel(responses=["豆豆，记住了。"], structured_responses=[{}])
    with open_checkpointer(settings) as saver:
        graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()), checkpointer=saver)
        config = {"configurable": {"thread_id": scoped_thread_id("alice", "t")}}
        graph.invoke({"messages": [{"role": "user", "content": "我的猫叫豆豆"}]}, config, context={"user_id": "alice"})
    with open_checkpointer(settings) as saver:
        graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()), checkpointer=saver)
        graph.invoke({"messages": [{"role": "user", "content": "它叫什么？"}]}, config, context={"user_id": "alice"})
    # turn 2's answer prompt carries turn 1 as conversation (a human message), not only as recalled memory
    answer_prompt = model.calls[-1]
    assert [m.content for m in answer_prompt if m.type == "human"] == ["我的猫叫豆豆", "它叫什么？"]
    assert [m.content for m in answer_prompt if m.type == "ai"] == ["豆豆，记住了。"]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def test_async_savers_list_and_delete(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("postgres_server").database() if kind == "postgres" else None
    settings = Settings(data_dir=tmp_path / "data", postgres_url=url)

    async def run() -> tuple[list[str], int, list[str]]:
        async with aopen_checkpointer(settings) as saver:
            graph = build_graph(store=InProcessStore(FakeEmbeddings()), checkpointer=saver)
            for user, thread in (("alice", "a"), ("alice", "b"), ("bob", "a")):
                config = {"configurable": {"thread_id": scoped_thread_id(user, thread)}}
                await graph.ainvoke({"messages": [{"role": "user", "content": "hi there"}]}, config,
                                    context={"user_id": user})
            listed = await athreads_of(saver, "alice")
            return listed, await adelete_threads(saver, "alice"), await athreads_of(saver, "bob")

    assert asyncio.run(run()) == (["a", "b"], 2, ["a"])


def test_a_postgres_url_that_is_not_one_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="MNEME_POSTGRES_URL"):
        Settings.from_env({"MNEME_POSTGRES_URL": "mysql://x"})


def test_an_unreachable_postgres_is_a_clear_error_without_the_password(unused_url: str, tmp_path: Path) -> None:
    port = unused_url.rsplit(":", 1)[1]
    settings = Settings(data_dir=tmp_path, postgres_url=f"postgresql://u:sekrit@127.0.0.1:{port}/db")
    with pytest.raises(StoreUnavailableError, match="MNEME_POSTGRES_URL") as err, open_checkpointer(settings):
        pass
    assert "sekrit" not in str(err.value)
