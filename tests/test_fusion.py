import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneme.errors import InvalidInputError
from mneme.memory.fusion import count_tokens, fit_budget, mmr, rrf, weighted_fusion


def ids(pairs):
    return [p[0] for p in pairs]


def test_rrf_rewards_agreement_between_channels():
    fused = rrf({"vector": ["a", "b", "c"], "bm25": ["b", "d", "a"]})
    assert ids(fused)[:2] == ["b", "a"]
    assert dict(fused)["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert set(ids(fused)) == {"a", "b", "c", "d"}


def test_rrf_weights_shift_the_order():
    rankings = {"vector": ["a", "b"], "bm25": ["b", "a"]}
    assert ids(rrf(rankings, weights={"vector": 2.0}))[0] == "a"
    assert ids(rrf(rankings, weights={"bm25": 2.0}))[0] == "b"


def test_rrf_zero_weight_ignores_a_channel():
    assert ids(rrf({"vector": ["a"], "bm25": ["b"]}, weights={"bm25": 0.0})) == ["a"]


def test_rrf_ties_are_broken_by_best_rank_then_first_appearance():
    # x: ranks 1 and 3; y: rank 2 twice -> 1/61 + 1/63 vs 2/62: x slightly higher anyway.
    fused = rrf({"a": ["x", "y"], "b": ["z", "y", "x"]})
    assert fused[0][0] in {"x", "y"}
    exact_tie = rrf({"a": ["p", "q"], "b": ["q", "p"]})
    assert ids(exact_tie) == ["p", "q"]  # same score and best rank: first seen wins
    assert rrf({"a": ["p", "q"], "b": ["q", "p"]}) == rrf({"a": ["p", "q"], "b": ["q", "p"]})


def test_rrf_empty_inputs():
    assert rrf({}) == []
    assert rrf({"vector": [], "bm25": []}) == []
    assert ids(rrf({"vector": [], "bm25": ["a"]})) == ["a"]


def test_rrf_counts_a_duplicate_once_at_its_best_rank():
    assert dict(rrf({"c": ["a", "a", "b"]}))["a"] == pytest.approx(1 / 61)


def test_rrf_rejects_bad_weights_and_k():
    with pytest.raises(InvalidInputError):
        rrf({"a": ["x"]}, weights={"a": -1.0})
    with pytest.raises(InvalidInputError):
        rrf({"a": ["x"]}, weights={"a": float("nan")})
    with pytest.raises(InvalidInputError):
        rrf({"a": ["x"]}, k=-1)


@given(st.dictionaries(st.sampled_from("abc"), st.lists(st.sampled_from("pqrstu"), max_size=6), max_size=3))
def test_rrf_scores_are_sorted_and_positive(rankings):
    fused = rrf(rankings)
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(s > 0 for s in scores)
    assert set(ids(fused)) == {i for r in rankings.values() for i in r}


def test_weighted_fusion_minmax():
    fused = weighted_fusion(
        {"vector": {"a": 0.9, "b": 0.5, "c": 0.1}, "bm25": {"c": 30.0, "b": 10.0}}, {"vector": 1.0, "bm25": 1.0}
    )
    d = dict(fused)
    assert d["a"] == pytest.approx(1.0)
    assert d["b"] == pytest.approx(0.5 + 0.0)
    assert d["c"] == pytest.approx(0.0 + 1.0)
    assert ids(fused)[:2] == ["a", "c"]  # tie at 1.0: a reached 1.0 in a channel too; first seen wins


def test_weighted_fusion_weights_and_rank_normalisation():
    channels = {"vector": {"a": 0.9, "b": 0.8}, "bm25": {"b": 5.0, "a": 1.0}}
    assert ids(weighted_fusion(channels, {"vector": 3.0, "bm25": 1.0}))[0] == "a"
    assert ids(weighted_fusion(channels, {"vector": 1.0, "bm25": 3.0}))[0] == "b"
    ranked = dict(weighted_fusion({"c": {"x": 100.0, "y": 99.0, "z": -5.0}}, normalise="rank"))
    assert ranked == pytest.approx({"x": 1.0, "y": 2 / 3, "z": 1 / 3})


def test_weighted_fusion_edge_cases():
    assert weighted_fusion({}, {}) == []
    assert weighted_fusion({"a": {}}, {"a": 1.0}) == []
    assert dict(weighted_fusion({"a": {"x": 2.0, "y": 2.0}}, {})) == {"x": 1.0, "y": 1.0}
    assert ids(weighted_fusion({"a": {"x": float("nan"), "y": 1.0}}, {})) == ["y"]
    with pytest.raises(InvalidInputError):
        weighted_fusion({"a": {"x": 1.0}}, {}, normalise="zscore")  # type: ignore[arg-type]


VECS = {
    "coffee1": [1.0, 0.0, 0.0],
    "coffee2": [0.99, 0.1, 0.0],
    "coffee3": [0.98, 0.15, 0.0],
    "tea": [0.0, 1.0, 0.0],
    "hike": [0.0, 0.0, 1.0],
}
REL = {"coffee1": 1.0, "coffee2": 0.95, "coffee3": 0.94, "tea": 0.7, "hike": 0.6}


def test_mmr_picks_diverse_items():
    picked = mmr(list(REL), REL, VECS, lambda_=0.5, k=3)
    assert picked[0] == "coffee1"
    assert set(picked[1:]) == {"tea", "hike"}  # the near-duplicates are skipped


def test_mmr_with_lambda_one_is_pure_relevance():
    assert mmr(list(REL), REL, VECS, lambda_=1.0, k=3) == ["coffee1", "coffee2", "coffee3"]


def test_mmr_edge_cases():
    assert mmr([], REL, VECS, k=3) == []
    assert mmr(list(REL), REL, VECS, k=0) == []
    assert len(mmr(list(REL), REL, VECS, k=50)) == 5
    assert mmr(["x", "coffee1"], {"coffee1": 1.0}, VECS, k=2) == ["coffee1", "x"]  # missing vector / relevance
    assert mmr(["a", "b"], {"a": 1.0, "b": 1.0}, {}, k=2) == ["a", "b"]
    with pytest.raises(InvalidInputError):
        mmr(["a"], {}, {}, lambda_=1.5)
    with pytest.raises(InvalidInputError):
        mmr(["a", "b"], {}, {"a": [1.0], "b": [1.0, 0.0]})


def test_count_tokens_cjk_and_english():
    assert count_tokens("") == 0
    assert count_tokens("我喜欢喝咖啡") == 6
    assert count_tokens("hello world") == 3  # ceil(2 * 1.3)
    assert count_tokens("我喜欢coffee。") == 3 + 2 + 1
    assert count_tokens("a" * 10) < count_tokens("a " * 10)


def test_fit_budget_skips_what_does_not_fit_and_keeps_order():
    items = ["a" * 5, "b" * 20, "c" * 3, "d" * 4]
    kept = fit_budget(items, max_tokens=12, count_tokens=len)
    assert kept == ["a" * 5, "c" * 3, "d" * 4]
    assert fit_budget(items, max_tokens=12, count_tokens=len, stop_at_first_misfit=True) == ["a" * 5]


def test_fit_budget_edge_cases():
    assert fit_budget([], max_tokens=10, count_tokens=len) == []
    assert fit_budget(["abc"], max_tokens=0, count_tokens=len) == []
    assert fit_budget(["", "x"], max_tokens=0, count_tokens=len) == [""]


def test_fit_budget_with_the_offline_counter_in_both_languages():
    memories = ["用户住在北京，喜欢喝咖啡。", "The user has a dog named Max.", "用户上周去上海出差了三天。"]
    kept = fit_budget(memories, max_tokens=24, count_tokens=count_tokens)  # 13 + 11, then 13 more
    assert kept == memories[:2]
    assert sum(count_tokens(m) for m in kept) <= 24
