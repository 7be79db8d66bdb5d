"""Documents: batched ingest (one embedder call and one store write per batch), titles, list and delete by source."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mneme.clock import FixedClock
from mneme.errors import InvalidInputError, InvalidTenantError
from mneme.memory.base import SHARED_TENANT, Kind
from mneme.memory.chroma import open_chroma_store
from mneme.memory.documents import (
    EMBED_BATCH,
    MAX_DOCUMENT_CHARS,
    Document,
    chunk_text,
    ingest_documents,
    markdown_title,
)
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService
from mneme.testing import FakeEmbeddings

NOW = 1_750_000_000.0


class CountingEmbeddings(FakeEmbeddings):
    """Fake embeddings that count calls and texts."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return super().embed(texts)


def service_on(backend: str, tmp_path: Path, embedder: FakeEmbeddings | None = None) -> MemoryService:
    emb = embedder or FakeEmbeddings()
    store = InProcessStore(emb) if backend == "inprocess" else open_chroma_store(data_dir=tmp_path / "d", embedder=emb)
    return MemoryService(store, keyword=KeywordIndex(None), clock=FixedClock(NOW))


def paragraphs(n: int, tag: str) -> str:
    return "\n\n".join(f"{tag} paragraph {i}: " + "检索 memory words " * 5 for i in range(n))


@pytest.mark.parametrize("backend", ["inprocess", "embedded"])
def test_many_files_are_embedded_and_stored_in_batches(backend: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = CountingEmbeddings()
    service = service_on(backend, tmp_path, embedder)
    adds: list[list[str]] = []
    real_add = service.store.add
    monkeypatch.setattr(service.store, "add", lambda records: adds.append([r.id for r in records]) or real_add(records))
    docs = [Document(text=paragraphs(1 + i % 3, f"f{i}"), source=f"f{i}.md") for i in range(60)]
    per_doc = [len(chunk_text(d.text, max_chars=120)) for d in docs]
    total = sum(per_doc)
    batch = 16  # small chunks and batches: the same code path as 600 chunks in batches of EMBED_BATCH, faster
    result = ingest_documents(service.indexed, docs, now=NOW, batch_size=batch, max_chars=120)
    assert [len(i) for i in result.ids] == per_doc and result.stored == total
    batches = -(-total // batch)
    assert batches > 60 // 10 and batch < EMBED_BATCH
    assert embedder.calls == [len(a) for a in adds] and len(adds) == batches and sum(map(len, adds)) == total
    assert service.store.count(SHARED_TENANT, kinds=[Kind.DOCUMENT]) == total
    hits = service.recall("alice", "f37 paragraph", options=None)
    assert hits and hits[0].metadata["source"] == "f37.md"

    # the same files again: nothing is re-embedded or rewritten; one changed file is
    embedder.calls.clear()
    adds.clear()
    docs[5] = Document(text=docs[5].text + "\n\nf5 one more paragraph about sailing", source="f5.md")
    again = ingest_documents(service.indexed, docs, now=NOW + 60, batch_size=batch, max_chars=120)
    assert again.ids[:5] == result.ids[:5] and len(again.ids[5]) > per_doc[5]
    assert len(adds) == len(embedder.calls) == 1 and set(adds[0]) <= set(again.ids[5]) and again.stored == len(adds[0])
    assert again.unchanged == sum(len(i) for i in again.ids) - again.stored

def test_reingesting_a_shorter_version_drops_the_old_tail(tmp_path: Path) -> None:
    service = service_on("embedded", tmp_path)
    first = service.ingest_documents([Document(text=paragraphs(30, "v1"), source="a.md")]).ids[0]
    second = service.ingest_document(paragraphs(3, "v2"), source="a.md")
    assert len(second) < len(first)
    stored = {d["source"]: d for d in service.list_documents()}
    assert stored["a.md"]["ids"] == second and stored["a.md"]["chunks"] == len(second)
    assert all("v2" in r.text for r in service.store.scan(SHARED_TENANT, kinds=[Kind.DOCUMENT]))


def test_a_too_large_document_stores_nothing_of_the_batch() -> None:
    service = service_on("inprocess", Path("."))
    docs = [Document(text="small text", source="ok.md"), Document(text="x" * (MAX_DOCUMENT_CHARS + 1), source="big")]
    with pytest.raises(InvalidInputError, match="too large"):
        service.ingest_documents(docs)
    assert service.list_documents() == []


def test_markdown_titles() -> None:
    assert markdown_title("\ufeff# 员工手册\n\n正文") == "员工手册"
    assert markdown_title("intro\n\n## Returns policy ##\n") == "Returns policy"
    assert markdown_title("Handbook\n========\n\ntext") == "Handbook"
    assert markdown_title("#hashtag not a heading\nplain") is None
    service = service_on("inprocess", Path("."))
    service.ingest_documents([Document(text="\ufeff# 退货政策\n\n三十天内可以退货。", source="zh.md"),
                              Document(text="no heading here", source="plain.txt")])
    titles = {d["source"]: d["title"] for d in service.list_documents()}
    assert titles == {"zh.md": "退货政策", "plain.txt": "plain.txt"}


def test_shared_and_private_documents_are_listed_and_deleted_by_owner(tmp_path: Path) -> None:
    service = service_on("embedded", tmp_path)
    service.ingest_documents([Document(text="Shared handbook about sailing.", source="handbook.md"),
                              Document(text="共享的退货政策：三十天。", source="policy.md")])
    service.ingest_document("Alice's private sailing notes.", source="notes.md", user_id="alice")
    assert [d["source"] for d in service.list_documents()] == ["handbook.md", "policy.md"]
    assert [d["source"] for d in service.list_documents("alice")] == ["notes.md"]
    shared_ids = service.list_documents()[0]["ids"]

    # a user cannot reach shared documents: ~shared is not a user id, and their ids are not the user's
    with pytest.raises(InvalidTenantError, match="mneme documents"):
        service.delete("~shared", shared_ids)
    assert service.delete("alice", shared_ids) == 0

    with pytest.raises(InvalidInputError, match="no document 'nope.md'"):
        service.delete_documents(["handbook.md", "nope.md"])
    assert len(service.list_documents()) == 2  # nothing deleted on an unknown source

    assert service.delete_documents(["handbook.md"]) == {"handbook.md": 1}
    assert [d["source"] for d in service.list_documents()] == ["policy.md"]
    assert not [h for h in service.recall("bob", "sailing handbook") if h.metadata.get("source") == "handbook.md"]
    assert [h.metadata["source"] for h in service.recall("alice", "sailing notes")][:1] == ["notes.md"]
    assert service.delete_documents(["notes.md"], user_id="alice") == {"notes.md": 1}
    assert service.list_documents("alice") == []
