"""Kin and pets by their other names: the keyword channel's query words, widened, and what counts as about them.

People say 老婆, 妻子, 爱人 and "wife" for one person, and ask "我老婆叫什么" of a memory that says "My wife's name is
Anna". The dense channel bridges some of this; the keyword channel, which matches words, bridges none of it, and a
weak match on another word ("叫") wins instead. So a query word that names a family member or a pet also searches
for the other names of that member (``SAME``, in Chinese and English). Chinese tells apart what English does not
(哥哥 and 弟弟 are both "brother"): the English word searches for both, each Chinese one for itself and the English
word, never for the other (``UMBRELLA``).

A word for a group (家人, family, 孩子, kids, 父母, parents, 宠物, pets: ``GROUPS``) is not widened in the keyword
channel: in memories full of "family" and "kids" that only blurs the match (measured: LoCoMo recall@1 0.496 →
0.483 when group words were widened). Instead ``about`` says which names a record must hold to count as relevant
for it under the relevance floor: "我有孩子吗？" of "我们有一个女儿" (their words are far apart), matched as words (a
regular expression over the record's text: tokenizing every candidate cost ~50 µs each in Chinese).

A fixed thesaurus of everyday words, not weights fitted to any data. 家里 ("at home") and 先生 ("Mr.") are left out:
they mean other things as often as not. A word is keyed by the one token the keyword index makes of it (jieba's
search mode also cuts 家庭成员 into 家庭 and 成员, which must not stand for kin).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache

from mneme.memory.pets import TOLD_OF, animal_of
from mneme.memory.tokenize import tokenize

SAME: tuple[tuple[str, ...], ...] = (
    ("wife", "老婆", "妻子", "爱人", "太太", "媳妇"),
    ("husband", "老公", "丈夫"),
    ("mother", "mom", "mum", "妈妈", "母亲", "妈", "我妈", "老妈"),
    ("father", "dad", "爸爸", "父亲", "爸", "我爸", "老爸"),
    ("son", "儿子"),
    ("daughter", "女儿", "闺女"),
    ("cat", "猫", "猫咪", "小猫", "猫叫", "kitten"),
    ("dog", "狗", "狗狗", "小狗", "狗叫", "puppy"),
)
"""Names of one family member or pet, each group in Chinese and English (猫叫: jieba's token for 猫 in
"我的猫叫咪咪")."""

UMBRELLA: dict[str, tuple[str, ...]] = {
    "brother": ("哥哥", "弟弟"),
    "sister": ("姐姐", "妹妹"),
    "grandmother": ("奶奶", "外婆", "姥姥"),
    "grandma": ("奶奶", "外婆", "姥姥"),
    "grandfather": ("爷爷", "外公", "姥爷"),
    "grandpa": ("爷爷", "外公", "姥爷"),
}
"""An English word for kin Chinese names more narrowly: it stands for each; each stands for it, not for the others."""

_ALL_KIN = tuple(w for group in SAME if group[0] not in ("cat", "dog") for w in group) + tuple(
    w for words in UMBRELLA.values() for w in words) + tuple(UMBRELLA)
GROUPS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("family", "relatives", "家人", "亲人", "亲戚"): _ALL_KIN,
    ("kids", "children", "child", "孩子", "小孩", "子女"): ("son", "儿子", "daughter", "女儿", "闺女"),
    ("parents", "父母", "爸妈"): tuple(w for group in SAME if group[0] in ("mother", "father") for w in group),
    ("siblings", "兄弟姐妹"): ("brother", "sister", "哥哥", "弟弟", "姐姐", "妹妹"),
    ("pets", "pet", "宠物"): tuple(w for group in SAME if group[0] in ("cat", "dog") for w in group)
    + ("hamster", "仓鼠", "rabbit", "兔子", "parrot", "鹦鹉", "goldfish", "金鱼"),
}
"""Words for a group of kin or pets, and the names of its members."""


def _token(word: str) -> str | None:
    """The one token the keyword index makes of ``word`` ("wife" → "wif", 老婆 → 老婆), or None when it makes
    several and none is the word itself."""
    tokens = tokenize(word)
    if word in tokens:
        return word
    return tokens[0] if len(tokens) == 1 else None


def _tokens(words: Iterable[str]) -> list[str]:
    return [t for t in (_token(w) for w in words) if t is not None]


@cache
def _tables() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each token naming kin or a pet → the tokens of its other names (for the keyword channel), and → all its
    names as words; each token naming a group → its members' names as words (built once)."""
    same: dict[str, list[str]] = {}
    words: dict[str, list[str]] = {}

    def link(named: Sequence[str], others: Sequence[str]) -> None:
        for word in named:
            token = _token(word)
            if token is not None:
                same.setdefault(token, []).extend(t for t in _tokens(others) if t != token)
                words.setdefault(token, []).extend([word, *others])

    for group in SAME:
        link(group, group)
    for umbrella, narrow in UMBRELLA.items():
        link([umbrella], narrow)
        for word in narrow:
            link([word], [umbrella])
    groups: dict[str, list[str]] = {}
    for named, members in GROUPS.items():
        for word in named:
            token = _token(word)
            if token is not None:
                groups.setdefault(token, []).extend(members)

    def frozen(table: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
        return {key: tuple(dict.fromkeys(values)) for key, values in table.items()}

    return frozen(same), frozen(words), frozen(groups)


def widen(terms: Sequence[str]) -> list[str]:
    """``terms`` (a query's keyword tokens), then the other names of every family member or pet among them, each
    once."""
    same, _, _ = _tables()
    return list(dict.fromkeys([*terms, *(t for term in terms for t in same.get(term, ()))]))


def about(terms: Sequence[str]) -> re.Pattern[str] | None:
    """What a record's words must hold to count as about the kin or pets ``terms`` (a query's keyword tokens) name:
    any name of each member named, or of a member of each group named, and for a dog or a cat its breeds (English as
    whole words, plurals too: "son" is not in "person"); None when they name none."""
    _, words, groups = _tables()
    names = {w for term in terms for w in (*words.get(term, ()), *groups.get(term, ()))}
    names |= {breed for animal in {animal_of(n) for n in names} if animal for breed in TOLD_OF[animal]}  # 柯基 a dog
    names = {n for n in names if n.isascii() or len(n) > 1}  # 妈, 猫, 狗 sit inside 姑妈, 熊猫, 热狗
    return _pattern(frozenset(names)) if names else None


_GUARDS = {"哥哥": r"(?<!小)哥哥", "姐姐": r"(?<!小)姐姐", "太太": r"(?<!老)太太", "爱人": r"爱人(?!民)",
           "丈夫": r"(?<!大)丈夫", "弟弟": r"(?<!小)弟弟", "妹妹": r"(?<!小)妹妹"}
"""Names inside other words: 小哥哥 (a young man), 老太太 (an old lady), 我爱人民, 大丈夫."""


@lru_cache(maxsize=256)
def _pattern(names: frozenset[str]) -> re.Pattern[str]:
    zh = sorted((n for n in names if not n.isascii()), key=len, reverse=True)
    en = sorted((n for n in names if n.isascii()), key=len, reverse=True)
    parts = [_GUARDS.get(n, re.escape(n)) for n in zh]
    if en:
        parts.append(r"(?<![a-z])(?:" + "|".join(map(re.escape, en)) + r")(?:s|es)?(?![a-z])")
    # a look at the first character before the alternation: most positions start no name (~3x faster a search)
    first = "".join(sorted({c for n in names for c in {n[0].lower(), n[0].upper()}}))
    return re.compile(f"(?=[{re.escape(first)}])(?:" + "|".join(parts) + ")", re.IGNORECASE)


@cache
def names_of(word: str) -> tuple[str, ...]:
    """Every name of the family member or pet ``word`` names, ``word`` first (女儿 → 女儿, daughter, 闺女; 哥哥 → 哥哥,
    brother; brother → brother, 哥哥, 弟弟); just ``word`` when it is none of them. Lower-cased."""
    _, words, _ = _tables()
    token = _token(word.lower())
    return tuple(dict.fromkeys([word.lower(), *(w.lower() for w in words.get(token or "", ()))]))
