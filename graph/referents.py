"""Who 她 / 他 / "she" / "his" in a follow-up means, without a model: the family member the user named last.

"我女儿叫小美" … "她喜欢什么？" is, standing alone, "我女儿喜欢什么？"; "My husband is Tom" … "When is his
birthday?" is "When is my husband's birthday?". The memory-only rewrite (and the fallback when the rewrite model
fails) puts the family member in the pronoun's place, so recall searches for the right person and a question about
their name, birthday or job is typed as one (``memory/answertype.py``). The referent is the family member or
partner the user named last in the recent turns, if the pronoun's gender allows it (孩子, partner, kid: either) and
no one else was named since (a friend, a colleague, "Obama": then the pronoun may mean them, and it is left alone,
as it is when the last mention names two who fit: 我妈和我姐). A follow-up that names someone itself
("我老公说他明天加班") is left alone too. Words that hold a pronoun's character are no pronoun (吉他, 其他, 他们,
她妈妈: her mother, not the daughter's name put in).
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
_ZH_NOT_FAMILY = ("朋友|同事|老板|领导|老师|同学|室友|邻居|闺蜜|哥们|上司|经理|医生|客户|男生|女生|男人|女人|网友|师傅"
              "|婆婆|公公|岳父|岳母|丈母娘|老丈人|阿姨|叔叔|舅舅|舅妈|姑姑|姑妈|姨妈|伯伯|婶婶|班主任|园长|校长|教练|护士"
              "|保姆|司机|房东|大夫")
_EN_NOT_FAMILY = ("friend|boss|coworker|co-worker|colleague|neighbou?r|teacher|manager|roommate|doctor|guy|girl|woman"
              "|man|lady|client|customer|coach|principal|nurse|nanny|babysitter|tutor|landlord|landlady|pastor|priest"
              "|therapist|lawyer|dentist")

_ZH_KIN = re.compile(rf"我(?:的|家)?(?P<k>{_ZH_FEMALE}|{_ZH_MALE}|{_ZH_EITHER})(?![们妹夫嫂]|的(?:{_ZH_NOT_FAMILY}))")
_EN_KIN = re.compile(rf"(?i)\bmy\s+(?P<k>{_EN_FEMALE}|{_EN_MALE}|{_EN_EITHER})\b"
                     rf"(?!-in-law|'s\s+(?:{_EN_NOT_FAMILY}|girlfriend|boyfriend))")
_ZH_OTHER = re.compile(rf"(?:{_ZH_NOT_FAMILY})"
                       r"|(?:^|(?<=[，,]))[小老](?![实心时大公婆妈爸伴家师板学区孩组说吃事样])[\u4e00-\u9fff]"
                       rf"|(?<=[和跟见了])[小老](?![实心时大公婆妈爸伴家师板])[\u4e00-\u9fff](?=[，,。说来去呢了]|$)")
"""Someone outside the family: 我朋友小丽, 同事老李, 见了小丽, 我爸的朋友 (not 老实说, 小心)."""
_ZH_THEIR_KIN = re.compile(rf"(?:的|个|[她他你]|她们|他们)(?P<k>{_ZH_FEMALE}|{_ZH_MALE}|{_ZH_EITHER})")
"""Someone else's family, or a new one: 我老婆的妹妹, 生了个女儿, 她女儿."""
_EN_THEIR_KIN = re.compile(rf"(?i)(?:'s|\b(?:her|his|their|your|a|an))\s+"
                           rf"(?P<k>{_EN_FEMALE}|{_EN_MALE}|{_EN_EITHER})s?\b")
""""My wife's sister", "her son", "a daughter": someone else's family, or a new one."""
_ZH_SURNAMES = ("王李张刘陈杨黄赵吴朱郭罗梁宋邓曹彭肖袁潘蒋蔡杜魏吕丁沈姚卢姜崔谭汪廖贾韦邹孟秦邱尹薛闫侯陶郝龚邵覃"
                "林")
_ZH_NAME = re.compile(rf"(?:^|(?<=[，,。！？!?\s]))[{_ZH_SURNAMES}][\u4e00-\u9fff]{{1,2}}?"
                      r"(?=今天|昨天|刚才|刚刚|说|来了|给我|打电话|跟我说|和我说|问我|找我|约我|送我|叫我|发消息|带我|把|请"
                      r"|又(?:欺负|骂|打|来|找|说|推|抢|凶)|欺负|骂|打了|推|抢|凶)")
"""A name opening a clause and doing something (张伟今天给我打电话, 李娜说…): someone the pronoun may mean; not a
thing said about (杨梅又甜又酸, 黄色是…)."""
_EN_NAME = re.compile(
    r"(?<![A-Za-z'\u2019])(?P<n>[A-Z][a-z]+)(?=\s+(?:[a-z]+ed|said|says|told|tells|asks|calls|texts|came|comes"
    r"|is coming|was here|is here|is visiting|wants|thinks|thought|brought|left|gave|sent|took|hit|ran|broke|made"
    r"|bought|stole|threw|got|keeps|stopped by|dropped by|and I|and me)\b)"
    r"|\b(?:and|with|invited|hates|hated|likes|liked|visited|met|saw|told|asked|called|texted|blames|blamed)\s+"
    r"(?P<o>[A-Z][a-z]+)\b(?!\s+(?:[A-Z]|food|music|fan|team|show|game|movie|school|store|class|park)\b)")
"""A name doing what people do, or done to ("Tom called me", "Tyler pushed him", "hates Karen", "My wife and Jenny
went shopping"): someone the pronoun may mean; not a thing or a group ("Italian food", "a Lakers fan", "Lincoln
Elementary", "Netflix is great")."""
_ZH_PREDICATE = re.compile(rf"我(?:的|家)?(?:{_ZH_FEMALE}|{_ZH_MALE}|{_ZH_EITHER})(?:也|还|现在)?是(?:一?[个名位])?$")
"""我老婆是医生: an occupation said of the family member, no one else."""
_EN_OTHER = re.compile(rf"\b(?i:{_EN_NOT_FAMILY})s?\b"
                       r"|\b(?i:met|know|saw|meet|called|texted|with|about)\s+(?P<n>[A-Z][a-z]+)|-in-law\b")
_EN_PREDICATE = re.compile(rf"(?i)\bmy\s+(?:{_EN_FEMALE}|{_EN_MALE}|{_EN_EITHER})\s+is\s+(?:an?\s+)?$")
""""My wife is a doctor": an occupation said of the family member, no one else."""
_NOT_SOMEONE_WORDS = """christmas easter thanksgiving halloween monday tuesday wednesday thursday friday saturday
sunday"""
_NOT_SOMEONE = frozenset(_NOT_SOMEONE_WORDS.split())
"""Capitalised words after "with" or "about" that name no one ("talked about Christmas"; "with Mom", "with May" may
be someone other than the family member named)."""
_EN_NOT_SOMEONE_AT_START_WORDS = """i we he she they it you my our your his her their the this that these those what
when where why how who which yesterday today tonight tomorrow then also just so and but everything nothing something
everyone everybody someone somebody anyone nobody"""
_EN_NOT_SOMEONE_AT_START = frozenset(_EN_NOT_SOMEONE_AT_START_WORDS.split())
"""Capitalised words before a verb that name no one in particular ("Yesterday I called", "Everything looked great";
"Mom called" names someone: another family member)."""
_ZH_PRONOUN = re.compile(r"(?<![其吉利排])[她他](?![们人乡日俩]|妈的|[妈爸哥姐弟妹家]|老公|老婆|儿子|女儿"
                         r"|的(?:朋友|同事))")
"""她, 他; not 他们 (a group), 吉他 / 其他 (words), or 她妈妈 (her mother: someone else)."""
_EN_PRONOUN = re.compile(r"(?i)\b(?P<p>she|he|her|him|his)\b")
_HER_THINGS = re.compile(r"(?i)\s+(?:boss|friends?|mom|mum|dad|parents?|sisters?|brothers?|husband|wife|job|family|name"
                         r"|birthday|number|address|phone|car|school|teacher|work|kids?|son|daughter|mother|father"
                         r"|grandma|grandpa|baby|boyfriend|girlfriend|smile|eyes?|voice|hair|face|laugh|cooking|food"
                         r"|style|cat|dog|house|place|room|office|garden|dress|shoes|ring|gift|present|book|song|music"
                         r"|art|paintings?|mind|heart|hands?|ideas?|advice|message|text|letter|email|posts?|photos?"
                         r"|pictures?|story|stories|new|old|first|last|own|favou?rite|best|other|little|big|help|health"
                         r"|judg(?:e)?ment|toys?|party|recital|plans?|opinion|permission|homework|grades?|room|bag"
                         rf"|keys?|{_EN_NOT_FAMILY})\b")
"""... unless a word of hers follows ("tell her boss", "get her number", "I love her smile")."""
_EN_TAKES_HER = re.compile(r"(?i)\b(?:give|gave|given|giving|tell|told|telling|buy|bought|buying|send|sent|sending"
                           r"|ask|asked|show|showed|teach|taught|lend|lent|owe|owed|promise|promised|bring|brought"
                           r"|get|got|pay|paid|make|made|making|let|lets|letting|help|helped|helping"
                           r"|love|loved|miss|missed|call|called|see|saw|seen|meet|met|hug|hugged|thank"
                           r"|thanked|text|texted|visit|visited|like|liked|hate|hated|know|knew|trust|trusted|remind"
                           r"|reminded|kiss|kissed|invite|invited|take|took|drive|drove|pick|picked|hold|held|believe"
                           r"|believed|need|needed|want|wanted|leave|left|for|to|with|about|at|from"
                           r"|of|on|behind|beside|without)\s+(?:really\s+|still\s+|just\s+)?$")
"""A verb or a preposition whose object "her" usually is ("Did I tell her that?", "I gave her my keys", "I made her
cry", "I love her dearly", "I saw her Monday")..."""
_EN_OBJECT_AFTER = re.compile(r"(?i)\s*(?:[?.!,;]|$|\s(?:for|to|at|in|on|with|about|from|a|an|the|some|any|back|"
                              r"up|out|yesterday|today|tonight|last|this|again|my|that|money|anything|something|so|very"
                              r"|too|more|much|a lot|and|but|or|when|if|because|since|every|all|once|twice|off|over|now"
                              r"|then|first|later|soon|tomorrow)\b)")
"""What follows an object "her" after any other verb or a preposition ("What did I buy her?", "I love her so much",
"Did I call her yesterday?"); otherwise "her" is possessive ("I love her smile", "Did I meet her boss?")."""
_MAX_CHARS = 80
_ANY_KIN_WORD = re.compile("|".join(w for w in f"{_ZH_FEMALE}|{_ZH_MALE}|{_ZH_EITHER}".split("|") if len(w) > 1)
                           + r"|(?<![兄表堂师大小姑舅])[妈爸哥姐弟妹](?![祖伦们儿])"
                           + rf"|(?i:\b(?:{_EN_FEMALE}|{_EN_MALE}|{_EN_EITHER}|grandma|grandpa|granny|mommy"
                             r"|daddy)s?\b)")
"""A family word (妈, 姐 alone too, but not inside 妈祖, 哥伦比亚, 兄弟)."""
_OWN_KIN = re.compile(rf"(?:^|(?<=[，,。！？!?\s]))(?:{_ZH_FEMALE}|{_ZH_MALE}|{_ZH_EITHER})"
                      r"(?=说|今天|昨天|刚|也|又|还|在|去|来|要|想|让|叫|给|跟|和)")
"""A family word opening a clause, the user's own though 我 is dropped (老公说他很累): the follow-up names its own."""


def _female(kin: str) -> bool | None:
    """True, False, or None when the word allows either."""
    k = kin.lower()
    if re.fullmatch(f"{_ZH_FEMALE}|{_EN_FEMALE}", k):
        return True
    if re.fullmatch(f"{_ZH_MALE}|{_EN_MALE}", k):
        return False
    return None


def _family_names(texts: Sequence[str]) -> set[str]:
    """Names the user gave family members ("My husband is Tom", "my daughter Emma"), lower case."""
    return {m["n"].lower() for t in texts for m in re.finditer(
        rf"(?i:\bmy\s+(?:{_EN_FEMALE}|{_EN_MALE}|{_EN_EITHER}))(?:\s+(?:is|named|called))?\s+(?P<n>[A-Z][a-z]+)", t)}


def _no_one(word: str, family: set[str]) -> bool:
    """Whether a capitalised word names no one else: a family member's name, a time, a place ("visited Paris"), a
    weekday or a word that starts sentences."""
    from mneme.memory.places import is_en_place

    low = word.lower()
    return (low in family | _NOT_SOMEONE | _EN_NOT_SOMEONE_AT_START or low.rstrip("s") in _NOT_SOMEONE
            or is_en_place(word))


def _others(text: str, zh: bool, family: set[str], female: bool) -> list[int]:
    """Where mentions of someone outside the family end in ``text``: a friend, a colleague, a name doing something
    (张伟今天…, "Tom called me"), someone else's family or a new one whom the pronoun's gender ``female`` allows
    (我老婆的妹妹 for 她, "a son" for he). An occupation said of a family member, a family member's own name or a
    holiday name no one else."""
    rx, theirs, predicate = (_ZH_OTHER, _ZH_THEIR_KIN, _ZH_PREDICATE) if zh else (_EN_OTHER, _EN_THEIR_KIN,
                                                                                   _EN_PREDICATE)
    out = []
    for m in rx.finditer(text):
        name = None if zh else m["n"]
        if predicate.search(text[:m.start()]) or name and name.lower() in family | _NOT_SOMEONE:
            continue
        out.append(m.end())
    out += [m.end() for m in theirs.finditer(text) if _female(m["k"]) in (None, female)]
    if zh:
        out += [m.end() for m in _ZH_NAME.finditer(text)]
    else:
        out += [m.end() for m in _EN_NAME.finditer(text) if not _no_one(m["n"] or m["o"], family)]
    return out


def _latest_kin(texts: Sequence[str], female: bool, zh: bool, family: set[str]) -> str | None:
    """The family member named last in ``texts`` (oldest first) whose gender ``female`` allows; None when someone
    outside the family (not one of the ``family`` names) was named after them, or the last mention names two who
    fit."""
    kin_rx = _ZH_KIN if zh else _EN_KIN
    for text in reversed(texts):
        fits = [m for m in kin_rx.finditer(text) if _female(m["k"]) in (None, female)]
        other = _others(text, zh, family, female)
        if other and (not fits or max(other) > fits[-1].end()):
            return None  # 我朋友小丽昨天来了: 她 may be the friend
        if fits:
            names = {m["k"] if zh else m["k"].lower() for m in fits}
            return names.pop() if len(names) == 1 else None
    return None


def resolve_pronoun(message: str, earlier: Sequence[str]) -> str | None:
    """``message`` with its first 她/他/she/he/her/him/his put as the family member it means (from ``earlier``, the
    user's recent messages, oldest first), or None when it has no such pronoun or referent."""
    if len(message) > _MAX_CHARS or _ZH_KIN.search(message) or _EN_KIN.search(message) or _OWN_KIN.search(message):
        return None  # the follow-up names its own family member (老公说他很累, "Did my wife call him?")
    pronoun_at = min((m.start() for m in (_ZH_PRONOUN.search(message), _EN_PRONOUN.search(message)) if m),
                     default=len(message))
    if _ANY_KIN_WORD.search(message[:pronoun_at]):
        return None  # a family word before it may be whom it means ("ask mom what she wants", 问女儿她喜欢什么)
    zh = _ZH_PRONOUN.search(message)
    if zh:
        if _others(message[:zh.start()], True, set(), zh[0] == "她"):
            return None
        kin = _latest_kin(earlier, zh[0] == "她", zh=True, family=set())
        return None if kin is None else f"{message[:zh.start()]}我{kin}{message[zh.end():]}"  # 她的生日 → 我女儿的生日
    en = _EN_PRONOUN.search(message)
    family = _family_names(earlier)
    if not en or _others(message[:en.start()], False, family, en["p"].lower() in ("she", "her")):
        return None
    pronoun = en["p"].lower()
    kin = _latest_kin(earlier, pronoun in ("she", "her"), zh=False, family=family)
    if kin is None:
        return None
    after = message[en.end():]
    before = message[:en.start()]
    possessive = pronoun == "his" or pronoun == "her" and not (
        _EN_OBJECT_AFTER.match(after) or _EN_TAKES_HER.search(before) and not _HER_THINGS.match(after))
    mine = f"my {kin}'s" if possessive else f"my {kin}"
    if en.start() == 0 or message[:en.start()].rstrip().endswith((".", "!", "?")):
        mine = mine[0].upper() + mine[1:]  # "He is late" → "My husband is late"
    return f"{message[:en.start()]}{mine}{message[en.end():]}"
