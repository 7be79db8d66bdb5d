"""Redaction: replace personal identifiers and secrets with placeholders before anything stores or sees text.

Kinds, in the order they claim text (an earlier kind's span is masked before the next kind looks, so a
phone pattern can never eat part of an ID number or a bank card, nor an IP part of a token):

    secret     API keys (sk-, sk-proj-, ghp_, github_pat_, AKIA, xox[bp]-), Bearer tokens, JWTs,
               ``password: ...`` / ``api_key=...`` / ``密码是...`` assignments, long high-entropy
               hex/base64 strings right after a key word (key, token, secret, 密钥, 令牌 ...)
    email      ``local@domain.tld``
    id_number  Chinese resident ID: 18 characters, ISO 7064 MOD 11-2 check character, a real
               province code and a plausible birth date (1900-2099)
    passport   1-2 letters and 6-9 digits right after 护照 / passport (号码, number, no.): alone, "E12345678"
               is as likely an order or a model number
    bank_card  13-19 digits, contiguous or in groups of four (or 4-6-5), passing the Luhn check
    ip         IPv4 (each octet <= 255, no leading zeros) and IPv6 (validated by ``ipaddress``)
    phone      mainland mobile ``1[3-9]\\d{9}`` with optional +86/0086 and space/dash separators,
               international ``+CC ...`` numbers of 8-15 digits, landlines ``010-12345678`` / ``021-6234 5678``,
               North American ``(415) 555-2671`` / ``415-555-2671`` and British mobile ``07700 900123``

Placeholders follow the language of the text around them (``language_of``): Chinese text gets
``[手机号]``, English ``[PHONE]``. Near misses (wrong checksums, failed Luhn, 999.1.1.1, 12-digit
numbers, prices, dates) are left alone: over-redaction would destroy the memories themselves.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from datetime import date

KINDS: tuple[str, ...] = ("secret", "email", "id_number", "passport", "bank_card", "ip", "phone")
"""Every redaction kind, in the order they claim text."""

PLACEHOLDERS: dict[str, dict[str, str]] = {
    "zh": {
        "email": "[邮箱]",
        "phone": "[手机号]",
        "id_number": "[身份证号]",
        "passport": "[护照号]",
        "bank_card": "[银行卡号]",
        "ip": "[IP地址]",
        "secret": "[密钥]",
    },
    "en": {
        "email": "[EMAIL]",
        "phone": "[PHONE]",
        "id_number": "[ID_NUMBER]",
        "passport": "[PASSPORT]",
        "bank_card": "[BANK_CARD]",
        "ip": "[IP]",
        "secret": "[SECRET]",
    },
}


@dataclass(frozen=True, kw_only=True)
class RedactionPolicy:
    """Which kinds of identifiers are redacted; all on by default."""

    email: bool = True
    """E-mail addresses."""
    phone: bool = True
    """Mobile, international and landline phone numbers."""
    landline: bool = True
    """Landlines such as ``010-12345678`` (only when ``phone`` is on too)."""
    id_number: bool = True
    """Chinese resident ID numbers (checksum-validated)."""
    passport: bool = True
    """Passport numbers, where the text says they are one (护照号 E12345678, passport no. G1234567)."""
    bank_card: bool = True
    """Bank card numbers (Luhn-validated)."""
    ip: bool = True
    """IPv4 and IPv6 addresses."""
    secret: bool = True
    """API keys, tokens, passwords and other credentials."""

    def enabled(self, kind: str) -> bool:
        """Whether ``kind`` (one of ``KINDS``) is redacted under this policy."""
        return bool(getattr(self, kind))


DEFAULT_POLICY = RedactionPolicy()
"""Everything on."""

NO_REDACTION = RedactionPolicy(**{f.name: False for f in fields(RedactionPolicy)})
"""Everything off (for trusted, already-clean text)."""


@dataclass(frozen=True)
class Redacted:
    """Redacted text and how many identifiers of each kind were replaced (kinds with zero are absent)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """How many identifiers were replaced in all."""
        return sum(self.counts.values())


_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD_RE = re.compile(r"[A-Za-z]{2,}")


def language_of(text: str) -> str:
    """Return ``"zh"`` when the text is mainly Chinese, else ``"en"``.

    One Chinese character is counted against one Latin word, so "我的邮箱是 bob@example.com" is Chinese.
    """
    cjk = len(_CJK_RE.findall(text))
    if cjk == 0:
        return "en"
    return "zh" if cjk >= len(_LATIN_WORD_RE.findall(text)) else "en"


# --- validators --------------------------------------------------------------------------------------

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
# The province-level codes that open a resident ID.
_PROVINCES = frozenset(
    str(code)
    for code in (11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51,
                 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83)
)


def id_check_char(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character of a Chinese resident ID's first 17 digits."""
    return _ID_CHECK[sum(int(d) * w for d, w in zip(first17, _ID_WEIGHTS, strict=True)) % 11]


def is_valid_cn_id(value: str) -> bool:
    """True for an 18-character Chinese resident ID with a valid check character, province and birth date."""
    value = value.upper()
    if len(value) != 18 or not value[:17].isdigit() or value[:2] not in _PROVINCES:
        return False
    try:
        born = date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    if not 1900 <= born.year <= 2099:
        return False
    return id_check_char(value[:17]) == value[17]


def luhn_ok(digits: str) -> bool:
    """True when a digit string passes the Luhn check (bank cards)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


# --- detectors ---------------------------------------------------------------------------------------
# Each detector yields (start, end) spans to replace in the (masked) text.

Span = tuple[int, int]
Detector = Callable[[str, RedactionPolicy], Iterator[Span]]

_SECRET_TOKEN_RES = [
    re.compile(r"(?<![\w-])sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?<!\w)gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"(?<!\w)github_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
    re.compile(r"(?<!\w)xox[baprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
]
_BEARER_RE = re.compile(r"(?i)\bBearer\s+([A-Za-z0-9\-._~+/]{12,}=*)")
_SECRET_WORDS = (
    r"api[_\- ]?key|apikey|access[_\- ]?key|secret[_\- ]?key|client[_\- ]?secret|secret|"
    r"access[_\- ]?token|auth[_\- ]?token|refresh[_\- ]?token|token|password|passwd|passcode|pwd|"
    r"密码|口令|密钥|秘钥|令牌"
)
# ``password: x`` / ``api_key=x`` take any value of 4+ characters; ``my password is x`` needs a value
# with a digit or symbol, so prose ("the token is valid") survives.
_ASSIGN_RE = re.compile(
    rf"(?i)(?<![A-Za-z])(?:{_SECRET_WORDS})[\"']?\s*(?:[:=：]|=>)\s*[\"']?([!-~]{{4,}}?)(?=[\"'\s,，。;；)）]|$)"
)
_ASSIGN_IS_RE = re.compile(
    rf"(?i)(?<![A-Za-z])(?:{_SECRET_WORDS})\s*(?:is|was|是|为|改成了?|改为)\s*[\"']?([!-~]{{4,}}?)(?=[\"'\s,，。;；)）]|$)"
)
_KEYWORD_BLOB_RE = re.compile(
    r"(?i)(?<![A-Za-z])(?:key|token|secret|credential|密钥|秘钥|令牌)[^\n]{0,24}?"
    r"(?<![A-Za-z0-9+/_=-])([A-Za-z0-9+/_-]{20,}={0,2})(?![A-Za-z0-9+/_=-])"
)


def _strip_trailing(text: str, start: int, end: int) -> Span:
    while end > start and text[end - 1] in ".!?":
        end -= 1
    return start, end


# Cheap guards: most text holds none of these, and a failed substring test is far cheaper than a scan.
_TOKEN_HINTS = ("sk-", "gh", "github_pat_", "AKIA", "ASIA", "xox", "eyJ")
_SECRET_WORD_HINT_RE = re.compile(r"(?i)key|secret|token|pass|pwd|credential|密码|口令|密钥|秘钥|令牌")


def _secrets(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    if any(h in text for h in _TOKEN_HINTS):
        for rx in _SECRET_TOKEN_RES:
            for m in rx.finditer(text):
                yield m.span()
    if "earer" in text or "EARER" in text:
        for m in _BEARER_RE.finditer(text):
            yield m.span(1)
    if not _SECRET_WORD_HINT_RE.search(text):
        return
    for m in _ASSIGN_RE.finditer(text):
        if not m.group(1).startswith("["):  # already a placeholder
            yield _strip_trailing(text, *m.span(1))
    for m in _ASSIGN_IS_RE.finditer(text):
        value = m.group(1).rstrip(".!?")
        if not value.startswith("[") and re.search(r"[\d\W_]", value) and len(value) >= 4:
            yield _strip_trailing(text, *m.span(1))
    for m in _KEYWORD_BLOB_RE.finditer(text):
        blob = m.group(1)
        mixed = re.search(r"\d", blob) and re.search(r"[A-Za-z]", blob)
        if mixed and _entropy(blob) >= 3.0:
            yield m.span(1)


_EMAIL_RE = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)


def _emails(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    if "@" not in text:
        return
    for m in _EMAIL_RE.finditer(text):
        yield m.span()


_ID_RE = re.compile(r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])")


# A passport number only where the text says it is one (護照/护照/passport, then its number within a few characters):
# alone, "E12345678" is as likely an order or a model number.
_PASSPORT_RE = re.compile(
    r"(?:护照|護照|passport)(?:\s*(?:号码|號碼|号|號|number|no\.?|#))?\s*(?:是|为|為|:|：|is)?\s*"
    r"(?P<n>(?<![0-9A-Za-z])[A-Za-z]{1,2}\d{6,9}(?![0-9A-Za-z]))", re.IGNORECASE)


def _id_numbers(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    for m in _ID_RE.finditer(text):
        if is_valid_cn_id(m.group()):
            yield m.span()


def _passports(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    for m in _PASSPORT_RE.finditer(text):
        yield m.span("n")


_CARD_RES = [
    re.compile(r"(?<![\d.+])\d{13,19}(?![\d])"),
    re.compile(r"(?<![\d.+])\d{4}(?:[ -]\d{4}){2,3}(?:[ -]\d{1,4})?(?![\d])"),
    re.compile(r"(?<![\d.+])\d{4}[ -]\d{6}[ -]\d{5}(?![\d])"),
    re.compile(r"(?<![\d.+])\d{6}[ -]\d{13}(?![\d])"),
]
_PREFIXED_MOBILE_RE = re.compile(r"^(?:0086|86)1[3-9]\d{9}$")  # a phone with its country code, not a card


def _bank_cards(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    for rx in _CARD_RES:
        for m in rx.finditer(text):
            digits = re.sub(r"\D", "", m.group())
            if 13 <= len(digits) <= 19 and luhn_ok(digits) and not _PREFIXED_MOBILE_RE.match(digits):
                yield m.span()


_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4_RE = re.compile(rf"(?<![\d.])(?:{_OCTET}\.){{3}}{_OCTET}(?!\d|\.\d)")
_IPV6_CANDIDATE_RE = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?![\w:]|\.\d)"
)


def _ips(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    # IPv6 first, so an IPv4-mapped address (::ffff:192.0.2.1) is claimed whole.
    for m in _IPV6_CANDIDATE_RE.finditer(text) if ":" in text else ():
        candidate = m.group()
        # Two filled groups and four hex digits at least: "::", "a::b" are code or prose, not addresses.
        groups = [g for g in re.split(r"[:.]", candidate) if g]
        if len(groups) < 2 or sum(map(len, groups)) < 4:
            continue
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
        yield m.span()
    for m in _IPV4_RE.finditer(text) if "." in text else ():
        yield m.span()


_MOBILE_RE = re.compile(r"(?<![\d.])(?:(?:\+|00)86[ -]?|\(\+?86\)[ -]?)?1[3-9]\d(?:[ -]?\d{4}){2}(?![\d])")
_INTL_RE = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ -]?\(?\d{1,4}\)?){2,5}(?![\d])")
_LANDLINE_RES = [
    re.compile(r"(?<![\d.\-])0\d{2,3}-(?:\d{7,8}|\d{3,4} \d{4})(?![\d-])"),  # 021-62345678, 021-6234 5678
    re.compile(r"(?<![\d.])\(0\d{2,3}\)\s?(?:\d{7,8}|\d{3,4} \d{4})(?![\d])"),
]
# Numbers written without a country code in the two national formats most English text uses: North American
# ((415) 555-2671, 415-555-2671, 415.555.2671, 415 555 2671: area code and exchange start with 2-9, one separator
# kind throughout; not toll-free 8XX nor China's 400 business lines, which are nobody's personal number) and British
# mobiles (07700 900123).
_NANP_AREA = r"(?!400|8(?:00|33|44|55|66|77|88))[2-9]\d{2}"
_NANP_RE = re.compile(
    rf"(?<![\d.+\-])(?:\({_NANP_AREA}\)\s?[2-9]\d{{2}}[-. ]\d{{4}}"
    rf"|{_NANP_AREA}(?P<sep>[-. ])[2-9]\d{{2}}(?P=sep)\d{{4}})(?![\d-]|\.\d)")
_UK_MOBILE_RE = re.compile(r"(?<![\d.+\-])07\d{3} ?\d{6}(?![\d-]|\.\d)")


def _phones(text: str, policy: RedactionPolicy) -> Iterator[Span]:
    for m in _MOBILE_RE.finditer(text):
        yield m.span()
    for m in _INTL_RE.finditer(text):
        if 8 <= sum(ch.isdigit() for ch in m.group()) <= 15:
            yield m.span()
    for rx in (_NANP_RE, _UK_MOBILE_RE):
        for m in rx.finditer(text):
            yield m.span()
    if policy.landline:
        for rx in _LANDLINE_RES:
            for m in rx.finditer(text):
                yield m.span()


_DETECTORS: dict[str, Detector] = {
    "secret": _secrets,
    "email": _emails,
    "id_number": _id_numbers,
    "passport": _passports,
    "bank_card": _bank_cards,
    "ip": _ips,
    "phone": _phones,
}

_MASK = "\x00"
_DIGIT_RE = re.compile(r"\d")
_NEEDS_DIGIT = frozenset({"id_number", "passport", "bank_card", "phone"})


def find_spans(text: str, policy: RedactionPolicy = DEFAULT_POLICY) -> list[tuple[int, int, str]]:
    """Return the non-overlapping ``(start, end, kind)`` spans ``redact`` would replace, in text order."""
    masked = text
    spans: list[tuple[int, int, str]] = []
    for kind in KINDS:
        if not policy.enabled(kind):
            continue
        if kind in _NEEDS_DIGIT and not _DIGIT_RE.search(masked):
            continue
        claimed: list[Span] = []
        for start, end in _DETECTORS[kind](masked, policy):
            if end <= start or _MASK in masked[start:end]:
                continue  # overlaps a span an earlier kind claimed
            if any(start < e and s < end for s, e in claimed):
                continue
            claimed.append((start, end))
        for start, end in claimed:
            # Masking keeps offsets and acts as a non-digit, non-letter boundary for later patterns.
            masked = masked[:start] + _MASK * (end - start) + masked[end:]
            spans.append((start, end, kind))
    return sorted(spans)


def redact(text: str, policy: RedactionPolicy = DEFAULT_POLICY, *, language: str | None = None) -> Redacted:
    """Replace identifiers in ``text`` with placeholders in the text's language; count them by kind.

    ``language`` (``zh``/``en``) forces the placeholders' language, e.g. for a bare value such as
    "13812345678" that belongs to a Chinese sentence.

    Texts up to ``_CACHED_CHARS`` are remembered (``_REMEMBERED`` of them): a served turn redacts the same
    message and replies several times (the turn's plan, its journal entry, the thread's checkpoint, the next
    turn's previous reply), a few regex passes each. Every call gets its own ``counts``.
    """
    if not text:
        return Redacted(text or "", {})
    done = _remembered(text, policy, language) if len(text) <= _CACHED_CHARS else _redact(text, policy, language)
    return Redacted(done.text, dict(done.counts))


def _redact(text: str, policy: RedactionPolicy, language: str | None) -> Redacted:
    spans = find_spans(text, policy)
    if not spans:
        return Redacted(text, {})
    outside = "".join(text[a:b] for a, b in _gaps(spans, len(text)))
    labels = PLACEHOLDERS[language if language in PLACEHOLDERS else language_of(outside)]
    out: list[str] = []
    pos = 0
    counts: Counter[str] = Counter()
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(labels[kind])
        counts[kind] += 1
        pos = end
    out.append(text[pos:])
    return Redacted("".join(out), dict(counts))


_CACHED_CHARS = 4000
_REMEMBERED = 1024
_remembered = functools.lru_cache(maxsize=_REMEMBERED)(_redact)


def forget_remembered() -> None:
    """Drop the remembered texts (erasure: a forgotten user's words do not stay in this process's memory)."""
    _remembered.cache_clear()


def _gaps(spans: list[tuple[int, int, str]], length: int) -> Iterator[Span]:
    pos = 0
    for start, end, _ in spans:
        yield pos, start
        pos = end
    yield pos, length
