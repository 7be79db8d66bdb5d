"""Evaluation: the LoCoMo and MemoryBank loaders, the replay + recall harness, and the eval/bench commands.

The data files are tiny hand-made ones in each format (two conversations, a few turns, questions with
evidence). The datasets' own extractions (LoCoMo ``observation`` / ``session_summary`` /
``event_summary``, MemoryBank's summaries and personalities) hold poison text that must never reach memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mneme.clock import FixedClock
from mneme.errors import InvalidInputError
from mneme.evaluation.datasets import load_locomo, load_memorybank, parse_locomo_datetime
from mneme.evaluation.harness import evaluate, percentile, replay
from mneme.memory.fusion import count_tokens
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.service import MemoryService, RecallOptions
from mneme.testing import FakeEmbeddings

MNEME = str(Path(sys.executable).with_name("mneme"))
POISON = "POISONED-EXTRACTION"

LOCOMO: list[dict[str, Any]] = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group yesterday."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "That's great, Caroline! How was it?"},
                {"speaker": "Caroline", "dia_id": "D1:3", "text": "I adopted a tortoise named Shelly last week."},
                {"speaker": "Melanie", "dia_id": "D1:4", "text": "Aww, tortoises live so long!"},
                {"speaker": "Caroline", "dia_id": "D1:5", "text": "See you soon."},
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Melanie", "dia_id": "D2:1", "text": "I painted a sunrise over the lake.",
                 "blip_caption": "a painting of a sunrise"},
                {"speaker": "Caroline", "dia_id": "D2:2", "text": "Beautiful colours!"},
            ],
        },
        "qa": [
            {"question": "What is the name of Caroline's tortoise?", "answer": "Shelly", "evidence": ["D1:3"],
             "category": 4},
            {"question": "What did Melanie paint?", "answer": "a sunrise", "evidence": ["D2:1"], "category": 1},
            {"question": "What is Melanie's tortoise called?", "adversarial_answer": "Shelly",
             "evidence": ["D1:3"], "category": 5},
        ],
        "observation": {"session_1_observation": {"Caroline": [[f"{POISON} Caroline is an astronaut", "D1:1"]]}},
        "session_summary": {"session_1_summary": f"{POISON} they argued about taxes"},
        "event_summary": {"events_session_1": {"Caroline": [f"{POISON} moved to Mars"]}},
    },
    {
        "sample_id": "conv-2",
        "conversation": {
            "speaker_a": "Jon", "speaker_b": "Gina",
            "session_1_date_time": "8:05 pm on 2 March, 2023",
            "session_1": [
                {"speaker": "Jon", "dia_id": "D1:1", "text": "I lost my bank job, so I am opening a dance studio."},
                {"speaker": "Gina", "dia_id": "D1:2", "text": "Wow, a dance studio! Where?"},
                {"speaker": "Jon", "dia_id": "D1:3", "text": "In downtown Lisbon, near the river."},
            ],
        },
        "qa": [
            {"question": "Where is Jon opening his dance studio?", "answer": "Lisbon", "evidence": ["D1:3"],
             "category": 4},
            {"question": "Why did Jon open a studio?", "answer": "lost his job",
             "evidence": ["D1:1", "D1:3", "not-an-id"], "category": 1},
        ],
        "session_summary": {"session_1_summary": f"{POISON} Jon is a pilot"},
    },
]

MB_HISTORY: dict[str, Any] = {
    "Zhang San": {
        "name": "Zhang San",
        "personality": f"{POISON} an introvert",
        "summary": {"2023-04-27": f"{POISON} 张三想当宇航员"},
        "history": {
            "2023-04-27": [
                {"query": "我最近在学弹吉他，每天练一个小时。", "response": "坚持下去！"},
                {"query": "我养了一只叫年糕的柯基。", "response": "好可爱的名字！"},
            ],
            "2023-04-28": [
                {"query": "今天去杭州出差了，住在西湖边。", "response": "杭州很美。"},
            ],
        },
    },
    "Alice": {
        "name": "Alice",
        "overall_history": f"{POISON} Alice summary",
        "history": {
            "2023-05-01": [
                {"query": "I started learning Portuguese for my trip to Brazil.", "response": "Boa sorte!"},
                {"query": "My favourite food is mushroom risotto.", "response": "Yum."},
            ],
        },
    },
}
MB_QA: list[dict[str, Any]] = [
    {"user": "Zhang San", "question": "我的狗叫什么名字？", "answer": "年糕",
     "evidence": [{"date": "2023-04-27", "turn": 1}], "category": "fact"},
    {"user": "Zhang San", "question": "我在学什么乐器？", "answer": "吉他",
     "evidence": [{"date": "2023-04-27", "turn": 0}], "category": "hobby"},
    {"user": "Alice", "question": "What language am I learning?", "answer": "Portuguese",
     "evidence": [{"date": "2023-05-01", "turn": 0}], "category": "fact"},
    {"user": "Alice", "question": "What is my favourite food?", "answer": "mushroom risotto",
     "evidence": [{"date": "2023-05-01", "turn": 1}], "category": "fact"},
]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(LOCOMO, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def memorybank_files(tmp_path: Path) -> tuple[Path, Path]:
    history, qa = tmp_path / "history.json", tmp_path / "qa.json"
    history.write_text(json.dumps(MB_HISTORY, ensure_ascii=False), encoding="utf-8")
    qa.write_text(json.dumps(MB_QA, ensure_ascii=False), encoding="utf-8")
    return history, qa


def fresh_service() -> MemoryService:
    return MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(0))


def all_text(service: MemoryService, tenants: list[str]) -> str:
    return "\n".join(r.text + json.dumps(r.metadata, ensure_ascii=False)
                     for t in tenants for r in service.store.scan(t, kinds=None, archived=None))


# -- loaders -------------------------------------------------------------------------------------------


def test_parse_locomo_datetime() -> None:
    assert parse_locomo_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()
    assert parse_locomo_datetime("12:05 am on 1 Jan, 2024") == datetime(2024, 1, 1, 0, 5, tzinfo=UTC).timestamp()
    assert parse_locomo_datetime("12:30 pm on 27 June 2023") == datetime(2023, 6, 27, 12, 30, tzinfo=UTC).timestamp()
    with pytest.raises(InvalidInputError):
        parse_locomo_datetime("yesterday evening")


def test_load_locomo(locomo_file: Path) -> None:
    conv1, conv2 = load_locomo(locomo_file)
    assert (conv1.tenant, conv2.tenant) == ("conv-1", "conv-2")
    ex = conv1.exchanges
    assert [e.turn_ids for e in ex] == [
        ["conv-1/D1:1", "conv-1/D1:2"], ["conv-1/D1:3", "conv-1/D1:4"], ["conv-1/D1:5"],
        ["conv-1/D2:1", "conv-1/D2:2"]]
    assert ex[0].user_text.startswith("Caroline: Hey Mel!") and ex[0].assistant_text.startswith("Melanie: ")
    start1 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()
    assert start1 <= ex[0].timestamp < ex[1].timestamp < ex[2].timestamp < start1 + 3600
    assert ex[3].timestamp >= datetime(2023, 6, 27, 10, 37, tzinfo=UTC).timestamp()
    assert {e.thread_id for e in ex} == {"conv-1-s1", "conv-1-s2"}
    assert "a painting of a sunrise" in ex[3].user_text  # shared photos are part of what was said
    assert conv1.asked_at > max(e.timestamp for e in ex)
    # category 5 (adversarial) is left out by default, kept when asked for
    assert [q.category for q in conv1.questions] == ["single-hop", "multi-hop"]
    assert conv1.questions[0].evidence == ["conv-1/D1:3"] and conv1.questions[0].answer == "Shelly"
    assert conv2.questions[1].evidence == ["conv-2/D1:1", "conv-2/D1:3"]  # malformed ids dropped
    with_adv = load_locomo(locomo_file, include_adversarial=True)[0]
    assert [q.category for q in with_adv.questions][-1] == "adversarial"
    loaded = repr(load_locomo(locomo_file, include_adversarial=True))
    assert POISON not in loaded  # the dataset's own extractions are never read


def test_load_memorybank(memorybank_files: tuple[Path, Path]) -> None:
    zhang, alice = load_memorybank(*memorybank_files)
    assert (zhang.tenant, alice.tenant) == ("mb-0", "mb-1")
    assert [e.turn_ids for e in zhang.exchanges] == [["mb-0/2023-04-27#0"], ["mb-0/2023-04-27#1"],
                                                     ["mb-0/2023-04-28#0"]]
    assert zhang.exchanges[1].user_text == "我养了一只叫年糕的柯基。"
    assert zhang.exchanges[1].assistant_text == "好可爱的名字！"
    day = datetime(2023, 4, 27, tzinfo=UTC).timestamp()
    assert day < zhang.exchanges[0].timestamp < zhang.exchanges[1].timestamp < day + 86_400
    assert zhang.exchanges[2].thread_id == "mb-0-2023-04-28"
    assert [(q.text, q.evidence, q.category) for q in zhang.questions] == [
        ("我的狗叫什么名字？", ["mb-0/2023-04-27#1"], "fact"), ("我在学什么乐器？", ["mb-0/2023-04-27#0"], "hobby")]
    assert len(alice.questions) == 2
    assert POISON not in repr([zhang, alice])


def test_memorybank_question_for_unknown_user_is_an_error(tmp_path: Path,
                                                         memorybank_files: tuple[Path, Path]) -> None:
    qa = tmp_path / "bad_qa.json"
    qa.write_text(json.dumps([{"user": "Nobody", "question": "?", "evidence": []}]), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="Nobody"):
        load_memorybank(memorybank_files[0], qa)


# -- harness -------------------------------------------------------------------------------------------


def test_replay_stores_only_the_dialogue(locomo_file: Path, memorybank_files: tuple[Path, Path]) -> None:
    service = fresh_service()
    conversations = load_locomo(locomo_file, include_adversarial=True) + load_memorybank(*memorybank_files)
    writes = replay(service, conversations)
    assert writes["turns"] == 4 + 2 + 3 + 2
    tenants = [c.tenant for c in conversations]
    text = all_text(service, tenants)
    assert "tortoise named Shelly" in text and "年糕" in text and "mushroom risotto" in text
    assert POISON not in text and "astronaut" not in text and "宇航员" not in text
    # provenance: every record points at turns of its own conversation, stamped with the data's time
    for conv in conversations:
        records = list(service.store.scan(conv.tenant, kinds=None))
        assert records and all(t.startswith(f"{conv.tenant}/") for r in records for t in r.source_turns)
        times = {e.timestamp for e in conv.exchanges}
        assert all(r.created_at in times for r in records)


def test_evaluate_reports_recall_latency_tokens_and_isolation(locomo_file: Path,
                                                              memorybank_files: tuple[Path, Path]) -> None:
    service = fresh_service()
    conversations = load_locomo(locomo_file) + load_memorybank(*memorybank_files)
    replay(service, conversations)
    result = evaluate(service, conversations, ks=(1, 5))
    assert {"recall", "by_category", "n_questions", "latency_ms", "context_tokens_mean",
            "isolation_violations"} <= set(result)
    assert result["n_questions"] == 2 + 2 + 4
    assert set(result["recall"]) == {"1", "5"}
    assert result["recall"]["5"] == 1.0  # every answer is in an obviously matching turn
    assert 0.0 < result["recall"]["1"] <= result["recall"]["5"]
    single = result["by_category"]["single-hop"]
    assert single["n"] == 2 and single["recall"]["5"] == 1.0
    assert result["by_category"]["hobby"]["n"] == 1 and "adversarial" not in result["by_category"]
    assert sum(c["n"] for c in result["by_category"].values()) == result["n_questions"]
    assert set(result["latency_ms"]) == {"p50", "p95"}
    assert 0 < result["latency_ms"]["p50"] <= result["latency_ms"]["p95"]
    assert 0 < result["context_tokens_mean"]["1"] < result["context_tokens_mean"]["5"]
    assert result["isolation_violations"] == 0
    # evaluation asks without reinforcing: the store is as the replay left it
    assert all(r.access_count == 0 for c in conversations for r in service.store.scan(c.tenant, kinds=None))


def test_evaluate_recall_counts_partial_evidence(locomo_file: Path) -> None:
    service = fresh_service()
    (conv,) = [c for c in load_locomo(locomo_file) if c.tenant == "conv-2"]
    replay(service, [conv])
    result = evaluate(service, [conv], ks=(1,))
    # "Why did Jon open a studio?": D1:1 and D1:3 live in two different exchanges; k=1 sees one of them
    assert result["by_category"]["multi-hop"]["recall"]["1"] == 0.5


def test_evaluate_recall_at_budget_fills_the_budget_in_rank_order(locomo_file: Path) -> None:
    service = fresh_service()
    (conv,) = [c for c in load_locomo(locomo_file) if c.tenant == "conv-2"]
    replay(service, [conv])
    (why,) = [q for q in conv.questions if q.text.startswith("Why")]
    ranked = service.recall(conv.tenant, why.text, options=RecallOptions(k=25, reinforce=False,
                                                                        include_documents=False),
                            now=conv.asked_at)
    first = count_tokens(ranked[0].text)
    everything = sum(count_tokens(it.text) for it in ranked)
    result = evaluate(service, [conv], ks=(1, 25), budgets=(1, first, everything))
    multi = result["by_category"]["multi-hop"]["recall_at_budget"]
    # 1 token fits nothing; the first item's size fits it alone (one of the two evidence turns' exchanges);
    # the whole list's size is recall@25
    assert multi == {"1": 0.0, str(first): 0.5, str(everything): result["by_category"]["multi-hop"]["recall"]["25"]}
    assert result["budget_tokens_mean"]["1"] == 0.0
    assert set(result["recall_at_budget"]) == {"1", str(first), str(everything)}
    assert "recall_at_budget" not in evaluate(service, [conv], ks=(1,))


def test_percentile() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([0.0, 10.0], 95) == pytest.approx(9.5)


# -- commands ------------------------------------------------------------------------------------------


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    return {**env, "MNEME_DATA_DIR": str(tmp_path / "data")}


@pytest.mark.slow
def test_eval_memorybank_command_writes_json(tmp_path: Path, memorybank_files: tuple[Path, Path]) -> None:
    out = tmp_path / "result.json"
    proc = subprocess.run([MNEME, "eval", "memorybank", *map(str, memorybank_files), "--store", "memory",
                           "--k", "1,5", "--json", str(out)],
                          env=clean_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result == json.loads(proc.stdout)
    assert result["dataset"] == "memorybank" and result["conversations"] == 2
    assert result["writes"]["turns"] == 5 and result["n_questions"] == 4
    assert result["recall"]["5"] == 1.0 and result["isolation_violations"] == 0
    assert set(result["recall_at_budget"]) == {"250", "500", "1000"}  # on by default
    assert result["recall_at_budget"]["1000"] == 1.0
    assert set(result["by_category"]) == {"fact", "hobby"}
    assert result["latency_ms"]["p95"] >= result["latency_ms"]["p50"] > 0
    assert not (tmp_path / "data").exists()  # evaluation never touches the user's data dir
    # not a terminal: no progress bar, one summary line per phase on stderr
    assert "eval memorybank: replay: 5 turns in " in proc.stderr and "\r" not in proc.stderr
    assert "eval memorybank: recall: 4 questions in " in proc.stderr


@pytest.mark.slow
def test_eval_locomo_command_on_embedded_chroma(tmp_path: Path, locomo_file: Path) -> None:
    proc = subprocess.run([MNEME, "eval", "locomo", str(locomo_file), "--k", "5", "--no-forgetting"],
                          env=clean_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["n_questions"] == 4 and result["forgetting"] is False
    assert result["recall"]["5"] == 1.0 and result["isolation_violations"] == 0


@pytest.mark.slow
def test_bench_retrieval_command_prints_figures(tmp_path: Path) -> None:
    proc = subprocess.run([MNEME, "bench", "retrieval", "--memories", "300", "--mode", "memory",
                           "--queries", "20"], env=clean_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["memories"] == 300 and result["queries"] == 20 and result["mode"] == "memory"
    assert result["latency_ms"]["p95"] >= result["latency_ms"]["p50"] > 0
    assert result["ingest_per_s"] > 0 and result["peak_rss_mb"] > 0
    assert 0 < result["target_tenant_memories"] < 300
    machine = result["machine"]  # what the figures were measured on, and how busy it was
    assert machine["cpus"] == os.cpu_count() and machine["loadavg_1m"] >= 0 and machine["loadavg_1m_after"] >= 0


def test_bench_store_reports_both_modes_and_the_cost_of_another_process_write(tmp_path: Path, chroma_server) -> None:
    from mneme.evaluation.bench_store import run_store_bench

    embedded = run_store_bench(400, "embedded", tenants=10, queries=20, dim=32, workdir=tmp_path)
    server = run_store_bench(400, "server", tenants=10, queries=20, dim=32, url=chroma_server.url)
    for result in (embedded, server):
        assert result["memories"] == 400 and result["add_records_per_s"] > 0
        assert 0 < result["search_p50_ms"] <= result["search_p95_ms"] <= result["search_max_ms"]
    assert "search_after_other_process_write_p50_ms" not in embedded
    assert 0 < server["search_after_other_process_write_p50_ms"] <= server["search_after_other_process_write_p95_ms"]


@pytest.mark.slow
def test_bench_store_command_prints_json_like_the_other_benches(tmp_path: Path) -> None:
    out = tmp_path / "store.json"
    proc = subprocess.run([MNEME, "bench", "store", "--memories", "300", "--mode", "embedded", "--queries", "20",
                           "--json", str(out)], env=clean_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result == json.loads(out.read_text(encoding="utf-8"))
    assert result["mode"] == "embedded" and result["memories"] == 300 and result["queries"] == 20
    assert result["search_p95_ms"] >= result["search_p50_ms"] > 0 and result["add_records_per_s"] > 0
    assert "bench store (embedded): add: 300 memories in " in proc.stderr
