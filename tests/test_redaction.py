"""Redaction: each kind in Chinese and English text, its placeholders, near misses that must survive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mneme.memory.redaction import (
    NO_REDACTION,
    RedactionPolicy,
    id_check_char,
    is_valid_cn_id,
    language_of,
    luhn_ok,
    redact,
)

VALID_ID = "11010519491231002X"  # Beijing, born 1949-12-31; MOD 11-2 check character X
VALID_ID_DIGIT = "440308199901011234"[:17] + id_check_char("440308199901011234"[:17])
VALID_CARD = "6222021234567894"  # UnionPay-style, Luhn-valid
VISA_TEST = "4111111111111111"


def _luhn_complete(prefix: str) -> str:
    return next(prefix + d for d in "0123456789" if luhn_ok(prefix + d))


def test_fixture_numbers_are_what_they_claim() -> None:
    assert is_valid_cn_id(VALID_ID) and is_valid_cn_id(VALID_ID_DIGIT)
    assert luhn_ok(VALID_CARD) and luhn_ok(VISA_TEST)
    assert not luhn_ok("6222021234567890")


def test_the_brief_example_redacts_all_three() -> None:
    r = redact("我的手机是13812345678，邮箱zhang@example.com，身份证11010519491231002X")
    assert r.text == "我的手机是[手机号]，邮箱[邮箱]，身份证[身份证号]"
    assert r.counts == {"phone": 1, "email": 1, "id_number": 1}
    assert r.total == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # e-mail
        ("邮箱是 li.na+work@mail.example.com.cn 谢谢", "邮箱是 [邮箱] 谢谢"),
        ("Mail me at bob.smith@mail.co.uk.", "Mail me at [EMAIL]."),
        # mainland mobiles, with prefixes and separators
        ("电话13812345678", "电话[手机号]"),
        ("我的号码是 138-1234-5678", "我的号码是 [手机号]"),
        ("我的号码是 138 1234 5678", "我的号码是 [手机号]"),
        ("打 +86 138 1234 5678 找我", "打 [手机号] 找我"),
        ("打0086-13812345678找我", "打[手机号]找我"),
        ("call +8613812345678 please", "call [PHONE] please"),
        # international and landlines
        ("Call me at +1 415-555-0132 tonight", "Call me at [PHONE] tonight"),
        ("My London number is +44 20 7946 0958.", "My London number is [PHONE]."),
        ("办公室座机010-12345678", "办公室座机[手机号]"),
        ("office (021) 12345678 ext", "office [PHONE] ext"),
        ("办公室电话021-6234 5678", "办公室电话[手机号]"),
        ("call me at (415) 555-2671 tonight", "call me at [PHONE] tonight"),
        ("my cell is 415-555-2671.", "my cell is [PHONE]."),
        ("text 415.555.2671 or 415 555 2671", "text [PHONE] or [PHONE]"),
        ("my UK mobile is 07700 900123", "my UK mobile is [PHONE]"),
        # passports, where the text names one
        ("我的护照号是E12345678，下周出发", "我的护照号是[护照号]，下周出发"),
        ("passport no. G1234567 expires in May", "passport no. [PASSPORT] expires in May"),
        ("My passport number is EA1234567", "My passport number is [PASSPORT]"),
        # resident ID, last character X or a digit
        (f"身份证号{VALID_ID}。", "身份证号[身份证号]。"),
        (f"my ID is {VALID_ID_DIGIT.lower()}", "my ID is [ID_NUMBER]"),
        (f"id {VALID_ID[:-1]}x ok", "id [ID_NUMBER] ok"),
        # bank cards, plain and grouped
        (f"卡号{VALID_CARD}", "卡号[银行卡号]"),
        ("卡号 6222 0212 3456 7894 收款", "卡号 [银行卡号] 收款"),
        ("card 4111-1111-1111-1111 expires", "card [BANK_CARD] expires"),
        # IPs
        ("服务器是192.168.1.20，端口8080", "服务器是[IP地址]，端口8080"),
        ("ping 10.0.0.255 now", "ping [IP] now"),
        ("the host 2001:db8::1 is down", "the host [IP] is down"),
        ("mapped ::ffff:10.0.0.1 too", "mapped [IP] too"),
        ("link-local fe80::1ff:fe23:4567:890a here", "link-local [IP] here"),
        # secrets
        ("key sk-proj-abcdefghijklmnop1234567890", "key [SECRET]"),
        ("我的key是sk-abcdefghijklmnopqrstuvwx123，别外传", "我的key是[密钥]，别外传"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123", "token [SECRET]"),
        ("pat github_pat_11ABCDEFG0123456789_abcdefghijk", "pat [SECRET]"),
        ("aws AKIAIOSFODNN7EXAMPLE region", "aws [SECRET] region"),
        ("slack xoxb-123456789012-abcdefghijkl bot", "slack [SECRET] bot"),
        ("Authorization: Bearer abcdef1234567890abcdef", "Authorization: Bearer [SECRET]"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
            "jwt [SECRET] end",
        ),
        ("api_key=abc123xyz and more", "api_key=[SECRET] and more"),
        ("password: hunter22.", "password: [SECRET]."),
        ("my password is hunter2!", "my password is [SECRET]!"),
        ("我的密码是abc12345。", "我的密码是[密钥]。"),
        ("数据库密码：Pa$$w0rd，别告诉别人", "数据库密码：[密钥]，别告诉别人"),
        (
            "my secret key is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "my secret key is [SECRET]",
        ),
    ],
)
def test_each_kind_is_redacted(text: str, expected: str) -> None:
    assert redact(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "价格¥1380，打八折",
        "日期2024-01-15，时间12:30:45",
        "2024年1月15日下午三点",
        "订单号123456789012",  # 12 digits: neither phone nor card
        "订单号 202312345678901234",  # 18 digits, no valid province/checksum, fails Luhn
        "110105194912310021",  # an ID with a wrong check character (and failing Luhn)
        "990105194912310028",  # province 99 does not exist
        "110105194913310020",  # month 13
        "6222021234567890",  # 16 digits failing Luhn
        "6222 0212 3456 7890",
        "version 1.2.3 released",
        "999.1.1.1 is not an address",
        "1.2.3.4.5 is a version",
        "256.256.256.256",
        "email me@home or @alice on twitter",
        "the token is valid",  # prose after a key word
        "我的密码是我生日",  # no ASCII value to hide
        "138123456789 has twelve digits",
        "12345678901 is not a mobile",
        "std::vector and a::b",
        "call 400-800-8888",
        "call 1-800-555-0199 for support",  # toll-free: a business, not a person
        "order E12345678 shipped",  # a passport number only where the text says so
        "ISBN 978-3-16-148410-0",
        "from 2023-05-06 to 2023-06-07",
        "415-555.2671 mixes separators",
        "version 1.415.555.2671",
        "pi is 3.14159265358979323",
    ],
)
def test_near_misses_are_left_alone(text: str) -> None:
    r = redact(text)
    assert r.text == text, r.counts
    assert r.counts == {}


def test_version_shaped_ipv4_is_accepted_as_an_ip() -> None:
    # 1.2.3.4 is a valid IPv4 address; the policy accepts redacting it.
    assert redact("upgrade to 1.2.3.4 now").text == "upgrade to [IP] now"


def test_id_is_not_eaten_by_the_phone_pattern() -> None:
    # A Hebei ID (province 13) opens with a mobile-shaped run "13012319900"; it must stay one ID.
    base = "13012319900101123"
    full = base + id_check_char(base)
    assert is_valid_cn_id(full)
    r = redact(f"身份证{full}，手机13812345678")
    assert r.text == "身份证[身份证号]，手机[手机号]"
    assert r.counts == {"id_number": 1, "phone": 1}


def test_card_is_claimed_before_phone() -> None:
    card = _luhn_complete("613812345678901")  # 16 digits starting with a mobile-like run
    r = redact(f"卡号{card}")
    assert r.counts == {"bank_card": 1}


def test_email_with_digits_is_one_email_not_a_phone() -> None:
    r = redact("邮箱13812345678@163.com")
    assert r.text == "邮箱[邮箱]" and r.counts == {"email": 1}


def test_counts_multiple_of_a_kind() -> None:
    r = redact("a@example.com, b@example.org and 13812345678 or 13912345678")
    assert r.counts == {"email": 2, "phone": 2}


def test_placeholders_follow_the_language_of_the_text_around_them() -> None:
    assert redact("联系我 bob@example.com").text == "联系我 [邮箱]"
    assert redact("reach me at bob@example.com").text == "reach me at [EMAIL]"
    assert language_of("我的邮箱是 bob@example.com") == "zh"
    assert language_of("My email is in the 备注") == "en"


def test_policy_turns_kinds_off() -> None:
    text = "手机13812345678，邮箱zhang@example.com"
    r = redact(text, RedactionPolicy(phone=False))
    assert r.text == "手机13812345678，邮箱[邮箱]"
    assert redact(text, NO_REDACTION).text == text


def test_landlines_can_be_turned_off_alone() -> None:
    text = "座机010-12345678，手机13812345678"
    assert redact(text, RedactionPolicy(landline=False)).text == "座机010-12345678，手机[手机号]"


def test_empty_text() -> None:
    assert redact("").text == "" and redact("").counts == {}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789 -.:@abcXx+，我的号是")), max_size=60))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text).text
    assert redact(once).text == once


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=10**11, max_value=10**12 - 1))
def test_twelve_digit_numbers_never_redacted(n: int) -> None:
    assert redact(f"单号{n}").counts == {}


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=3, max_value=9), st.integers(min_value=0, max_value=10**9 - 1))
def test_every_mainland_mobile_is_redacted(second: int, rest: int) -> None:
    number = f"1{second}{rest:09d}"
    assert redact(f"我的手机{number}，谢谢").counts == {"phone": 1}


def test_a_remembered_redaction_is_the_same_and_its_counts_are_the_caller_s() -> None:
    from mneme.memory import redaction

    text = "我的手机号是13812345678，邮箱 li@example.com"
    first = redaction.redact(text)
    first.counts["phone"] = 99  # a caller changing its counts changes nobody else's
    again = redaction.redact(text)
    assert again.text == first.text and "13812345678" not in again.text and again.counts["phone"] == 1
    assert redaction._remembered.cache_info().hits >= 1
    redaction.forget_remembered()  # erasure: no raw text stays remembered
    assert redaction._remembered.cache_info().currsize == 0
    long = "call 13812345678 " * 300  # past the remembered length: redacted, not kept
    assert "13812345678" not in redaction.redact(long).text and redaction._remembered.cache_info().currsize == 0
