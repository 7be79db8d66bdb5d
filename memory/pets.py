"""Pet words, and which animal a pet word names: 柯基 and "golden retriever" are dogs, 布偶 and "tabby" cats.

People name a pet by its breed as often as by its kind: "我家金毛叫豆豆", "I have a golden retriever called Max".
Extraction keeps the name under the word the user said (``pet:金毛``, ``pet:golden retriever``: a user may have two
dogs); a question names the kind ("我的狗叫什么？", "What's my dog called?"). ``animal_of`` links the two: both name a
dog. A fixed list of everyday breeds in Chinese and English, not weights fitted to any data; words that mean other
things as often (lab, boxer, Maltese, Persian) are left out. No imports beyond ``re``: ranking reads it per candidate.
"""

from __future__ import annotations

import re
from functools import lru_cache

PETS_ZH = "猫咪|狗狗|小猫|小狗|猫|狗|兔子|仓鼠|鹦鹉|宠物"
"""A pet by its kind, in Chinese (longest first)."""
PETS_EN = "puppy|kitten|cat|dog|rabbit|bunny|hamster|parrot|pet"
"""A pet by its kind, in English."""

DOGS_ZH = ("金毛", "拉布拉多", "哈士奇", "柯基", "泰迪", "柴犬", "边牧", "萨摩耶", "比熊", "博美", "德牧", "阿拉斯加",
           "法斗", "巴哥", "雪纳瑞", "吉娃娃", "秋田犬", "松狮", "贵宾犬", "约克夏", "腊肠犬", "田园犬", "土狗")
CATS_ZH = ("布偶", "英短", "美短", "暹罗猫", "加菲猫", "蓝猫", "狸花", "缅因猫", "橘猫", "波斯猫", "无毛猫", "金渐层",
           "银渐层")
DOGS_EN = ("golden retriever", "retriever", "labrador", "labradoodle", "goldendoodle", "poodle", "husky", "corgi",
           "beagle", "pug", "bulldog", "terrier", "spaniel", "german shepherd", "collie", "dachshund", "chihuahua",
           "schnauzer", "samoyed", "greyhound", "rottweiler", "dalmatian", "pomeranian", "shiba inu", "shiba",
           "yorkie", "mutt")
CATS_EN = ("ragdoll", "tabby", "maine coon", "sphynx")
"""(A "Siamese cat" or a "Persian cat" ends in its kind; "Siamese" and "Persian" alone mean other things as often.)"""
BREEDS: dict[str, tuple[str, ...]] = {"dog": DOGS_ZH + DOGS_EN, "cat": CATS_ZH + CATS_EN}
_SAID_OTHERWISE: dict[str, tuple[str, ...]] = {
    "金毛": ("金毛狗", "金毛犬"), "泰迪": ("泰迪狗", "泰迪犬"), "阿拉斯加": ("阿拉斯加犬",), "布偶": ("布偶猫",),
    "英短": ("英短猫",), "美短": ("美短猫",), "土狗": ()}
"""Breeds whose word also means something else, and how a text names the pet unmistakably."""
TOLD_OF: dict[str, tuple[str, ...]] = {
    animal: tuple(w for b in breeds if not b.isascii() for w in _SAID_OTHERWISE.get(b, (b,)))
    for animal, breeds in BREEDS.items()}
"""The breeds that show a text tells of such a pet wherever they stand (``kin.about``): Chinese ones that mean
nothing else, and the others with their kind after them (金毛狗, 布偶猫: 泰迪熊, 一头金毛, 阿拉斯加 the place, 甜美短发
do not); English ones — Greyhound the bus, a husky voice —
are left to the dense channel, and a 40-way English alternation cost ~30 µs a candidate)."""

BREEDS_ZH = "|".join(sorted(DOGS_ZH + CATS_ZH, key=len, reverse=True))
"""A pet by its breed, in Chinese (longest first, for a regular expression)."""
BREEDS_EN = "|".join(sorted(DOGS_EN + CATS_EN, key=len, reverse=True))
"""A pet by its breed, in English (longest first: "golden retriever" before "retriever")."""

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dog", re.compile(r"(?:狗|犬|(?<![a-z])(?:dog|doggy|doggie|puppy))$")),
    ("cat", re.compile(r"(?:猫|猫咪|(?<![a-z])(?:cat|kitten|kitty))$")),
)

_NOT_PETS = frozenset({"熊猫", "热狗", "hot dog", "海狗", "天狗"})
"""Words that end in a kind's word and are no pet of it."""


@lru_cache(maxsize=1024)
def animal_of(word: str) -> str | None:
    """``"dog"`` or ``"cat"`` when ``word`` names one by its kind or its breed (狗, 小狗, 柯基, "rescue dog", "golden
    retriever", 橘猫, "tabby"), else None (兔子, "hamster"; 熊猫 and 热狗, which end in a kind's word, are neither)."""
    w = word.strip().lower()
    if not w or w in _NOT_PETS:
        return None
    for animal, kind in _KINDS:
        if kind.search(w) or any(w == b or w.endswith(" " + b) or (not b.isascii() and w.endswith(b))
                                 for b in BREEDS[animal]):
            return animal
    return None


def same_animal(said: str, asked: str) -> bool:
    """Whether the pet a fact names (``said``: 柯基) is the one a question asks after (``asked``): the same word or
    a word ending in it; for a kind asked (狗, dog) any pet of that animal; for a breed asked (柯基) that breed or
    the bare kind (狗), not another breed (金毛)."""
    said, asked = said.lower(), asked.lower()
    if said in _NOT_PETS:
        return False
    if said.endswith(asked):
        return True
    animal = animal_of(asked)
    if animal is None or animal_of(said) != animal:
        return False
    return asked in _KIND_WORDS or said in _KIND_WORDS


_KIND_WORDS = frozenset(PETS_ZH.split("|") + PETS_EN.split("|") + ["狗狗", "doggy", "kitty"])
