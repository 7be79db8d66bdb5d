"""Work beside a recall (memory/overlap.py): same results as inline, bounded, never queued, errors kept."""

from __future__ import annotations

import threading

import pytest

from mneme.embeddings import load_embedder
from mneme.memory import overlap
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.overlap import Beside
from mneme.memory.ranking import RecallOptions
from mneme.memory.service import MemoryService


@pytest.fixture(autouse=True)
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlap, "CORES", 2)  # as here, whatever machine runs the tests


def test_the_work_runs_on_a_helper_and_its_result_comes_back() -> None:
    caller = threading.get_ident()
    side = Beside(lambda: (threading.get_ident(), "北京"))
    ident, value = side.result()
    assert value == "北京" and ident != caller and not side.inline


def test_an_exception_waits_for_result_and_wait_never_raises() -> None:
    def boom() -> None:
        raise ValueError("关键词索引坏了")

    side = Beside(boom)
    side.wait()  # finished, and it did not raise here
    with pytest.raises(ValueError, match="关键词索引坏了"):
        side.result()


def test_when_every_helper_is_busy_the_work_runs_inline_instead_of_queueing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlap, "WORKERS", 2)
    release, started = threading.Event(), threading.Semaphore(0)

    def hold() -> str:
        started.release()
        release.wait(10)
        return "held"

    busy = [Beside(hold) for _ in range(2)]
    for _ in busy:
        assert started.acquire(timeout=10)
    caller = threading.get_ident()
    extra = Beside(lambda: threading.get_ident())
    assert extra.inline and extra.result() == caller  # ran at once, on the caller's thread
    release.set()
    assert [b.result() for b in busy] == ["held", "held"]
    after = Beside(lambda: threading.get_ident())  # helpers free again
    assert not after.inline and after.result() != caller


TURNS = [
    ("我上周去杭州出差，顺便看了西湖。", "西湖很美。"),
    ("I adopted a golden retriever named Biscuit last spring.", "Lovely name!"),
    ("我女儿下个月要参加钢琴考级，每天练两个小时。", "祝她顺利。"),
    ("My sister works as a nurse in Berlin.", "That is demanding work."),
    ("昨天我把方案交给了领导，他说下周给反馈。", "希望一切顺利。"),
]


def test_recall_with_the_keyword_channel_beside_equals_recall_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    service = MemoryService(InProcessStore(load_embedder("use-m3")), keyword=KeywordIndex(None),
                            clock=lambda: 1_700_000_000.0)
    for i, (user, reply) in enumerate(TURNS):
        service.remember_turn("alice", user_text=user, assistant_text=reply, now=1_700_000_000.0 - 3600 * i)
    opts = RecallOptions(k=4, reinforce=False)
    queries = ["我去杭州看了什么？", "What is my dog called?", "领导什么时候给反馈", "Where does my sister work?"]
    beside = [[(it.id, it.score) for it in service.recall("alice", q, options=opts)] for q in queries]
    monkeypatch.setattr(overlap, "WORKERS", 0)  # every recall's keyword channel inline, as before
    inline = [[(it.id, it.score) for it in service.recall("alice", q, options=opts)] for q in queries]
    assert beside == inline
    assert all(beside)  # each query found something: the comparison is not of empty lists


def test_the_work_sees_the_callers_context() -> None:
    import contextvars

    run: contextvars.ContextVar[str] = contextvars.ContextVar("run", default="none")
    token = run.set("用户甲的这次运行")
    try:
        side = Beside(lambda: run.get())
        assert not side.inline and side.result() == "用户甲的这次运行"
    finally:
        run.reset(token)


def test_a_forked_child_gets_helpers_of_its_own() -> None:
    import os

    assert Beside(lambda: 1).result() == 1  # the parent's pool exists (and its threads do not fork)
    pid = os.fork()
    if pid == 0:  # the child: work beside must run, not wait for the parent's threads
        import signal

        signal.alarm(10)  # a child that would wait for ever is killed instead (the test then fails)
        code = 0
        try:
            side = Beside(lambda: "子进程")
            code = 0 if side.result() == "子进程" and not side.inline else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_work_runs_beside_only_while_a_core_is_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    # a loaded server has no core to spare: running beside would only cost CPU there (memory/overlap.py)
    monkeypatch.setattr(overlap, "CORES", 2)
    caller = threading.get_ident()
    with overlap.working():
        alone = Beside(lambda: threading.get_ident())
        with overlap.working():  # another recall (or a batch write) in flight in this process
            crowded = Beside(lambda: threading.get_ident())
    assert not alone.inline and alone.result() != caller
    assert crowded.inline and crowded.result() == caller
    monkeypatch.setattr(overlap, "CORES", 1)  # one core: never beside
    assert Beside(lambda: 0).inline


def test_a_heavy_scan_takes_a_second_thread_only_while_a_core_is_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from mneme.memory import vector_cache

    monkeypatch.setattr(overlap, "CORES", 2)
    with overlap.working():
        alone = overlap.spare_threads()
        with overlap.working():  # another recall in flight: the second core is taken
            crowded = overlap.spare_threads()
    assert (alone, crowded) == (2, 1)
    monkeypatch.setattr(overlap, "CORES", 1)
    assert overlap.spare_threads() == 1
    # the scan's integers are the same with two threads as with one (and as numpy's)
    monkeypatch.setattr(overlap, "CORES", 2)
    rng = np.random.default_rng(3)
    quant = rng.integers(-127, 128, size=(vector_cache.SPLIT_ROWS + 7, 64), dtype=np.int8)
    query = rng.integers(-127, 128, size=64, dtype=np.int8)
    want = quant.astype(np.int64) @ query.astype(np.int64)
    with overlap.working():
        assert np.array_equal(vector_cache.int8_scores(quant, query), want)
    with overlap.working(), overlap.working():
        assert np.array_equal(vector_cache.int8_scores(quant, query), want)
