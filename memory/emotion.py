"""Emotion: a cheap lexicon detector that tells negative exchanges (stored as summaries) from the rest.

Each cue has a weight (about 1.0 for a plain statement of distress, less for mild or ambiguous words).
A cue right after a negator (不/没/没有/别/未 within three characters of the same clause; "not", "n't",
"never", "no" within three words) is negated, unless the negator says the feeling could not be held back (忍不住,
不停, "couldn't stop", "can't help"): a negated negative cue counts for nothing ("我不难过"),
a negated positive cue counts as a mild negative ("不开心", "not happy"). An intensifier just before a
cue (很/非常/特别/太/超/好/真; very/so/really/extremely) multiplies it by 1.5.

A distress word inside a relief frame is not distress: "stress relief", "de-stress", "my stress-buster",
"helps me with anxiety", "减压", "缓解焦虑", "走出了失恋的阴影" name what takes a bad feeling away (unless
that frame is itself negated: "I can't relieve my stress", "没法缓解焦虑" stay negative).

The label is ``negative`` when the negative total reaches ``NEGATIVE_THRESHOLD`` (0.6) and outweighs the
positive total by at least one intensification step (``DOMINANCE`` = the intensifier's 1.5); ``positive``
likewise; feelings of both kinds with neither dominating are ``mixed`` ("a mix of excited and scared",
"又兴奋又紧张"), as is any text that says it holds both (又…又, 既…又, 喜忧参半, "mixed feelings", "both …
and …") with cues of both kinds: ambivalence about something new is not distress. Otherwise ``neutral``.
So one plain distress word ("I'm sad", "我好焦虑") is enough, while "我讨厌香菜" (0.3, a dislike, not distress)
is not. ``score`` is the label's intensity, ``1 - exp(-total)``, in [0, 1) (0 for neutral; the stronger
side for mixed). Words inside a title (《百年孤独》) are not cues.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Literal

Label = Literal["negative", "positive", "mixed", "neutral"]

NEGATIVE_THRESHOLD = 0.6
POSITIVE_THRESHOLD = 0.6
_INTENSIFY = 1.5
DOMINANCE = _INTENSIFY
"""How much one side must outweigh the other to decide the tone: one intensifier's worth ("really scared
and excited" is negative, "excited and scared" is mixed)."""
_NEGATED_POSITIVE = 0.7  # "不开心" is negative, a little weaker than "难过"


@dataclass(frozen=True)
class Emotion:
    """The detected emotional tone of a text, its intensity and the cues that decided it."""

    label: Label
    score: float
    cues: list[str] = field(default_factory=list)

    @property
    def is_negative(self) -> bool:
        """True for a negative tone (the exchange is stored as a summary)."""
        return self.label == "negative"


NEUTRAL = Emotion("neutral", 0.0, [])

SELF_JUDGEMENT_ZH = r"自己(?:真|好|太|很|特别|挺)?(?:失败|没用)"
"""觉得自己特别失败: a negative cue, and in a gist the effect 自我评价低 (``gist``), never a quoted feeling."""
OVERWHELMED_EN = r"can'?t take (?:it|this) any ?more"
"""A negative cue, and in a gist the effect "feeling overwhelmed" (``gist``)."""

BY_SOMEONE_ZH = (r"被(?:[^，。！？；,.!?\s被]{1,6})?"
                 r"(?:骂|批评|训(?!练)|吼|凶(?![手杀案器])|否定|否了|嫌弃|欺负|冤枉|怼|排挤|针对|甩|拒绝|羞辱|指责|辞退"
                 r"|开除|炒鱿鱼)")
"""被老板骂了一顿, 被同事排挤, 被男朋友甩了: what someone did to the user, a negative cue (``gist`` names the event)."""
BY_SOMEONE_EN = (r"(?:yelled|shouted|screamed|snapped) at me|(?:got|was|been|get) (?:yelled|shouted|screamed) at"
                 r"|scolded me|chewed me out|told me off"
                 r"|(?:got|was|been|being|get) (?:scolded|chewed out|told off|bullied)"
                 r"|critici[sz]ed me|bull(?:ied|ying) me|dumped me|got dumped|rejected me"
                 r"|pick(?:s|ed|ing) on me"
                 r"|(?:keep|always|constantly|still|everyone|people|they|to|does \w+) pick on me")
""""my boss yelled at me", "got told off", "she dumped me": a negative cue."""

# fmt: off
# (pattern, weight). Chinese patterns match substrings; a few need guards against common compounds.
_ZH_NEGATIVE: list[tuple[str, float]] = [
    (r"难过", 1.0), (r"伤心", 1.0), (r"悲伤", 1.0), (r"痛苦", 1.0), (r"焦虑", 1.0), (r"抑郁", 1.2),
    (r"崩溃", 1.2), (r"绝望", 1.2), (r"想哭", 1.0), (r"(?<!笑)哭了", 0.9), (r"大哭", 1.0),
    (r"(?<![大想笑])哭(?![了笑穷死闹])", 0.8), (r"失眠", 0.8),
    (r"害怕", 0.9), (r"恐惧", 0.9), (r"恐慌", 1.0), (r"孤独", 0.9), (r"寂寞", 0.8), (r"失恋", 1.0),
    (r"被裁", 1.0), (r"裁员", 0.8), (r"失业", 1.0), (r"分手", 0.9), (r"离婚", 0.9), (r"去世", 1.0),
    (r"过世", 1.0), (r"生气", 0.8), (r"愤怒", 1.0), (r"气死", 0.9), (r"心烦", 0.8), (r"烦躁", 0.8),
    (r"(?<![麻厌])烦(?![躁])", 0.6), (r"郁闷", 0.8), (r"沮丧", 1.0), (r"难受", 0.9), (r"心累", 0.9),
    (r"委屈", 0.8), (r"担心", 0.6), (r"紧张", 0.6), (r"不安", 0.7), (r"后悔", 0.6),
    (r"着急(?![去走回上赶出要买找]|忙慌)|急死", 0.6), (r"发愁|犯愁|愁死", 0.7),  # not 着急去上班: in a hurry
    (r"压力(?:有点|有些|很|特别|非常|太|好|挺|比较|越来越|山|超级?)?大", 0.9), (r"压力山大", 0.9),
    (r"撑不下去", 1.2), (r"(?:撑|扛|熬|顶)不住了|(?:快|要|真的|实在)(?:撑|扛|熬|顶)不住|(?:扛|熬)不下去", 1.0),
    (r"挑我(?:的)?(?:毛病|刺)|找我(?:的)?茬", 0.6),
    (r"不想活", 1.5), (r"想死", 1.5), (r"自杀", 1.5), (r"活着没意思", 1.5),
    (r"讨厌", 0.3), (r"糟糕", 0.5), (r"累死", 0.6), (r"吵架|吵了一架|大吵(?:了)?一架|吵起来了?", 0.7), (r"生病", 0.5),
    (r"心里(?:很|好|特别|有点|真的|太)?乱(?![跳停花扔丢写画跑说码])"
     r"|(?<![开中小关放专耐细核良爱决信安伤用虚])心(?:很|好|太)?乱(?:如麻)?(?![跳停花扔丢写画跑说七码])", 0.8),
    # as people say them in chat: slang and self-judgement
    (r"心态(?:炸|崩)了?", 1.0), (r"(?:有点|有些|好|很|太|又|真的|突然|开始|一直|最近)emo|emo(?:了|中)", 0.9),
    (r"受够了", 0.9), (r"心碎", 1.0), (r"心(?:好|很|太|真)?痛", 1.0), (r"心塞", 0.9), (r"憋屈", 0.9), (r"抓狂", 0.9),
    (r"破防", 0.9), (r"无助", 1.0), (r"自卑", 0.9), (r"想不开", 1.2), (r"生无可恋", 1.2), (r"孤单", 0.9),
    (r"迷茫", 0.7), (r"[好很太真超](?:丧|没用)(?![失事礼葬])", 0.9), (SELF_JUDGEMENT_ZH, 1.0),
    # tired (mild alone: "好累" is distress, "有点累" not yet), and what others did to the user
    (r"(?<![积连拖牵累])累(?![计积累])", 0.5), (r"疲惫|精疲力尽|筋疲力尽|身心俱疲", 0.8),
    (BY_SOMEONE_ZH, 0.8), (r"挨(?:骂|批|训|打)", 0.8),
]
_ZH_POSITIVE: list[tuple[str, float]] = [
    (r"开心", 0.9), (r"高兴", 0.9), (r"快乐", 0.9), (r"幸福", 1.0), (r"兴奋", 0.8), (r"激动", 0.6),
    (r"满意", 0.6), (r"感激", 0.7), (r"太好了", 0.9), (r"棒", 0.5), (r"顺利", 0.5), (r"放松", 0.5),
    (r"喜欢", 0.3), (r"爱", 0.3), (r"升职", 0.7), (r"期待", 0.5),
]
_EN_NEGATIVE: list[tuple[str, float]] = [
    (r"sad(?:ness)?", 0.9), (r"depress(?:ed|ion|ing)", 1.2), (r"anxi(?:ous|ety)", 1.0),
    (r"stress(?:ed|ful)?", 0.8), (r"angry|anger", 0.8), (r"furious", 1.0), (r"lonel(?:y|iness)", 0.9),
    (r"upset", 0.8), (r"hate", 0.3), (r"terrible", 0.5), (r"awful", 0.5), (r"miserable", 1.0),
    (r"scared|afraid|frightened", 0.9), (r"cry(?:ing)?|cried", 0.9), (r"grie(?:f|ving)", 1.0),
    (r"panic(?:king|ked)?", 1.0), (r"heartbroken", 1.0), (r"hopeless", 1.2), (r"overwhelmed", 0.9),
    (r"exhausted", 0.7), (r"worr(?:ied|y|ying)", 0.6), (r"frustrat(?:ed|ing)", 0.7), (r"devastated", 1.2),
    (r"suicidal", 1.5), (r"want to die", 1.5), (r"kill myself", 1.5), (r"insomnia", 0.8),
    (r"can'?t sleep", 0.8), (r"broke up", 0.9), (r"laid off", 1.0), (r"got fired", 1.0),
    (r"lost my job", 1.0), (r"passed away", 1.0),
    (r"(?:my|our) (?:(?:best|old|little|big|dear|beloved) )?(?:grand)?(?:ma|pa|mom|mum|mother|father|dad|parents?"
     r"|brother|sister|son|daughter|child|baby|wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|aunt|uncle|cousin"
     r"|friend|neighbou?r|teacher|dog|cat|pet|puppy|kitten|patient) (?:just |suddenly |recently )?died"
     r"|death of my \w+", 1.0), (r"funeral", 0.5), (r"hurt(?:s|ing)?", 0.5), (r"unhappy", 0.9),
    (r"nervous", 0.6), (r"burn(?:ed|t)? out|burnout", 0.9), (r"fear", 0.7),
    # as people say them in chat
    (r"gutted", 1.0), (r"(?:feel(?:s|ing)?|felt) (?:so |really |pretty |a bit |kind of )?down", 0.9),
    (OVERWHELMED_EN, 1.2), (r"worthless", 1.2), (r"pissed(?: off)?", 0.8),
    (r"fed up", 0.8), (r"(?:feel(?:s|ing)?|felt|i'?m|i am|was) (?:so |really |completely |totally )?crushed", 0.9),
    (r"ashamed", 0.8), (r"disappointed", 0.5), (r"(?:life|it all) sucks", 0.8),
    (r"(?:feel(?:s|ing)?|felt|i'?m|i am) (?:so |really |completely |totally |like )?(?:useless|a failure)", 1.2),
    (r"tired|drained|worn out", 0.5), (BY_SOMEONE_EN, 0.8),
    (r"(?:feel(?:s|ing)?|felt) (?:so |very |really )?alone", 0.9),
]
_EN_POSITIVE: list[tuple[str, float]] = [
    (r"happy", 0.9), (r"glad", 0.7), (r"excited", 0.8), (r"great", 0.5), (r"wonderful", 0.8),
    (r"awesome", 0.7), (r"relieved", 0.7), (r"proud", 0.7), (r"grateful", 0.7), (r"thrilled", 0.9),
    (r"love", 0.3), (r"enjoy(?:ed|ing)?", 0.3), (r"like", 0.2), (r"promoted", 0.7), (r"fantastic", 0.8),
]
# A relief frame: a bad feeling named as what something takes away. The whole frame is one span, so its
# distress word is not a cue.
_EN_DISTRESS = (r"(?:stress\w*|anxi\w*|worr\w*|tension|fears?|nerves|insomnia|loneliness|sadness|depression|"
                r"frustration|anger|panic|grief|sorrow|pain)")
_EN_RELIEF = re.compile(
    r"(?<![a-z'])(?:"
    r"de-?stress\w*|stress[- ]?(?:relie\w*|bust\w*|fix\w*|free|less|release\w*|management|ball)"
    r"|anti-?(?:anxiety|stress|depress\w*)"
    r"|(?:relie(?:ve[sd]?|ving|f)|reduc(?:e[sd]?|ing)|eas(?:e[sd]?|ing)|releas(?:e[sd]?|ing)|get(?:ting)? rid of"
    r"|shak(?:e|es|ing) off|free (?:of|from)|(?:help(?:s|ed|ing)?) (?:me |us |you |them )?(?:with|against))"
    rf"\s+(?:(?:my|the|some|of|all|that|your|our|their|a|any|bit|lot|little|from|with|her|his)\s+){{0,3}}"
    rf"{_EN_DISTRESS}"
    rf"|{_EN_DISTRESS}\s+(?:\w+\s+){{0,2}}(?:vanish\w*|disappear\w*|melt\w* away|fad(?:e|es|ed|ing) away)"
    r")(?![a-z])")
_ZH_RELIEF = re.compile(
    r"减压|解压|舒压|释压"
    r"|(?:缓解|减轻|释放|排解|驱散|赶走|摆脱|走出|战胜|克服|治好|治愈|告别|化解|消除|抚平)了?"
    r"(?:我的|心中的|心里的|内心的|一些|一点|不少)?"
    r"(?:压力|焦虑|紧张|孤独|寂寞|失眠|抑郁|恐惧|害怕|悲伤|难过|烦恼|烦躁|郁闷|痛苦|伤心|失恋的?阴影|阴影)")
# Holding on no longer, in fun or of a thing: 笑得我快撑不住了, 吃太饱了撑不住了, 手机电量快撑不住了,
# 扛不住了，太好吃了.
_ZH_NOT_DISTRESS = re.compile(
    r"(?:笑得我?|笑死|吃太饱了?|吃撑了?|太饱了?|电量|电池|手机(?:电量|电)?|眼皮)(?:快|要|都|真的)?(?:撑|扛|熬|顶)不住了?"
    r"|(?:撑|扛|熬|顶)不住了?[，,！!]?\s*(?:哈+)?(?:太好吃|吃太饱|太饱|太好笑|笑死|太搞笑)")
# Saying one holds both feelings at once.
_MIXED = re.compile(
    r"又[^，。！？；,.!?;\n]{1,6}又|既[^，。！？；,.!?;\n]{1,6}又|一边[^，。！？；,.!?;\n]{1,8}一边|喜忧参半|悲喜交加|百感交集"
    r"|mixed feelings|(?<![a-z])a mix of(?![a-z])|bittersweet|(?<![a-z])both(?![a-z]).{1,40}(?<![a-z])and(?![a-z])"
    r"|at the same time")
# fmt: on

_ZH_NEGATORS = re.compile(r"[不没未无莫]|(?<![告道离分特区差级类性])别")
_ZH_UNSTOPPABLE = re.compile(r"[忍止禁]不住|不停|不断|不禁|不由得?|不知不觉|不得不|不少|不止")
"""A 不 that says a feeling could not be held back, not that it is absent (忍不住哭了, 不停地担心), or that holds 不
without negating (不得不, 不少)."""
_ZH_DEGREE = re.compile(r"(?:特别|格外|别提(?:多|有多)?|无比|莫名(?:其妙)?(?:地|的)?)+$")
"""Words of degree just before a cue that hold a negator's character (特别累, 无比难过, 莫名焦虑, 别提多难受了): the
cue is negated only by a negator right before them (我不是特别难过), not by one further back (没下雨格外开心)."""
_ZH_NEGATES_DEGREE = re.compile(r"(?:[不没未]|(?<![告道离分特])别)(?:是|有|太|算|会|至于|觉得|感到|感觉|那么|怎么)*$")
_ZH_INTENSIFIERS = re.compile(r"(?:很|非常|特别|太|超|好|真|十分|极其|越来越|特|挺|无比|格外|极度)$")
_EN_NEGATORS = frozenset({"not", "no", "never", "without", "hardly", "nothing", "nor", "cannot"})
_EN_INTENSIFIERS = frozenset({"very", "so", "really", "extremely", "super", "too", "incredibly", "totally"})
_TITLE_RE = re.compile(r"《[^》\n]{0,60}》")
_CLAUSE_BREAK = re.compile(r"[，。！？；,.!?;\n]")
_EN_WORD = re.compile(r"[a-z']+")


def _compile(
    entries: list[tuple[str, float]], english: bool
) -> tuple[re.Pattern[str], list[tuple[re.Pattern[str], float]]]:
    """One non-capturing alternation per table, so the text is scanned once with a first-character
    prefilter (capturing groups would disable it); each hit is then weighed by the cue it fullmatches."""
    entries = [(p, w) for p, w in entries if w > 0]
    body = "|".join(f"(?:{p})" for p, _ in entries)
    scanner = re.compile(rf"(?<![a-z'])(?:{body})(?![a-z])" if english else body)
    return scanner, [(re.compile(p), w) for p, w in entries]


_TABLES = [
    (*_compile(_ZH_NEGATIVE, False), False, "negative"),
    (*_compile(_ZH_POSITIVE, False), False, "positive"),
    (*_compile(_EN_NEGATIVE, True), True, "negative"),
    (*_compile(_EN_POSITIVE, True), True, "positive"),
]
_HAS_LATIN = re.compile(r"[a-z]")
_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")


@functools.lru_cache(maxsize=4096)
def _weight(table: int, hit: str) -> float:
    """The weight of the first cue of ``_TABLES[table]`` that ``hit`` fullmatches (cached: hits repeat)."""
    return next((w for rx, w in _TABLES[table][1] if rx.fullmatch(hit)), 0.0)


def _before(text: str, start: int, width: int) -> str:
    """The text just before ``start``, cut at the last clause break."""
    window = text[max(0, start - width) : start]
    parts = _CLAUSE_BREAK.split(window)
    return parts[-1]


def _modifiers(text: str, start: int, english: bool) -> tuple[bool, bool]:
    """(negated, intensified) for a cue starting at ``start``."""
    if english:
        words = _EN_WORD.findall(_before(text, start, 40))[-3:]
        negated = any((w in _EN_NEGATORS or w.endswith("n't")) and words[i + 1:i + 2] not in (["stop"], ["help"])
                      for i, w in enumerate(words))  # "couldn't stop crying" is crying
        intensified = bool(words) and words[-1] in _EN_INTENSIFIERS
        return negated, intensified
    before = _before(text, start, 8)
    degree = _ZH_DEGREE.search(before)
    if degree:  # 我不是特别难过 is not sad, 没下雨格外开心 happy
        negated = _ZH_NEGATES_DEGREE.search(before[:degree.start()]) is not None
    else:  # 忍不住哭了, 不停地哭 are crying: blanked where they stand, so no earlier negator comes nearer
        negated = _ZH_NEGATORS.search(_ZH_UNSTOPPABLE.sub(lambda w: " " * len(w[0]), before)[-3:]) is not None
    return negated, bool(_ZH_INTENSIFIERS.search(_before(text, start, 4)))


def detect_emotion(text: str) -> Emotion:
    """Detect whether ``text`` is negative, positive or neutral, with its intensity and cues."""
    if not text or not text.strip():
        return NEUTRAL
    # a title is not a feeling: 《百年孤独》 names a novel (same length, so offsets still match ``text``)
    lowered = _TITLE_RE.sub(lambda m: " " * len(m.group()), text.casefold())
    totals = {"negative": 0.0, "positive": 0.0}
    cues: dict[str, list[str]] = {"negative": [], "positive": []}
    taken = bytearray(len(lowered))  # one cue per character: "压力很大" is not also "很大"
    has = {True: _HAS_LATIN.search(lowered) is not None, False: _HAS_CJK.search(lowered) is not None}
    for english, frame in ((True, _EN_RELIEF), (False, _ZH_RELIEF)):
        if not has[english]:
            continue
        for m in frame.finditer(lowered):
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            if _modifiers(lowered, m.start(), english)[0]:  # "can't relieve my stress": the stress stays
                table = 2 if english else 0
                for hit in _TABLES[table][0].finditer(m.group()):
                    totals["negative"] += _weight(table, hit.group())
                    cues["negative"].append(text[m.start() + hit.start() : m.start() + hit.end()])
    if has[False]:
        for m in _ZH_NOT_DISTRESS.finditer(lowered):
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    for table, (rx, _, english, polarity) in enumerate(_TABLES):
        if not has[english]:
            continue
        for m in rx.finditer(lowered):
            if 1 in taken[m.start() : m.end()]:
                continue
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            negated, intensified = _modifiers(lowered, m.start(), english)
            w = _weight(table, m.group()) * (_INTENSIFY if intensified else 1.0)
            cue = text[m.start() : m.end()]
            if negated and polarity == "negative":
                continue
            if negated:
                totals["negative"] += w * _NEGATED_POSITIVE
                cues["negative"].append(("not " if english else "不") + cue)
                continue
            totals[polarity] += w
            cues[polarity].append(cue)
    return _decide(totals["negative"], totals["positive"], cues, said_mixed=_MIXED.search(lowered) is not None)


def _decide(neg: float, pos: float, cues: dict[str, list[str]], *, said_mixed: bool) -> Emotion:
    """The label for the two totals (see the module docstring)."""
    both = neg > 0 and pos > 0
    if not (said_mixed and both):
        if neg >= NEGATIVE_THRESHOLD and neg >= DOMINANCE * pos:
            return Emotion("negative", round(1 - math.exp(-neg), 4), cues["negative"])
        if pos >= POSITIVE_THRESHOLD and pos >= DOMINANCE * neg:
            return Emotion("positive", round(1 - math.exp(-pos), 4), cues["positive"])
    if both and max(neg, pos) >= min(NEGATIVE_THRESHOLD, POSITIVE_THRESHOLD):
        return Emotion("mixed", round(1 - math.exp(-max(neg, pos)), 4), cues["negative"] + cues["positive"])
    return Emotion("neutral", 0.0, cues["negative"] + cues["positive"])
