"""Maintenance (``run_gc`` and ``mneme gc``): archive faded memories, expire old episodes, keep the rest.

With importance 0.1 a memory's strength is 33 days: its retention falls below the archive threshold
(0.1) after ~76 idle days and below the expiry threshold (0.05) after ~99; episodic memories may be
deleted once idle for the 90-day TTL, facts and preferences never by age.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mneme.clock import FixedClock
from mneme.config import Settings
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.maintenance import run_gc
from mneme.memory.service import MemoryService, RecallOptions
from mneme.testing import FakeEmbeddings

DAY = 86_400.0
NOW = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
MNEME = str(Path(sys.executable).with_name("mneme"))

# id -> (kind, days since written, importance, text); the expected verdict is in the id
RECORDS = {
    "ep-faded": (Kind.EPISODIC, 80, 0.1, "we talked about the harbour cruise"),
    "ep-expired": (Kind.EPISODIC, 200, 0.1, "we talked about the tram timetable"),
    "ep-important": (Kind.EPISODIC, 1000, 0.9, "my daughter was born in the spring"),
    "ep-fresh": (Kind.EPISODIC, 2, 0.1, "we talked about the bakery on the corner"),
    "fact-old": (Kind.FACT, 1000, 0.1, "用户的血型是O型"),
    "pref-old": (Kind.PREFERENCE, 1000, 0.1, "用户喜欢喝乌龙茶"),
    "sum-old": (Kind.SUMMARY, 1000, 0.1, "用户倾诉了搬家的压力"),
}


def build(clock: FixedClock) -> MemoryService:
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=clock)
    records = [MemoryRecord(id=rid, user_id="u1", kind=kind, text=text, created_at=NOW - days * DAY,
                            importance=imp, key="blood_type" if kind == Kind.FACT else None)
               for rid, (kind, days, imp, text) in RECORDS.items()]
    records.append(MemoryRecord(id="other-expired", user_id="u2", kind=Kind.EPISODIC, created_at=NOW - 500 * DAY,
                                text="someone else's tram timetable", importance=0.1))
    service.store.add(records)
    service.ingest_document("The tram timetable changes in winter.", source="tram.md", now=NOW - 3000 * DAY)
    service.sync_keyword_index()
    return service


def live(service: MemoryService, user: str = "u1") -> set[str]:
    return {r.id for r in service.store.scan(user, kinds=None, archived=False)}


def archived(service: MemoryService, user: str = "u1") -> set[str]:
    return {r.id for r in service.store.scan(user, kinds=None, archived=True)}


@pytest.fixture
def service() -> MemoryService:
    return build(FixedClock(NOW))


def test_dry_run_reports_and_changes_nothing(service: MemoryService) -> None:
    before = (live(service), archived(service), live(service, "u2"), service.keyword.count())
    report = run_gc(service, dry_run=True)
    assert report.dry_run and report.now == NOW
    assert (report.tenants, report.scanned) == (2, 8)
    assert (report.archived, report.expired, report.kept) == (4, 2, 2)
    assert report.by_kind["episodic"] == {"archive": 1, "expire": 2, "keep": 2}
    assert report.by_kind["fact"] == report.by_kind["summary"] == {"archive": 1}
    assert (live(service), archived(service), live(service, "u2"), service.keyword.count()) == before


def test_real_run_archives_expires_and_keeps(service: MemoryService) -> None:
    report = run_gc(service)
    assert (report.archived, report.expired) == (4, 2) and not report.dry_run
    assert archived(service) == {"ep-faded", "fact-old", "pref-old", "sum-old"}
    assert live(service) == {"ep-important", "ep-fresh"}
    assert service.store.get("u1", ["ep-expired"]) == []
    assert live(service, "u2") == set() and archived(service, "u2") == set()
    assert any(r.kind == Kind.DOCUMENT for r in service.store.scan("~shared", kinds=None))  # docs untouched

    # the keyword index follows: archived items are not recalled, expired ones are gone
    assert service.keyword.ids("u1") == {"ep-faded", "fact-old", "pref-old", "ep-important", "ep-fresh", "sum-old"}
    opts = RecallOptions(k=20, include_documents=False, reinforce=False)
    recalled = {it.id for it in service.recall("u1", "harbour cruise 血型 乌龙茶 tram timetable", options=opts)}
    assert recalled.isdisjoint({"ep-faded", "fact-old", "pref-old", "ep-expired"})
    assert service.keyword.search("u1", "harbour cruise") == []
    assert service.keyword.search("u1", "harbour cruise", archived=True)[0][0] == "ep-faded"

    # archived means restorable
    assert service.store.restore("u1", ["ep-faded"]) == 1
    service.keyword.set_archived(["ep-faded"], False)
    assert service.recall("u1", "harbour cruise", options=opts)[0].id == "ep-faded"


def test_a_second_run_is_idempotent(service: MemoryService) -> None:
    run_gc(service)
    again = run_gc(service)
    assert (again.archived, again.expired) == (0, 0)


def test_facts_and_preferences_are_never_deleted_by_age(service: MemoryService) -> None:
    run_gc(service)
    decade = run_gc(service, now=NOW + 3650 * DAY)
    # the archived episode passed the archive's TTL, the fresh one faded and idled past the TTL
    assert (decade.expired, decade.archived) == (2, 0)
    assert archived(service) == {"fact-old", "pref-old", "sum-old"}
    assert live(service) == {"ep-important"}  # important memories are kept whatever their age


def test_one_user_only(service: MemoryService) -> None:
    report = run_gc(service, user_id="u2")
    assert (report.tenants, report.expired, report.archived) == (1, 1, 0)
    assert "ep-expired" in live(service) and service.store.count("u2", archived=None) == 0


def test_recall_keeps_a_memory_alive(service: MemoryService) -> None:
    service.recall("u1", "harbour cruise", options=RecallOptions(k=1), now=NOW - DAY)  # reinforced yesterday
    run_gc(service)
    assert "ep-faded" in live(service)


def test_a_new_value_for_an_archived_fact_keeps_its_history(service: MemoryService) -> None:
    service.remember_turn("u1", user_text="我住在上海", now=NOW - 1000 * DAY)
    run_gc(service)
    (old,) = [r for r in service.store.scan("u1", kinds=[Kind.FACT], archived=True) if r.key == "home_city"]
    service.remember_turn("u1", user_text="我搬到北京了", now=NOW)
    facts = [r for r in service.store.scan("u1", kinds=[Kind.FACT], archived=None) if r.key == "home_city"]
    assert [(r.id, r.archived) for r in facts] == [(old.id, False)]
    assert "北京" in facts[0].text and [h["text"] for h in facts[0].history] == ["用户住在上海"]
    # re-stating an archived value brings it back rather than being ignored as "the same value"
    service.remember_turn("u1", user_text="我住在北京", now=NOW + DAY)
    run_gc(service, now=NOW + 1000 * DAY)
    service.remember_turn("u1", user_text="我一直住在北京", now=NOW + 1001 * DAY)  # (呢 would make it a question)
    fact = service.store.get_by_key("u1", Kind.FACT, "home_city")
    assert fact is not None and not fact.archived and "北京" in fact.text
    assert fact.id in {it.id for it in service.recall("u1", "我住在哪里", options=RecallOptions(k=10))}


@pytest.mark.slow
def test_gc_cli_dry_run_lists_ids_and_reasons(tmp_path: Path) -> None:
    from mneme.embeddings import load_embedder
    from mneme.stores import open_service

    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    service = open_service(settings, embedder=load_embedder("use-m3"), clock=FixedClock(NOW))
    try:
        service.remember_turn("u1", user_text="I walked along the harbour today")
        service.remember_turn("u1", user_text="我住在上海")
        service.remember_turn("u1", user_text="Important: my daughter's birthday is on 3 March, never forget it")
        before = service.store.count("u1", kinds=None, archived=None)
    finally:
        service.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEME_"))}
    env["MNEME_DATA_DIR"] = str(data)
    proc = subprocess.run([MNEME, "gc", "--dry-run", "--now", "2030-01-01", "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["dry_run"] is True and report["now"] == "2030-01-01T00:00:00+00:00"
    assert report["tenants"] == 1 and report["scanned"] == before
    assert report["expired"] >= 1 and report["archived"] >= 1  # the walk expires, the city fact archives
    assert report["archived"] + report["expired"] + report["kept"] == before
    # every change is listed with its id, what would happen and why, times as ISO
    changes = report["changes"]
    assert len(changes) == report["archived"] + report["expired"]
    actions = {c["kind"]: c["action"] for c in changes}
    assert actions["episodic"] == "delete" and actions["fact"] == "archive"
    for change in changes:
        assert change["user_id"] == "u1" and change["id"]
        assert "retention" in change["reason"] and change["last_accessed"].startswith("2025-01-01T")
    (fact,) = [c for c in changes if c["kind"] == "fact"]
    assert fact["reason"].endswith("< 0.1")

    text = subprocess.run([MNEME, "gc", "--dry-run", "--now", "2030-01-01", "-u", "u1"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("gc (dry run) at 2030-01-01T00:00:00+00:00: 1 user(s)")
    for change in changes:  # the lines for people name the same ids and reasons
        assert change["id"] in text.stdout and change["reason"] in text.stdout

    bad = subprocess.run([MNEME, "gc", "--now", "next tuesday"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and "--now" in bad.stderr

    service = open_service(settings, embedder=load_embedder("use-m3"), clock=FixedClock(NOW))
    try:
        assert service.store.count("u1", kinds=None, archived=False) == before  # the dry run changed nothing
    finally:
        service.close()
