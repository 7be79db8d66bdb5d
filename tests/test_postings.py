"""A large tenant's keyword search over cached posting arrays equals the SQL path, through every write."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mneme.errors import InvalidInputError
from mneme.memory import postings
from mneme.memory.keyword import KeywordEntry, KeywordIndex

WORDS = ["coffee", "tea", "hiking", "Berlin", "nurse", "guitar", "dentist", "marathon", "budget", "camera",
         "咖啡", "绿茶", "爬山", "柏林", "护士", "吉他", "牙医", "马拉松", "预算", "相机", "猫", "周末"]
KINDS = ["episodic", "fact", "preference", "summary"]
TENANTS = ["alice", "张三", "bob"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))


def _entries(rng: random.Random, n: int, start: int = 0) -> list[KeywordEntry]:
    return [KeywordEntry(f"e{start + i}", rng.choice(TENANTS), rng.choice(KINDS), _text(rng), rng.random() < 0.1)
            for i in range(n)]


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """The same scores rank by rank, and the same ids above the last score (rows tied at the cut may differ:
    SQL returns ties in no set order)."""
    assert [round(s, 9) for _, s in got] == [round(s, 9) for _, s in want]
    if want:
        last = want[-1][1]
        assert {i for i, s in got if s > last + 1e-9} == {i for i, s in want if s > last + 1e-9}


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An index searching cached postings (every tenant counts as large) and one searching in SQL, one file."""
    monkeypatch.setattr(postings, "MIN_DOCS", 1)
    cached = KeywordIndex(tmp_path / "kw.sqlite3")
    plain = KeywordIndex(tmp_path / "kw.sqlite3", cached_postings=0)
    yield cached, plain
    plain.close()
    cached.close()


def _check(cached: KeywordIndex, plain: KeywordIndex, rng: random.Random, queries: int = 25) -> None:
    for _ in range(queries):
        query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        user = rng.choice(TENANTS)
        kinds = rng.choice([None, KINDS, ["fact"], ["episodic", "summary"]])
        archived = rng.choice([False, True, None])
        k = rng.choice([1, 5, 40])
        found: dict[str, str] = {}
        got = cached.search(user, query, kinds=kinds, k=k, archived=archived, kinds_found=found)
        found_plain: dict[str, str] = {}
        want = plain.search(user, query, kinds=kinds, k=k, archived=archived, kinds_found=found_plain)
        _same(got, want)
        owned = {e for e in cached.ids(user)}
        assert all(i in owned for i, _ in got)  # only the searching tenant's entries, ever
        # each hit's kind comes with it, as kinds_of reads it (both paths)
        assert found == cached.kinds_of([i for i, _ in got]) and set(found) == {i for i, _ in got}
        assert found_plain == plain.kinds_of([i for i, _ in want]) and set(found_plain) == {i for i, _ in want}
        assert kinds is None or set(found.values()) <= set(kinds)


@pytest.mark.parametrize("budget", [5, 3_000])
def test_cached_postings_rank_like_sql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    monkeypatch.setattr(postings, "MIN_DOCS", 1)
    cached = KeywordIndex(tmp_path / "kw.sqlite3", posting_budget=budget)
    plain = KeywordIndex(tmp_path / "kw.sqlite3", posting_budget=budget, cached_postings=0)
    rng = random.Random(budget)
    cached.add(_entries(rng, 250))
    _check(cached, plain, rng, queries=40)  # budget 5: the rarest-term-alone and pruned paths too
    assert len(cached._postings) == len(TENANTS)


def test_cached_postings_follow_own_and_foreign_writes(pair: tuple[KeywordIndex, KeywordIndex]) -> None:
    cached, plain = pair
    rng = random.Random(3)
    cached.add(_entries(rng, 300))
    _check(cached, plain, rng)
    cached.add(_entries(rng, 50, start=280))  # new ids and replaced ones (e280..e299)
    _check(cached, plain, rng)
    cached.delete([f"e{i}" for i in range(0, 300, 7)])
    cached.set_archived([f"e{i}" for i in range(1, 300, 5)], True)
    _check(cached, plain, rng)
    cached.delete_user("bob")
    _check(cached, plain, rng)
    cached.rebuild(_entries(rng, 80, start=1000), user_id=None)
    _check(cached, plain, rng)
    held = len(cached._postings)
    plain.add([KeywordEntry("x1", "alice", "fact", "咖啡 柏林 guitar")])  # another connection: data_version moves
    _check(cached, plain, rng)
    assert held > 0 and "x1" in [i for i, _ in cached.search("alice", "咖啡 柏林 guitar", k=3)]


def test_a_write_rolled_back_leaves_the_cache_exact(pair: tuple[KeywordIndex, KeywordIndex]) -> None:
    cached, plain = pair
    rng = random.Random(4)
    cached.add([KeywordEntry(f"a{i}", "alice", "fact", _text(rng)) for i in range(600)])
    _check(cached, plain, rng)
    batch = [KeywordEntry(f"a{i}", "alice", "fact", "马拉松 马拉松 camera") for i in range(600)]  # > one chunk
    with pytest.raises(InvalidInputError):
        cached.rebuild([*batch, KeywordEntry("b1", "bob", "fact", "tea")], user_id="alice")
    _check(cached, plain, rng)
    assert cached.count("alice") == 600 and cached.search("alice", "马拉松 camera", k=600) == \
        plain.search("alice", "马拉松 camera", k=600)


def test_a_tenant_too_big_for_the_cache_is_searched_in_sql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postings, "MIN_DOCS", 1)
    small = KeywordIndex(tmp_path / "kw.sqlite3", cached_postings=50)
    plain = KeywordIndex(tmp_path / "kw.sqlite3", cached_postings=0)
    rng = random.Random(5)
    small.add([KeywordEntry(f"a{i}", "alice", "fact", _text(rng)) for i in range(100)])
    small.add([KeywordEntry("b1", "bob", "fact", "tea 绿茶")])
    _check(small, plain, rng)
    alice = small._conn.execute("SELECT tid FROM kw_tenants WHERE user_id = 'alice'").fetchone()[0]
    assert alice not in small._postings and alice in small._postings.too_big  # alice's 100+ postings: SQL
