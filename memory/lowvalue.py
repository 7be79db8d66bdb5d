"""Low-value turns: what is not worth remembering at all, and the hash used to spot exact repeats.

Kept deliberately narrow. A turn is low-value only when the WHOLE user message is a greeting, thanks,
acknowledgement, farewell or laughter (optionally with particles and filler: "好的呀", "谢谢你！", "ok thanks!",
"哈哈哈哈", "lol"),
or carries no words at all (empty, punctuation-only, emoji-only). Anything else is kept, however short:
"我喜欢爵士乐", "I'm sad" and "明天去北京" are exactly what a memory is for.

Reasons returned by ``is_low_value``: ``empty``, ``punctuation``, ``emoji``, ``greeting``, ``thanks``,
``ack``, ``farewell``, ``laughter``. ``is_question`` tells a question from a statement, "?" or not ("我住在哪里",
"what is my job"): the writing policy skips a turn that only asks (it tells nothing about the user).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from mneme.memory.base import clean_text


def _bar(phrases: str) -> tuple[str, ...]:
    """Split a ``|``-separated phrase list (compact to read, and phrases may hold spaces)."""
    return tuple(phrases.split("|"))


# Core phrases by reason. Longer phrases are tried first, so "好的" wins over "好".
_CORE: dict[str, tuple[str, ...]] = {
    "thanks": _bar(
        "非常感谢|多谢|谢谢|谢了|感谢|谢啦|3q|"
        "thank you|thanks|thank u|thx|ty|cheers|much appreciated|appreciate it"
    ),
    "greeting": _bar(
        "你好|您好|哈喽|哈啰|嗨|早上好|上午好|下午好|晚上好|早安|早|在吗|在不在|在嘛|"
        "hello|hi|hey|hiya|good morning|good afternoon|good evening|morning|yo"
    ),
    "farewell": _bar(
        "再见|拜拜|回头见|下次见|晚安|886|88|goodbye|bye|see you|see ya|good night|goodnight|later"
    ),
    "ack": _bar(
        "好的|好吧|好滴|好哒|好嘞|好|嗯嗯|嗯|哦哦|哦|噢|喔|收到|明白了|明白|知道了|了解|懂了|行|可以|"
        "没问题|没事了|没事|没关系|不客气|不用谢|"
        "okay|ok|k|kk|got it|sure|alright|all right|cool|noted|roger|understood|i see|"
        "no problem|np|no worries|you re welcome|youre welcome|hmm|hmmm|emm|emmm"
    ),
}
# Filler allowed around core phrases: particles, politeness, "so much", "you".
_FILLER: tuple[str, ...] = _bar(
    "呀|啊|哈哈|哈|啦|了|的|吧|呢|嘛|哟|噢|你|您|大家|非常|太|很|真|真的|一下|哈喽|"
    "so much|very much|a lot|so|very|you|guys|again|all|everyone|then|lol|haha|there|mate|man|bro|buddy|"
    "dear|oh|ah|well"
)

_ASCII_WORD = re.compile(r"[a-z0-9]")


def _alt(phrases: tuple[str, ...]) -> str:
    parts = []
    for p in sorted(phrases, key=len, reverse=True):
        esc = re.escape(p).replace(r"\ ", r"\s+")
        # English words must stand alone ("hi" never matches inside "his"); Chinese needs no spaces.
        parts.append(rf"(?<![a-z0-9]){esc}(?![a-z0-9])" if _ASCII_WORD.match(p) else esc)
    return "|".join(parts)


_CORE_RE = {reason: re.compile(_alt(phrases)) for reason, phrases in _CORE.items()}
_ANY_CORE = _alt(tuple(p for ps in _CORE.values() for p in ps))
_WHOLE_RE = re.compile(rf"^(?:\s*(?:{_ANY_CORE}|{_alt(_FILLER)})\s*)+$")
_PRIORITY = ("thanks", "greeting", "farewell", "ack")
_LAUGH = re.compile(r"(?:ha){2,}h?|(?:he){2,}|lo+l|lmf?ao+|rofl|23{3,}|[哈嘿呵嘻]{2,}|笑死(?:我了)?|xswl")
"""One word of laughter: 哈哈哈, 嘿嘿, 呵呵, 笑死, 2333, hahaha, lol, lmao (not 233: a room number)."""
_MAX_CHARS = 40  # longer messages always say something more
_MAX_SCAN = 200  # raw length past which a message is not even scanned (emoji runs included)


def _is_emoji(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat in ("So", "Sk") or ch in "\u200d\ufe0f\ufe0e\u20e3" or 0x1F000 <= ord(ch) <= 0x1FAFF


def _strip_symbols(text: str) -> tuple[str, bool]:
    """Drop punctuation, symbols and emoji (keeping word characters); report whether emoji were seen."""
    kept = []
    saw_emoji = False
    for ch in text:
        if _is_emoji(ch):
            saw_emoji = True
            kept.append(" ")
        elif unicodedata.category(ch)[0] in "PSZC":
            kept.append(" ")
        else:
            kept.append(ch)
    return " ".join("".join(kept).split()), saw_emoji


def is_low_value(text: str | None) -> str | None:
    """Return why the user message is not worth remembering, or ``None`` when it should be kept."""
    if text is None or not text.strip():
        return "empty"
    if len(text) > _MAX_SCAN:
        return None
    words, saw_emoji = _strip_symbols(unicodedata.normalize("NFKC", text).casefold())
    if not words:
        return "emoji" if saw_emoji else "punctuation"
    if all(_LAUGH.fullmatch(w) for w in words.split()):
        return "laughter"
    if len(words) > _MAX_CHARS or not _WHOLE_RE.match(words):
        return None
    for reason in _PRIORITY:
        if _CORE_RE[reason].search(words):
            return reason
    return None  # filler only ("you", "so"): a real, if cryptic, message


# Interrogative words that ask. Each excludes its common non-asking uses: 这几天/前几个月/十几岁 (a few),
# 多少有点 (somewhat), 不怎么 (not much), 没什么 (nothing much), 谁都/什么都 (anyone/anything).
_ZH_ASKING = re.compile(
    r"(?<![这那前后好十过])几(?:个|点|岁|天|年|月|号|次|周)"
    r"|多少(?!有点|有些|还是)|(?<![不没])怎么(?!都|也)|怎样|为什么|为啥|是否|是不是|有没有|多久|多大|何时|咋"
    r"|(?<![没不])什么(?!都|也)|(?<![没不])啥(?!都|也)|(?<![论管])哪(?!怕)(?![儿里]?[都也])|谁(?!都|也)"
    # not 他问我干嘛去了, 不让我干嘛
    r"|(?<![不没])(?<!问我)(?<!让我)(?<!偏要)干[嘛吗](?!都|也)|要不要|能不能|会不会|可不可以|该不该"
)
_ZH_FINAL_PARTICLE = re.compile(r"吗\s*$")
_REPORTED_ASKING = re.compile(r"[他她]们?问(?:我|他|她)[^，,。！？!?；;]*?"
                              r"(?=你|我该|我要|我能|我怎么|[，,。！？!?；;]|$)")
"""A clause telling what someone else asked (他问我几点回家): its asking words ask nothing of the assistant."""
_ZH_FINAL_NE = re.compile(r"呢\s*$")  # "你呢" asks; "我还在上班呢" states: a question only with an asking word or short
# "我不知道他住在哪里", "我有几个朋友": interrogative words that do not ask
_ZH_NOT_ASKING = re.compile(r"不知道|不记得|忘了|记不清|[有了买养]几")
# ... but a count that ends the sentence asks: 年假有几天, 一年有几个月 (我有几个好朋友 states)
_ZH_COUNT_AT_END = re.compile(r"[有了买养]几个?(?:点|岁|天|年|月|号|次|周|本|只|条|人|口)?[呢啊呀]?\s*$")
# An auxiliary opener asks ("do you remember…"), unless it is a name ("Will is my brother", "May loves jazz").
_EN_QUESTION = re.compile(
    r"^\s*(?:(?:what|where|when|who|whom|whose|which|why|how)\b"
    r"|(?:do|does|did|is|are|am|was|were|can|could|would|should|shall|have|has|might)\b"
    r"|(?:will|may)\s+(?:i|you|we|they|he|she|it)\b)",
    re.IGNORECASE,
)
_EN_NOT_ASKING = re.compile(r"^\s*(?:how|what|when|where|why)\s+(?:i|we)\b", re.IGNORECASE)  # "How I met her…"
# Asking to recall is asking, though it is not phrased as a question: "Tell me what you remember about me",
# "回忆一下我的工作" ("Remind me to …" / 提醒我明天… set a reminder: a plan, kept)
_RECALL_REQUEST = re.compile(
    r"^\s*(?:please\s+|(?:can|could|would) you\s+)?"
    r"(?:tell me(?! about it\b)|remind me(?! to)|list|show me|recall|summari[sz]e)\b"
    r"|^\s*(?:请|麻烦你?)?(?:告诉我|列出|列一下|回忆一下|帮我回忆|帮我想想|总结一下|说说你(?:记得|知道))",
    re.IGNORECASE)


def is_question(sentence: str) -> bool:
    """True for a question, with or without "?": "我住在哪里", "what is my job", "你记得我的生日吗".

    Chinese: a final 吗, an interrogative word used to ask (什么, 啥, 哪里, 哪, 谁, 几个, 多少, 怎么 …; not
    这几天, 没什么, 没啥, 哪怕, 不怎么, 多少有点), or a final 呢 with one of those (or in a short "你呢"), unless
    the sentence states not knowing ("我不知道他住在哪里"). English: it opens with a wh-word or an auxiliary verb
    ("Will" and "May" as names, "How I met her" do not ask). Both: a request to recall ("Tell me what you remember
    about me", "回忆一下我的工作"; not "Remind me to …", a reminder).
    """
    text = unicodedata.normalize("NFKC", sentence or "").strip()
    if not text:
        return False
    if text.endswith("?") or _RECALL_REQUEST.match(text):
        return True
    if _EN_QUESTION.match(text):
        return not _EN_NOT_ASKING.match(text)
    text = _REPORTED_ASKING.sub("", text)  # 他问我周末干嘛: what someone else asked is told, not asked
    if not text:
        return False
    if _ZH_NOT_ASKING.search(text) and not _ZH_COUNT_AT_END.search(text):
        return False
    asking = bool(_ZH_ASKING.search(text))
    if _ZH_FINAL_NE.search(text):
        return asking or len(text) <= 4
    return asking or bool(_ZH_FINAL_PARTICLE.search(text))


def normalize_for_hash(text: str) -> str:
    """Case-fold, NFKC-normalise and collapse whitespace: the form two repeats of a message share."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_hash(text: str) -> str:
    """SHA-256 hex digest of the normalised text, for exact-repeat detection."""
    return hashlib.sha256(normalize_for_hash(clean_text(text)).encode("utf-8")).hexdigest()
