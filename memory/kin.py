"""Kin and pets by their other names: the keyword channel's query words, widened.

People say 老婆, 妻子, 爱人 and "wife" for one person, and ask "我有孩子吗？" of a memory that says "我们有一个女儿",
"Tell me about my family" of memories about 哥哥 and 老婆, "我老婆叫什么" of "My wife's name is Anna". The dense
channel bridges some of this; the keyword channel, which matches words, bridges none of it, and a weak match on
another word ("叫") wins instead. So a query word that names a family member or a pet also searches for the other
names of that member (``SAME``, in Chinese and English), and a word for a group (家人, family, 孩子, kids, 父母,
parents, 宠物, pets) for the names of its members (``GROUPS``), when the user never used that word themselves: in
memories full of "family" and "kids" the words match as they are, and widening them to every kin term only blurs
the match (measured: LoCoMo recall@1 0.496 → 0.483 when every group word was widened).

This is a fixed thesaurus of everyday words, not weights fitted to any data. 家里 ("at home") and 先生 ("Mr.")
are left out: they mean other things as often as not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from mneme.memory.tokenize import tokenize

SAME: tuple[tuple[str, ...], ...] = (
    ("wife", "老婆", "妻子", "爱人", "太太", "媳妇"),
    ("husband", "老公", "丈夫"),
    ("mother", "mom", "mum", "妈妈", "母亲", "妈"),
    ("father", "dad", "爸爸", "父亲", "爸"),
    ("son", "儿子"),
    ("daughter", "女儿", "闺女"),
    ("brother", "哥哥", "弟弟"),
    ("sister", "姐姐", "妹妹"),
    ("grandmother", "grandma", "奶奶", "外婆", "姥姥"),
    ("grandfather", "grandpa", "爷爷", "外公", "姥爷"),
    ("cat", "猫", "猫咪", "kitten"),
    ("dog", "狗", "狗狗", "puppy"),
)
"""Names of one family member or pet, each group in Chinese and English."""

_KIN = tuple(group for group in SAME if group[0] not in ("cat", "dog"))
GROUPS: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {
    ("family", "relatives", "家人", "家里人", "亲人", "亲戚", "家庭成员"): _KIN,
    ("kids", "children", "child", "孩子", "小孩", "子女"): tuple(g for g in SAME if g[0] in ("son", "daughter")),
    ("parents", "父母", "爸妈"): tuple(g for g in SAME if g[0] in ("mother", "father")),
    ("siblings", "兄弟姐妹"): tuple(g for g in SAME if g[0] in ("brother", "sister")),
    ("pets", "pet", "宠物"): tuple(g for g in SAME if g[0] in ("cat", "dog"))
    + (("hamster", "仓鼠"), ("rabbit", "兔子"), ("parrot", "鹦鹉"), ("goldfish", "金鱼")),
}
"""Words for a group of kin or pets, and the names of its members."""


@cache
def _tables() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each query token naming kin or a pet → the tokens of its other names; each token naming a group → the tokens
    of its members' names (built once, tokenized as the keyword index tokenizes: "wife" is "wif")."""
    def table(pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for words, others in pairs:
            extra = [t for w in others for t in tokenize(w)]
            for word in words:
                for token in tokenize(word):
                    out.setdefault(token, []).extend(t for t in extra if t != token)
        return {token: tuple(dict.fromkeys(extra)) for token, extra in out.items()}

    same = table([(group, group) for group in SAME])
    groups = table([(words, [w for group in members for w in group]) for words, members in GROUPS.items()])
    return same, groups


def widen(terms: Sequence[str], used: Callable[[list[str]], set[str]] | None = None) -> list[str]:
    """``terms`` (a query's keyword tokens), then the other names of every family member or pet among them, and
    the names of the members of every group among them that the user never used themselves (``used(tokens)``:
    which of them occur in the user's memories; without it, every group): a user who talks of "family" or "kids"
    finds those words as they are; one who never did ("我有孩子吗？" of "我们有一个女儿") finds the members."""
    same, groups = _tables()
    extra = [t for term in terms for t in same.get(term, ())]
    named = [term for term in terms if term in groups]
    if named:
        known = used(named) if used is not None else set()
        extra += [t for term in named if term not in known for t in groups[term]]
    return list(dict.fromkeys([*terms, *extra]))
