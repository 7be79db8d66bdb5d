"""Answer type: a question that asks *when* is answered by a memory that says when.

"When did Melanie go camping in July?" is answered by the turn that tells the time ("…we went camping two
weekends ago"), not by the turn that talks most about camping; "我什么时候开始学钢琴的？" by the turn that
says "学了三年了". Classic question answering calls this the expected answer type. A turn that only talks about
a topic matches the question's words as well as the turn holding the time, and often better; whether a turn
tells a time at all tells them apart.

``asks_when(query)``: the question asks for a time (when, what day, which month, how many years ago, 什么时候, 哪天,
几月, 几号, 星期几, 几年前) or a duration (how long, how many days, 多久, 学了几年, 多少天).
``tells_when(record, asked)``: the record tells of an event time (the span ``eventtime`` stored with it at write time:
"two weekends ago", "上周末", "yesterday"), or, for "how long", names a duration ("for 4 years", "三年了"). Ranking adds
``RecallOptions.answer_weight`` to the relevance of such records for such questions. Costs nothing for other
questions; a dict look-up per candidate for "when", plus one small regex for "how long".

Names (《…》, "called X") and numbers were measured the same way and left out: no gain on either development set.
"""

from __future__ import annotations

import re

from mneme.memory.base import Kind, MemoryRecord
from mneme.memory.eventtime import NAMES_TIME, span_of
from mneme.memory.lowvalue import is_question
from mneme.memory.pets import BREEDS_EN, BREEDS_ZH, PETS_EN, PETS_ZH, same_animal

_UNITS_EN = r"(?:years?|months?|weeks?|days?|hours?|minutes?)"
_UNITS_ZH = r"(?:年(?!级)|个月|天|周|个?星期|个?小时|分钟)"  # 几年级 asks a grade, not a time
_HOW_MANY_ZH = r"(?:(?<![这那前过好近])几|多少)"  # 这几天 / 前几天 / 最近几年 say "these / a few", not ask
_ASKS_WHEN = re.compile(
    r"^\W*when\b|\bwhat (?:time|day|date|year|month|week|weekend|season)\b|"
    r"\bwhich (?:year|month|day|date|week|weekend|season)\b|\bhow long\b|\bsince when\b|"
    rf"\bhow many {_UNITS_EN}\b|"
    r"什么时候|哪天|哪一天|哪个月|哪年|哪一年|哪个?星期|哪一?周|哪个周末|几月|几号(?![线楼])|"
    rf"{_HOW_MANY_ZH}点|星期几|周几|礼拜几|何时|多久|多长时间|{_HOW_MANY_ZH}{_UNITS_ZH}", re.I)
_ASKS_HOW_LONG = re.compile(
    rf"\bhow long\b(?! ago)|\bhow many {_UNITS_EN}\b(?! ago)|多久(?!以前|之前)|多长时间|"
    rf"{_HOW_MANY_ZH}{_UNITS_ZH}(?!前|以前|之前)", re.I)

# "for/since <number> <unit>", "<number>(个)<unit>了": each regex starts with a literal, so a search over a turn is
# fast (about 1.5 µs per candidate; one regex with alternations up front cost 14 µs)
_N = (r" (?:about |over |almost |nearly )?(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|"
      r"many) (?:year|month|week|day|hour|minute)s?\b")
_FOR, _SINCE = re.compile("for" + _N), re.compile("since" + _N)
_ZH_UNIT = re.compile(r"(?:年|月|星期|周|天|小时|分钟)")
_ZH_NUMBER_UNIT = r"[\d一两二三四五六七八九十几半]+个?(?:年|月|星期|周|天|小时|分钟)"
_ZH_DURATION = re.compile(  # 三年了 / 两个月以来 (unit, then 了); 跑了一个小时 / 学了三年 (了, then the duration)
    _ZH_NUMBER_UNIT + r"(?:了|之久|以来|多了)|了" + _ZH_NUMBER_UNIT)


def _names_duration(text: str) -> bool:
    low = text.lower()
    if _FOR.search(low) or _SINCE.search(low):
        return True
    return _ZH_UNIT.search(text) is not None and _ZH_DURATION.search(text) is not None


_ASKS_FEELING = re.compile(
    r"心情|情绪|感受(?!器)|心态|烦恼|烦心|倾诉|难过|伤心|焦虑|不开心|郁闷|委屈"
    r"|(?:我|让我)(?:上次|之前|最近|那时|那天)?(?:都)?(?:在)?(?:为什么|为啥|怎么)?(?:这么|那么)?(?:着急|发愁|担心|紧张|害怕|生气"
    r"|难受|低落)(?:什么|啥|过|了|的事(?:是什么|是啥)?)?(?:吗|呢|来着)?\W*$"
    r"|^(?!.*(?:查一下|账号|账户|订单|系统|服务器|电脑|手机|网络|快递|设备|软件|游戏)).*?我(?:最近|这段时间|那段时间)?的?状态"
    r"(?:怎么样|如何|好吗|好不好|还好吗)"
    r"|我(?:最近|这段时间)?过得(?:怎么样|如何|好吗|好不好)"
    r"|(?<![高气水油胎血])压力(?:大|很大|好大|山大|怎么样|如何)|有压力|什么压力"  # not 高压锅的压力阀, 轮胎压力
    r"|(?i:\bhow (?:have|was|am|did) i (?:been )?(?:feel|feeling|felt)\b|\bmy (?:mood|feelings?)\b"
    r"|\bwhat (?:was|is|has been|did|do) i (?:upset|worried|sad|stressed|anxious|bothered|down)\b"
    r"|\bwhat made me (?:sad|upset|cry|angry|anxious|worried|stressed)\b"
    r"|\b(?:worr(?:y|ied|ying)|bother(?:ing|ed)|upset(?:ting)?|stress(?:ed|ing)?|sadden(?:ed|ing)?) me\b"
    r"|\b(?:was|were|am|have been) i (?:sad|upset|down|stressed|anxious|worried|depressed|lonely)\b)")
"""A question about how the user felt or what troubled them ("我最近心情怎么样？", "我跟你倾诉过什么烦恼？",
"How have I been feeling?", "When was I sad?"): answered by the summaries of what they confided (a negative
exchange is kept only as one). Not "How am I doing on my budget?", 高压锅的压力阀怎么调？, "Who was upset about
the delay?"."""


_ASKS_PROFILE = re.compile(
    r"你(?:都|还|一共)?(?:知道|了解|记得|记住了?)(?:关于)?我(?:的)?(?:什么|哪些|多少|些什么|啥|哪些事|的事)?(?:吗|么|呢)?\W*$"
    r"|你对我(?:有)?(?:多少|哪些|什么|几分)?(?:了解|认识|印象)"
    r"|关于我(?:的事|的情况|的事情)?[，,]?你(?:都|还)?(?:知道|了解|记得)(?:什么|哪些|多少|些什么|啥)?(?:吗|呢)?\W*$"
    r"|(?:介绍|描述|总结)一下我(?:自己)?(?:吧|呗)?\W*$|说说(?:你眼中的|你了解的|你记得的)?我(?:吧|呗|自己)?\W*$"
    r"|我是(?:个|一个)?什么样的人|^\W*我是谁\W*$|^\W*用户的(?:个人)?(?:信息|资料|画像|基本情况)(?:有哪些|是什么)?\W*$"
    r"|(?i:\bwhat (?:do|did|can) you (?:know|remember|recall) about (?:me|myself|the user)\W*$"
    r"|\bwhat have i told you about (?:me|myself)\W*$|\btell me (?:about myself|what you know about me"
    r"|everything you (?:know|remember) about me)\W*$|^\W*who am i\W*$|\bdescribe me\W*$|\bdo you remember me\W*$"
    r"|^\W*what (?:information|facts) about the user (?:are|is) (?:stored|known|kept)\W*$)")
"""A question about the user as a whole ("你对我了解多少？", "你都记得我什么？", "介绍一下我", "What do you know about
me?", "Who am I?"): answered by what is kept about the user, the facts and preferences, not by the turns whose words
come closest to a question that names no topic. Not "你记得我的猫吗？" or "你知道我住哪吗？" (a topic is named)."""


def asks_profile(query: str) -> bool:
    """Whether ``query`` asks what is known about the user as a whole (``_ASKS_PROFILE``)."""
    return _ASKS_PROFILE.search(query) is not None


PROFILE_KINDS = (Kind.FACT, Kind.PREFERENCE)
"""The kinds of record that say what the user is and likes."""


def describes_user(record: MemoryRecord) -> bool:
    """Whether ``record`` is a fact or preference about the user: what a question about the user as a whole asks for."""
    return record.kind in PROFILE_KINDS


_RECAP = re.compile(
    r"(?:聊|说|讲|谈|告诉(?:你|过你|了你)?|提|分享)(?:了|过)?(?:些|了些)?(?:什么|啥|哪些)(?:事情?|话题|东西|内容)?"
    r"|(?:在)?忙(?:些|了些|了)?(?:什么|啥)|(?:做|干)(?:了|过)?(?:些)?(?:什么|啥|嘛)(?:事情?)?"
    r"|发生(?:了|过)?(?:什么|啥)(?:事情?)?|有什么新鲜事"
    r"|(?i:\bwhat (?:did|have) (?:we|i) (?:(?:been )?talk(?:ed|ing)? about|(?:been )?chat(?:ted|ting)? about"
    r"|discuss(?:ed)?|say|said|tell you|told you|done|do|been doing|been up to|been talking about)\b"
    r"|\bwhat was i (?:doing|up to)\b|\bwhat (?:has )?happened\b|\bwhat(?:'s| is| has been) new with me\b)")
_PAST_ZH = re.compile(r"[了过]|在忙|最近|昨天|前天|上次|上周|上个?月|之前|以前|那天|前几天|刚才|去年|新鲜事")
"""A Chinese recap looks back: "我周末干什么？" asks a habit, "我周末干了什么？" a recap."""
_NOT_A_TOPIC = re.compile(
    r"我们|咱们|跟你|和你|对你|给你|你还|我|你|都|还|也|又|就|一下|一共|总共|记得|知道|来着|吗|呢|呀|啊|吧|了|过|的"
    r"|最近|近来|这几天|这段时间|这阵子|前几天|前阵子|上次|之前|以前|那天|那时候?|今天|昨天|前天|上周末?|这周末?|本周"
    r"|上个?月|这个?月|去年|今年|刚才|早上|上午|中午|下午|晚上|周末|明天|后天|下周|下个?月|明年|下次|接下来|哪里|哪儿|之后|以后|将来|未来|有|是|要|安排|计划|打算|行程|日程"
    r"|(?i:\b(?:i|we|you|me|us|do|did|can|could|remember|tell|please|again|so far|lately|recently|these days|"
    r"last|this|time|before|the other day|today|yesterday|week|weekend|month|year|ago|in|on|at|the|a|an|"
    r"next|tomorrow|tonight|later|soon|coming|upcoming|are|is|what|my|to|for|during|have|plans?|schedule|agenda)\b)"
    r"|[\W\d_]")


_ASKS_ASSISTANT = re.compile(
    r"^\W*你(?:最近|这几天|今天|现在)?(?:在|都)?(?:忙|做|干)|(?i:\bwhat (?:are|have) you been\b)")
""""你在忙什么？", "What have you been up to?": asked of the assistant, not a recap of the user's own."""
_YOU_NOT_SUBJECT = re.compile(r"跟你|和你|同你|告诉(?:过|了)?你|给你|对你|^\W*你(?:还|都)?(?:记得|知道)")
"""你 as the one talked to or asked to remember ("上次跟你聊了什么？", "你还记得上次聊了什么吗"), not as the subject."""


def _of_assistant(query: str) -> bool:
    """A Chinese question about "你" with no "我" in it ("你有什么计划？", "你说什么？") asks about the assistant; "上次
    跟你聊了什么？" (you, the one talked to) does not."""
    rest = _YOU_NOT_SUBJECT.sub("", query)
    return "你" in rest and "我" not in rest


def asks_recap(query: str, time_words: str = "") -> bool:
    """Whether ``query`` asks what was said or done in a time rather than about a topic ("我们上次聊了什么？",
    "我昨天跟你说了什么", "我最近在忙什么", "What did we talk about last time?", "What have I been up to lately?"):
    a recap verb, and nothing else but time words (``time_words``, the expression a parsed time window came from,
    is time words too) and pronouns, looking back (了, 过, 昨天, 最近…; did, have). Not "我昨天跟你说了我的猫什么" or
    "What did I say about my cat?" (a topic), nor "我周末干什么？" (a habit)."""
    found = _RECAP.search(query)
    if found is None or _ASKS_ASSISTANT.search(query) or _of_assistant(query):
        return False
    if not found.group().isascii() and not _PAST_ZH.search(query):
        return False
    return not names_topic(query, found.group(), time_words)


_ASKS_PLANS = re.compile(
    r"(?:什么|哪些|啥)(?:安排|计划|打算|行程|日程|待办|事要做)|(?:安排|计划|打算|行程|日程)(?:是什么|有哪些|是啥|呢)"
    r"|(?:要|得|准备|打算|接下来)(?:做|干|去)(?:什么|啥|哪(?:里|儿)?|嘛)(?:旅行|旅游|玩)?|说过要(?:做|干|去)(?:什么|啥|哪(?:里|儿)?|嘛)(?:旅行|旅游|玩)?"
    r"|(?i:\bwhat are my plans\b|\bwhat(?:'s| is) (?:my (?:plan|schedule|agenda)|on my (?:schedule|agenda|calendar)"
    r"|coming up|next for me)\b|\bwhat (?:am i|do i have) (?:doing|planned|going to do|coming up|scheduled|on)\b"
    r"|\bwhat did i (?:say|tell you) i (?:would|was going to|will)\b"
    r"|\bwhere am i (?:going|travell?ing|flying|heading|off to)(?: to)?\b"
    r"|\bam i going anywhere\b|\bwhat do i (?:need|have) to do\b)")
"""A question about what the user plans or has ahead ("我接下来有什么安排？", "我下周有什么计划", "我之前说过要做什么",
"What are my plans?", "What do I have coming up?"): answered by the memories that tell of an event still ahead
(their stored event span), not by the turns whose words come closest."""


def asks_plans(query: str, time_words: str = "") -> bool:
    """Whether ``query`` asks what the user plans or has ahead (``_ASKS_PLANS``) and names nothing else
    ("我下周有什么安排？": every plan then, soonest first). "我下周要去哪里出差" names 出差 and "What am I doing wrong?"
    names "wrong": those rank as any question does (the window they name still counts)."""
    found = _ASKS_PLANS.search(query)
    if found is None or _of_assistant(query):
        return False
    return not names_topic(query, found.group(), time_words)


def names_topic(query: str, asked: str, time_words: str = "") -> bool:
    """Whether ``query`` names something besides ``asked`` (the words that ask), its time words (``time_words``,
    the expression a parsed time window came from, and the vague ones: 最近, 上次, lately) and pronouns:
    "我下周要去哪里出差" names 出差, "我下周有什么安排" names nothing."""
    rest = query.replace(asked, " ", 1)
    if time_words:
        rest = rest.replace(time_words, " ")
    return bool(_NOT_A_TOPIC.sub("", rest).strip())


_MY_PARTNER_ZH = "老婆|老公|妻子|丈夫|爱人|男朋友|女朋友|对象"
_MY_FAMILY_ZH = "女儿|儿子|孩子|宝宝|妈妈|爸爸|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆"
_MY_PET_ZH = f"{BREEDS_ZH}|{PETS_ZH}"
_MY_PARTNER_EN = "wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?"
_MY_FAMILY_EN = "son|daughter|kids?|baby|mom|mum|mother|dad|father|brother|sister|grandma|grandpa"
_MY_PET_EN = f"{BREEDS_EN}|{PETS_EN}"
_NAMED_ZH = r"(?:叫(?:什么|啥)(?:名字)?|是谁|的名字)"
"""Asks a name: 叫什么, 是谁, 的名字 (not 是什么时候, 是什么星座: those ask something else of them)."""
_NAMED_EN = r"(?:'s names?|' names|'s called| called| named)(?:\W*$|\?)"
"""Asks a name: "my dog's name", "what is my dog called?" (not "my mom called me")."""
_END = r"(?:了|来着)?[吗呢啊呀]?\W*$"
_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((slot, re.compile(pattern, re.I)) for slot, pattern in (
    ("name", rf"我叫(?:什么|啥)(?:名字)?{_END}|我的名字(?:是什么|叫什么|是啥)?{_END}|我(?:的)?姓(?:什么|啥)"
             r"|\bwhat(?:'s| is) my name\b|\bwhat am i called\b|\bdo you (?:know|remember) my name\b"),
    ("age", rf"我(?:今年)?(?:多大|几岁|多少岁){_END}|我的年龄|\bhow old am i\b|\bmy age\b"),
    ("birthday", r"我(?:的)?生日(?:是|在)?(?:哪天|哪一天|什么时候|啥时候|几月(?:几[号日])?|几号|哪个月)"
                 r"|我(?:的)?生日是?(?:吗|呢)?\W*$|我(?:是)?(?:哪天|什么时候|啥时候|几月几号)(?:出生|生的)"
                 r"|\b(?:(?:when|what)(?:'s| is)|what (?:day|date) is|(?:know|remember) (?:when )?) ?my birthday\b"
                 r"(?!'s|\s+(?:party|parties|plans?|wish(?:es)?|dinner|cake|gift|present|trip|list|celebration))"
                 r"|\bwhen was i born\b"),
    ("home_city", rf"我(?:现在)?住(?:在)?(?:哪(?:里|儿)?|什么地方|哪个城市){_END}|\bwhere do i live\b"
                  r"|\b(?:which|what) city do i live in\b"),
    ("hometown", r"我(?:的)?老家|我是哪(?:里|儿)?人|我来自哪|\bwhere am i from\b|\bmy hometown\b"
                 r"|\bwhere did i grow up\b"),
    ("job", r"我(?:是)?(?:做|干)(?:什么|啥)(?:工作)?的|我的(?:工作|职业)是|我(?:从事|做)(?:什么|啥)(?:工作|职业|行业)"
            r"|\bwhat(?:'s| is) my (?:job|occupation|profession)\b|\bwhat do i do for (?:a living|work)\b"
            r"|\bwhat (?:kind of )?work do i do\b"),
    ("workplace", r"我在哪(?:里|儿|个公司|家公司|个城市)?(?:工作|上班)|\bwhere do i work\b"),
    ("work_city", r"我在哪(?:里|儿|个城市)?(?:工作|上班)|\bwhere do i work\b|\bwhat city do i work in\b"),
    ("school", r"我在哪(?:里|儿|个学校|所学校|个城市)?(?:上学|读书|念书|上大学|读大学|读研|读博|上高中|读高中)"
               r"|我(?:是)?(?:哪个|哪所|什么)(?:学校|大学|高中)的|我的学校|我的大学(?:是|叫)?(?:哪(?:个|所)|什么|啥)?"
               r"(?:了|来着)?[吗呢啊呀]?\W*$"
               r"|\bwhere do i (?:study|go to (?:school|college|university))\b|\bwhat (?:school|college|university)"
               r" do i (?:go to|attend|study at)\b|\bwhere (?:do|did) i go to (?:school|college)\b"),
    ("diet", r"我吃素吗|我是素食|我(?:吃东西)?(?:有)?(?:什么|啥|哪些|没有什么|没有啥)?忌口|我的忌口"
             r"|我(?:有什么|有啥)?不(?:能)?吃(?:什么|啥)|我有(?:什么|啥)不(?:能)?吃的"
             r"|\bam i (?:a )?(?:vegetarian|vegan)\b|\bmy diet\b|\bmy dietary (?:restrictions?|requirements?|needs)\b"
             r"|\bdo i have (?:any )?dietary (?:restrictions?|requirements?|needs)\b"
             r"|\bwhat (?:foods? )?(?:don't|can't|do not) i eat\b"
             r"|\b(?:any|which|what) (?:foods?|meals?|dishes) (?:that )?i"
             r" (?:don'?t|can'?t|do not|cannot|shouldn'?t) eat\b"
             r"|\bwhat foods? do i avoid\b"),
    ("allergy:", r"我对(?:什么|啥|哪些)(?:东西|食物)?过敏|我有(?:什么)?过敏|\b(?:what|anything) am i allergic to\b"
                 # what one cannot eat: an allergy as much as a diet (不吃 alone is the diet's)
                 r"|我(?:有什么|有啥)?不能吃(?:什么|啥)|我有(?:什么|啥)不能吃的"
                 r"|\bwhat (?:foods? )?(?:can't|cannot|can not) i eat\b"
                 r"|\b(?:any|which|what) (?:foods?|meals?|dishes) (?:that )?i (?:can'?t|cannot) eat\b"
                 r"|\bam i allergic\b|\bmy allergies\b|\bdo i have (?:any )?allergies\b"),
    ("learning:", r"我(?:最近|现在)?(?:正)?在学(?:什么|啥)|\bwhat am i (?:learning|studying)\b"),
    ("major", r"我(?:是)?(?:学|读)(?:的)?(?:什么|啥|哪个)专业(?!的?(?:好|比较|合适))"
              r"|我的专业(?:是什么|是啥)?(?:了|来着)?[吗呢啊呀]?\W*$"
              r"|\bwhat(?:'s| is) my major\b|\bwhat am i majoring in\b|\bwhat do i major in\b"),
    ("partner", rf"我(?:的)?(?:{_MY_PARTNER_ZH}){_NAMED_ZH}|\bmy (?:{_MY_PARTNER_EN}){_NAMED_EN}"
                rf"|\bwho is my (?:{_MY_PARTNER_EN})\b"),
))
"""A question about one thing the user told of themselves, and the slot that holds it (``memory.extraction``'s
keys; ``x:`` for every ``x:<what>``)."""
_FAMILY_SLOT = re.compile(rf"我(?:的)?(?P<zh>{_MY_FAMILY_ZH}){_NAMED_ZH}|\bmy (?P<en>{_MY_FAMILY_EN}){_NAMED_EN}"
                          rf"|\bwho is my (?P<who>{_MY_FAMILY_EN})\b", re.I)
_KIN_BIRTHDAY_SLOT = re.compile(
    rf"我(?:的|家)?(?P<zh>{_MY_PARTNER_ZH}|{_MY_FAMILY_ZH}|老妈|老爸|妈|爸|哥|姐|弟|妹)的?生日(?:是|在)?"
    r"(?:哪天|哪一天|什么时候|啥时候|哪个月|几月(?:几[号日])?|几号|(?:你)?(?:还)?记得吗|是不是|(?:吗|呢)?\W*$)"
    rf"|\b(?:when(?:'s| is| was)|what(?:'s| is| was)(?: the date of)?|what date is|when) my "
    rf"(?P<en>{_MY_PARTNER_EN}|{_MY_FAMILY_EN})'s birthday\b"
    r"(?!\s+(?:gifts?|presents?|part(?:y|ies)|dinners?|lunch(?:es)?|brunch|cakes?|cards?|celebrations?|trips?"
    r"|plans?|bash|surprise|wish(?:es)?|ideas?)\b)", re.I)
"""A family member's birthday asked for (我妈的生日是哪天, "When is my mom's birthday?"): ``birthday:<relation>`` by
any of its names."""
_KIN_WORK_SLOT = re.compile(
    rf"我(?:的|家)?(?P<zh>{_MY_PARTNER_ZH}|{_MY_FAMILY_ZH}|媳妇|太太|老伴|闺女|老妈|老爸|妈|爸|哥|姐|弟|妹)"
    r"(?:是|现在|目前)?(?:在哪(?:里|儿|个公司|家公司|个城市)?(?:工作|上班)|(?:做|干)(?:什么|啥)(?:工作)?的|的(?:工作|职业)是"
    r"(?:什么|啥))"
    rf"|\b(?:where does|what does|what(?:'s| is)) my (?P<en>{_MY_PARTNER_EN}|{_MY_FAMILY_EN})(?:'s (?:job|work)\b"
    r"| work\b| do(?: for (?:a living|work))?(?:,?\s*(?:now|again|exactly|these days|nowadays|for a living"
    r"|for work))*\s*\?*\s*$)", re.I)
"""Where or as what a family member works (我老公在哪上班, "What does my wife do?"): ``work:`` and ``job:<relation>``
by any of its names."""
_PET_SLOT = re.compile(rf"我(?:的|家的?)?(?:(?!的)[\u4e00-\u9fff]){{0,2}}?(?P<zh>{_MY_PET_ZH}){_NAMED_ZH}"
                       rf"|\bmy (?:[a-z]+ )?(?P<en>{_MY_PET_EN}){_NAMED_EN}", re.I)
"""A family member's or a pet's name asked for: the slot is ``family:<relation>`` / ``pet:…<animal>`` by any of its
names (``kin.names_of``: 女儿 is also daughter), not any family member or pet ("我的狗叫什么" is not the cat)."""


_SHORT_KIN = {"哥": "哥哥", "姐": "姐姐", "弟": "弟弟", "妹": "妹妹"}
"""Short names of kin that are no name of their own in ``kin`` (我哥 is 哥哥)."""


def _relations(relation: str) -> tuple[str, ...]:
    """Every name a fact about the family member ``relation`` may be kept under: its names in ``kin``, and for a
    child, a son's and a daughter's too (我孩子 is 儿子 or 女儿)."""
    from mneme.memory.kin import names_of

    if relation in ("kid", "kids", "孩子", "宝宝", "baby"):
        return ("孩子", "宝宝", "kid", "kids", "baby", *names_of("son"), *names_of("daughter"))
    return names_of(relation)


def asks_slot(query: str) -> tuple[str, ...]:
    """The slots (``extraction`` keys; ``x:`` a prefix; ``pet:*<animal>`` a pet key ending so) holding what ``query``
    asks of the user ("我叫什么名字？", "What's my name?" → name; "我对什么过敏" → allergy:; "我女儿叫什么名字" →
    family:女儿, family:daughter, family:闺女); empty for other questions. A slot's fact answers in any language:
    "What's my name?" finds "用户的名字是王小明", not "My wife's name is Anna" for the shared word."""
    from mneme.memory.kin import names_of  # here: kin loads jieba, which ranking (importing this module) needs not

    if not is_question(query):  # a statement ("我的工作很累") asks for no slot
        return ()
    slots = [slot for slot, pattern in _SLOTS if pattern.search(query)]
    family = _FAMILY_SLOT.search(query)
    if family:
        relation = (family["zh"] or family["en"] or family["who"]).lower()
        slots += [f"family:{n}" for n in _relations(relation)]
    kin_birthday = _KIN_BIRTHDAY_SLOT.search(query)
    if kin_birthday:
        relation = (kin_birthday["zh"] or kin_birthday["en"]).lower()
        slots += [f"birthday:{n}" for n in _relations(_SHORT_KIN.get(relation, relation))]
    kin_work = _KIN_WORK_SLOT.search(query)
    if kin_work:
        relation = (kin_work["zh"] or kin_work["en"]).lower()
        names = _relations(_SHORT_KIN.get(relation, relation))
        slots += [f"{what}:{n}" for what in ("work", "job") for n in names]
    pet = _PET_SLOT.search(query)
    if pet:
        animal = (pet["zh"] or pet["en"]).lower()
        slots += ["pet:"] if animal in ("宠物", "pet") else [f"pet:*{n}" for n in names_of(animal)]
    return tuple(dict.fromkeys(slots))


_AVOIDS_FOOD = re.compile(
    r"^(?:用户(?:从来|平时|一直)?不(?:能)?吃|The user (?:doesn't|does not|can't|cannot|never) eats?\b)", re.I)
"""A preference that says what the user does not eat (``extraction``: 我不吃辣 → 用户不吃辣): part of their diet."""


def fills(record: MemoryRecord, slots: tuple[str, ...]) -> bool:
    """Whether ``record`` is a fact filling one of ``slots`` (``asks_slot``); for ``diet``, also a food the user
    said they do not eat ("我有什么忌口吗？" of 我不吃辣)."""
    key = record.key
    if not slots or not key:
        return False
    if record.kind == Kind.PREFERENCE:
        return "diet" in slots and _AVOIDS_FOOD.search(record.text) is not None
    if record.kind != Kind.FACT:
        return False
    key = key.lower()
    for slot in slots:
        if slot.startswith("pet:*"):  # the pet asked after by its kind or breed: 柯基 is a 狗, a dog
            if key.startswith("pet:") and same_animal(key[4:], slot[5:]):
                return True
        elif key == slot or (slot.endswith(":") and key.startswith(slot)):
            return True
    return False


_SUITS_MOOD = re.compile(
    r"(?:适合|符合|配合|衬托?|应和)(?:我|我的|我现在的?|我此刻的?)?(?:心情|情绪|心态)"
    r"|(?i:\b(?:fits?|suits?|match(?:es)?|for)\s+my\s+(?:current\s+)?(?:mood|feelings?)\b)")
"""Something chosen for the user's mood ("What music fits my mood?", 推荐适合我心情的歌): a request that names the
mood, not a question about it."""


def asks_feeling(query: str) -> bool:
    """Whether ``query`` asks how the user felt or what troubled them (also when it asks when as well: "我什么时候心情
    不好？"); not when it only asks for something to suit a mood."""
    return _ASKS_FEELING.search(_SUITS_MOOD.sub(" ", query)) is not None


def asks_when(query: str) -> str | None:
    """What ``query`` asks for: ``"how long"`` (a duration), ``"when"`` (a time), or None."""
    if _ASKS_WHEN.search(query) is None:
        return None
    return "how long" if _ASKS_HOW_LONG.search(query) else "when"


def confides(record: MemoryRecord) -> bool:
    """Whether ``record`` is the summary of a worry the user confided: what a question about feelings asks for."""
    return record.kind == Kind.SUMMARY


def tells_when(record: MemoryRecord, asked: str = "when") -> bool:
    """Whether ``record`` tells when something happened (a stored event span) or, for ``asked == "how long"``,
    also for how long."""
    if record.metadata.get(NAMES_TIME) is True or span_of(record.metadata) is not None:
        return True
    return asked == "how long" and _names_duration(record.text)
