"""The gist of a negative-emotion message, without a model: feeling, cause, effect, request.

A painful exchange is kept only as a summary, and the point of summarising is that its detail is not kept
word for word. ``gist_summary`` therefore never copies the user's sentences: it names, from small Chinese
and English lexicons, what the user feels (the emotion cues), what it is about (a topic such as work or a
relationship, and an event such as being criticised by a boss), what it does to them (sleeplessness, low
self-worth, thoughts of self-harm) and what they ask for (what to do, advice, someone to listen), e.g.
"用户因工作被领导批评而难过；失眠、自我评价低（涉及：方案）。", with a few key terms (content words
the other parts do not cover) so a later question can still find it. ``quotes_detail`` is the same rule as a
check: a summary that repeats one of the message's clauses verbatim (split on ，。！？,.!? and the like)
breaks it; the writing policy applies it to a model's summary too and falls back to the gist.
"""

from __future__ import annotations

import re

from mneme.memory.emotion import OVERWHELMED_EN, SELF_JUDGEMENT_ZH, Emotion
from mneme.memory.tokenize import EN_STOPWORDS, ensure_jieba, stem, tokenize

_CLAUSE_RE = re.compile(r"[^，。！？；：,.!?;:\n]+")

# (pattern, canonical term): the first match of each table names the topic / event / effect / request.
# fmt: off
_ZH_TOPICS: list[tuple[str, str]] = [
    (r"领导|老板|上司|经理|主管|同事|加班|方案|项目|公司|上班|工作|绩效|客户|职场|面试|夜班|值班|倒班|[科院店组处]长(?![期时久途远达痘])"
     r"|护士长", "工作"),
    (r"男朋友|女朋友|男友|女友|对象|恋爱|分手|失恋|前任|老公|老婆|丈夫|妻子|婚姻|离婚", "感情"),
    (r"考试|成绩|学习|论文|作业|挂科|考研|高考|老师|学校|导师|[四六]级|专[四八]|雅思|托福|期末|期中|答辩|毕业", "学业"),
    (r"父母|爸妈|爸爸|妈妈|父亲|母亲|家里|家人|孩子|儿子|女儿|我妈|我爸", "家庭"),
    (r"生病|住院|医院|身体|体检|病了|疼", "健康"),
    (r"房贷|欠债|借钱|工资|钱|负债|还款", "经济"),
    (r"朋友|室友|同学|邻居", "人际关系"),
]
_ZH_PEOPLE = (r"领导|老板|上司|经理|主管|老师|导师|父母|爸妈|爸爸|妈妈|同事|同学|朋友|室友|男朋友|女朋友|男友|女友|对象"
              r"|老公|老婆|客户|家人|亲戚|邻居|我妈|我爸")
_ZH_EVENTS: list[tuple[str, str]] = [
    (r"被(领导|老板|上司|经理|主管)[^，。！？]{0,12}?(?:骂|批评|训|否定|羞辱|指责|说)", "被{0}批评"),
    (r"被(老师|导师|父母|爸妈|爸爸|妈妈|同事)[^，。！？]{0,12}?(?:骂|批评|训|否定|羞辱|指责)", "被{0}批评"),
    (r"(领导|老板|上司|经理|主管|老师|导师|同事)[^，。！？]{0,6}?(?:骂|批评|训|否定|羞辱|指责)我", "被{0}批评"),
    (rf"被({_ZH_PEOPLE})?[^，。！？被]{{0,6}}?(?:骂|批评|训(?!练)|吼|凶(?![手杀案器])|怼|指责|羞辱|否定|否了)|挨(?:骂|批|训)",
     "被{0}批评"),
    (rf"被({_ZH_PEOPLE})?[^，。！？被]{{0,4}}?(?:排挤|孤立|针对)", "被{0}排挤"),
    (rf"被({_ZH_PEOPLE})?[^，。！？被]{{0,4}}?(?:欺负|嫌弃)", "被{0}欺负"),
    (rf"被({_ZH_PEOPLE})?[^，。！？被]{{0,4}}?(?:冤枉|误会)", "被{0}冤枉"),
    (rf"({_ZH_PEOPLE}|[院科校店组处局厂站部班]长(?![期时久途远达痘])|护士长)(?:还|又|也)?(?:老是|总是|老|总|一直|经常|天天|故意)?"
     r"(?:挑我(?:的)?(?:毛病|刺)|找我(?:的)?茬)", "被{0}挑剔"),
    (r"(?<![不没别])(?:挑我(?:的)?(?:毛病|刺)|找我(?:的)?茬)", "被挑剔"),
    (r"被裁|裁员|被辞退|被开除|被炒|炒鱿鱼|失业|丢了工作", "失去工作"),
    (r"分手|失恋|被\w{0,4}?甩", "分手"),
    (r"被\w{0,4}?拒绝", "被拒绝"),
    (r"离婚", "离婚"),
    (r"(?:和|跟|与)我?(\w{1,4}?)(?:大?吵架|大?吵了一架|大吵)|吵架|吵了一架", "与{0}争吵"),
    (r"去世|过世|离世", "亲人离世"),
    (r"没考好|考砸|挂科|落榜|没考上", "考试失利"),
    (r"加班", "长期加班"),
]
_ZH_EFFECTS: list[tuple[str, str]] = [
    (r"失眠|睡不着|睡不好|整夜没睡|一夜没睡|没睡着", "失眠"),
    (r"吃不下|没胃口|不想吃", "食欲差"),
    (r"觉得自己[^，。！？]{0,6}?(?:失败|没用|差劲|一无是处|不行|废物|很差|好差|太差)|自卑|一无是处"
     rf"|{SELF_JUDGEMENT_ZH}|[好很太真超]没用", "自我评价低"),
    (r"哭", "哭泣"),
    (r"不想活|想死|自杀|活着没意思|撑不下去", "流露轻生念头"),
    (r"(?:撑|扛|熬|顶)不住|(?:扛|熬)不下去", "身心透支"),
    (r"不想上班|不想去公司", "抗拒上班"),
]
_ZH_REQUESTS: list[tuple[str, str]] = [
    (r"怎么办|该怎么|如何是好|怎么做", "想知道该怎么办"),
    (r"放松|减压|缓解", "想找放松的办法"),
    (r"建议|办法|意见", "寻求建议"),
    (r"陪我|聊聊|说说话|听我说", "希望有人倾听"),
    (r"安慰", "需要安慰"),
]
_EN_TOPICS: list[tuple[str, str]] = [
    (r"boss|manager|colleague|coworker|co-worker|office|work|job|project|proposal|client|deadline|career",
     "work"),
    (r"boyfriend|girlfriend|partner|husband|wife|marriage|relationship|broke up|breakup|divorce|ex", "a relationship"),
    (r"exam|grade|school|study|studies|thesis|teacher|professor|class|finals|midterm|gre|gmat|(?:the|my) sat|ielts"
     r"|toefl",
     "school"),
    (r"parents?|mom|mum|dad|mother|father|family|son|daughter|kids?", "family"),
    (r"sick|ill|illness|hospital|health|pain|diagnos\w*", "health"),
    (r"money|debt|rent|mortgage|bills|salary|loan", "money"),
    (r"friends?|roommate|flatmate|neighbou?r", "friends"),
]
_EN_EVENTS: list[tuple[str, str]] = [
    (r"(boss|manager|supervisor|teacher|professor|parents?)\b[^,.!?]{0,40}?\b(?:yelled|shouted|screamed|criticized|"
     r"criticised|scolded|humiliated|blamed|tore|ripped)", "criticism from their {0}"),
    (r"(?:yelled|shouted|screamed|snapped) at me|(?:got|was|been|get) (?:yelled|shouted|screamed) at|scolded me"
     r"|chewed me out|told me off|(?:got|was|been|being|get) (?:scolded|chewed out|told off)|critici[sz]ed me",
     "being criticised"),
    (r"(?:got|was|been|being|get) bullied|bull(?:ied|ying) me", "bullying"),
    (r"(?<!')(boss|manager|supervisor|principal|teacher|professor|coach|colleague|coworker)"
     r"(?:\s+(?:always|keeps|kept|constantly|still|just|has been|is|was))*\s+pick(?:s|ed|ing)? on me",
     "being picked on by their {0}"),
    (r"pick(?:s|ed|ing)? on me", "being picked on"),
    (r"rejected me|got rejected|was rejected", "a rejection"),
    (r"laid off|got fired|was fired|lost my job", "losing their job"),
    (r"broke up|breakup|dumped", "a break-up"),
    (r"divorce", "a divorce"),
    (r"(?:fight|argument|argued) with (?:my )?(\w+)", "a fight with their {0}"),
    (r"passed away|died", "a death"),
    (r"failed (?:my |the )?(?:exam|test|class)", "a failed exam"),
]
_EN_EFFECTS: list[tuple[str, str]] = [
    (r"can'?t sleep|couldn'?t sleep|insomnia|didn'?t sleep|no sleep|sleepless|awake all night", "sleeplessness"),
    (r"can'?t eat|not eating|no appetite", "poor appetite"),
    (r"(?:feel|am|i'm)(?: like)?(?: such)?(?: a| an)? (?:total |complete |)(?:failure|loser|useless|worthless)",
     "low self-worth"),
    (r"worthless|useless", "low self-worth"),
    (r"cry|cried|crying", "crying"),
    (r"want to die|kill myself|suicidal|end it all|can'?t go on", "thoughts of self-harm"),
    (rf"{OVERWHELMED_EN}|can'?t cope", "feeling overwhelmed"),
]
_EN_REQUESTS: list[tuple[str, str]] = [
    (r"what should i do|what do i do|what can i do|how do i|how can i", "asks what to do"),
    (r"relax|unwind|de-?stress|cope", "asks how to cope"),
    (r"advice|suggest", "asks for advice"),
    (r"talk to|listen|vent", "wants someone to listen"),
    (r"comfort", "needs comfort"),
]
# fmt: on
_ZH_TABLES = [[(re.compile(p), t) for p, t in table] for table in (_ZH_TOPICS, _ZH_EVENTS, _ZH_EFFECTS, _ZH_REQUESTS)]
_EN_TABLES = [[(re.compile(rf"(?<![a-z])(?:{p})s?(?![a-z])", re.I), t) for p, t in table]
              for table in (_EN_TOPICS, _EN_EVENTS, _EN_EFFECTS, _EN_REQUESTS)]
_PRESSURE_RE = re.compile(r"压力\w{0,3}大")
_ZH_NUMBERED_RE = re.compile(r"(?<![\d一二三四五六七八九十])(?:[四六]级|专[四八]|科目[一二三四])")
"""Names of exams with a numeral in them, which jieba tags as numbers and would drop."""
_ZH_POS = ("n", "vn", "nz", "ns", "nr", "nt", "nw", "v", "l", "i")
_ZH_GENERIC_WORDS = """感觉 觉得 知道 可能 起来 我会 没有 你好 感到 方法 办法 不想 变得 愿意 有时候 地方 注意
发现 听说 时候 今天 最近 真的 事情 东西 一下 一些 有点 怎么办 怎么 什么 自己 大家 希望 需要 现在 已经
忍不住 止不住 不停"""
_ZH_GENERIC = frozenset(_ZH_GENERIC_WORDS.split())
_EN_GENERIC_WORDS = """today yesterday really feel feeling felt like think know want night time things thing something
anything everything someone because about would could should just still even much always never
every said says tell told make made going been being doing whole today's since sometimes front here
there back away around again maybe lately moved went came getting started help yeah thanks sorry wow hey
unfortunately pretty last next first keep keeps kept ever else once other anymore week weeks month months
year years day days tonight morning evening got get gets let lot bit way too yes put say saw see try
now new old big ago few yet one two three four five six seven eight nine ten during stop stopped tomorrow
weekend monday tuesday wednesday thursday friday saturday sunday ugh argh omg lol haha hmm meh gosh geez sat"""
_EN_GENERIC = frozenset(_EN_GENERIC_WORDS.split())
_EN_GENERIC_STEMS = frozenset(stem(w) for w in _EN_GENERIC)
_GRAPHIC_RE = re.compile(
    r"血|割腕|自残|跳楼|上吊|安眠药|吞药|刀|杀|强奸|性侵|尸体|打我|揍我|虐待|遗书"
    r"|(?<![a-z])(?:kill|killed|blood|bleeding|cut myself|cutting|overdose|pills|rape|raped|assault"
    r"|hang myself|jump off|suicide note|knife|gun|beat me|beats me|hit me|abuse|abused|corpse|self-harm)"
    r"(?![a-z])",
    re.IGNORECASE,
)
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:]\s*)\W*$")
_EN_WORD_RE = re.compile(r"[a-z][a-z'-]{2,}", re.I)
"""Words of three letters or more: dog, cat, job and mom are what a later question names."""


_THEIR = {"我妈": "妈妈", "我爸": "爸爸"}
"""The user's words for a person, as the summary names them (被我妈骂 → 被妈妈批评)."""


def _first(table: list[tuple[re.Pattern[str], str]], text: str) -> str:
    for rx, term in table:
        m = rx.search(text)
        if m:
            groups = [g for g in m.groups() if g]
            if "{0}" in term and groups:
                return term.format(*(_THEIR.get(g, g).lower() for g in groups))
            return term.replace("与{0}", "与人").replace("their {0}", "someone").replace("{0}", "")
    return ""


def _all(table: list[tuple[re.Pattern[str], str]], text: str) -> list[str]:
    return list(dict.fromkeys(term for rx, term in table if rx.search(text)))


_FEELING_NAMES = {"累": "疲惫", "累死": "疲惫", "急死": "着急", "愁死": "发愁", "犯愁": "发愁",
                  "tired": "exhausted", "drained": "exhausted", "worn out": "exhausted"}
"""Cues named as the feeling they are ("好累" is 疲惫, "so tired" exhausted)."""


def _feelings(emotion: Emotion, *said: list[tuple[re.Pattern[str], str]], zh: bool) -> list[str]:
    out: list[str] = []
    for cue in emotion.cues:
        cue = _PRESSURE_RE.sub("压力大", cue).strip().lower() if zh else cue.strip().lower()
        cue = "心烦意乱" if zh and cue.startswith("心") and cue.endswith(("乱", "乱如麻")) else cue  # 心里很乱
        if any(rx.search(cue) for table in said for rx, _ in table):
            continue  # an event or effect (分手, 失眠, "kill myself", 被老板骂): said once, as its term
        out.append("孤独" if zh and "alone" in cue else "lonely" if "alone" in cue else _FEELING_NAMES.get(cue, cue))
    return list(dict.fromkeys(out))[:3]


def _spans(tables: list[list[tuple[re.Pattern[str], str]]], text: str, cues: list[str]) -> list[tuple[int, int]]:
    spans = [m.span() for table in tables for rx, _ in table for m in rx.finditer(text)]
    lowered = text.casefold()
    for cue in cues:
        start = lowered.find(cue.casefold())
        while start >= 0:
            spans.append((start, start + len(cue)))
            start = lowered.find(cue.casefold(), start + 1)
    return spans


def key_terms(message: str, said: list[tuple[int, int]], *, zh: bool, n: int = 4) -> list[str]:
    """Up to ``n`` content words of ``message`` (TF-IDF with parts of speech in Chinese, content words in
    English) that the gist's other parts do not already stand for: the words a later question may use.
    A clause with graphic detail (violence, self-harm, abuse) gives no terms at all."""
    message = message.replace("\u2019", "'")  # don’t is don't (a word with an apostrophe), not "don"
    message = _CLAUSE_RE.sub(lambda m: " " * len(m.group()) if _GRAPHIC_RE.search(m.group()) else m.group(), message)
    def unsaid(term: str) -> bool:
        starts = [m.start() for m in re.finditer(re.escape(term), message, re.I)]
        return any(not any(a <= s and s + len(term) <= b for a, b in said) for s in starts)

    if zh:
        import jieba.analyse

        ensure_jieba()
        # exams jieba reads as numerals (六级, 专八, 科目二) first; not a verb with its complement (吵得, 气得)
        named = [m.group() for m in _ZH_NUMBERED_RE.finditer(message)]
        candidates = list(dict.fromkeys(named + [t for t in jieba.analyse.extract_tags(
            message, topK=12, allowPOS=_ZH_POS) if len(t) >= 2 and t not in _ZH_GENERIC and t not in _ZH_PLAIN_WORDS
            and not (len(t) == 2 and t[1] == "得") and not _NUMBER_RE.match(t)]))
    else:
        # names first (capitalised inside a sentence: people, places, brands are what a later question names),
        # then other content words; interjections and -ly adverbs say nothing a question would ask for
        words = [(m.group(), m.start()) for m in _EN_WORD_RE.finditer(message)]
        names = [w.lower() for w, at in words if w[0].isupper() and not _SENTENCE_START_RE.search(message[:at])]
        plain = [w.lower() for w, _ in words]
        candidates = [w for w in dict.fromkeys(names + plain)
                      if w not in EN_STOPWORDS and w not in _EN_GENERIC and "'" not in w and not w.endswith("ly")]
    kept: list[str] = []
    for t in candidates:  # 科目 says nothing 科目二 did not
        if unsaid(t) and not any(t.casefold() in k.casefold() for k in kept):
            kept.append(t)
    return kept[:n]


_ZH_PLAIN = """今年 去年 明年 今天 昨天 明天 前天 后天 每天 每周 上周 下周 这周 本周 周末 上周末 这周末 下周末 早上 晚上
上午 下午 上次 下次 一直 总是 经常 好大 好多 很多"""
_ZH_PLAIN_WORDS = frozenset(_ZH_PLAIN.split())
"""Time words and words of manner said in statements about anything."""
_NUMBER_RE = re.compile(r"^第?[\d一二两三四五六七八九十百千万几半]+[岁天年月周次点号个分时只辆度条位本件张块元]*$"
                        r"|^(?:周|星期|礼拜)[一二三四五六日天末]$|^我.$")
"""两岁, 十一点, 一只, 第三次, 周三, and jieba's 我下, 我家: a number, a weekday, the user plus a word."""
_ZH_PLAIN_CHARS = frozenset("叫去学打住买是有要想没不好做看说让来到走用给会能下上点次天年月号快慢多少大小"
                            "真又再只把被对从跟和与或过着得地")
"""Single characters said in statements about anything (verbs, adverbs, particles): 猫, 狗, 胃, 车 are kept."""


def content_words(text: str) -> set[str]:
    """The keyword tokens of ``text`` that name something: what two statements must share to be about the same
    thing. Not a plain verb or particle (叫, 去, 学; 猫 and 胃 count), not a generic or time word (最近, 感觉, 今年,
    "today"), not a number or weekday (两岁, 十一点, 一只, 周三)."""
    return {t for t in tokenize(text)
            if t not in _ZH_PLAIN_CHARS and t not in _ZH_GENERIC and t not in _ZH_PLAIN_WORDS
            and t not in _EN_GENERIC_STEMS and not _NUMBER_RE.match(t)}


def clauses(text: str) -> list[str]:
    """The message's clauses (split on ，。！？,.!? and the like), stripped."""
    return [c.strip() for c in _CLAUSE_RE.findall(text) if c.strip()]


def quotes_detail(summary: str, message: str, *, min_chars: int = 6) -> bool:
    """True when ``summary`` repeats a clause of ``message`` (one of at least ``min_chars`` characters)
    verbatim: the summary keeps detail word for word."""
    folded = summary.casefold()
    return any(len(c) >= min_chars and c.casefold() in folded for c in clauses(message))


def gist_summary(message: str, emotion: Emotion, *, language: str, limit: int) -> str:
    """The gist of a negative (redacted) message: feeling, cause, effect and request, in ``language``."""
    zh = language == "zh"
    topics, events, effects, requests = _ZH_TABLES if zh else _EN_TABLES
    topic = _first(topics, message)
    event = _first(events, message)
    effect = _all(effects, message)
    ask = _first(requests, message)
    feelings = _feelings(emotion, events, effects, zh=zh)
    # a topic word (方案 → 工作) says more as itself than as its topic: only events, effects, requests and
    # cues count as said
    terms = key_terms(message, _spans([events, effects, requests], message, emotion.cues), zh=zh)
    terms = [t for t in terms if t.casefold() not in (topic + event).casefold()
             and not any(c.casefold() in t.casefold() for c in emotion.cues)]  # 很着急 is the feeling, said
    if zh:
        feeling = "、".join(feelings) or "情绪低落"
        # "因工作被领导批评": a passive event reads with its topic; "因分手" / "因亲人离世" stand alone
        cause = (topic + event if event.startswith("被") else event) if event else topic
        head = f"用户倾诉了烦恼：因{cause}而{feeling}" if cause else f"用户倾诉了烦恼：感到{feeling}"
        parts = [head, "、".join(effect), ask]
        text = "；".join(p for p in parts if p) + (f"（涉及：{'、'.join(terms)}）" if terms else "") + "。"
    else:
        feeling = ", ".join(feelings) or "low"
        cause = event or topic
        head = f"The user confided a worry: feels {feeling}" + (f" about {cause}" if cause else "")
        if event and topic and topic not in event:
            head += f" ({topic})"
        parts = [head, ", ".join(effect), ask]
        text = "; ".join(p for p in parts if p) + (f" (about: {', '.join(terms)})" if terms else "") + "."
    if len(text) > limit:
        text = text[: max(1, limit - 1)].rstrip("；;、, ") + "…"
    return text
