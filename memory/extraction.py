"""Extraction: facts and preferences a user states about themselves, by patterns or by a model.

Every item is an ``Extracted(kind, key, value, text, polarity)``. ``key`` is the slot a store upserts
by, so a new value replaces the old one and keeps it in the record's history:

    facts        name, age, birthday, home_city, hometown, workplace, work_city, job, school, diet,
                 partner, family:<relation>, pet:<animal> (their names), allergy:<what>, learning:<what>
    preferences  pref:<topic>        likes AND dislikes of one topic share a slot; ``polarity`` says
                                     which ("I like jazz" -> pref:jazz likes; "I don't like jazz
                                     anymore" -> pref:jazz dislikes, replacing it)
                 favorite:<category> "my favourite <category> is <value>" (polarity likes)

Topics are case-folded, with articles, "anymore"/"了" and leading verbs (听/看/吃/玩, listening to,
playing ...) removed, so "我喜欢听爵士乐" and "我不喜欢爵士乐了" share ``pref:爵士乐``.
``text`` is a standalone sentence in the language of the pattern that matched: "用户住在北京",
"The user lives in Beijing".

``extract_patterns`` is fast and offline (Chinese and English regexes). ``extract_with_model`` asks a
chat model through ``with_structured_output``; bad output is retried once, then ``ModelOutputError``
is raised so the caller can fall back to patterns. ``invoke_structured`` / ``ainvoke_structured`` hold
that retry rule for every structured call of the writing policy.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from mneme.errors import ModelOutputError, ModelUnavailableError
from mneme.memory.pets import BREEDS_EN, BREEDS_ZH, PETS_EN, PETS_ZH
from mneme.memory.places import is_en_place
from mneme.memory.tokenize import EN_STOPWORDS
from mneme.prompts.writing import (
    FACT_EXTRACTION_SYSTEM,
    RETRY_NOTE,
    SLOT_GUIDE,
    TURN_MEMORY_USER,
)

logger = logging.getLogger("mneme.memory.extraction")

FactKind = Literal["fact", "preference"]
Polarity = Literal["likes", "dislikes"]


@dataclass(frozen=True)
class Extracted:
    """One fact or preference about the user, keyed by the slot it fills."""

    kind: FactKind
    key: str
    value: str
    text: str
    polarity: Polarity | None = None
    """Preferences only: whether the user likes or dislikes the topic."""
    source: Literal["pattern", "model"] = "pattern"
    """Who found it: the regex patterns or the model."""


# --- value cleaning ----------------------------------------------------------------------------------

_ZH_BREAK = "，。！？；、,.!?;:：\n()（）"
_ZH_VALUE = rf"[^{_ZH_BREAK}]"
_EN_VALUE = r"[^,.;!?()\n]"
_ZH_PARTICLES = "了啦呢呀啊吧哦哈嘛的"
_QUESTION_RE = re.compile(r"什么|啥|哪|谁|几|多少|吗|怎么|(?<![a-z])(?:what|where|who|which|how)(?![a-z])", re.I)
_PRONOUN_ZH = re.compile(r"^(?:你|您|他|她|它|人|上你|自己)")
_PRONOUN_EN = re.compile(r"^(?:it|this|that|them|you|him|her|these|those|myself|to do it)$", re.I)
_ZH_PLACE_STOP = re.compile(
    r"已经|好几|[0-9一二三四五六七八九十两几半]+(?:年|个?月|天|周)|工作|上班|读书|上学|了|啦|呢|呀|啊|吧|和|跟|与"
    r"|的时候|以后|之后|现在|目前|那边|这边|附近|住|去年|今年|明年|快|多年|很久|来着"
)
_ZH_NAME_STOP = re.compile(r"今年|住|在|是|来自|的|了|啦|呀|哦|吧|我|就|好了|，")
_ZH_JOB_STOP = re.compile(r"在|于|已经|[0-9一二三四五六七八九十两几]+年|了|啦|呀|哦|吧|和|，|所以|因为")
_ZH_PREF_STOP = re.compile(r"了|啦|呀|哦|吧|因为|但是|可是|不过|所以|而且|特别是|尤其")
_EN_STOP = re.compile(
    r"\s(?:now|since|for|with|and i|and i'm|and my|and we|and our|and it|and he|and she|and they|studying|majoring"
    r"|working|doing|taking"
    r"|because|but|last|this|next|recently|anymore|any more|where|which|who"
    r"|when|so|as well|too|these days|nowadays|a lot|very much|so much)(?![a-z])",
    re.I,
)


def _cut(value: str, stop: re.Pattern[str] | None) -> str:
    if stop is not None:
        m = stop.search(value)
        if m and m.start() > 0:
            value = value[: m.start()]
        elif m and m.start() == 0:
            return ""
    return value


def _clean_zh(value: str, stop: re.Pattern[str] | None, max_len: int = 16) -> str:
    value = _cut(value.strip(), stop).strip().rstrip(_ZH_PARTICLES).strip()
    return value if 0 < len(value) <= max_len else ""


def _clean_en(value: str, max_words: int = 5) -> str:
    value = _cut(" " + value.strip(), _EN_STOP).strip()
    words = value.split()
    return " ".join(words) if 0 < len(words) <= max_words else ""


def _my_to_their(value: str) -> str:
    return re.sub(r"(?<![a-z])my(?![a-z])", "their", value, flags=re.I)


_ZH_VERB_PREFIX = re.compile(r"^(?:听|看|吃|喝|玩|打|弹|读|去|做)(?=.)")
_EN_VERB_PREFIX = re.compile(
    r"^(?:to\s+)?(?:listening to|listen to|watching|watch|playing|play|eating|eat|drinking|drink|reading"
    r"|read|going to|doing)\s+(?=\S)",
    re.I,
)
_EN_ARTICLE = re.compile(r"^(?:the|a|an|some)\s+", re.I)


def topic_key(topic: str) -> str:
    """Normalise a preference topic into its slot name part (case, articles, verbs, "anymore" removed)."""
    t = " ".join(topic.casefold().split())
    t = re.sub(r"\s*(?:anymore|any more)$", "", t)
    t = t.rstrip(_ZH_PARTICLES)
    t = _EN_VERB_PREFIX.sub("", t)
    t = re.sub(r"^to\s+(?=\S)", "", t)
    t = _EN_ARTICLE.sub("", t)
    t = _ZH_VERB_PREFIX.sub("", t)
    return t.strip()


# --- patterns ----------------------------------------------------------------------------------------

Builder = Callable[[re.Match[str]], "Extracted | None"]

# Places, so "我在北京工作" is a work city and "我是四川人" a hometown (not every 在…工作 is an employer).
_CITY_NAMES = (
    "北京|上海|天津|重庆|广州|深圳|杭州|南京|苏州|成都|武汉|西安|长沙|郑州|青岛|厦门|"
    "宁波|大连|沈阳|济南|合肥|福州|昆明|哈尔滨|长春|石家庄|太原|南昌|南宁|贵阳|兰州|"
    "海口|三亚|无锡|东莞|佛山|珠海|香港|澳门|台北|拉萨|乌鲁木齐|呼和浩特|银川|西宁|温州|"
    "河北|山西|辽宁|吉林|黑龙江|江苏|浙江|安徽|福建|江西|山东|河南|湖北|湖南|广东|海南|"
    "四川|贵州|云南|陕西|甘肃|青海|台湾|内蒙古|广西|西藏|宁夏|新疆"
)
_CN_CITIES = frozenset(_CITY_NAMES.split("|"))


_NOT_A_PLACE_ZH = re.compile(r"[开做卖逛去在到]?(?:超市|城市|门市|菜市|股市|夜市|小区|景区|社区|园区|校区|城区"
                             r"|市区|郊区|山区|灾区)")
"""Words ending like a place name that name none (超市, 城市, 小区; 开超市 is a doing)."""


_ZH_REGION = re.compile(r"美国|日本|英国|韩国|法国|德国|俄罗斯|加拿大|澳大利亚|新加坡|马来西亚|泰国|越南|印度|意大利"
                        r"|西班牙|东北|西北|西南|华南|华北|华东|江南|岭南|农村|乡下|台湾|香港|澳门"
                        r"|(?!外国|祖国|全国|异国|他国|各国)[\u4e00-\u9fff]{1,4}[国省县镇村岛]")
"""Where one comes from beyond the city list: a country or region (我是来自美国的留学生), not a company (来自腾讯的)."""


_ZH_SOME_PLACE = re.compile(r"(?:这|那|同|某|外|本|隔壁|邻|别的|其他|各)?(?:一?[个座所片])?(?:一个|一座)?"
                            r"[大小老新旧主]?(?:城市|城区|小区|市中心|市区|县城|县|村|镇|省|岛|区|城|州|市|地方"
                            r"|开发区|高新区|新区|矿区|郊区)")
"""A place said but not named: 这个城市, 大城市, 一个小县, 外省, 隔壁村, 开发区, 老城区."""


def _names_a_place(value: str) -> bool:
    """Whether ``value`` is a place's name rather than a kind of place (这个城市, 大城市, 开发区)."""
    return value in _CN_CITIES or not _ZH_SOME_PLACE.fullmatch(value)


def _is_place_zh(value: str) -> bool:
    return value in _CN_CITIES or (value.endswith(("市", "省", "县", "区", "州")) and len(value) <= 6
                                   and not _NOT_A_PLACE_ZH.fullmatch(value) and _names_a_place(value))


def _fact(key: str, value: str, text: str) -> Extracted | None:
    if not value or _QUESTION_RE.search(value):
        return None
    return Extracted("fact", key, value, text)


def _pref(topic: str, polarity: Polarity, text: str) -> Extracted | None:
    if not topic or _QUESTION_RE.search(topic) or _PRONOUN_ZH.match(topic) or _PRONOUN_EN.match(topic):
        return None
    key = topic_key(topic)
    if not key:
        return None
    return Extracted("preference", f"pref:{key}", topic, text, polarity)


def _zh_name(m: re.Match[str]) -> Extracted | None:
    raw = m["v"].strip()
    if re.match(r"^[A-Za-z]", raw):
        v = _clean_en(raw, max_words=3)
    else:
        v = _clean_zh(raw, _ZH_NAME_STOP, max_len=5)
        if v.startswith(("了", "过", "外卖", "车")) or len(v) < 2 and not re.match(r"^[A-Za-z]", v):
            return None
    return _fact("name", v, f"用户的名字是{v}")


_ZH_NOT_A_HOME_CITY = re.compile(
    r"^(?:公司|学校|单位|宿舍|医院|酒店|宾馆|家里|朋友|亲戚|父母|爸妈|我[妈爸哥姐弟妹]|男朋友|女朋友|这|那|哪|楼|隔壁|附近"
    r"|一个|一家|一间|一栋|地下室|出租屋|小区)|(?:附近|旁边|对面|隔壁|楼上|楼下|周边|边上|里面|家里?)$")
"""我住在公司附近, 我住在学校旁边, 我住在朋友家, 我住在一个小区里: no city named."""


def _zh_home(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PLACE_STOP)
    if _ZH_NOT_A_HOME_CITY.search(v):
        return None
    return _fact("home_city", v, f"用户住在{v}")


def _zh_hometown(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PLACE_STOP)
    if not _names_a_place(re.sub(r"^(?:一个|一座|个)", "", v)):
        return None  # 我来自外省, 我老家是个小县城: a kind of place, not its name
    return _fact("hometown", v, f"用户来自{v}")


def _zh_hometown_ren(m: re.Match[str]) -> Extracted | None:
    v = m["v"]
    return _fact("hometown", v, f"用户来自{v}") if _is_place_zh(v) else None


def _zh_work(m: re.Match[str]) -> Extracted | None:
    return _zh_works_at(m["v"])


def _zh_works_at(place: str) -> Extracted | None:
    """Where the user works: a city (work_city) or a workplace."""
    v = _clean_zh(place, None, max_len=20)
    if not _names_a_place(v):
        return None  # 我在隔壁市上班: a kind of place, not its name
    if _is_place_zh(v):
        return _fact("work_city", v, f"用户在{v}工作")
    return _fact("workplace", v, f"用户在{v}工作")


_ZH_NOT_REAL = r"(?!梦里|梦中|做梦|游戏里|游戏中|剧里|戏里)"
"""我在梦里当医生, 我在游戏里当医生: no occupation."""
_ZH_NOT_A_PLACE = rf"{_ZH_NOT_REAL}(?![这那哪]|家里?(?:做|当)|家乡|老家)"
"""Where one works: not 这里/那边 (no place named) or 家 (我在家当全职妈妈: at home)."""

_ZH_NOT_JOB = re.compile(r"很|挺|比较|特别|非常|有点|(?:人|女孩|男孩|女生|男生|孩子|家伙|性格)$")
"""我是一个很懒的人, 我是个爱笑的女孩: a description of the person, not an occupation."""


_ZH_NOT_DOING = (r"^(?:考虑|准备|打算|学着?(?![校院生堂])|尝试|试着|纠结|想|犹豫|努力|平时|业余"
                 r"|培训(?!机构|学校|中心|班))|要不要|做不做|当不当")
"""我在考虑当老师, 我在纠结要不要做律师, 我在学着做厨师, 我平时当主播: what the user may do, not their job."""
_ZH_NOT_A_JOB_THERE = re.compile(_ZH_NOT_DOING)
_ZH_DREAMT = re.compile(r"梦见|梦到|做梦|梦里")
"""我梦见我在医院当护士: a dream told, no job or workplace."""
_ZH_NOT_WORKPLACE = re.compile(rf"{_ZH_NOT_DOING}|^(?:兼职|网上|线上|他们|你们|她们|我们|人家)|剧里|戏里|梦里|游戏里")
"""… and 我在兼职做模特, 我在网上做主播, 我在他们公司当会计: a job, but no workplace of the user's named."""


def _zh_work_as(m: re.Match[str]) -> Extracted | None:
    """我在上海一家医院当护士: where the user works (workplace, or work_city for a city), when a real place is named,
    now (not 当过/当了三年), and not in a dream (我梦见我在医院当护士)."""
    if (_ZH_NOT_WORKPLACE.search(m["v"]) or re.match(r"过|了", m.string[m.end("v") + 1:])
            or _ZH_DREAMT.search(m.string[:m.start()])):
        return None
    return _zh_works_at(m["v"].removesuffix("里"))


def _zh_job_there(m: re.Match[str]) -> Extracted | None:
    """我在医院当护士: the job, unless what comes between is an intention (我在考虑当老师)."""
    if _ZH_NOT_A_JOB_THERE.search(m["w"]) or _ZH_DREAMT.search(m.string[:m.start()]):
        return None
    return _zh_job(m)


_ZH_NOT_SO = re.compile(r"如果|假如|假设|要是|若是|万一|想象|梦见|梦到|做梦|梦里")
"""如果我是医生, 我梦见我是老师: a job imagined, not held."""
_ZH_LEFT_JOB = re.compile(r"^(?:[，,]\s*(?=已经|早就|早已|去年|前年|刚|后来))?[^，。！？；,.!?;]{0,8}?"
                          r"(?:退休|辞职|离职|不干|不做了|转行|被辞|被开除)")
"""我是老师已经退休了, 我是护士已经不干了: a job held once."""


def _zh_job(m: re.Match[str]) -> Extracted | None:
    if m["v"].startswith("过"):  # 我当过老师: a job once held
        return None
    clause_start = max(m.string.rfind(p, 0, m.start()) for p in "，。！？；,.!?;")
    if _ZH_NOT_SO.search(m.string[clause_start + 1:m.start()]) or _ZH_LEFT_JOB.match(m.string[m.end():]):
        return None
    v = _clean_zh(re.sub(r"^来自[^的]{1,10}的", "", m["v"]), _ZH_JOB_STOP, max_len=12)  # 来自成都的大学生
    if _ZH_NOT_JOB.search(v) or v.startswith(("不", "是", "没")):
        return None  # 我是不是医生
    v = re.sub(r"^(?:我们|咱们|这|那)[^的]{0,6}的", "", v)  # 我们学校的校长, 这家店的店长: the job is 校长 / 店长
    if not v:
        return None
    return _fact("job", v, f"用户是一名{v}")


_ZH_NUM = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def _zh_number(s: str) -> int | None:
    """Parse digits or a Chinese numeral below 200 ("三十五", "十八", "一百零二")."""
    if s.isdigit():
        return int(s)
    total, current = 0, 0
    for ch in s:
        if ch in _ZH_NUM:
            current = _ZH_NUM[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            return None
    return total + current


def _age(m: re.Match[str], zh: bool) -> Extracted | None:
    n = _zh_number(m["v"])
    if n is None or not 1 <= n <= 120:
        return None
    return _fact("age", str(n), f"用户今年{n}岁" if zh else f"The user is {n} years old")


def _zh_birthday(m: re.Match[str]) -> Extracted | None:
    v = _date_at_start(m, zh=True)  # a date, not 下个月
    return _fact("birthday", v, f"用户的生日是{v}") if v else None


_ZH_JOBS = (
    "医生|护士|老师|教师|律师|会计|司机|厨师|警察|记者|编辑|作家|画家|歌手|演员|模特|主播|销售|客服|保安|公务员|"
    "程序员|工程师|设计师|建筑师|咨询师|分析师|药剂师|摄影师|理发师|化妆师|翻译|研究员|技术员|产品经理|经理|"
    "快递员|外卖员|售货员|飞行员|乘务员|空姐|学生|研究生|博士生|大学生|高中生|初中生|小学生|自由职业者|全职妈妈|家庭主妇"
)
_ZH_IS = "是(?:一名|一位|个|一个)?"
_ZH_JOB_TITLE = (rf"[\u4e00-\u9fff]{{0,6}}?(?:(?:{_ZH_JOBS})(?:主管|组长)?|(?:护士|厨师)长|[科校院店组处局厂站]长|总监"
                 r"|主任)(?:(?![\u4e00-\u9fff])|(?=已经|好几|快|都|有|[0-9一二三四五六七八九十两几半]+(?:年|个?月)))")
"""护士, 软件工程师, 护士长, 销售总监, 校长: an occupation said plainly after 是 (the job ends the clause, or a
length of time follows: 我在医院当护士已经十年了)."""
_ZH_PARTNERS = "老婆|老公|妻子|丈夫|爱人|男朋友|女朋友|对象|媳妇|太太|老伴"
_ZH_FAMILY = "女儿|儿子|孩子|宝宝|妈妈|爸爸|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|闺女|孙子|孙女"
_ZH_PETS = f"{PETS_ZH}|{BREEDS_ZH}"
_EN_PARTNERS = "wife|husband|partner|girlfriend|boyfriend|fiancée?"
_EN_FAMILY = "son|daughter|kid|baby|mom|mum|mother|dad|father|brother|sister|grandma|grandpa"
_EN_PETS = f"{BREEDS_EN}|{PETS_EN}"
_ZH_PET_NOUN = rf"[\u4e00-\u9fff]{{0,2}}?(?:{_ZH_PETS})"
"""A pet with a word before it: 橘猫, 小白兔子, 金毛狗 (each its own key: a user may have two cats); or a breed
(金毛)."""
_ZH_MY_PET = rf"(?:{BREEDS_ZH})?(?:{PETS_ZH})|{BREEDS_ZH}"
"""A pet right after 我/我家/我的: its kind or breed or both (金毛狗, 布偶猫), nothing else (我妈的猫 is not the
user's)."""
_EN_PET_NOUN = rf"(?:[a-z]+ )?(?:{_EN_PETS})"
"""A pet with a word before it: "ginger cat", "rescue dog"; or a breed: "golden retriever", "corgi"."""


def _zh_did_job(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_JOB_STOP, max_len=8)
    return _fact("job", v, f"用户是做{v}的")


def _named(relation: str, name: str, *, zh: bool, pet: bool = False) -> Extracted | None:
    """A partner's, a family member's or a pet's name ("我女儿叫小美", "my dog is called Max")."""
    rel = relation.lower() if zh else re.sub(r"^(?:new|little|old|baby|cute|sweet) ", "", relation.lower())
    if zh and re.match(r"[得声个了着起]", name):  # 我家的狗叫得很凶, 猫叫个不停: 叫 is the sound, not a name
        return None
    name = _clean_zh(name, _ZH_NAME_STOP, max_len=6) if zh else _clean_en(name, max_words=2)
    if not name or len(name) < 2 and not re.match(r"^[A-Za-z]", name):
        return None
    pets, partners = (_ZH_PET_NOUN, _ZH_PARTNERS) if zh else (_EN_PET_NOUN, _EN_PARTNERS)
    if pet or re.fullmatch(pets, rel):
        key = f"pet:{rel}"
    elif re.fullmatch(partners, rel):
        key = "partner"
    else:
        key = f"family:{rel}"
    return _fact(key, name, f"用户的{rel}叫{name}" if zh else f"The user's {rel} is called {name}")


def _kin_work(m: re.Match[str], zh: bool) -> Extracted | None:
    """Where a partner or family member works (我老公在华为上班, "my wife works at Google"): ``work:<relation>``, said
    as the user said it; not what they may do (我老公在考虑换工作) or where they did (以前)."""
    rel = _ZH_KIN_SHORT.get(m["r"], m["r"]) if zh else m["r"].lower()
    if _believed_or_nested(m, zh):
        return None
    if zh:
        v = _clean_zh(m["v"], None, max_len=16)
        if (not v or _ZH_NOT_WORKPLACE.search(v) or re.search(r"以前|之前|曾经|原来|哪|这|那", v)
                or _ZH_DREAMT.search(m.string[:m.start()]) or not _names_a_place(v)
                or re.fullmatch(r"找|忙|认真|拼命|努力|外地|公司|单位|家里|同一家公司|一家公司|[^，,。]{0,4}地方", v)
                or re.match(r"过|的时候|的那", m.string[m.end():])):
            return None  # 我老公在找工作, 在外地工作, 在北京工作过, 在北京工作的时候
        return _fact(f"work:{rel}", v, f"用户的{rel}在{v}{m['w']}")
    v = _clean_en(_EN_IN_CITY.split(m["v"], maxsplit=1)[0], max_words=4)
    if not v or not v[:1].isupper() or v.casefold() in _NOT_A_WORKPLACE:
        return None  # "my husband works at home", "at night"
    return _fact(f"work:{rel}", v, f"The user's {rel} works at {v}")


_BELIEVED_ZH = re.compile(r"以为|认为|觉得|假如|如果|要是|是不是|[问说]我")
_BELIEVED_EN = re.compile(r"(?i)\b(?:assumes?|assumed|thinks?|thought|believes?|believed|if|whether|says?|said|claims?"
                          r"|claimed|who|whom|that|guess|wish|pretend|doubt|maybe|perhaps|once|imagine|suppose|hope"
                          r"|when|until|unless|probably|might|whether)\b")


def _believed_or_nested(m: re.Match[str], zh: bool) -> bool:
    """Whether "my X works at …" is only believed, supposed or asked (别人都以为我老公是医生, "Everyone assumes my wife
    is a nurse", "If my husband is a doctor…") or sits inside another's clause ("the guy who's dating my sister works
    at Tesla"): not the family member's work."""
    start = max(m.string.rfind(p, 0, m.start()) for p in "，。！？；,.!?;") + 1
    before = m.string[start:m.start()]
    if zh:
        return _BELIEVED_ZH.search(before) is not None
    before = re.split(r"(?i)\b(?:and|but|so|while|because)\b", before)[-1]  # "I'm a nurse and my husband is …"
    return (_BELIEVED_EN.search(before) is not None  # "Everyone assumes my wife is…", "If my husband is…"
            or re.search(r"(?i)\b(?:the|a|an|some|his|her|their|your)\s+\w+", before) is not None)  # "The guy who…"


def _kin_job(m: re.Match[str], zh: bool) -> Extracted | None:
    """What a partner or family member does (我老婆是一名医生, "my husband is a firefighter"): ``job:<relation>``."""
    rel = _ZH_KIN_SHORT.get(m["r"], m["r"]) if zh else m["r"].lower()
    if _believed_or_nested(m, zh):
        return None
    if zh:
        v = _clean_zh(m["v"], _ZH_JOB_STOP, max_len=12)
        if not v or _ZH_NOT_JOB.search(v) or v.startswith(("过", "不", "是", "没")):
            return None  # 我老公是不是医生
        return _fact(f"job:{rel}", v, f"用户的{rel}是一名{v}")
    v = _clean_en(_EN_AT_PLACE.split(m["v"], maxsplit=1)[0], max_words=3)
    if not v or not _PROFESSION_RE.search(v) or _NOT_PROFESSION.search(v) or _NO_OCCUPATION.search(v) or re.search(
            r"(?i)\b(?:student|junior|senior|freshman|sophomore)$", v) and rel not in ("son", "daughter", "kid"):
        return None
    article = "an" if v[:1].lower() in "aeiou" else "a"
    return _fact(f"job:{rel}", v, f"The user's {rel} is {article} {v}")


def _allergy(m: re.Match[str], zh: bool) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PREF_STOP, max_len=12) if zh else _clean_en(m["v"], max_words=4)
    if not v or _PRONOUN_ZH.match(v) or _PRONOUN_EN.match(v):
        return None
    return _fact(f"allergy:{topic_key(v)}", v, f"用户对{v}过敏" if zh else f"The user is allergic to {v}")


def _diet(v: str, text: str) -> Extracted | None:
    return _fact("diet", v, text)


def _zh_not_eat(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PREF_STOP, max_len=10)
    if not v or v.startswith(("饭", "东西", "早饭", "早餐", "午饭", "晚饭", "了", "下", "太", "这", "那", "得", "多",
                              "很")):
        return None  # 我不吃饭 / 我不吃东西 say how one feels, not what one avoids
    if v in ("肉", "荤"):
        return _diet("不吃肉", "用户不吃肉")
    return _pref(v, "dislikes", f"用户不吃{v}")


_ZH_SCHOOL = re.compile(r"(?:大学|学院|学校|中学|小学|高中|初中|一中|二中|附中|大)$")


def _zh_studies_at(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], None, max_len=12)
    if not v or _PRONOUN_ZH.match(v) or re.search(r"在|这|那|哪", v):
        return None  # 我在考虑在北京读研, 我在这个学校读书很痛苦
    named_school = _ZH_SCHOOL.search(v) is not None and not re.fullmatch(
        r"(?:一所|一个|一家)?(?:大学|学院|学校|中学|小学|高中|初中)", v)
    if not (named_school or _is_place_zh(v)):
        return None  # 我在图书馆读书 reads books there, 我在网上上学, 我在大学读书 names no school
    return _fact("school", v, f"用户在{v}读书")


def _major(value: str, zh: bool) -> Extracted | None:
    v = _clean_zh(value, _ZH_PREF_STOP, max_len=10) if zh else _clean_en(value, max_words=4)
    if not v or _PRONOUN_ZH.match(v) or _PRONOUN_EN.match(v):
        return None
    if re.match(r"不|是|没|同一|一样|什么|哪|啥", v) or re.search(r"我|这|那|最", v) or re.match(
            r"(?i)(?:probably|not|so|very|really|kind of|sort of|actually|pretty|too|the (?:worst|best))\b", v):
        return None  # 我的专业是不是选错了, 我的专业是我最大的遗憾, "my major is probably the worst choice"
    return _fact("major", v, f"用户的专业是{v}" if zh else f"The user's major is {v}")


def _zh_greeting_name(m: re.Match[str]) -> Extracted | None:
    v = m["v"]
    if (_PRONOUN_ZH.match(v) or re.search(rf"(?:{_ZH_JOBS}|{_ZH_FAMILY}|{_ZH_PARTNERS}|新人|新手|本人|这样|新生|本科生"
                                          r"|先生|医生|老师|中国人|外国人|路人|大家|们|的)$", v)
            or re.match(r"[大高初研][一二三四]", v)):
        return None  # 你好，我是学生 / 我是大三: what the user is, not a name
    return _fact("name", v, f"用户的名字是{v}")


def _zh_school(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"] or m["w"] or "", _ZH_JOB_STOP, max_len=16)  # 毕业于<v> or 从<w>毕业
    return _fact("school", v, f"用户毕业于{v}")


def _en_school(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(m["v"], max_words=6)
    return _fact("school", v, f"The user graduated from {v}")


_EN_SCHOOL_NAME = (r"(?:the\s+)?(?:[A-Z][\w&.'-]*\s+){0,4}(?:University|College|Institute|School|Academy)"
                   r"(?:\s+of\s+[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,3})?"
                   r"|(?:MIT|RISD|RIT|LSE|KCL|CMU|NUS|NTU|ANU|UBC|SFU|BYU|GWU|KAIST|ETH|EPFL|IIT|SNU|CUNY|SUNY"
                   r"|(?=[A-Z]{0,5}U)[A-Z]{2,6})(?![A-Za-z])")
"""A school by its name: "the University of Toronto", "Boston College", UCLA, UCSF, HKUST, RISD (an acronym with a U
for university, or a known one; not "the library", "night", IBM, YMCA)."""


_NOT_A_NAME_BUT_WHAT = (
    "american|british|english|irish|scottish|welsh|canadian|mexican|cuban|jamaican|haitian|dominican|brazilian"
    "|argentinian|argentine|colombian|peruvian|chilean|venezuelan|french|german|dutch|belgian|swiss|austrian|italian"
    "|spanish|portuguese|greek|turkish|polish|czech|russian|ukrainian|swedish|norwegian|danish|finnish|hungarian"
    "|romanian|bulgarian|serbian|croatian|nigerian|ghanaian|kenyan|ethiopian|somali|egyptian|moroccan|israeli"
    "|iranian|iraqi|syrian|lebanese|saudi|pakistani|indian|bangladeshi|nepali|chinese|japanese|korean|vietnamese"
    "|thai|filipino|filipina|indonesian|malaysian|singaporean|australian|hispanic|latino|latina|asian|african"
    "|european|arab|jewish|catholic|mormon|muslim|hindu|buddhist|atheist|bipolar|diabetic|epileptic|dyslexic"
    "|asthmatic|adhd|deployed|pregnant|retired|divorced|married|single|gay|lesbian|bisexual|straight|sick|ill")
"""What "My husband is Nigerian and he…" says of someone, capitalised, that is no name: a nationality, a faith,
a condition."""


def _en_studies_at(m: re.Match[str], part: str) -> Extracted | None:
    """"I study nursing at the University of Toronto": the major, or the school (one builder per part); nothing when
    what is studied is no field ("I study hard at UCLA")."""
    if not _EN_MAJOR.fullmatch(m["v"].strip()):
        return None
    if part == "major":
        return _major(m["v"], zh=False)
    v = re.sub(r"^the\s+(?=University|College|Institute)", "", m["s"])
    return _fact("school", v, f"The user studies at {v}")


def _learning(m: re.Match[str], zh: bool) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PREF_STOP, max_len=10) if zh else _clean_en(m["v"], max_words=4)
    if not v or zh and v.startswith(("校", "院", "生", "期", "会", "了", "着", "的")):
        return None  # 在学校 (at school), 在学院, 学生
    return _fact(f"learning:{topic_key(v)}", v, f"用户在学{v}" if zh else f"The user is learning {v}")


def _zh_like(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PREF_STOP, max_len=20)
    if v.startswith(("的", "上了", "过")):
        return None
    return _pref(v, "likes", f"用户喜欢{v.replace('我的', '自己的')}")


def _zh_dislike(m: re.Match[str]) -> Extracted | None:
    v = _clean_zh(m["v"], _ZH_PREF_STOP, max_len=20)
    if v.startswith("的"):
        return None
    return _pref(v, "dislikes", f"用户不喜欢{v.replace('我的', '自己的')}")


def _zh_favorite(m: re.Match[str]) -> Extracted | None:
    c = m["c"].strip()
    v = _clean_zh(m["v"], _ZH_PREF_STOP, max_len=20)
    if not c or not v or _QUESTION_RE.search(v + c):
        return None
    return Extracted("preference", f"favorite:{topic_key(c)}", v, f"用户最喜欢的{c}是{v}", "likes")


def _en_name(m: re.Match[str]) -> Extracted | None:
    v = m["v"].strip()
    if v.casefold() in {"not", "a", "the", "just", "no", "actually", "is"}:
        return None
    return _fact("name", v, f"The user's name is {v}")


def _en_home(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(m["v"])
    return _fact("home_city", v, f"The user lives in {_my_to_their(v)}")


def _en_hometown(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(m["v"])
    return _fact("hometown", v, f"The user is from {v}")


def _en_work(m: re.Match[str]) -> Extracted | None:
    job, prep = m.groupdict().get("job"), m.groupdict().get("prep")
    v = _clean_en(_EN_IN_CITY.split(m["v"], maxsplit=1)[0])
    if v.casefold() in _NOT_A_WORKPLACE or re.match(r"(?:\d|my |a living|life|heart|fun|myself)", v, re.I):
        return None  # "a nurse for 10 years", "a teacher at heart", "I work for myself"
    if job is not None:
        if prep and prep.lower() == "for" and not v[:1].isupper():
            return None  # "a caregiver for my mom", "a sucker for chocolate": for an organisation only
        if re.search(r"\b(?:student|senior|junior|freshman|sophomore|grad)$", job, re.I):
            return _fact("school", v, f"The user studies at {v}")  # "a student at MIT": where the user studies
        if not _PROFESSION_RE.search(job) or _NOT_PROFESSION.search(job):
            return None  # "I'm a regular at the gym": a place, but not where the user works
    return _fact("workplace", v, f"The user works at {v}")


_NOT_TAUGHT = re.compile(r"\b(?:my|our|his|her|their|him|them|me|us|kids|children|son|daughter|myself|you|it)\b", re.I)
""""I teach my kids at home": not an occupation."""


_TAUGHT = re.compile(
    r"(?i)(?:math(?:s|ematics)?|science|physics|chemistry|biology|history|geography|art|music|piano|guitar|violin"
    r"|drums|singing|voice|yoga|pilates|dance|dancing|swimming|tennis|golf|karate|PE|economics|literature|philosophy"
    r"|psychology|sociology|law|medicine|nursing|engineering|computer science|programming|coding|cooking|baking"
    r"|drawing|painting|writing|reading|kindergarten|preschool|ESL|(?:high|middle|elementary|primary) school)")
"""What "I teach …" names as a subject (or a capitalised one: English, French, Chinese): not online, too much."""
_EN_MAJOR = re.compile(
    rf"(?:[a-z]+ )?(?:{_TAUGHT.pattern[4:]}|business|accounting|finance|marketing|architecture|design|education"
    r"|journalism|communications?|political science|international relations|statistics|data science|anthropology"
    r"|linguistics|neuroscience|biochemistry|pharmacy|dentistry|nutrition|kinesiology|public health|social work"
    r"|film|theater|theatre|fashion|animation|english|french|spanish|german|chinese|japanese|korean|italian"
    r"|poli sci|comp sci|psych|bio|chem|econ|pre-?med|pre-?law|cs|arts?|studies|management|therapy|science)"
    r"(?:\s+and\s+[a-z]+(?:\s+[a-z]+)?)?", re.I)
"""A field one studies ("computer science", "nursing", "business"): not how or where (hard, abroad, online)."""
_SCHOOL_LEVEL = re.compile(
    r"(?i)(?:\d{1,2}(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth)"
    r" grade\b|(?:high|middle|elementary|primary) school\b")
"""Whom "I teach …" names by their year or school: "5th grade", "high school (math)"."""
_LANGUAGES = frozenset({"chinese", "english", "spanish", "french", "german", "japanese", "korean", "italian",
                        "russian", "portuguese", "arabic", "mandarin", "cantonese"})


def _en_teach(m: re.Match[str], part: str) -> Extracted | None:
    """"I teach math at a high school in Denver": the job (a math teacher), where (a high school) and the city; not
    "What I teach is…", "The kids I teach…", "I teach too much", a question, or a job the user named otherwise."""
    subject = (m["subj"] or "").strip()
    before = m.string[:m.start()]
    if (_NOT_TAUGHT.search(subject) or m.string.rstrip().endswith("?")
            or re.search(r"(?i)\b(?:what|who|whom|that|which|where|the\s+\w+|kids|students|class(?:es)?)\s*$",
                         before)):
        return None
    level = _SCHOOL_LEVEL.match(subject)  # "5th grade", "high school math"
    rest = subject[level.end():].strip() if level else subject
    # math, English, 5th grade
    named = bool(subject) and bool(not rest or _TAUGHT.fullmatch(rest) or re.fullmatch(r"[A-Z][a-z]+", rest))
    if subject and not named and not re.fullmatch(r"(?i)(?:some )?(?:class|lesson|course|student|people)e?s?", subject):
        return None  # "I teach online", "I teach and write", "I teach too much"
    place = (m["v"] or "").strip()
    if m["prep"] and m["prep"].lower() == "at":  # "at a high school in Denver"
        parts = _EN_IN_CITY.split(place, maxsplit=1)
        at, city = parts[0].strip(), (parts[1] if len(parts) > 1 else "")
    else:  # "in Boston"
        at, city = "", place
    at = _clean_en(at)
    if at.casefold() in _NOT_A_WORKPLACE or re.match(r"(?i)(?:\d|my |home|the moment|weekends?)", at):
        return None  # "I teach at heart", "at night", "at home"
    if part == "job":
        if re.search(r"(?i)\bI(?:'m| am)\s+an?\s+\w+", m.string):
            return None  # "I'm a doctor and I teach at Harvard": the job they named
        v = f"{subject} teacher" if named else "teacher"  # "I teach classes": a teacher
        return _fact("job", v, f"The user is a {v}")
    if part == "workplace":
        return _fact("workplace", at, f"The user works at {at}") if at else None
    city = _clean_en(city, max_words=3)
    if not city[:1].isupper() or city.casefold() in _LANGUAGES or " " in city and not city.istitle():
        return None  # "in Chinese", "Boston are great"
    return _fact("work_city", city, f"The user works in {city}")


_NOT_A_WORKPLACE = frozenset({"home", "night", "nights", "the moment", "the weekend", "weekends", "heart", "life"})


_NOT_THE_JOB = re.compile(r"(?i)\b(?:didn'?t|not|never|lost|quit|left|applied|apply|interview(?:ed|ing)?|want(?:ed)?|"
                          r"hope|wish|offered|used to|(?:former|old|previous|last)\s+(?:job|position|role)|dream|if|"
                          r"might|would|could|'d|"
                          r"consider(?:ing)?|thinking|looking|heard|saw|declined|turned|rejected|up for|husband|wife|"
                          r"sister|brother|friend|son|daughter|mom|dad|partner)\b")
"""A job that was, might be, is wished for or someone else's ("I lost my job at Google", "If I got a job at Apple",
"I think my husband got a new job at Google")."""


_TAKEN_BACK = re.compile(
    r"(?i)\b(?:I|we)\s+(?:\w+\s+)?(?:quit|left|lost|declined|rejected)(?:\s+(?:it|that|there|the\s+(?:job|position"
    r"|role|offer))\b|\s+(?:(?:after|within)\s+)?(?:a|one|two|three|four|a few|\d+)\s+(?:days?|weeks?|months?)\b"
    r"|\s*(?=[.!?,;]|$))"
    r"|\b(?:I|we)\s+(?:\w+\s+)?(?:didn'?t\s+(?:take|accept|start|get)|won'?t\s+(?:take|accept|start))\b"
    r"|\b(?:I|we)\s+(?:\w+\s+)?(?:was|got)\s+(?:fired|laid off|let go)\b"
    r"(?!\s+from\s+(?!it\b|there\b|the job\b(?!\s+at)))"
    r"|\b(?:turned\s+(?:\w+\s+){0,2}down|declined|fell through)\b"
    r"|\bif\s+(?:the|my|our|it|everything|things|all|i(?:'?ll| will)? (?:take|accept|get))\b")
"""A job taken back or put in doubt after it was named ("… but I turned it down", "… but I quit after a week", "…
if the visa comes through")."""


def _en_new_job(m: re.Match[str]) -> Extracted | None:
    """"I just moved to Seattle for a new job at Amazon", "I started a new role at Stripe": the user's workplace, when
    nothing in the sentence makes it another's, a past one or a wish."""
    start = max(m.string.rfind(p, 0, m.start()) for p in ".!?;") + 1
    ends = [i for i in (m.string.find(p, m.end()) for p in ".!?;") if i >= 0]
    v = m["v"]
    if (_NOT_THE_JOB.search(m.string[start:m.end()]) or _TAKEN_BACK.search(m.string[m.end():min(ends, default=None)])
            or v.casefold() in _NOT_A_WORKPLACE):
        return None
    return _fact("workplace", v, f"The user works at {v}")


_NOT_WORKING_THERE = re.compile(
    r"(?i)\b(?:former|retired|future|aspiring|would-be|wannabe|ex-\w+|student|tourist|visitor|dog owner|homeowner"
    r"|teenager|resident|traveler|traveller|local|foreigner|newcomer|stranger|user|member|fan|lover)\b")
"""Who is somewhere but does not work there as that ("a tourist in Paris", "a retired teacher in Florida")."""


_NO_OCCUPATION = re.compile(r"(?i)\b(?:tourist|visitor|(?:dog|cat|pet|home|house|car|horse) owner|homeowner|teenager"
                            r"|resident|traveler|traveller|foreigner|stranger|user|lover|survivor)$")
"""What one is that is no occupation ("a tourist", "a dog owner", "a teenager")."""


def _en_work_city(m: re.Match[str]) -> Extracted | None:
    """"I work in Seattle": a place on the list (``places``); "in Marketing", "in Oncology", "in ER" are fields."""
    v = _clean_en(m["v"], max_words=3)
    if not v or not is_en_place(v):
        return None
    return _fact("work_city", v, f"The user works in {v}")


_NOT_NAME_ENDING = re.compile(r"(?:ed|ing|ous|ful|ive|less|able|ible|ish)$", re.I)
"""Hi, I'm Exhausted / Depressed / Bored: a state, not a name."""


def _no_name(words: str) -> bool:
    return any(w.casefold() in _NOT_A_NAME_EN or w.casefold() in EN_STOPWORDS for w in words.split())


def _en_intro_name(m: re.Match[str]) -> Extracted | None:
    v = m["v"].strip()
    if _no_name(v) or any(_NOT_NAME_ENDING.search(w) for w in v.split()):
        return None
    return _en_name(m)


_PROFESSION_RE = re.compile(
    r"(?:er|or|ist|nurse|chef|cook|doctor|student|intern|freelancer|barista|nanny|vet|medic|clerk|pilot|"
    r"physician|musician|technician|electrician|librarian|pharmacist|attorney|accountant|consultant|analyst|"
    r"architect|dentist|surgeon|engineer|assistant|coach|agent|editor|professor|lecturer|scientist|"
    r"psychologist|therapist|guard|mechanic|specialist|entrepreneur|founder|ceo|cto|pm|tutor)s?$",
    re.I,
)
_NOT_PROFESSION = re.compile(
    r"(?:mother|father|brother|sister|daughter|lover|beginner|user|member|believer|fan|night owl|"
    r"early bird|smoker|drinker|eater|sleeper|worrier|introvert|extrovert|foreigner|newcomer|junior|senior|"
    r"big fan|person|fast learner|slow learner|winner|loser|customer|client|patient|sucker|regular)$",
    re.I,
)


_EN_AT_PLACE = re.compile(r"\s+(?:at|in|for|with|on)\s+", re.I)
"""Where a job ends and its place begins: "a nurse at Mercy hospital in Boston"."""
_EN_IN_CITY = re.compile(r"\s+in\s+(?=[A-Z])")
"""Where a workplace ends and its city begins: "Google in Boston"."""


def _en_job(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(_EN_AT_PLACE.split(m["v"], maxsplit=1)[0], max_words=4)
    if not v or not _PROFESSION_RE.search(v) or _NOT_PROFESSION.search(v) or _NO_OCCUPATION.search(v):
        return None
    article = "an" if v[:1].lower() in "aeiou" else "a"
    return _fact("job", v, f"The user is {article} {v}")


_NOT_A_SPAN = r"(?![\d./-]|\s*(?:周|天|个|月|年|星期|(?i:weeks?|days?|months?|years?)\b))"
"""A numeric date ends there: not 2-3周后, 1-2个月, "2/3 weeks away"."""
_ZH_DATE = re.compile(
    r"在?(?P<d>(?:每年的?)?(?:(?:农历|阴历|公历|阳历)的?)?"
    rf"(?:\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}{_NOT_A_SPAN}|(?:\d{{2,4}}年)?"
    r"(?:(?:\d{1,2}|十[一二]?|[一二三四五六七八九]|正|腊|冬)月"
    r"(?:\d{1,2}[日号號]?|初[一二三四五六七八九十]|[一二三四五六七八九十廿]{1,3}[日号號]?)?"
    rf"|\d{{1,2}}[日号號]|初[一二三四五六七八九十]|\d{{1,2}}[./-]\d{{1,2}}{_NOT_A_SPAN}"
    r"|(?:春节|除夕|元旦|元宵节?|端午节?|中秋节?|七夕|国庆节?|圣诞节?|平安夜|情人节|儿童节|劳动节|母亲节|父亲节|教师节"
    r"|(?:五一|十一|六一)(?![月日号號点])(?:劳动节|儿童节|国庆节)?))))"
)
"""A date said in Chinese at a value's start: 3月3号, 三月三日, (在)农历八月十五, 正月初八, 12.3, 1990-03-05,
中秋节, 五一; not 下个月, 下周日, 月底, 同一个月 (a time that names no day of the year) or 2-3周后."""

_MONTH_EN = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
             r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?")
_EN_HOLIDAY = (r"Christmas(?: Day| Eve)?|New Year'?s(?: Day| Eve)?|Valentine'?s Day|Halloween|Thanksgiving"
               r"|Independence Day|the Fourth of July|St\.? Patrick'?s Day")
_EN_DATE = re.compile(
    rf"(?:(?:in|on)\s+)?(?P<d>(?:(?i:(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_EN}"
    rf"|{_MONTH_EN}\s+(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?(?![\d:])"
    rf"|(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)(?!\s+(?:grade|place|time|floor|year|day|week)\b|\s+of\s+(?:next|this)\b)"
    rf"|\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}{_NOT_A_SPAN}|\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?{_NOT_A_SPAN}"
    rf"|(?:January|February|April|June|July|August|September|October|November|December)\b|{_EN_HOLIDAY})"
    rf"|(?:May|March)(?![a-z]|\s+(?:be|have|not|I|we|you|he|she|they)\b))(?:,?\s+\d{{4}}\b)?)"
)
"""A date said in English at a value's start: "March 3rd", "the 5th of May", "3 March 1990", "12/3", "in june",
"Christmas" (May and March alone capitalised: "may be" is not May); not "in 2 weeks", "coming up next week", "the
3rd grade" or "the 3rd of next month"."""

_ASKED_IN_CLAUSE = re.compile(r"[?？]|吗|嗎|么|对吧|对不对|是吧|是吗|是不是|来着|还是|(?i:\bor\b)|^\s*吧|不\s*$")
_TAG_QUESTION = re.compile(r"\s*(?:对吧|对不对|是吧|是吗|是不是|没错吧|(?i:right|isn't it|is it|correct|yes))\s*[?？]")
_CLAUSE_END = re.compile(r"[，,。！!；;\n]")


def _date_at_start(m: re.Match[str], zh: bool) -> str:
    """The date the value ``m["v"]`` starts with (its span only: not "3月3号我想给她准备礼物"'s rest), or "" when it
    starts with none or the date is asked about: in its clause (3月3号吗, 3月3号还是4月3号？, "May 1st or 2nd?") or
    by a tag after it (3月3号，对吧？ "March 3rd, right?"); 3月3号呢，和劳动节同一天 is said, not asked."""
    start = len(m["v"]) - len(m["v"].lstrip())
    rest = m.string[m.start("v") + start:]
    date = _ZH_DATE.match(rest) if zh else _EN_DATE.match(rest)
    if not date:
        return ""
    after = rest[date.end():]
    cut = _CLAUSE_END.search(after)
    clause, following = (after[:cut.start()], after[cut.end():]) if cut else (after, "")
    if _ASKED_IN_CLAUSE.search(clause) or _TAG_QUESTION.match(following):
        return ""
    return date["d"]


_ZH_KIN_ANY = f"{_ZH_PARTNERS}|{_ZH_FAMILY}|老妈|老爸|妈|爸|哥|姐|弟|妹"
"""A partner or family member by any name, short ones too (我妈, 我哥)."""
_ZH_KIN_SHORT = {"妈": "妈妈", "老妈": "妈妈", "爸": "爸爸", "老爸": "爸爸", "哥": "哥哥", "姐": "姐姐", "弟": "弟弟",
                 "妹": "妹妹"}
"""Short names of kin (我妈, 我哥), kept under the full one."""


_FEMALE = re.compile(r"(?i)妈|姐|妹|女|老婆|媳妇|妻子|太太|奶奶|外婆|姥姥|闺女"
                     r"|wife|girlfriend|fianc[ée]e|daughter|mom|mum|mother|sister|grandma")
_MALE = re.compile(r"(?i)爸|哥|弟|儿子|老公|丈夫|男朋友|爷爷|外公|姥爷|孙子"
                   r"|husband|boyfriend|fianc[ée](?!e)|son|dad|father|brother|grandpa")


def _same_gender(relation: str, pronoun: str) -> bool:
    """Whether 她/"her" or 他/"his" can refer to ``relation`` (爱人, 孩子, partner: either)."""
    female = pronoun.lower() in ("她", "her")
    return not (_MALE.search(relation) if female else _FEMALE.search(relation))


def _kin_birthday(m: re.Match[str], zh: bool) -> Extracted | None:
    """我妈的生日是3月3号, "My mom's birthday is March 3rd": a family member's birthday (``birthday:<relation>``), a
    date only (not "coming up next week")."""
    rel = _ZH_KIN_SHORT.get(m["r"], m["r"].lower())
    v = _date_at_start(m, zh)
    if not v:
        return None
    text = f"用户的{rel}的生日是{v}" if zh else f"The user's {rel}'s birthday is {v}"
    return _fact(f"birthday:{rel}", v, text)


def _no_year(item: Extracted | None) -> Extracted | None:
    """A birthday read from the day one turns an age: the year said is that day's, not the birth year ("I turn 30
    on May 5, 2026" → May 5)."""
    if item is None:
        return None
    value = re.sub(r",?\s+(?:19|20)\d{2}$", "", item.value)
    return replace(item, value=value, text=item.text.replace(item.value, value))


def _en_birthday(m: re.Match[str]) -> Extracted | None:
    v = _date_at_start(m, zh=False)
    return _fact("birthday", v, f"The user's birthday is {v}") if v else None


def _en_like(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(m["v"], max_words=6)
    v = re.sub(r"\s+(?:anymore|any more)$", "", v)
    return _pref(v, "likes", f"The user likes {_my_to_their(v)}")


def _en_dislike(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(m["v"], max_words=6)
    v = re.sub(r"\s+(?:anymore|any more)$", "", v)
    return _pref(v, "dislikes", f"The user dislikes {_my_to_their(v)}")


_NOT_A_FOOD_WORDS = """much well enough breakfast lunch dinner out another there here before after right at that
this like until in on alone healthy anything too so very late early slowly properly normally a lot more less
when while with without during"""
_NOT_A_FOOD_EN = frozenset(_NOT_A_FOOD_WORDS.split())


def _en_not_eat(m: re.Match[str]) -> Extracted | None:
    v = _clean_en(m["v"], max_words=4)
    v = re.sub(r"(?i)^any\s+", "", v)
    if v.lower() in ("meat", "animal products"):
        return _diet("no meat", "The user doesn't eat meat")
    if not v or _PRONOUN_EN.match(v) or v.split()[0].lower() in _NOT_A_FOOD_EN:
        return None  # "I don't eat much", "I can't eat another bite", "I don't eat out": how or when, not what
    return _pref(v, "dislikes", f"The user doesn't eat {v}")


def _en_favorite(m: re.Match[str]) -> Extracted | None:
    c = " ".join(m["c"].split())
    v = _clean_en(m["v"], max_words=6)
    if not c or not v or _QUESTION_RE.search(v + " " + c):
        return None
    return Extracted("preference", f"favorite:{topic_key(c)}", v, f"The user's favorite {c} is {v}", "likes")


def _age_words(m: re.Match[str]) -> Extracted | None:
    num = int(m["v"] or m["w"])
    return _fact("age", str(num), f"The user is {num} years old") if 1 <= num <= 120 else None


_ZH_ADV = r"(?:也|还|一直|真的|非常|特别|很|超|最|挺|比较|超级|其实|就|都|现在|已经|确实)*"
_EN_ADV = r"(?:(?:really|also|absolutely|just|still|do|totally|truly|actually|genuinely|kind of|kinda)\s+)*"
_EN_WHO = r"(?<![A-Za-z'])I"
_NOT_A_NAME_WORDS = """
american canadian mexican british english irish scottish welsh french german italian spanish portuguese dutch
swedish norwegian danish finnish polish russian ukrainian greek turkish chinese japanese korean vietnamese thai
filipino indian pakistani australian brazilian argentinian african asian european latino latina jewish muslim
christian catholic hindu buddhist atheist gay straight trans fine good great okay ok sorry happy here back home
not so just sure also still really very currently now done ready glad tired busy new single married
monday tuesday wednesday thursday friday saturday sunday christmas easter thanksgiving and the
sick bored pregnant retired sad mad ill in out off on team she he we they her his its has have had every right
loves likes hates wants says said never always passed went got gets lives works"""
_NOT_A_NAME_EN = frozenset(_NOT_A_NAME_WORDS.split())
"""Capitalised words after "I'm" or "my wife" that are no name (a nationality, a feeling, a day)."""

_ZH_PATTERNS: list[tuple[re.Pattern[str], Builder]] = [
    (re.compile(rf"我叫(?P<v>{_ZH_VALUE}{{1,20}})"), _zh_name),
    (re.compile(rf"我的名字(?:是|叫)(?P<v>{_ZH_VALUE}{{1,20}})"), _zh_name),
    # 大家都叫我小王, 叫我Tom就好: a name; not 叫我先睡, 叫我回家过年, 叫我很头疼 (asks me to, makes me)
    (re.compile(r"叫我(?P<v>(?![很先回去来吃帮别不一起做写开等给把跟和到睡快马别多少起加相早考出喝陪买打上下"
                r"看听带找请])"
                r"(?:[\u4e00-\u9fff]{1,4}|[A-Za-z][A-Za-z' -]{0,20}?))(?=就行|就好|就可以|吧|好了|[，,。！!~\s]|$)"),
     _zh_name),
    (
        re.compile(rf"我(?:现在|目前|一直)?(?:住在|住|居住在|生活在|定居在?)(?P<v>{_ZH_VALUE}{{1,20}})"),
        _zh_home,
    ),
    (
        re.compile(
            rf"我(?:现在|如今|已经|刚|刚刚|最近|后来|上个月|去年|今年)?"
            rf"搬(?:家)?(?:到了|到|去了|去|回了|回到|回)(?P<v>{_ZH_VALUE}{{1,20}})"
        ),
        _zh_home,
    ),
    (re.compile(rf"我(?:老家)?来自(?P<v>{_ZH_VALUE}{{1,20}})"), _zh_hometown),
    (re.compile(r"我是(?:一名|一位|一个|个)?来自(?P<v>[^的，。！？,.!?]{1,10})的"),  # 来自成都的大学生
     lambda m: _zh_hometown(m) if _is_place_zh(m["v"]) or _ZH_REGION.fullmatch(m["v"]) and _names_a_place(m["v"])
     else None),
    (re.compile(r"我(?:是)?(?:从小)?(?:在|于)(?P<v>[\u4e00-\u9fff]{2,8}?)(?:出生|长大)"),
     lambda m: _zh_hometown(m) if _is_place_zh(m["v"]) else None),
    (re.compile(r"我家(?:住)?在(?P<v>[\u4e00-\u9fff]{2,6}?)(?=[，,。！!？?；;\s]|$|的)"),
     lambda m: _zh_home(m) if _is_place_zh(m["v"]) else None),
    (re.compile(r"我(?:老家)?是(?P<v>[\u4e00-\u9fff]{2,5}?)人(?![\u4e00-\u9fff])"), _zh_hometown_ren),
    (re.compile(rf"我(?:现在|目前|一直)?在(?P<v>{_ZH_VALUE}{{1,20}}?)(?:工作|上班|任职|实习)"), _zh_work),
    (
        re.compile(
            rf"我(?:现在|目前)?(?:是一名|是一位|是个|是一个|的职业是|的工作是|当)(?P<v>{_ZH_VALUE}{{1,20}})"
        ),
        _zh_job,
    ),
    (
        re.compile(
            r"我(?:今年|已经|快|才|都)?(?P<v>\d{1,3}|[一二三四五六七八九十两百]{1,4})(?:周)?岁(?!的|时|那)"
        ),
        lambda m: _age(m, zh=True),
    ),
    (re.compile(rf"我的?生日(?:是|在|[:：])?(?P<v>{_ZH_VALUE}{{1,16}})"), _zh_birthday),  # 我生日3月3号: a date
    (re.compile(r"(?<![\d月])(?P<v>\d{1,2}月\d{1,2}[日号])是我的?生日(?![吗吧呢？?])"), _zh_birthday),
    # 我妈的生日是3月3号，我的是5月1号: the user's own, said after another's
    (re.compile(rf"生日(?:是|在)[^。！？!?]{{1,20}}?[，,、]\s*(?:而)?我的(?:是|在)(?P<v>{_ZH_VALUE}{{1,16}})"),
     _zh_birthday),
    (re.compile(rf"我(?:的|家)?(?P<r>{_ZH_KIN_ANY})的?生日(?:是|在|[:：])?"
                rf"(?P<v>{_ZH_VALUE}{{1,24}})"),
     lambda m: _kin_birthday(m, zh=True)),
    # 我媳妇叫小美，她生日是腊月初八: the one just named, by a pronoun, in the same sentence
    (re.compile(rf"我(?:的|家)?(?P<r>{_ZH_KIN_ANY})"
                rf"(?:叫|名叫|今年|已经|快|是)[^，,。！？!?；;]{{1,12}}[，,]\s*(?:而且|并且|然后)?(?P<p>[她他])(?:的)?"
                rf"生日(?:是|在|[:：])?(?P<v>{_ZH_VALUE}{{1,24}})"),
     lambda m: _kin_birthday(m, zh=True) if _same_gender(m["r"], m["p"]) else None),
    # 我老公在华为上班, 我老婆是一名医生: where and as what a family member works
    (re.compile(rf"我(?:的|家)?(?P<r>{_ZH_KIN_ANY})(?:现在|目前|一直)?"
                rf"在(?P<v>{_ZH_VALUE}{{1,16}}?)(?P<w>工作|上班|任职|实习)"),
     lambda m: _kin_work(m, zh=True)),
    (re.compile(rf"我(?:的|家)?(?P<r>{_ZH_KIN_ANY})(?:现在|目前)?{_ZH_IS}"
                rf"(?P<v>{_ZH_JOB_TITLE})"),
     lambda m: _kin_job(m, zh=True)),
    # 你好，我是小雨: a short name right after a greeting (我是 alone also says what one is: 我是学生)
    (re.compile(r"(?:你好|您好|嗨|哈喽|hi|hello)[，,！!。~\s]*我是(?P<v>[\u4e00-\u9fff]{2,3})(?=[，,。！!~\s]|$)",
                re.I),
     _zh_greeting_name),
    # 我是小林，在杭州…: a 小/老 name opening the message (not 我是小白 / 小学生 / 老师 / 老板)
    (re.compile(r"^\s*我是(?P<v>(?:小(?![白孩学朋师板人鲜伙妹弟哥姐吃号透编区))|老(?![大二三四五六七八九幺粉手鸟司乡外板师"
                r"人家公婆妈爸]))[\u4e00-\u9fff])(?=[，,。！!~\s])"),
     _zh_greeting_name),
    (re.compile(rf"我(?:现在|目前)?在(?P<v>{_ZH_VALUE}{{1,12}}?)(?:读书|上学|念书|读大学|上大学|读研|读博"
                r"|读(?:大[一二三四]|研[一二三]|高[一二三]|初[一二三]|本科|高中|初中|小学))"
                r"(?!的时候|时|那会|那几年|期间)"),
     _zh_studies_at),
    (re.compile(rf"(?<!希望)(?<!想让)(?<!让)我的?(?:学的|读的)?专业是(?P<v>{_ZH_VALUE}{{1,10}})"
                rf"|(?<!希望)(?<!想让)(?<!让)我(?:是)?(?:学|读)(?:的是)?(?P<v2>{_ZH_VALUE}{{1,8}}?)专业(?:的|(?=[，,。！!？?；;]|$))"),
     lambda m: _major(m["v"] or m["v2"], zh=True)),
    # 我在成都读大三，学的是计算机: what one studies, said with where or in which year (not 我今天学的是微积分)
    (re.compile(rf"我(?:现在|目前)?(?:在[^，,。！？!?]{{1,12}}?)?(?:读|上)(?:大[一二三四]|大学|研[一二三]?|本科|研究生)"
                rf"[，,]?\s*(?:但是|不过|而且|可是|但)?我?(?:学的|读的|念的)是"
                rf"(?P<v>{_ZH_VALUE}{{1,8}}?)(?:专业)?(?=[，,。！!？?；;]|$)"),
     lambda m: _major(m["v"], zh=True)),
    (re.compile(rf"我(?:现在|目前)?{_ZH_IS}(?P<v>{_ZH_JOB_TITLE})"), _zh_job),
    (re.compile(rf"我(?:现在|目前)?是做(?P<v>{_ZH_VALUE}{{1,10}}?)的"), _zh_did_job),
    # 我在一家银行做会计, 我在医院当护士: the job after 做/当 only when it is an occupation (我在家做饭 is not)
    (re.compile(rf"我(?:现在|目前)?在{_ZH_NOT_REAL}(?:一家|一个|一所)?(?P<w>[\u4e00-\u9fff]{{1,10}}?)(?:做|当)"
                rf"(?P<v>{_ZH_JOB_TITLE})"),
     _zh_job_there),
    # … and where: 我在上海一家医院当护士 (workplace 上海一家医院), 我在北京当老师 (work_city 北京)
    (re.compile(rf"我(?:现在|目前)?在{_ZH_NOT_A_PLACE}(?:一家|一个|一所)?(?P<v>[\u4e00-\u9fff]{{1,10}}?)(?:做|当)"
                rf"(?:{_ZH_JOB_TITLE})"),
     _zh_work_as),
    (re.compile(rf"我的?老家(?:是|在)(?P<v>[^{_ZH_BREAK}的]{{1,12}}?)(?:的|人)?(?=[{_ZH_BREAK}]|$)"), _zh_hometown),
    (re.compile(rf"我(?:的|家的?|家里的?)?(?P<r>{_ZH_PARTNERS}|{_ZH_FAMILY}|{_ZH_MY_PET})(?:的名字)?"
                rf"(?:叫|名叫|是叫|名字是)(?P<v>{_ZH_VALUE}{{1,8}})"),
     lambda m: _named(m["r"], m["v"], zh=True)),
    (re.compile(rf"我(?:家)?养了(?:一|两|几)?[只条个]?(?P<r>{_ZH_PET_NOUN})[，,]?(?:它)?(?:叫|名叫|名字叫)"
                rf"(?P<v>{_ZH_VALUE}{{1,8}})"),
     lambda m: _named(m["r"], m["v"], zh=True)),
    # an animal by its classifier (只/条), whatever the breed: 我养了一只柯基叫年糕, 我养了一只叫年糕的柯基
    (re.compile(rf"我(?:家)?养了(?:一|两|几)?[只条](?P<r>[\u4e00-\u9fff]{{1,4}}?)[，,]?(?:它)?(?:叫|名叫|名字叫)"
                rf"(?P<v>{_ZH_VALUE}{{1,8}})"),
     lambda m: _named(m["r"], m["v"], zh=True, pet=True)),
    (re.compile(r"我(?:家)?养了(?:一|两|几)?[只条]叫(?P<v>[\u4e00-\u9fffA-Za-z]{1,6}?)的(?P<r>[\u4e00-\u9fff]{1,4})"
                rf"(?=[{_ZH_BREAK}]|$)"),
     lambda m: _named(m["r"], m["v"], zh=True, pet=True)),
    (re.compile(rf"我{_ZH_ADV}对(?P<v>{_ZH_VALUE}{{1,12}}?)过敏"), lambda m: _allergy(m, zh=True)),
    (re.compile(r"我(?:一直|现在|从小)?(?:吃素|是素食(?:者|主义者)?)"), lambda m: _diet("吃素", "用户吃素")),
    (re.compile(rf"我{_ZH_ADV}(?:从来)?不(?:能)?吃(?P<v>{_ZH_VALUE}{{1,10}})"), _zh_not_eat),
    (re.compile(rf"我(?:是)?(?:毕业于(?P<v>{_ZH_VALUE}{{2,16}})|从(?P<w>{_ZH_VALUE}{{2,16}}?)毕业)"),
     _zh_school),
    (re.compile(rf"我(?:最近|现在|目前|正在|一直|也)?在学(?:习)?(?P<v>{_ZH_VALUE}{{1,10}})"),
     lambda m: _learning(m, zh=True)),
    (re.compile(r"我(?:是|的生日在)?(?P<v>\d{1,2}月\d{1,2}[日号])(?:出生|生日|生)"), _zh_birthday),
    (
        re.compile(rf"我{_ZH_ADV}喜欢的(?P<c>[^{_ZH_BREAK}是]{{1,10}})是(?P<v>{_ZH_VALUE}{{1,20}})"),
        _zh_favorite,
    ),
    (re.compile(rf"我{_ZH_ADV}(?:喜欢|爱|热爱|偏爱|迷上了|爱上了)(?P<v>{_ZH_VALUE}{{1,24}})"), _zh_like),
    (
        re.compile(
            rf"我{_ZH_ADV}(?:再也)?(?:不(?:太|怎么|再|是很|大)?喜欢|讨厌|不爱|受不了|反感|厌恶)(?P<v>{_ZH_VALUE}{{1,24}})"
        ),
        _zh_dislike,
    ),
]
# English: verbs case-insensitive, values keep their case.
_EN_PATTERNS: list[tuple[re.Pattern[str], Builder]] = [
    (
        re.compile(
            r"(?i:\bmy name(?:'s| is))\s+"
            r"(?P<v>[A-Za-z][A-Za-z'\-]*(?:\s+[A-Z][A-Za-z'\-]*){0,2}|[\u4e00-\u9fff]{2,4})"
        ),
        _en_name,
    ),
    (  # "I'm Sarah", "Hi! I am Sarah Lee, …": a capitalised name introducing the user, at a sentence's start
        re.compile(
            r"\b(?i:hi|hello|hey)(?: there| all| everyone)?[,!.]?\s+(?i:I'm|I am)\s+"
            r"(?P<v>[A-Z][a-z\-]+(?:\s+[A-Z][a-z\-]+)?)(?=\s*(?:[,.!;]|$)|\s+(?:and|from|here)\b)"
        ),
        _en_intro_name,
    ),
    (
        re.compile(
            r"(?i:\b(?:call me|I'm called|I am called))\s+"
            r"(?P<v>[A-Z][A-Za-z'\-]*(?:\s+[A-Z][A-Za-z'\-]*){0,2}|[\u4e00-\u9fff]{2,4})"
        ),
        _en_name,
    ),
    (
        re.compile(
            rf"(?i:{_EN_WHO}(?:'m| am)?\s+(?:(?:just|recently|now|currently|still|also)\s+)*"
            rf"(?:live|living|based|residing|reside)\s+in)\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_home,
    ),
    (
        re.compile(
            rf"(?i:{_EN_WHO}(?:'ve| have)?\s+(?:(?:just|recently|finally|since|already)\s+)*"
            rf"(?:moved|relocated)\s+(?:back\s+)?to)\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_home,
    ),
    (
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am) (?:originally )?from)\s+(?P<v>{_EN_VALUE}{{1,60}})"),
        _en_hometown,
    ),
    (
        re.compile(
            rf"(?i:{_EN_WHO}(?:'m| am)?\s+(?:(?:currently|now|still|also)\s+)*work(?:ing)?\s+"
            r"(?:(?:(?:the\s+)?(?:night|day|morning|evening|overnight|weekend|late|early|double|long|12-hour)\s+)?"
            r"(?:shifts?|nights|days|weekends|evenings|mornings)\s+|part[- ]time\s+|full[- ]time\s+)?(?:at|for))"
            rf"\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_work,
    ),
    (  # "I'm a nurse in Toronto": where the job is, when it is a place
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am)\s+(?:(?:currently|now|still|also)\s+)*an?)\s+"
                   r"(?P<job>(?:(?!(?:and|my|but|or|so)\b)[a-z][a-z\-]*\s+){0,2}[a-z][a-z\-]*)"
                   r"\s+in\s+(?P<v>[A-Z][A-Za-z\-]+(?:\s+[A-Z][A-Za-z\-]+){0,2})(?![A-Za-z&])"),
        lambda m: _en_work_city(m) if _PROFESSION_RE.search(m["job"]) and not _NOT_PROFESSION.search(m["job"])
        and not _NOT_WORKING_THERE.search(m["job"]) else None,
    ),
    (  # "I work as a nurse at Mercy hospital", "I'm a software engineer at Google": the job's place
        re.compile(
            rf"(?i:{_EN_WHO}(?:'m| am)?\s+(?:(?:currently|now|still|also)\s+)*(?:work(?:ing)?\s+as\s+)?an?)\s+"
            r"(?P<job>[a-z][a-z\- ]{1,40}?)\s+(?P<prep>(?i:at|for))\s+(?P<v>[^,.;!?()\n]{1,60})"
        ),
        _en_work,
    ),
    (  # "I work in New York": a city, capitalised (not "in IT", "in sales", "in a hospital")
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am)?\s+(?:(?:currently|now|still|also)\s+)*work(?:ing)?\s+in)\s+"
                   r"(?P<v>[A-Z][A-Za-z\-]+(?:\s+[A-Z][A-Za-z\-]+){0,2})(?![A-Za-z&])"),
        _en_work_city,
    ),
    (  # "I just moved to Seattle for a new job at Amazon", "my new job at Google": where the user works
        re.compile(r"(?:\bI(?:'ve| have|'m| am)?\s+(?:just\s+)?(?i:got|landed|started|starting|start|accepted|took|have"
                   r"|began)\s+"
                   r"(?i:a|my)|\b(?i:for a|my))\s+(?i:new\s+)?(?i:job|position|role)\s+(?i:at|with)\s+"
                   r"(?P<v>[A-Z][\w&\-']*(?:\s+(?!I\b|(?i:mon|tues|wednes|thurs|fri|satur|sun)day\b|(?i:today|tomorrow"
                   r"|tonight|next|last|this|starts?|started|starting|and|but|so|in|on|at)\b)[A-Z][\w&\-']*){0,2})"),
        _en_new_job,
    ),
    (  # "I work at Google in Boston", "I work as a nurse at Mercy hospital in Boston": the city
        re.compile(
            rf"(?i:{_EN_WHO}(?:'m| am)?\s+(?:(?:currently|now|still|also)\s+)*(?:work(?:ing)?\s+(?:as\s+an?\s+"
            r"[a-z][a-z\- ]{1,40}?\s+)?(?:at|for)|an?\s+(?P<job>[a-z][a-z\- ]{1,40}?)\s+(?:at|for))\s+"
            r"(?:(?!\s(?i:and|but|while|so|I|my|was|is)\s)[^,.;!?()\n]){1,60}?\s+in)\s+"
            r"(?P<v>[A-Z][A-Za-z\-]+(?:\s+[A-Z][A-Za-z\-]+){0,2})"
        ),
        lambda m: _en_work_city(m) if m["job"] is None or (_PROFESSION_RE.search(m["job"])
                                                           and not re.search(r"\bstudent$", m["job"], re.I)) else None,
    ),
    (
        re.compile(
            rf"(?i:{_EN_WHO}(?:'m| am)\s+(?:(?:currently|now|also)\s+)?an?)\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_job,
    ),
    (re.compile(rf"(?i:{_EN_WHO}\s+work\s+as\s+an?)\s+(?P<v>{_EN_VALUE}{{1,60}})"), _en_job),
    *((re.compile(rf"(?i:{_EN_WHO}(?:\s+(?:currently|now|still|also))?\s+teach)\s+"
                  r"(?P<subj>(?!(?i:at|in)\b)[A-Za-z0-9]+(?:\s+(?!(?i:at|in|to|for|and)\b)[A-Za-z]+){0,2})?"
                  r"(?:\s*(?P<prep>\b(?i:at|in))\s+(?P<v>[^,.;!?()\n]{1,60}))?(?=[,.;!?\n]|$)"),
       lambda m, part=part: _en_teach(m, part)) for part in ("job", "workplace", "work_city")),
    (re.compile(rf"(?i:\bmy major is|{_EN_WHO}(?:'m| am)? major(?:ing)? in)\s+(?P<v>{_EN_VALUE}{{1,40}})"),
     lambda m: _major(_EN_AT_PLACE.split(m["v"], maxsplit=1)[0], zh=False)),
    (re.compile(rf"(?i:{_EN_WHO}(?:'m| am)\s+an?\s+(?:\w+\s+)?(?:student|junior|senior|freshman|sophomore)"
                r"(?:\s+at\s+[^,.;!?()\n]{1,40}?)?,?\s+studying)\s+(?P<v>[a-z][a-z ]{1,40}?)"
                r"(?=\s*(?:[,.;!?]|$|\s(?i:and|but|at|in)\b))"),
     lambda m: _major(m["v"], zh=False) if _EN_MAJOR.fullmatch(m["v"].strip()) else None),
    *((re.compile(rf"(?i:{_EN_WHO}(?:'m| am)?\s+(?:currently\s+|now\s+)?stud(?:y|ying))\s+(?P<v>[a-z][a-z ]{{1,40}}?)"
                  rf"\s+(?i:at)\s+(?P<s>{_EN_SCHOOL_NAME})(?=\s*(?:[,.;!?]|$|\s(?i:and|but|in)\b))"),
       lambda m, part=part: _en_studies_at(m, part)) for part in ("major", "school")),
    (
        re.compile(rf"(?i:\bmy (?:job|profession|occupation) is(?: an?)?)\s+(?P<v>{_EN_VALUE}{{1,60}})"),
        _en_job,
    ),
    (
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am)\s+(?P<v>\d{{1,3}})\s*(?:years?[ -]old|yo\b|y/o))"),
        lambda m: _age(m, zh=False),
    ),
    (
        re.compile(rf"(?i:\bmy age is\s+(?P<v>\d{{1,3}})\b|{_EN_WHO} just turned\s+(?P<w>\d{{1,3}})\b)"),
        _age_words,
    ),
    (
        re.compile(rf"(?i:\b(?:my|our) (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}))(?: [A-Z][a-z]+)?"
                   r"(?i:'s birthday is(?: on)?)\s+"
                   rf"(?P<v>{_EN_VALUE}{{1,40}})"),
        lambda m: _kin_birthday(m, zh=False),
    ),
    (  # "My wife is Emma and her birthday is March 3rd": the one just named (or aged, or placed), by a pronoun
        re.compile(rf"(?i:\b(?:my|our) (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}))"
                   r"\s+(?:is\s+(?:called\s+|named\s+)?[A-Z][a-z]+|is\s+\d{1,3}(?:\s+years\s+old)?|is\s+[a-z]+"
                   r"|lives\s+in\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
                   r"(?i:,?\s*(?:and )?(?P<p>her|his) birthday is(?: on)?)\s+"
                   rf"(?P<v>{_EN_VALUE}{{1,40}})"),
        lambda m: _kin_birthday(m, zh=False) if _same_gender(m["r"], m["p"]) else None,
    ),
    (
        re.compile(rf"(?i:\bmy birthday is(?: on)?|{_EN_WHO} was born on)\s+(?P<v>{_EN_VALUE}{{1,40}})"),
        _en_birthday,
    ),
    (  # "I turn 30 on May 5", "my daughter Maya turns 7 on March 12": the birthday, the day one turns an age
        re.compile(rf"(?i:{_EN_WHO}(?:(?:'m| am)\s+turning|'ll\s+turn|\s+will\s+turn|\s+turn)\s+\d{{1,3}}\s+on)\s+"
                   rf"(?P<v>{_EN_VALUE}{{1,40}})"),
        lambda m: _no_year(_en_birthday(m)),
    ),
    (
        re.compile(rf"(?i:\b(?:my|our) (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}))(?: [A-Z][a-z]+)?"
                   r"(?i:(?:\s+turns|\s+is\s+turning|\s+will\s+turn|'ll\s+turn)\s+\d{1,3}\s+on)\s+"
                   rf"(?P<v>{_EN_VALUE}{{1,40}})"),
        lambda m: _no_year(_kin_birthday(m, zh=False)),
    ),
    (  # "My mom's birthday is March 3rd and mine is May 1st": the user's own, said after another's
        re.compile(rf"(?i:birthday is[^.;!?]{{1,40}}?\b(?:and|but|while) mine is(?: on)?)\s+"
                   rf"(?P<v>{_EN_VALUE}{{1,40}})"),
        _en_birthday,
    ),
    (
        re.compile(rf"(?i:\b(?:my|our) (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}|{_EN_PET_NOUN})"
                   r"(?:'s name is| is called| is named))"
                   r"\s+(?P<v>[A-Z][A-Za-z'\-]*(?:\s+[A-Z][A-Za-z'\-]*)?)"),
        lambda m: _named(m["r"], m["v"], zh=False),
    ),
    # "my wife works at Google", "my husband is a firefighter": where and as what a family member works
    (re.compile(rf"(?i:\bmy (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}) (?:now |still |currently )?works? (?:at|for))\s+"
                r"(?P<v>[A-Z][\w&'\-]*(?:\s+(?!I\b)[A-Z][\w&'\-]*){0,3})"),
     lambda m: _kin_work(m, zh=False)),
    (re.compile(rf"(?i:\bmy (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}) (?:is|works as) an?)\s+(?P<v>[a-z][a-z\- ]{{1,40}}?)"
                r"(?=\s*(?:[,.;!?]|$|\s(?:at|in|for|and|but|so|who)\b))"),
     lambda m: _kin_job(m, zh=False)),
    (  # "My husband is Tom and his birthday is…", "My wife is Emma, she…": a capitalised name, then he/she
        re.compile(rf"(?i:\b(?:my|our) (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}|{_EN_PETS}) is)"
                   r" (?P<v>[A-Z][a-z\-]+)(?=\s*,?\s*(?:and\s+|but\s+)?(?i:he|she|his|her|they|their)\b)"),
        lambda m: None if _no_name(m["v"]) or _NOT_NAME_ENDING.search(m["v"]) or re.fullmatch(
            rf"(?i)black|white|brown|republican|democrat|liberal|conservative|vegan|vegetarian|deaf|blind"
            r"|siamese|persian|tabby|calico|ginger|nonbinary|non-binary|autistic|trans|queer|disabled|adopted"
            rf"|older|younger|{_NOT_A_NAME_BUT_WHAT}|{BREEDS_EN}",
            m["v"]) else _named(m["r"], m["v"], zh=False),
    ),
    (  # "My husband Tom is a firefighter", "my daughter Emma, who is 7", "our dog Max": the name right after
        re.compile(rf"(?i:\b(?:my|our) (?P<r>{_EN_PARTNERS}|{_EN_FAMILY}|{_EN_PETS}))"
                   r" (?P<v>[A-Z][a-z\-]+(?:\s+[A-Z][a-z\-]+(?=\s*(?:[,.!?;]|$)|\s+[a-z]))?)(?:'s)?(?![A-Za-z])"),
        lambda m: None if _no_name(m["v"]) else _named(m["r"], m["v"], zh=False),
    ),
    (  # "I have a cat named Luna", "we adopted a rescue dog called Max"
        re.compile(rf"(?i:\b(?:i|we) (?:have|had|got|adopted|own|rescued)(?: a| an| one)? (?P<r>{_EN_PET_NOUN})"
                   r"(?: named| called))\s+(?P<v>[A-Z][A-Za-z'\-]*(?:\s+[A-Z][A-Za-z'\-]*)?)"),
        lambda m: _named(m["r"], m["v"], zh=False),
    ),
    (
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am)\s+(?:(?:very|severely|also|really|deathly)\s+)?allergic to)"
                   rf"\s+(?P<v>{_EN_VALUE}{{1,40}})"),
        lambda m: _allergy(m, zh=False),
    ),
    (
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am)\s+(?:(?:a|now|also|strictly)\s+)*(?P<v>vegetarian|vegan|pescatarian))"),
        lambda m: _diet(m["v"].lower(), f"The user is {m['v'].lower()}"),
    ),
    (
        re.compile(rf"(?i:{_EN_WHO}\s+(?:graduated|have graduated|'ve graduated)\s+from)\s+(?P<v>{_EN_VALUE}{{1,60}})"),
        _en_school,
    ),
    (
        re.compile(rf"(?i:{_EN_WHO}(?:'m| am)\s+(?:(?:currently|now|also|still)\s+)?learning)"
                   rf"\s+(?P<v>{_EN_VALUE}{{1,40}})"),
        lambda m: _learning(m, zh=False),
    ),
    (
        re.compile(
            r"(?i:\bmy (?:all[- ]time )?fav(?:ou|o)rite)\s+(?P<c>[A-Za-z][A-Za-z ]{0,30}?)"
            rf"\s+(?i:is|are)\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_favorite,
    ),
    (
        re.compile(
            rf"(?i:{_EN_WHO}\s+{_EN_ADV}(?:like|love|enjoy|adore|prefer)"
            rf"|{_EN_WHO}'m (?:a (?:big |huge )?fan of|into))"
            rf"\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_like,
    ),
    (
        re.compile(
            rf"(?i:{_EN_WHO}\s+{_EN_ADV}(?:hate|dislike|detest|can't stand|cannot stand)"
            rf"|{_EN_WHO}\s+(?:really\s+)?(?:don't|do not|no longer|never|didn't|don’t)\s+(?:really\s+)?"
            r"(?:like|love|enjoy)"
            rf"|{_EN_WHO}'m not (?:a (?:big )?fan of|into))\s+(?P<v>{_EN_VALUE}{{1,60}})"
        ),
        _en_dislike,
    ),
    (re.compile(rf"(?i:{_EN_WHO}\s+(?:don'?t|do not|never|can'?t|cannot)\s+eat)\s+(?P<v>{_EN_VALUE}{{1,40}})"),
     _en_not_eat),
]


_ZH_SENTENCE_RE = re.compile(r"[^。！？!?\n]+[。！？!?\n]*")
_ZH_CLAUSE_RE = re.compile(r"([，,；;]\s*)")
_ZH_OTHERS = rf"朋友|妈|爸|哥|姐|弟|妹|家人|们|同事|室友|同学|{_ZH_PARTNERS}|{_ZH_FAMILY}|{_ZH_PETS}"
"""Who "我<X>…" is about when it is not the user: the people and animals whose names are kept (the lists above)."""
_ZH_MY_OWN = re.compile(r"^\s*我的(?:名字|姓名|生日|工作|职业|老家|家乡|年龄)")
"""A clause about the user's own name, birthday, job or home (我的名字叫…), though it starts with 我的."""
_ZH_SELF_CLAUSE = re.compile(rf"^\s*我(?!的|{_ZH_OTHERS})|{_ZH_MY_OWN.pattern}")
_ZH_OTHER_CLAUSE = re.compile(rf"^\s*(?:他|她|它|我的|我(?:{_ZH_OTHERS})|我家|我有(?:一)?[个位]"
                              rf"|我(?:认识|介绍(?!一下自己|下自己|自己)|遇到|碰到|见到|陪|帮)|我(?:跟|和|给)我(?:{_ZH_OTHERS}))")
"""A clause about someone or something else ("我的女儿叫朵朵", "她…"): the clauses after it are not about the user."""
_ZH_NAMES_OTHER = re.compile(r"^\s*我(?!的名字|的姓名|小名|现在|目前)[^，,。叫]{1,6}叫")
"""我表哥叫李明, 我闺蜜叫小美: a clause naming someone else (我叫, 我的名字叫 name the user)."""
_ZH_DROPPED_SUBJECT = re.compile(
    r"^(?:今年|去年|上个月|现在|如今|目前|也|还|最|后来|刚刚?|已经|最近)?(?:住|搬|在[^，,]{1,20}?(?:工作|上班)|是一名|是一位|喜欢|不喜欢|讨厌|来自|的生日|"
    rf"在[^，,]{{1,12}}?(?:做|当){_ZH_JOB_TITLE}|在[^，,]{{1,12}}?(?:读书|上学|念书|读大学|上大学|读研|读博"
    r"|读(?:大[一二三四]|研[一二三]|高[一二三]|初[一二三]|本科|高中|初中|小学))|学的是|读的是|"
    r"[0-9一二三四五六七八九十]{1,3}岁|是做|对[^，,]{1,12}过敏|不吃|吃素|"
    rf"{_ZH_IS}{_ZH_JOB_TITLE})"
)


_ZH_KIN_SUBJECT = re.compile(rf"^\s*我(?:的|家的?)?(?P<k>{_ZH_PARTNERS}|{_ZH_FAMILY}|{_ZH_MY_PET})(?!的|们)")
"""A clause about the user's family member or pet (我儿子今年上初二了, 我家猫三岁了)."""
_ZH_DROPPED_KIN_CLAUSE = re.compile(r"^\s*(?:(?:叫|名叫|名字叫)(?![醒人都外兽家她他我你爸妈声个得着不也])"
                                    r"(?:[\u4e00-\u9fff]{1,3}(?<![了的吧啊呢])|[A-Za-z]+)(?=[，,。！!~\s]|$)"
                                    r"|(?:现在|目前|一直)?在[^，,]{1,16}?(?:工作|上班|任职|实习)|是(?:一名|一位|个|一个)?)")
"""A clause about the family member just told of, its subject dropped (…，叫乐乐 / 在华为上班 / 是一名工程师); not
after a clause that brings in someone new (``_ZH_INTRODUCES``)."""
_ZH_INTRODUCES = re.compile(r"(?:有|交了?|介绍了?|嫁了?|娶了?|生了?|认识了?|找了?|谈了?)(?:一|几|两|三|好几)?[个位]"
                            r"(?!小名|英文名|名字|外号|绰号|昵称|大名)|[和跟与]|还有|出差|旅游|回老家")
"""A clause that brings in someone new (我老婆有个闺蜜, 交了几个朋友, 我老公和他哥) or takes the family member elsewhere
(出差了): what follows may be about someone or somewhere else."""


def _restore_subjects(text: str) -> str:
    """Put back the 我 that Chinese drops after the first clause ("我叫张伟，住在北京" -> "…，我住在北京")."""
    if "我" not in text:
        return text
    out = []
    for sentence in _ZH_SENTENCE_RE.findall(text) or [text]:
        parts = _ZH_CLAUSE_RE.split(sentence)
        about_me = False
        kin = None  # 我儿子今年上初二了，叫乐乐: the family member or pet a later 叫 names
        for i, part in enumerate(parts):
            if i % 2 == 1:  # a separator
                out.append(part)
                continue
            whose = _ZH_KIN_SUBJECT.match(part)
            if whose:
                kin = None if _ZH_INTRODUCES.search(part) else whose["k"]
            elif kin and _ZH_DROPPED_KIN_CLAUSE.match(part):
                part = f"我{kin}{part.lstrip()}"
            else:
                kin = None
            if (_ZH_OTHER_CLAUSE.match(part) and not _ZH_MY_OWN.match(part)) or _ZH_NAMES_OTHER.match(part):
                about_me = False  # 我有个朋友，去年搬到了深圳: the friend moved
            elif _ZH_SELF_CLAUSE.match(part):
                about_me = True
            elif about_me and _ZH_DROPPED_SUBJECT.match(part.lstrip()):
                part = "我" + part.lstrip()
            out.append(part)
    return "".join(out)


_LATIN_RE = re.compile(r"[A-Za-z]")
_HAN_RE = re.compile(r"[\u4e00-\u9fff]")
_EN_ABBREVIATION = re.compile(r"\b((?i:St|Mt|Dr|Mr|Mrs|Ms|Jr|Sr|Inc|Co|Ltd|Corp))\.(?=\s)")


_I_RE = re.compile(r"(?<![A-Za-z'])i(?![A-Za-z])")
_PROPER_KEYS = re.compile(r"name|home_city|hometown|work_city|workplace|school|partner|(?:family|pet):.*")
"""Facts whose value is a name or a place: capitalized when the user wrote in capitals."""
_NAMED_KEYS = re.compile(r"name|partner|(?:family|pet):.*")
_SAYS_A_NAME = re.compile(r"(?i)\b(?:named|called|name is|name's|call me)\b")
"""In capitals every word looks like a name ("MY WIFE LEFT ME", "HI I'M HUNGRY"): a name is kept only when the
text says it is one."""
_LETTERS = re.compile(r"[A-Za-z]+")


_ACRONYM_WORDS = """
NYC DC SF LA UK US USA UAE EU UN GE HP BP IBM ABC NBC CBS BBC CNN NHS MIT UCL NYU UCLA USC IKEA
NASA FBI CIA ICU ER HR IT PR QA UPS USPS AIG
"""
_ACRONYMS = frozenset(_ACRONYM_WORDS.split())
"""Short words in capitals that stay so: a word without a vowel is one too (NYC, DC, HSBC)."""


_TITLES = frozenset({"ST", "MT", "DR", "MR", "MRS", "MS", "JR", "SR"})
"""Abbreviations without a vowel that are words, not acronyms: ST. LOUIS is St Louis."""


def _keeps_capitals(word: str) -> bool:
    """A short word in capitals that stays so: a known acronym, or one without a vowel (HSBC; not GYM)."""
    return (len(word) == 2 or len(word) <= 4 and (word in _ACRONYMS or not re.search(r"[AEIOUY]", word))) \
        and word not in _TITLES  # NY, PA, IBM, HSBC (but GYM)


def _shouted(text: str) -> bool:
    """Written in capitals: six Latin letters or more, none of them lower case, and no Chinese (我住在NYC is
    written as it should be)."""
    letters = [c for c in text if "A" <= c <= "Z" or "a" <= c <= "z"]
    return len(letters) >= 6 and not any(c.islower() for c in letters) and not _HAN_RE.search(text)


def _cased(low: str) -> str:
    """A lower-case word capitalized as a name: mary-jane is Mary-Jane, mcdonald's McDonald's, o'brien O'Brien
    (Mac- stays: Mackenzie, Machado)."""
    out = re.sub(r"[a-z]+", lambda r: r[0].capitalize(), low)
    out = re.sub(r"'S\b", "'s", out)  # McDonald's, not McDonald'S
    return re.sub(r"\b(Mc)([a-z])(?=[a-z]{2})", lambda r: r[1] + r[2].upper(), out)


def _truecased(text: str) -> str:
    """Capitals read as a writer would have cased them, roughly: acronyms as written (US, IT, NYC, IBM: listed, or
    short and without a vowel), other function words in lower case, other words capitalized (a name or a place may
    be among them; the patterns that want a capital find one)."""
    def word(w: re.Match[str]) -> str:
        low = w[0].lower()
        if w[0] in _ACRONYMS:
            return w[0]  # US, IT: an acronym before a word (us, it)
        if low in EN_STOPWORDS:
            return low
        if _keeps_capitals(w[0]):
            return w[0]  # NYC, IBM, BBC
        return _cased(low)
    return _I_RE.sub("I", re.sub(r"[A-Za-z][A-Za-z'\-]*", word, text))


def _recased(item: Extracted) -> Extracted:
    """An item read from ``_truecased`` text: a name capitalized (MARY-JANE is Mary-Jane), a place as read (NYC),
    anything else in lower case."""
    if not _LATIN_RE.search(item.value):
        return item
    if _NAMED_KEYS.fullmatch(item.key):
        value = _cased(item.value.lower())
    elif _PROPER_KEYS.fullmatch(item.key):
        if not re.search(r"\b[A-Z][a-z]{3,}", item.value):
            return item  # NYC, IBM, the UK: as written
        last = len(item.value.rstrip())
        value = _LETTERS.sub(lambda r: r[0] if not r[0].isupper() or _keeps_capitals(r[0]) and (
            len(r[0]) > 2 or r.end() == last or r[0] in _ACRONYMS) else r[0].capitalize(),
            item.value)  # NEW York, ABC News, EL Paso, LA Fitness
    else:
        value = item.value.lower()
        return replace(item, value=value, text=item.text[:1] + item.text[1:].lower())
    return replace(item, value=value, text=item.text.replace(item.value, value))


def extract_patterns(text: str) -> list[Extracted]:
    """Extract facts and preferences from (redacted) user text with Chinese and English patterns.

    One item per key: when a key matches twice ("我住在上海，后来搬到北京了"), the later one wins.
    Items come in the order they appear in the text. Text in capitals ("MY NAME IS JOHN") is read as if cased.
    """
    if not text:
        return []
    if _shouted(text):
        names = _SAYS_A_NAME.search(text) is not None
        return [_recased(item) for item in _extract(_truecased(text)) if names or not _NAMED_KEYS.fullmatch(item.key)]
    return _extract(text)


def _extract(text: str) -> list[Extracted]:
    text = _EN_ABBREVIATION.sub(r"\1", _restore_subjects(text))  # "St. Mary's": the period ends no value
    found: dict[str, tuple[int, Extracted]] = {}
    # A table only runs on text that has its script: a scan that cannot match still costs time.
    patterns = (_ZH_PATTERNS if "我" in text else []) + (_EN_PATTERNS if _LATIN_RE.search(text) else [])
    for rx, build in patterns:
        for m in rx.finditer(text):
            item = build(m)
            if item is None:
                continue
            prev = found.get(item.key)
            if prev is None or m.start() >= prev[0]:
                found[item.key] = (m.start(), item)
    return [item for _, item in sorted(found.values(), key=lambda p: p[0])]


# --- model extraction --------------------------------------------------------------------------------


class ModelFact(BaseModel):
    """One fact or preference, as a model returns it."""

    kind: FactKind = Field(description='"fact" or "preference"')
    key: str = Field(description="slot: name, home_city, job, ... or pref:<topic> / favorite:<category>")
    value: str = Field(description="the value, short, without trailing punctuation")
    text: str = Field(description="one standalone sentence about the user, in the user's language")
    polarity: Polarity | None = Field(default=None, description='"likes"/"dislikes" for preferences')


class FactsOutput(BaseModel):
    """What ``extract_with_model`` asks a model for."""

    facts: list[ModelFact] = Field(default_factory=list, description="facts the user states about themselves")


_KEY_RE = re.compile(r"^[a-z_]{2,32}(?::.{1,60})?$")


def from_model_facts(items: Sequence[ModelFact]) -> list[Extracted]:
    """Turn model items into ``Extracted``, normalising keys (``likes:x`` -> ``pref:x``) and dropping junk."""
    out: dict[str, Extracted] = {}
    for it in items:
        value = it.value.strip().rstrip("。.!！")
        text = it.text.strip()
        key = it.key.strip()
        polarity = it.polarity
        prefix, _, topic = key.partition(":")
        prefix = prefix.strip().casefold().replace(" ", "_")
        if prefix in ("likes", "like", "dislikes", "dislike", "preference", "pref"):
            if prefix.startswith("dislike"):
                polarity = "dislikes"
            elif prefix.startswith("like"):
                polarity = "likes"
            key = f"pref:{topic_key(topic or value)}"
        elif prefix in ("favorite", "favourite"):
            key = f"favorite:{topic_key(topic)}"
        else:
            key = prefix + (f":{topic_key(topic)}" if topic else "")
        kind: FactKind = "preference" if key.startswith(("pref:", "favorite:")) else it.kind
        if kind == "preference" and polarity is None:
            polarity = "likes"
        if kind == "fact":
            polarity = None
        if not value or not text or not _KEY_RE.match(key) or key.endswith(":"):
            continue
        out[key] = Extracted(kind, key, value, text, polarity, "model")
    return list(out.values())


def tag_safe(text: str) -> str:
    """Neutralise our own tag names inside inserted text, so it cannot close the tag it sits in."""
    return re.sub(r"</?\s*(user_message|assistant_reply)\s*>", r"[\1]", text, flags=re.I)


S = TypeVar("S", bound=BaseModel)


def _coerce(result: Any, schema: type[S]) -> S:
    if isinstance(result, schema):
        return result
    if isinstance(result, dict):
        return schema.model_validate(result)
    raise ValueError(f"expected {schema.__name__}, got {type(result).__name__}")


def _retry_messages(messages: list[BaseMessage], exc: Exception) -> list[BaseMessage]:
    return [
        *messages,
        HumanMessage(content=RETRY_NOTE.format(error=f"{type(exc).__name__}: {str(exc)[:200]}")),
    ]


def _log_failure(what: str, schema: type[BaseModel], attempt: int, exc: Exception) -> None:
    logger.warning(
        "%s: %s output unusable on attempt %d/2%s (%s: %s)",
        what,
        schema.__name__,
        attempt,
        ", retrying" if attempt == 1 else ", giving up",
        type(exc).__name__,
        str(exc)[:300],
    )


def invoke_structured(
    model: Any, schema: type[S], messages: list[BaseMessage], *, what: str
) -> tuple[S, int]:
    """Call ``model.with_structured_output(schema)``; retry once on any failure, then raise.

    Returns the parsed output and the number of model calls made (1 or 2). Raises ``ModelOutputError``
    (chained to the last failure) when both attempts fail; every failure is logged with ``what``.
    """
    attempt_messages = messages
    for attempt in (1, 2):
        try:
            # the extraction is not part of the reply: keep its tokens out of a graph's message stream
            runnable = model.with_structured_output(schema).with_config(tags=["nostream"])
            return _coerce(runnable.invoke(attempt_messages), schema), attempt
        except ModelUnavailableError as exc:  # unreachable or timed out: asking again would only wait again
            _log_failure(what, schema, 2, exc)
            raise ModelUnavailableError(f"{what}: {exc}", attempts=attempt - 1 + exc.attempts) from exc
        except Exception as exc:  # noqa: BLE001 - any model or parser failure gets the same retry
            _log_failure(what, schema, attempt, exc)
            if attempt == 2:
                raise ModelOutputError(f"{what}: model output unusable after a retry: {exc}") from exc
            attempt_messages = _retry_messages(messages, exc)
    raise AssertionError("unreachable")


async def ainvoke_structured(
    model: Any, schema: type[S], messages: list[BaseMessage], *, what: str
) -> tuple[S, int]:
    """Async twin of ``invoke_structured`` (uses ``ainvoke``)."""
    attempt_messages = messages
    for attempt in (1, 2):
        try:
            # the extraction is not part of the reply: keep its tokens out of a graph's message stream
            runnable = model.with_structured_output(schema).with_config(tags=["nostream"])
            return _coerce(await runnable.ainvoke(attempt_messages), schema), attempt
        except ModelUnavailableError as exc:  # unreachable or timed out: asking again would only wait again
            _log_failure(what, schema, 2, exc)
            raise ModelUnavailableError(f"{what}: {exc}", attempts=attempt - 1 + exc.attempts) from exc
        except Exception as exc:  # noqa: BLE001
            _log_failure(what, schema, attempt, exc)
            if attempt == 2:
                raise ModelOutputError(f"{what}: model output unusable after a retry: {exc}") from exc
            attempt_messages = _retry_messages(messages, exc)
    raise AssertionError("unreachable")


def fact_messages(user_text: str, assistant_text: str) -> list[BaseMessage]:
    """The prompt ``extract_with_model`` sends (text must already be redacted)."""
    return [
        SystemMessage(content=FACT_EXTRACTION_SYSTEM.format(slot_guide=SLOT_GUIDE)),
        HumanMessage(
            content=TURN_MEMORY_USER.format(
                user_text=tag_safe(user_text), assistant_text=tag_safe(assistant_text)
            )
        ),
    ]


def extract_with_model(model: Any, user_text: str, assistant_text: str) -> list[Extracted]:
    """Ask ``model`` for the facts and preferences in one (redacted) turn.

    Retries once on malformed output or a model error, then raises ``ModelOutputError``; the caller
    falls back to ``extract_patterns``.
    """
    out, _ = invoke_structured(
        model, FactsOutput, fact_messages(user_text, assistant_text), what="fact extraction"
    )
    return from_model_facts(out.facts)
