"""Issue 13 item 1: erasing a user leaves nothing of them anywhere Mneme writes, and export lists their threads.

A real agent (``FakeChatModel``), a real Chroma (a ``chroma run`` server, so the change-stamps collection exists
too, and embedded), the write journal, the keyword index and the SQLite thread store. User U says things
holding a unique marker word, ingests a private document, has a memory archived by gc and a turn still queued
in the journal; then ``mneme memories delete --all`` (the command's own code path: ``mneme.admin``) runs.
Every store is then read in full, table by table and collection by collection, and the bytes of every SQLite
file are scanned: neither U's id nor the marker is anywhere. Another user's data is untouched, and a new turn
in U's old thread starts with no history.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import ExitStack, closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mneme import build_graph
from mneme.admin import LocalAdmin
from mneme.clock import FixedClock
from mneme.config import Settings
from mneme.graph.nodes import text_of
from mneme.memory.maintenance import run_gc
from mneme.stores import journal_dir, keyword_index_path, open_service
from mneme.testing import FakeChatModel
from mneme.threads import open_checkpointer, scoped_thread_id, sqlite_path

NOW = datetime(2025, 3, 1, tzinfo=UTC).timestamp()
DAY = 86_400.0


def chroma_rows(service: Any, prefix: str) -> str:
    """Every row of every collection of this store (ids, texts, metadata) as one text."""
    client = service.store._client
    out = []
    for col in client.list_collections():
        name = col if isinstance(col, str) else col.name
        if not name.startswith(prefix):
            continue
        got = client.get_collection(name, embedding_function=None).get(include=["documents", "metadatas"])
        out.append(json.dumps({"collection": name, **{k: got.get(k) for k in ("ids", "documents", "metadatas")}},
                              ensure_ascii=False, default=str))
    return "\n".join(out)


def sqlite_rows(path: Path) -> str:
    """Every row of every table of a SQLite file, as text (blobs decoded leniently)."""
    out = []
    with closing(sqlite3.connect(path)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - names from sqlite_master
                out.append(" ".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row))
    return "\n".join(out)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = request.getfixturevalue("chroma_server").url if request.param == "server" else None
    return Settings(data_dir=tmp_path / "data", chroma_url=url, embeddings="fake",
                    collection_prefix=f"er{uuid.uuid4().hex[:8]}")


@pytest.mark.slow
def test_delete_all_leaves_nothing_of_the_user_anywhere(settings: Settings) -> None:
    user, other = f"erin{uuid.uuid4().hex[:6]}", "victor"
    marker, their_marker = "zorbaquux", "plimblob"
    model = FakeChatModel(responses=["好的。"], structured_responses=[{}])
    with ExitStack() as stack:
        service = open_service(settings, clock=FixedClock(NOW))
        stack.callback(service.close)
        checkpointer = stack.enter_context(open_checkpointer(settings))
        graph = build_graph(model=model, service=service, checkpointer=checkpointer)
        thread = {"configurable": {"thread_id": scoped_thread_id(user, "t1")}}

        def say(who: str, text: str, config: dict[str, Any]) -> None:
            graph.invoke({"messages": [{"role": "user", "content": text}]}, config, context={"user_id": who})

        say(user, f"我住在上海，我的猫叫{marker}", thread)
        say(user, f"I walked along the harbour with {marker} today", thread)
        theirs = {"configurable": {"thread_id": scoped_thread_id(other, "v")}}
        say(other, f"我喜欢爵士乐，我的狗叫{their_marker}", theirs)
        service.ingest_document(f"# {marker} notes\n\nThe {marker} project diary.", source="notes.md", user_id=user)
        assert service.drain(30)
        archived = run_gc(service, now=NOW + 1000 * DAY, user_id=user).changes
        assert any(c["action"] == "archive" for c in archived)  # the archive collection holds some of U
        assert service.applier is not None
        service.applier.pause()  # the next turn stays queued in the journal
        say(user, f"记住：{marker}最喜欢吃鱼", thread)
        assert service.journal is not None and service.journal.pending(user)

        admin = LocalAdmin(service, checkpointer=checkpointer)
        exported = list(admin.export(user))
        threads = [e for e in exported if e.get("type") == "thread"]
        assert [t["thread_id"] for t in threads] == ["t1"]  # export lists the thread, with its turns
        assert marker in threads[0]["messages"][0]["content"] and len(threads[0]["messages"]) == 6
        assert any(marker in e.get("text", "") for e in exported if "kind" in e)

        before = chroma_rows(service, settings.collection_prefix)
        assert user in before and marker in before and their_marker in before  # the scan sees what is there

        erased = admin.erase(user)
        assert erased["records"] > 0 and erased["queued_turns"] == 1 and erased["threads"] == 1
        service.applier.resume()
        assert service.drain(30)

        # every store, read in full: nothing of U (their id or what they said); the other user is intact
        stores = {"chroma": chroma_rows(service, settings.collection_prefix),
                  "keyword index": sqlite_rows(keyword_index_path(settings)),
                  "threads": sqlite_rows(sqlite_path(settings)),
                  **{f"journal {p.name}": sqlite_rows(p) for p in journal_dir(settings).glob("*.sqlite3")}}
        for name, text in stores.items():
            assert user not in text, f"{user} left in the {name}"
            assert marker not in text, f"{marker} left in the {name}"
        assert their_marker in stores["chroma"] and their_marker in stores["keyword index"]
        assert their_marker in stores["threads"]
        assert list(admin.export(user)) == []

        # a new turn in U's old thread carries none of its history
        say(user, "我的猫叫什么？", thread)
        prompt = model.calls[-1]
        assert [text_of(m) for m in prompt[1:]] == ["我的猫叫什么？"]
        assert marker not in "\n".join(text_of(m) for m in prompt)
        assert len(graph.get_state(thread).values["messages"]) == 2
        service.drain(30)

    # with every store closed, the bytes of the files Mneme owns hold nothing U said either (SQLite's
    # secure_delete zeroes deleted rows; an index page may still hold a key such as the user id until the file
    # is vacuumed). Chroma's own files are read through Chroma above: its internal write log may keep the bytes
    # of the latest writes until Chroma purges it (see the README).
    for path in [keyword_index_path(settings), sqlite_path(settings), *journal_dir(settings).glob("*.sqlite3*")]:
        raw = path.read_bytes()
        assert marker.encode() not in raw, f"{marker} left in the bytes of {path.name}"
