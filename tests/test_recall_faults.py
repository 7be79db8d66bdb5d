"""Recall degrades, it does not fail: a store that cannot be read gives an answer without recall (labelled),
and a failing side write (reinforcement, e.g. a full disk) never costs the user their recall."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from mneme.errors import MemoryStoreError, StoreUnavailableError
from mneme.graph import build_graph
from mneme.graph import degraded as labels
from mneme.memory.chroma import open_chroma_store
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.testing import FakeChatModel, FakeEmbeddings


class UnreachableStore(InProcessStore):
    """An in-process store whose reads fail the way an unreachable Chroma server's do."""

    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailableError("cannot reach the Chroma server at http://127.0.0.1:1")


def test_full_disk_during_reinforcement_does_not_fail_recall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_chroma_store(data_dir=tmp_path / "data", embedder=FakeEmbeddings())
    service = MemoryService(store)
    try:
        service.remember_turn("u1", user_text="I live in Hangzhou and I like oolong tea")

        def disk_full(*_: Any, **__: Any) -> None:  # what Chroma's write raises, translated at its boundary
            raise MemoryStoreError(f"Chroma failed to update metadata: {OSError(errno.ENOSPC, 'No space left')}")

        monkeypatch.setattr(store, "update_metadata", disk_full)
        found = service.recall("u1", "where do I live?")
        assert found and "Hangzhou" in found[0].text
    finally:
        service.close()


@pytest.mark.parametrize("model", [None, "model"])
def test_unreadable_store_answers_without_recall_labelled(model: str | None) -> None:
    chat = FakeChatModel(responses=["I don't remember that."], structured_responses=[{}]) if model else None
    service = MemoryService(UnreachableStore(FakeEmbeddings()))
    graph = build_graph(model=chat, service=service, checkpointer=InMemorySaver())
    out = graph.invoke({"messages": [{"role": "user", "content": "我住在哪里？"}]},
                       {"configurable": {"thread_id": "t"}}, context={"user_id": "u1"})
    assert out["degraded"] == [labels.STORE_UNAVAILABLE] and out["recalled"] == []
    assert out["answer"].startswith("[记忆库暂时不可用：本次回答未使用记忆]")
    if chat is not None:
        assert out["answer"].endswith("I don't remember that.") and len(chat.calls) == 1
        # the label is for this reply's reader: the turn is kept with what the model said, not with the label
        kept = [r.text for r in service.store.scan("u1")]
        assert kept and all("I don't remember that." in t for t in kept if t.startswith("user:"))
        assert not any("记忆库暂时不可用" in t for t in kept)


def test_only_the_degradation_lines_on_top_are_taken_off() -> None:
    zh, en = (labels.reply_lines([labels.STORE_UNAVAILABLE], m)[0] for m in ("你好", "hello"))
    assert labels.without_lines(f"{zh}\n好的，我记住了。") == "好的，我记住了。"
    assert labels.without_lines(f"{en}\n{zh}\nOK") == "OK"
    assert labels.without_lines(f"OK\n{en}") == f"OK\n{en}"  # quoted later in an answer: the answer's own words
    assert labels.without_lines("plain answer") == "plain answer"
