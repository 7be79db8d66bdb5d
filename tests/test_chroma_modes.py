"""What only Chroma has: persistence, servers that stop, locks, embedder identity, reindexing, error mapping."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import chromadb
import httpx
import pytest
from chromadb.errors import ChromaError

from mneme.errors import (
    EmbedderMismatchError,
    MemoryStoreError,
    StoreUnavailableError,
)
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.chroma import (
    _NEW,
    _OLD,
    chroma_client,
    chroma_settings,
    collection_names,
    open_chroma_store,
    reindex_store,
    translate_errors,
)
from mneme.testing import FakeEmbeddings

pytestmark = pytest.mark.server


def rec(user: str, text: str, kind: Kind = Kind.FACT, rid: str | None = None) -> MemoryRecord:
    return MemoryRecord(id=rid or text, user_id=user, kind=kind, text=text, created_at=1.0)


def texts(store: Any, user: str, query: str, **kw: Any) -> list[str]:
    return [h.record.text for h in store.search(user, store.embedder.embed([query])[0], **kw)]


def test_embedded_data_survives_reopen_in_another_process(tmp_path: Path) -> None:
    with open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings()) as store:
        store.add([rec("alice", "住在杭州 lives in Hangzhou", rid="h")])
    script = textwrap.dedent(f"""
        from mneme.memory.chroma import open_chroma_store
        from mneme.testing import FakeEmbeddings
        with open_chroma_store(data_dir={str(tmp_path)!r}, embedder=FakeEmbeddings()) as store:
            print(store.get("alice", ["h"])[0].text)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "住在杭州 lives in Hangzhou"
    with open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings()) as again:
        assert texts(again, "alice", "Hangzhou") == ["住在杭州 lives in Hangzhou"]


def test_same_data_dir_twice_in_one_process_shares_the_client(tmp_path: Path) -> None:
    first = open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings())
    second = open_chroma_store(data_dir=tmp_path / "." , embedder=FakeEmbeddings())
    first.add([rec("alice", "written by the first handle")])
    assert second.count("alice") == 1
    first.close()
    second.add([rec("alice", "still usable after the other handle closed")])
    assert second.count("alice") == 2
    second.close()


def test_second_process_on_embedded_dir_gets_store_locked(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        from mneme.errors import StoreLockedError
        from mneme.memory.chroma import open_chroma_store
        from mneme.testing import FakeEmbeddings
        try:
            open_chroma_store(data_dir={str(tmp_path)!r}, embedder=FakeEmbeddings())
        except StoreLockedError as exc:
            print("LOCKED", exc)
    """)
    with open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings()):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("LOCKED"), out.stderr
    assert "MNEME_CHROMA_URL" in out.stdout and "chroma run" in out.stdout
    # released on close: a later process opens it fine
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "LOCKED" not in out.stdout, out.stderr


def test_server_restart_keeps_data_and_outage_names_the_url(spawn_chroma_server: Any) -> None:
    server = spawn_chroma_server()
    store = open_chroma_store(url=server.url, embedder=FakeEmbeddings(), prefix="restart")
    store.add([rec("alice", "记得带伞 remember the umbrella")])
    server.stop()
    with pytest.raises(StoreUnavailableError) as err:
        texts(store, "alice", "umbrella")
    assert server.url in str(err.value) and "chroma run" in str(err.value)
    server.start()
    assert texts(store, "alice", "umbrella") == ["记得带伞 remember the umbrella"]
    store.close()
    with open_chroma_store(url=server.url, embedder=FakeEmbeddings(), prefix="restart") as reopened:
        assert reopened.count("alice") == 1


def test_opening_a_server_that_is_down_raises_unavailable(unused_url: str) -> None:
    url = unused_url
    with pytest.raises(StoreUnavailableError) as err:
        open_chroma_store(url=url, embedder=FakeEmbeddings())
    assert url in str(err.value) and "--port" in str(err.value)


def test_embedder_mismatch_then_reindex_recovers(tmp_path: Path) -> None:
    old, new = FakeEmbeddings(64, name="old-model"), FakeEmbeddings(128, name="new-model")
    with open_chroma_store(data_dir=tmp_path, embedder=old) as store:
        store.add([rec("alice", "我养了一只狗 I have a dog"), rec("bob", "bob has a cat", Kind.EPISODIC)])
        store.archive("bob", ["bob has a cat"])
    with pytest.raises(EmbedderMismatchError) as err:
        open_chroma_store(data_dir=tmp_path, embedder=new)
    message = str(err.value)
    assert "old-model" in message and "new-model" in message and "mneme reindex" in message
    with chroma_client(data_dir=tmp_path) as (client, where):
        copied = reindex_store(client, new, location=where)
    assert copied["mneme_facts"] == 1 and copied["mneme_archive"] == 1
    with open_chroma_store(data_dir=tmp_path, embedder=new) as store:
        assert texts(store, "alice", "dog") == ["我养了一只狗 I have a dog"]
        assert texts(store, "bob", "cat", archived=True) == ["bob has a cat"]
        assert store.get("alice", ["我养了一只狗 I have a dog"])[0].kind is Kind.FACT
    with chroma_client(data_dir=tmp_path) as (client, where):
        assert reindex_store(client, new, location=where) == {}  # nothing left to do


@pytest.mark.parametrize("crash_after", ["copy", "first_rename", "second_rename"])
def test_interrupted_reindex_never_loses_data(tmp_path: Path, crash_after: str) -> None:
    old, new = FakeEmbeddings(64, name="old-model"), FakeEmbeddings(128, name="new-model")
    with open_chroma_store(data_dir=tmp_path, embedder=old) as store:
        store.add([rec("alice", "the one fact")])
    with chroma_client(data_dir=tmp_path) as (client, _):
        name = "mneme_facts"
        copy = client.create_collection(name + _NEW, embedding_function=None,  # type: ignore[arg-type]
                                        metadata={"embedder": "new-model", "dimension": 128})
        if crash_after != "copy":  # a complete copy exists, then the swap started
            copy.add(ids=["the one fact"], embeddings=new.embed(["the one fact"]),  # type: ignore[arg-type]
                     documents=["the one fact"], metadatas=[client.get_collection(name).get()["metadatas"][0]])
            client.get_collection(name).modify(name=name + _OLD)
        if crash_after == "second_rename":
            copy.modify(name=name)
        if crash_after != "copy":
            with pytest.raises(MemoryStoreError, match="mneme reindex"):
                open_chroma_store(data_dir=tmp_path, embedder=new)
        reindex_store(client, new)
        assert {c.name for c in client.list_collections()} == set(collection_names("mneme"))
    with open_chroma_store(data_dir=tmp_path, embedder=new) as store:
        assert texts(store, "alice", "fact") == ["the one fact"]


@pytest.mark.parametrize("exc, expected", [
    (httpx.ConnectError("refused"), StoreUnavailableError),
    (httpx.ReadTimeout("slow"), StoreUnavailableError),
    (ConnectionResetError("reset"), StoreUnavailableError),
    (ValueError("Could not connect to a Chroma server. Are you sure it is running?"), StoreUnavailableError),
    (ChromaError("internal"), MemoryStoreError),
    (ValueError("Expected IDs to be a non-empty list"), MemoryStoreError),
    (httpx.HTTPStatusError("500", request=httpx.Request("GET", "http://x"),
                           response=httpx.Response(500)), MemoryStoreError),
    (OSError("disk full"), MemoryStoreError),
])
def test_every_backend_error_is_translated(exc: Exception, expected: type[Exception]) -> None:
    with pytest.raises(expected) as err, translate_errors("http://127.0.0.1:8000", "search", remote=True):
        raise exc
    assert err.value.__cause__ is exc
    assert "127.0.0.1:8000" in str(err.value)


def test_chroma_errors_inside_store_calls_surface_as_memory_store_errors(tmp_path: Path) -> None:
    with open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings()) as store:
        client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=chroma_settings())
        client.delete_collection("mneme_facts")  # pulled from under the store
        with pytest.raises(MemoryStoreError):
            store.add([rec("alice", "into a collection that is gone")])


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    import argparse

    from mneme.cli import memories

    parser = argparse.ArgumentParser()
    memories.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_memories_cli_lists_exports_and_erases_one_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MNEME_EMBEDDINGS", "fake")
    from mneme.config import Settings
    from mneme.stores import open_store

    store = open_store(Settings.from_env())
    store.add([rec("alice", "住在北京 lives in Beijing", rid="f"), rec("alice", "a memory", Kind.EPISODIC, rid="e"),
               rec("alice", "private doc", Kind.DOCUMENT, rid="d"), rec("bob", "bob's fact", rid="b")])
    store.archive("alice", ["e"])
    store.close()
    listed = json.loads(run_cli(["memories", "list", "--user", "alice", "--json"], capsys))
    assert {i["id"] for i in listed} == {"f", "e", "d"}
    assert all(i["user_id"] == "alice" and i["created_at"].startswith("1970-01-01T") for i in listed)
    assert [i["archived"] for i in listed if i["id"] == "e"] == [True]
    found = json.loads(run_cli(["memories", "search", "Beijing", "--user", "alice", "--k", "1", "--json"], capsys))
    assert [i["id"] for i in found] == ["f"]
    lines = run_cli(["memories", "export", "--user", "alice"], capsys).splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == ["d", "e", "f"]
    from mneme.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="b"):  # bob's id is not alice's: an error, and nothing deleted
        run_cli(["memories", "delete", "--user", "alice", "--id", "f", "--id", "b"], capsys)
    assert {i["id"] for i in json.loads(run_cli(["memories", "list", "--user", "alice", "--json"], capsys))} \
        == {"f", "e", "d"}
    run_cli(["memories", "delete", "--user", "alice", "--id", "f"], capsys)
    left = json.loads(run_cli(["memories", "list", "--user", "alice", "--json"], capsys))
    assert {i["id"] for i in left} == {"e", "d"}
    run_cli(["memories", "delete", "--user", "alice", "--all", "--yes"], capsys)
    assert json.loads(run_cli(["memories", "list", "--user", "alice", "--json"], capsys)) == []
    assert [i["id"] for i in json.loads(run_cli(["memories", "list", "--user", "bob", "--json"], capsys))] == ["b"]


def test_the_cache_size_comes_from_settings(tmp_path: Path) -> None:
    from mneme.config import Settings
    from mneme.errors import ConfigurationError
    from mneme.stores import open_store

    base = {"MNEME_DATA_DIR": str(tmp_path), "MNEME_EMBEDDINGS": "fake"}
    assert Settings.from_env(base).cache_rows == 200_000
    off = open_store(Settings.from_env({**base, "MNEME_VECTOR_CACHE_ROWS": "0"}))
    try:
        assert off._cache is None  # type: ignore[attr-defined]
        off.add([rec("alice", "住在北京 lives in Beijing", rid="f")])
        hits = off.search("alice", off.embedder.embed(["住在北京"])[0])
        assert [h.record.id for h in hits] == ["f"]  # answered by Chroma's own query
    finally:
        off.close()
    small = open_store(Settings.from_env({**base, "MNEME_DATA_DIR": str(tmp_path / "b"),
                                          "MNEME_VECTOR_CACHE_ROWS": "1_000"}))
    try:
        assert small._cache is not None and small._cache.max_rows == 1000  # type: ignore[attr-defined]
    finally:
        small.close()
    with pytest.raises(ConfigurationError, match="MNEME_VECTOR_CACHE_ROWS"):
        Settings.from_env({**base, "MNEME_VECTOR_CACHE_ROWS": "lots"})


def test_bulk_changes_beyond_chromas_batch_limit(tmp_path: Path) -> None:
    """gc and erasure touch thousands of rows at once: Chroma refuses batches over ~5,461 rows and takes
    minutes over a ``get`` with many ids *and* a filter; the store batches and filters by id itself."""
    from mneme.memory.chroma import open_chroma_store
    from mneme.testing import FakeEmbeddings

    n = 6000
    with open_chroma_store(data_dir=tmp_path, embedder=FakeEmbeddings(8), prefix="bulk") as store:
        for start in range(0, n, 2000):
            store.add([MemoryRecord(id=f"r{i}", user_id="solo", kind=Kind.EPISODIC, text=f"第{i}条",
                                    created_at=float(i), embedding=[1.0, float(i % 7)] + [0.0] * 6)
                       for i in range(start, start + 2000)])
        store.add([rec("other", "not mine", Kind.EPISODIC, rid="o1")])
        ids = [f"r{i}" for i in range(n)] + ["o1"]
        store.update_metadata("solo", {rid: {"importance": 0.9} for rid in ids})
        assert store.archive("solo", ids) == n  # "o1" belongs to someone else
        assert store.count("solo", archived=True) == n and store.count("other") == 1
        assert store.restore("solo", ids[:5500]) == 5500
        assert store.delete("solo", ids=ids) == n
        assert store.count("solo", archived=None) == 0 and store.get("other", ["o1"])[0].importance != 0.9
