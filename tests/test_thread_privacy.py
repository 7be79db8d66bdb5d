"""Issue 13 item 2: personal data never reaches the thread store; the running request alone sees it.

A real graph with a scripted model and a real checkpointer (SQLite file, and a real PostgreSQL server):
after a turn that names a phone number, an e-mail and an ID number, every byte the checkpointer wrote is
scanned for them; the next turn of the thread sees placeholders only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from mneme import build_graph
from mneme.config import Settings
from mneme.graph.nodes import text_of
from mneme.memory.inprocess import InProcessStore
from mneme.testing import FakeChatModel, FakeEmbeddings
from mneme.thread_privacy import RedactingSerializer
from mneme.threads import open_checkpointer

VALID_ID = "11010519491231002X"
RAW = ("13812345678", "zhang@example.com", VALID_ID)
MESSAGE = f"我的手机是13812345678，邮箱zhang@example.com，身份证{VALID_ID}，帮我记一下"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Settings, Any]]:
    """Settings for a thread store of this kind, and a function returning every byte it holds."""
    if request.param == "sqlite":
        settings = Settings(data_dir=tmp_path / "data")

        def dump() -> bytes:
            return b"".join(p.read_bytes() for p in sorted(settings.data_dir.rglob("*")) if p.is_file())
    else:
        import psycopg

        url = request.getfixturevalue("postgres_server").database()
        settings = Settings(data_dir=tmp_path / "data", postgres_url=url)

        def dump() -> bytes:
            out = []
            with psycopg.connect(url) as conn:
                for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                    for row in conn.execute(f"SELECT * FROM {table}"):  # noqa: S608 - fixed table names
                        out.extend(bytes(v) if isinstance(v, bytes | memoryview) else str(v).encode() for v in row)
            return b"\n".join(out)
    yield settings, dump


def test_the_thread_store_never_holds_the_raw_identifiers(backend: tuple[Settings, Any]) -> None:
    settings, dump = backend
    # the model echoes the number back: the reply is redacted in the thread too
    model = FakeChatModel(responses=["好的，记下了：13812345678。", "你的手机号是[手机号]。"],
                          structured_responses=[{}])
    with ExitStack() as stack:
        checkpointer = stack.enter_context(open_checkpointer(settings))
        graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()), checkpointer=checkpointer)
        config = {"configurable": {"thread_id": "u1:t1"}}
        state = graph.invoke({"messages": [{"role": "user", "content": MESSAGE}]}, config, context={"user_id": "u1"})
        # the request itself used the raw text: the answer call saw it, the caller got the model's reply
        assert "13812345678" in text_of(model.calls[-1][-1]) and "13812345678" in state["answer"]

        stored = dump()
        assert stored, "the checkpointer wrote nothing"
        for raw in RAW:
            assert raw.encode() not in stored, f"{raw} reached the thread store"
        assert "[手机号]".encode() in stored and "[邮箱]".encode() in stored

        # the thread a later turn loads holds placeholders; the next prompt shows no identifier
        graph.invoke({"messages": [{"role": "user", "content": "我的手机号是多少？"}]}, config,
                     context={"user_id": "u1"})
        history = [m for m in model.calls[-1] if isinstance(m, HumanMessage | AIMessage)]
        seen = "\n".join(text_of(m) for m in history)
        assert "[手机号]" in seen and "[邮箱]" in seen and "[身份证号]" in seen
        for raw in RAW:
            assert raw not in seen
        values = graph.get_state(config).values
        for raw in RAW:
            assert raw not in str(values)
        for raw in RAW:
            assert raw.encode() not in dump()


def test_the_serializer_leaves_bookkeeping_alone() -> None:
    serde = RedactingSerializer()
    # a channel version that happens to be a Luhn-valid 16-digit run must survive untouched
    version = "00000000000000000000000000000003.0.4111111111111111"
    checkpoint = {"v": 4, "id": "1f0c", "channel_versions": {"messages": version},
                  "channel_values": {"query": "call 13812345678",
                                     "messages": [HumanMessage("mail sam@example.org", id="m1")],
                                     "recalled": [{"id": "ep-1", "text": "user: [PHONE]"}]}}
    back = serde.loads_typed(serde.dumps_typed(checkpoint))
    assert back["channel_versions"] == checkpoint["channel_versions"] and back["id"] == "1f0c"
    assert back["channel_values"]["query"] == "call [PHONE]"
    (message,) = back["channel_values"]["messages"]
    assert message.id == "m1" and message.content == "mail [EMAIL]"
    assert checkpoint["channel_values"]["query"] == "call 13812345678"  # the running request's copy is untouched
    # LangGraph's record of the input (OpenAI-style dicts) is redacted as well
    start = serde.loads_typed(serde.dumps_typed({"messages": [{"role": "user", "content": "我的手机是13812345678"}]}))
    assert start == {"messages": [{"role": "user", "content": "我的手机是[手机号]"}]}
