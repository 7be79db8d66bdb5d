import os
import subprocess
import sys

import pytest

from mneme.memory.tokenize import STOPWORDS, stem, tokenize


def test_english_is_lowercased_stemmed_and_stopwords_dropped():
    assert tokenize("The Cats were RUNNING in the cities") == ["cat", "run", "citi"]


@pytest.mark.parametrize(
    ("forms", "why"),
    [
        (["city", "cities"], "ies -> y"),
        (["study", "studies", "studied", "studying"], "ied/ies/ing"),
        (["hike", "hikes", "hiking", "hiked"], "final e"),
        (["movie", "movies"], "final e vs ies"),
        (["play", "plays", "played", "playing"], "vowel + y stays"),
        (["run", "runs", "running"], "undoubled consonant"),
        (["quick", "quickly"], "-ly"),
        (["box", "boxes"], "-es"),
        (["glass", "glasses"], "-sses"),
        (["meeting", "meetings"], "plural then -ing"),
        (["family", "families"], "-ily kept"),
    ],
)
def test_inflections_share_one_stem(forms, why):
    assert len({stem(f) for f in forms}) == 1, (forms, [stem(f) for f in forms], why)


@pytest.mark.parametrize("word", ["bus", "analysis", "class", "speed", "thing", "coffee", "need"])
def test_words_that_only_look_inflected_are_kept_whole(word):
    assert stem(word) == word


def test_apply_is_not_cut_like_an_adverb():
    assert stem("apply") == stem("applies") == "appli"


def test_short_words_and_non_ascii_words_are_not_stemmed():
    assert stem("was") == "was"
    assert stem("naïves") == "naïves"
    assert stem("iphone15s") == "iphone15s"


def test_chinese_is_segmented_with_search_mode_sub_words():
    toks = tokenize("我喜欢喝咖啡")
    assert "咖啡" in toks  # a query for 咖啡 must find 喝咖啡
    assert "我" not in toks  # stopword


def test_chinese_long_word_yields_its_parts():
    toks = tokenize("中华人民共和国")
    assert {"中华人民共和国", "共和国", "人民"} <= set(toks)


def test_chinese_stopwords_and_punctuation_are_dropped():
    toks = tokenize("我的猫是黑色的！！")
    assert "的" not in toks and "是" not in toks and "！" not in toks
    assert "猫" in toks


def test_mixed_chinese_and_english():
    toks = tokenize("我和Alice在Starbucks喝咖啡")
    assert "alic" in toks and "starbuck" in toks and "咖啡" in toks


def test_numbers_are_kept_and_leading_zeros_dropped():
    assert tokenize("Flight 2023-05-06 costs 3.5 dollars, gate 007") == [
        "flight", "2023", "5", "6", "cost", "3.5", "dollar", "gat", "7",
    ]  # fmt: skip


def test_possessives_and_contractions():
    assert tokenize("Alice's dog") == ["alic", "dog"]
    assert tokenize("I don't know") == ["know"]


def test_full_width_characters_are_normalised():
    assert tokenize("ＡＢＣ１２３") == tokenize("abc123") == ["abc123"]


def test_punctuation_only_and_empty_give_nothing():
    assert tokenize("") == []
    assert tokenize("?!... ，。、 😀") == []
    assert tokenize("the a is 的 了") == []


def test_term_frequency_is_preserved():
    assert tokenize("coffee coffee tea") == ["coffee", "coffee", "tea"]


def test_other_scripts_are_kept_as_words():
    assert tokenize("ひらがな 한국어 Привет") == ["ひらがな", "한국어", "привет"]


def test_stopword_list_covers_both_languages():
    assert {"the", "is", "的", "了", "是", "我", "你"} <= STOPWORDS


@pytest.mark.slow  # a fresh interpreter builds jieba's dictionary cache: seconds of CPU
def test_jieba_caches_in_a_private_temp_dir_and_works_with_a_read_only_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmp)}
    code = "from mneme.memory.tokenize import tokenize; print(' '.join(tokenize('我喜欢喝咖啡')))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=str(home), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "咖啡" in out.stdout
    assert out.stderr == ""  # quiet: no "Building prefix dict" chatter
    assert list(home.iterdir()) == []
    caches = list(tmp.glob("mneme-jieba-*/jieba.cache"))
    assert len(caches) == 1
    assert caches[0].parent.stat().st_mode & 0o077 == 0  # only this user may plant a cache there
