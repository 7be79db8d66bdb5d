"""Who 她 / 他 / "she" / "his" in a follow-up means, without a model: the family member the user named last.

"我女儿叫小美" … "她喜欢什么？" is, standing alone, "我女儿喜欢什么？"; "My husband is Tom" … "When is his
birthday?" is "When is my husband's birthday?". The memory-only rewrite (and the fallback when the rewrite model
fails) puts the family member in the pronoun's place, so recall searches for the right person and a question about
their name, birthday or job is typed as one (``memory/answertype.py``). The referent is the latest family member
or partner the user named in the recent turns whose gender the pronoun allows (孩子, partner, kid: either);
a follow-up that names someone itself ("我老公说他明天加班") is left alone, as is a pronoun with no referent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_ZH_FEMALE = "女儿|闺女|老妈|妈妈|母亲|妈|老婆|媳妇|妻子|太太|女朋友|姐姐|姐|妹妹|妹|奶奶|外婆|姥姥|孙女"
_ZH_MALE = "儿子|老爸|爸爸|父亲|爸|老公|丈夫|男朋友|哥哥|哥|弟弟|弟|爷爷|外公|姥爷|孙子"
_ZH_EITHER = "孩子|宝宝|爱人|对象|老伴"
_EN_FEMALE = "wife|girlfriend|daughter|mom|mum|mother|sister|grandma|grandmother|aunt|niece|fiancée"
_EN_MALE = "husband|boyfriend|son|dad|father|brother|grandpa|grandfather|uncle|nephew|fiancé"
_EN_EITHER = "partner|kid|child|baby"

_ZH_KIN = re.compile(rf"我(?:的|家)?(?P<k>{_ZH_FEMALE}|{_ZH_MALE}|{_ZH_EITHER})")
_EN_KIN = re.compile(rf"(?i)\bmy\s+(?P<k>{_EN_FEMALE}|{_EN_MALE}|{_EN_EITHER})\b")
_ZH_PRONOUN = re.compile(r"[她他](?!们|人)")
"""她, 他; not 他们 (a group) or 他人 (others)."""
_EN_PRONOUN = re.compile(r"(?i)\b(?P<p>she|he|her|him|his)\b")
_EN_OBJECT_AFTER = re.compile(r"(?i)\s*(?:[?.!,;]|$|\s(?:for|to|at|in|on|with|about|from|a|an|the|some|any|back|"
                              r"up|out|yesterday|today|last|this|again)\b)")
"""What follows an object "her" ("What did I buy her?", "Did I call her yesterday?"), not a possessive one."""
_MAX_CHARS = 80


def _female(kin: str) -> bool | None:
    """True, False, or None when the word allows either."""
    k = kin.lower()
    if re.fullmatch(f"{_ZH_FEMALE}|{_EN_FEMALE}", k):
        return True
    if re.fullmatch(f"{_ZH_MALE}|{_EN_MALE}", k):
        return False
    return None


def _latest_kin(texts: Sequence[str], female: bool, zh: bool) -> str | None:
    """The family member named last in ``texts`` (oldest first) whose gender ``female`` allows."""
    pattern = _ZH_KIN if zh else _EN_KIN
    for text in reversed(texts):
        for m in reversed(list(pattern.finditer(text))):
            gender = _female(m["k"])
            if gender is None or gender == female:
                return m["k"] if zh else m["k"].lower()
    return None


def resolve_pronoun(message: str, earlier: Sequence[str]) -> str | None:
    """``message`` with its first 她/他/she/he/her/him/his put as the family member it means (from ``earlier``, the
    user's recent messages, oldest first), or None when it has no such pronoun or referent."""
    if len(message) > _MAX_CHARS or _ZH_KIN.search(message) or _EN_KIN.search(message):
        return None
    zh = _ZH_PRONOUN.search(message)
    if zh:
        kin = _latest_kin(earlier, zh[0] == "她", zh=True)
        if kin is None:
            return None
        return f"{message[:zh.start()]}我{kin}{message[zh.end():]}"  # 她的生日 → 我女儿的生日
    en = _EN_PRONOUN.search(message)
    if not en:
        return None
    pronoun = en["p"].lower()
    kin = _latest_kin(earlier, pronoun in ("she", "her"), zh=False)
    if kin is None:
        return None
    possessive = pronoun == "his" or pronoun == "her" and not _EN_OBJECT_AFTER.match(message[en.end():])
    mine = f"my {kin}'s" if possessive else f"my {kin}"
    return f"{message[:en.start()]}{mine}{message[en.end():]}"
