"""Text to keyword tokens for BM25, in Chinese and English alike.

``tokenize(text)`` normalises (NFKC, lower case), splits the text into runs of Han characters and runs of
other letters/digits, segments Han runs with jieba's search mode (words plus their sub-words, so a query
for 咖啡 finds 喝咖啡), stems English words with a small suffix stripper, and drops stopwords and
punctuation. Numbers are kept (``2023``, ``3.5``).

The output is stored in the keyword index, so any change to it must bump ``TOKENIZER_VERSION``: an
index built by another version is stale and must be rebuilt (``KeywordIndex.needs_rebuild``).

jieba is initialised once, lazily and quietly, with its dictionary cache in a private per-user folder
under the system temp dir (never the home or working directory; read-only homes are fine).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import tempfile
import threading
import unicodedata

import jieba

TOKENIZER_VERSION = 1
"""Bump when ``tokenize``'s output changes for any input: stored keyword indexes then need a rebuild."""

# Han ideographs (basic, extension A, compatibility). Kana and Hangul are left to the "word" branch.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN_RE = re.compile(
    rf"(?P<han>[{_HAN}]+)"
    r"|(?P<num>\d+(?:\.\d+)+)"  # decimals and versions stay whole: 3.5, 1.2.3
    rf"|(?P<word>[^\W_{_HAN}]+(?:'[^\W_{_HAN}]+)*)"
)

_EN_STOP = """a an the is are was were be been being am i me my mine myself we us our ours you your yours he him
    his she her hers it its they them their theirs this that these those of to in on at for with by from
    as and or but if then than so too very just also about into over up down out off again there here
    what which who whom whose when where why how all any both each some such only own same not no nor
    do does did doing done have has had having will would can could should shall may might must let
    s t d ll m re ve cannot ok oh don't dont can't cant didn't didnt doesn't doesnt isn't isnt aren't arent
    wasn't wasnt weren't werent won't wouldn't wouldnt i'm im i've ive i'd i'll you're youre we're they're
    it's that's"""
_ZH_STOP = """的 了 是 我 你 他 她 它 们 我们 你们 他们 她们 它们 在 和 与 及 跟 同 也 都 就 还 又 吗 呢 吧 啊 呀
    哦 嗯 哈 这 那 这个 那个 这些 那些 这样 那样 有 个 着 过 被 把 给 让 对 从 到 而 但 但是 并 很 太
    要 会 能 可以 么 什么 怎么 怎样 哪 哪里 哪儿 之 以 为 于 所 其 或 或者 如果 因为 所以 啦 嘛 呗 得
    地 一下 一个"""
EN_STOPWORDS = frozenset(_EN_STOP.split())
ZH_STOPWORDS = frozenset(_ZH_STOP.split())
STOPWORDS = EN_STOPWORDS | ZH_STOPWORDS

_VOWELS = frozenset("aeiou")
_NO_UNDOUBLE = frozenset("lsz")  # falling, missing, buzzing keep their double letter

_jieba_lock = threading.Lock()
_jieba_ready = False


def _private_cache_dir() -> str:
    """A temp folder only this user owns, for jieba's dictionary cache (a marshal file it trusts)."""
    base = tempfile.gettempdir()
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(base, f"mneme-jieba-{uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
        # Another user could have planted this folder (or a symlink) in a shared /tmp: don't trust it.
        if os.path.islink(path) or (hasattr(os, "getuid") and st.st_uid != uid):
            return tempfile.mkdtemp(prefix="mneme-jieba-")
        return path
    except OSError:
        return tempfile.mkdtemp(prefix="mneme-jieba-")


def ensure_jieba() -> None:
    """Load jieba's dictionary once (about a second), quietly; later calls are free.

    Call it at start-up to move that second out of the first request.
    """
    global _jieba_ready
    if _jieba_ready:
        return
    with _jieba_lock:
        if _jieba_ready:
            return
        jieba.setLogLevel(logging.WARNING)
        if jieba.dt.tmp_dir is None:
            jieba.dt.tmp_dir = _private_cache_dir()
        logger = logging.getLogger("jieba")
        level = logger.level
        # A failed cache dump is logged with a traceback but is harmless (jieba then works uncached).
        logger.setLevel(logging.CRITICAL)
        try:
            jieba.dt.initialize()
        finally:
            logger.setLevel(level)
        _jieba_ready = True


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Strip common English suffixes so inflections meet: cities/city -> citi, hiking/hike -> hik.

    A deliberately small, deterministic stripper (plural -s/-es/-ies, -ed/-ied, -ing, -ly, final -e,
    consonant+y -> i): it only has to map a word's forms to one key, not produce a dictionary word.
    Words with digits or non-ASCII letters are returned as they are.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    w = word
    # Plurals.
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    # Verb and adverb endings.
    if w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("ing") and len(w) >= 6 and _has_vowel(w[:-3]):
        w = _undouble(w[:-3])
    elif w.endswith("ed") and not w.endswith("eed") and len(w) >= 5 and _has_vowel(w[:-2]):
        w = _undouble(w[:-2])
    elif w.endswith("ly") and len(w) >= 6 and not w.endswith(("ply", "ily")):
        w = w[:-2]
    # Endings that differ between a word's forms: happy/happily, hike/hiking, movie/movies.
    if len(w) > 3 and w.endswith("y") and w[-2] not in _VOWELS:
        w = w[:-1] + "i"
    elif len(w) > 3 and w.endswith("e") and w[-2] != "e":
        w = w[:-1]
    return w


def _has_vowel(s: str) -> bool:
    return any(c in _VOWELS or c == "y" for c in s[1:]) or s[:1] in _VOWELS


def _undouble(s: str) -> str:
    if len(s) >= 3 and s[-1] == s[-2] and s[-1] not in _VOWELS and s[-1] not in _NO_UNDOUBLE:
        return s[:-1]
    return s


def _word_token(word: str) -> str | None:
    w = word
    if w in EN_STOPWORDS:
        return None
    if w.isdigit():
        return w.lstrip("0") or "0"  # 05 and 5 are the same day of the month
    if "'" in w:
        if w.endswith("'s"):
            w = w[:-2]  # possessive: Alice's -> alice
        w = w.replace("'", "")  # contractions: don't -> dont
    if w in EN_STOPWORDS or not w:
        return None
    return stem(w)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 tokens: jieba words for Chinese, stemmed lower-case words otherwise.

    Stopwords (English and Chinese) and punctuation are dropped, numbers kept; order is preserved and
    repeats are kept (term frequency matters to BM25). Mixed Chinese/English text works.
    """
    if not text:
        return []
    norm = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    out: list[str] = []
    for m in _RUN_RE.finditer(norm):
        group = m.lastgroup
        piece = m.group()
        if group == "han":
            ensure_jieba()
            out.extend(t for t in jieba.lcut_for_search(piece) if t not in ZH_STOPWORDS)
        elif group == "num":
            out.append(piece)
        else:
            tok = _word_token(piece)
            if tok is not None:
                out.append(tok)
    return out
