import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mneme.errors import InvalidInputError
from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.forgetting import (
    DAY,
    Fade,
    ForgettingPolicy,
    combine,
    decide,
    reinforce,
    retention,
    strength,
)

NOW = 1_700_000_000.0
P = ForgettingPolicy()


def rec(kind=Kind.EPISODIC, *, age_days=0.0, last_days=None, importance=0.3, access=0, archived=False, text="t"):
    return MemoryRecord(
        id="m",
        user_id="u",
        kind=kind,
        text=text,
        created_at=NOW - age_days * DAY,
        last_accessed=None if last_days is None else NOW - last_days * DAY,
        importance=importance,
        access_count=access,
        archived=archived,
    )


def test_strength_grows_with_importance_and_recalls_and_is_bounded():
    assert strength(0.0, 0) == pytest.approx(30.0)
    assert strength(1.0, 0) == pytest.approx(60.0)
    assert strength(0.5, 2) == pytest.approx(30 * 1.5 * 1.5**2)
    assert strength(0.5, 10**9) == P.max_strength_days  # no overflow
    assert strength(0.2, 3) > strength(0.2, 2) > strength(0.1, 2)


def test_strength_tolerates_bad_inputs():
    assert strength(float("nan"), 0) == strength(0.5, 0)
    assert strength(7.0, -3) == strength(1.0, 0)


def test_retention_is_the_ebbinghaus_curve():
    r = rec(age_days=30, importance=0.0)
    assert retention(r, NOW) == pytest.approx(math.exp(-1))
    assert retention(rec(age_days=0), NOW) == 1.0


def test_retention_counts_from_last_access_when_recalled():
    old_but_recent = rec(age_days=300, last_days=1, importance=0.0)
    assert retention(old_but_recent, NOW) == pytest.approx(math.exp(-1 / 30))


def test_retention_for_future_and_missing_times_is_one():
    assert retention(rec(age_days=-5), NOW) == 1.0
    assert retention({"created_at": None}, NOW) == 1.0
    assert retention({"created_at": float("nan")}, NOW) == 1.0


def test_retention_accepts_a_mapping():
    fields = {"created_at": NOW - 60 * DAY, "importance": 0.0, "access_count": 0}
    assert retention(fields, NOW) == pytest.approx(math.exp(-2))


@given(
    age=st.floats(min_value=-1e9, max_value=1e10, allow_nan=False),
    imp=st.floats(min_value=-5, max_value=5, allow_nan=False),
    acc=st.integers(min_value=-5, max_value=10**6),
)
def test_retention_is_always_in_unit_interval(age, imp, acc):
    r = retention({"created_at": NOW - age, "importance": imp, "access_count": acc}, NOW)
    assert 0.0 <= r <= 1.0


def test_retention_decays_monotonically():
    values = [retention(rec(age_days=d), NOW) for d in (0, 1, 10, 100, 1000)]
    assert values == sorted(values, reverse=True)
    assert values[-1] < values[0]


_rel = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False)
_ret = st.floats(min_value=0.0, max_value=1.0)
_w = st.floats(min_value=0.0, max_value=0.9)


@given(rel_b=_rel, extra=st.floats(min_value=0.0, max_value=10.0), ret_a=_ret, ret_b=_ret, w=_w)
def test_a_clearly_more_relevant_memory_always_wins(rel_b, extra, ret_a, ret_b, w):
    policy = ForgettingPolicy(weight=w)
    # Just beyond the stated margin (a hair more, so float rounding cannot decide the test).
    rel_a = rel_b * (1 + policy.dominance_margin * (1 + 1e-9) + 1e-9) * (1 + extra)
    assert combine(rel_a, ret_a, policy) > combine(rel_b, ret_b, policy)


@given(rel=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), r1=_ret, r2=_ret)
def test_combine_is_monotone_in_retention_and_bounded(rel, r1, r2):
    lo, hi = sorted((r1, r2))
    assert combine(rel, lo, P) <= combine(rel, hi, P)
    assert rel - P.weight * abs(rel) - 1e-9 <= combine(rel, lo, P) <= rel + 1e-9


def test_retention_breaks_near_ties():
    assert combine(0.80, 0.9) > combine(0.81, 0.1)


def test_retention_can_not_hide_a_clearly_relevant_memory():
    assert combine(0.9, 0.0) > combine(0.5, 1.0)


def test_policy_validation():
    with pytest.raises(InvalidInputError):
        ForgettingPolicy(weight=1.0)
    with pytest.raises(InvalidInputError):
        ForgettingPolicy(base_strength_days=0)
    with pytest.raises(InvalidInputError):
        ForgettingPolicy(reinforcement_factor=-1)


def test_reinforce_counts_a_recall_and_restarts_the_clock():
    r = rec(age_days=50, importance=0.0)
    before = retention(r, NOW)
    after = reinforce(r, NOW)
    assert after.access_count == 1 and after.last_accessed == NOW
    assert retention(after, NOW) == 1.0 > before
    # A reinforced memory also fades more slowly afterwards.
    assert retention(after, NOW + 30 * DAY) > retention(rec(age_days=30, importance=0.0), NOW)
    assert r.access_count == 0  # the original is untouched


def test_fresh_memories_are_kept():
    assert decide(rec(age_days=1), NOW) == "keep"


def test_faded_unimportant_memory_is_archived():
    # importance 0.3 -> S = 39 days; R < 0.1 after ~90 days. At 95 days idle it is below 0.1 but above 0.05.
    r = rec(age_days=95, importance=0.3)
    assert 0.05 < retention(r, NOW) < 0.1
    assert decide(r, NOW) == "archive"


def test_long_idle_episodic_memory_expires():
    r = rec(age_days=200, importance=0.3)
    assert decide(r, NOW) == "expire"


def test_recall_protects_from_expiry():
    r = rec(age_days=200, last_days=5, importance=0.3, access=3)
    assert decide(r, NOW) == "keep"


@pytest.mark.parametrize("kind", [Kind.FACT, Kind.PREFERENCE, Kind.SUMMARY])
def test_facts_and_preferences_never_expire_by_time(kind):
    r = rec(kind, age_days=5000, importance=0.1)
    assert decide(r, NOW) == "archive"
    assert decide(rec(kind, age_days=5000, importance=0.1, archived=True), NOW) == "keep"


def test_important_memories_are_kept_forever():
    assert decide(rec(age_days=5000, importance=0.9), NOW) == "keep"


def test_documents_are_never_forgotten():
    assert decide(rec(Kind.DOCUMENT, age_days=5000, importance=0.0), NOW) == "keep"


def test_archived_episodic_expires_after_archive_ttl():
    assert decide(rec(age_days=200, importance=0.3, archived=True), NOW) == "keep"
    assert decide(rec(age_days=400, importance=0.3, archived=True), NOW) == "expire"


def test_expiry_needs_the_ttl_even_when_retention_is_tiny():
    fast = ForgettingPolicy(base_strength_days=1.0, importance_factor=0.0)
    r = rec(age_days=30, importance=0.0)
    assert retention(r, NOW, fast) < fast.expire_threshold
    assert decide(r, NOW, fast) == "archive"  # 30 days idle < 90-day episodic TTL


def test_chinese_memories_follow_the_same_rules():
    r = rec(age_days=200, importance=0.3, text="上周和小王去爬山")
    assert decide(r, NOW) == "expire"


POLICIES = [P, ForgettingPolicy(base_strength_days=1e-300, importance_factor=1e300, reinforcement_factor=10.0),
            ForgettingPolicy(base_strength_days=2.0, max_strength_days=float("inf"), importance_factor=0.0),
            ForgettingPolicy(max_strength_days=float("nan"))]


@given(
    age=st.floats(min_value=-1e12, max_value=1e12),
    last=st.one_of(st.none(), st.floats(min_value=-1e12, max_value=1e12)),
    imp=st.one_of(st.floats(), st.integers(min_value=-3, max_value=3)),
    acc=st.one_of(st.integers(min_value=-5, max_value=10**6), st.booleans()),
    policy=st.sampled_from(POLICIES),
)
@example(age=100 * DAY, last=None, imp=float("nan"), acc=0, policy=P)  # NaN importance: the default 0.5
@example(age=100 * DAY, last=3 * DAY, imp=7.5, acc=-2, policy=P)  # out of range: clamped
@example(age=100 * DAY, last=None, imp=0.5, acc=3, policy=POLICIES[3])  # NaN strength bound: R = 1
@settings(max_examples=300)
def test_a_record_and_a_mapping_of_its_fields_are_retained_alike(age, last, imp, acc, policy):
    # records take a shorter path (recall's hot loop); the value must be the mapping's, to the last bit
    record = MemoryRecord(id="m", user_id="u", kind=Kind.EPISODIC, text="我昨天去了杭州", created_at=NOW - age,
                          last_accessed=None if last is None else NOW - last, importance=imp, access_count=acc)
    fields = {"created_at": record.created_at, "last_accessed": record.last_accessed, "importance": imp,
              "access_count": acc}
    got, want = retention(record, NOW, policy), retention(fields, NOW, policy)
    assert got == want or (math.isnan(got) and math.isnan(want))
    # rank's loop (Fade: the policy's constants computed once per recall) gives the very same values
    fade = Fade(policy, NOW)
    faded = fade.retention(record)
    assert faded == want or (math.isnan(faded) and math.isnan(want))
