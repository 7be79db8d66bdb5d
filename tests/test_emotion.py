"""The lexicon emotion detector: Chinese and English cues, negation, intensifiers, thresholds."""

from __future__ import annotations

import pytest

from mneme.memory.emotion import detect_emotion


@pytest.mark.parametrize(
    "text",
    [
        "最近工作压力有些大，有时候会感到焦虑和心烦",
        "我好难过",
        "我失恋了",
        "我被裁了，真的想哭",
        "我很不开心",
        "I'm sad",
        "I'm so stressed and I can't sleep",
        "not happy today",
        "I feel lonely and anxious",
        "My grandmother passed away last week",
        # as people say it in chat: slang and self-judgement
        "心态炸了", "最近有点emo", "我真的受够了", "我被分手了，心好痛", "我觉得自己特别失败", "我好没用",
        "I am gutted", "feeling really down lately", "I can't take it anymore", "I feel worthless",
        "I'm so fed up with my boss", "I feel like a failure", "life sucks right now",
        # tired, and what someone did to the user
        "我今天好累，被老板骂了一顿", "我被领导批评了", "被同事排挤了", "我被男朋友甩了", "方案被老板否了",
        "今天又挨骂了",
        "身心俱疲", "I'm so tired", "my boss yelled at me", "I got told off", "she dumped me", "I'm being bullied",
        "I feel so alone", "my boss scolded me", "I got told off at work", "被教练训了一顿",
        # a feeling that could not be held back is there, not negated; crying alone; a death with a bad day
        "我忍不住哭了", "我一直止不住地哭", "我不停地哭", "I can't stop crying", "I couldn't stop worrying about it",
        "I had a terrible day, a patient died during my shift and I couldn't stop crying in the car.",
        "My grandma died last night", "My dog died.", "my best friend died",
        # a word that holds a negator's character without negating (特别, 无比, 莫名); holding on no longer
        "我特别难过", "最近上夜班特别累", "无比难过", "莫名焦虑", "别提多难受了", "我快撑不住了", "我真的扛不住",
        "护士长老是挑我毛病，我好烦", "吃了药也撑不住了", "老板天天打电话我真的扛不住了", "强颜欢笑真的扛不住了",
        "我真的撑不住了哈哈哈", "My boss picks on me", "Kids at school picked on me today",
        "Why does everyone pick on me", "和他告别感觉特别难过", "跟爷爷道别觉得特别难过", "我特别特别难过",
        # worry as parents say it
        "我有点着急，不知道该怎么跟他沟通", "孩子成绩下滑得厉害，急死我了", "我好发愁",
        "我们吵了一架，我现在心里很乱", "我心里乱七八糟的",
    ],
)
def test_negative_texts(text: str) -> None:
    emotion = detect_emotion(text)
    assert emotion.label == "negative"
    assert 0 < emotion.score <= 1
    assert emotion.cues


@pytest.mark.parametrize(
    "text",
    [
        "我喜欢爵士乐",
        "我不难过",
        "没有焦虑",
        "压力不大",
        "麻烦你帮我查一下",
        "我讨厌香菜",  # a dislike, not distress
        "I hate cilantro",
        "I'm not sad",
        "I don't feel anxious at all",
        "明天去北京",
        "",
        # the same words in another sense
        "I like emo music", "the demo went well", "这个方法没用", "我去参加了一个丧事", "I am not down with that",
        "I didn't feel down at all", "the app is useless", "a crushed ice drink", "downtown was busy",
        "I was disappointed by the movie",  # mild: one mild word is not distress
        "今天有点累", "I'm tired", "经验的积累很重要", "累计消费满100元", "被表扬了", "我被录取了",
        "爬山有点累但是很开心", "硕果累累", "我被选进校队参加训练", "他被凶手杀害的新闻", "I scolded my dog",
        "I told off the guy who cut in line", "I bullied my little brother",
        "the dog was tired after the walk",
        "I'm not crying", "我不想哭", "哭笑不得", "他总是哭穷", "笑哭了", "哭死我了，太好笑了", "孩子哭闹",
        "The car died on the highway and I was tired", "the battery died and I'm tired", "my battery died",
        "My phone died", "my car died and I'm tired",
        "这个架子撑不住那么重的东西", "我并不特别难过", "别难过", "我不是特别难过", "没有特别难过",
        "我不会特别难过的", "我不觉得特别难过", "我也没觉得特别累", "不至于特别难过", "我并不感到特别焦虑",
        "笑得我快撑不住了", "这顿饭我快撑不住了，吃太饱了", "扛不住了，太好吃了", "手机电量快撑不住了",
        "我眼皮快撑不住了，好困", "别着急", "我不着急", "我着急去上班", "乱七八糟的房间",
        "着急忙慌地跑去车站", "孩子们开心乱跳，好热闹", "小心乱花钱哦",
        "Pick on me, I can take it", "撑不住了，哈哈哈太搞笑",
    ],
)
def test_not_negative(text: str) -> None:
    assert detect_emotion(text).label != "negative"


@pytest.mark.parametrize("text", ["我今天好开心！", "I'm so happy, I got promoted", "太好了，面试通过了",
                                  "没下雨格外开心", "考试没挂格外开心"])  # the 没 negates no feeling
def test_positive_texts(text: str) -> None:
    assert detect_emotion(text).label == "positive"


def test_neutral_has_zero_score() -> None:
    emotion = detect_emotion("明天去北京")
    assert emotion.label == "neutral" and emotion.score == 0.0


def test_intensifier_raises_the_score() -> None:
    assert detect_emotion("I'm very sad").score > detect_emotion("I'm sad").score
    assert detect_emotion("我非常焦虑").score > detect_emotion("我焦虑").score


def test_more_cues_score_higher() -> None:
    assert detect_emotion("我很焦虑，也很难过，还失眠").score > detect_emotion("我很焦虑").score


def test_negated_positive_is_named_in_cues() -> None:
    assert detect_emotion("我不开心").cues == ["不开心"]
    assert detect_emotion("I am not happy").cues == ["not happy"]


def test_negation_does_not_cross_a_clause_break() -> None:
    assert detect_emotion("不，我很难过").label == "negative"
    assert detect_emotion("No, I'm really sad").label == "negative"


def test_mixed_tone_goes_to_the_stronger_side() -> None:
    assert detect_emotion("I'm very happy but a bit worried").label == "positive"
    assert detect_emotion("有点开心，但更多的是焦虑和难过").label == "negative"


def test_a_word_inside_a_title_is_not_a_feeling() -> None:
    assert detect_emotion("我在图书馆发现了一本小说，叫《百年孤独》").label == "neutral"
    assert detect_emotion("读完《百年孤独》我很孤独").cues == ["孤独"]


@pytest.mark.parametrize(
    "text",
    [
        "Dance is pretty much my go-to for stress relief.",
        "I've been running farther to de-stress, which has been great for my headspace.",
        "It's been my stress-buster since childhood!",
        "Meditation helps me with my anxiety",
        "My stress just melts away when I paint",
        "跑步是我最好的减压方式",
        "听音乐能缓解焦虑",
        "我终于走出了失恋的阴影",
    ],
)
def test_a_bad_feeling_named_as_what_something_relieves_is_not_distress(text: str) -> None:
    emotion = detect_emotion(text)
    assert emotion.label != "negative", emotion


@pytest.mark.parametrize(
    "text",
    ["I can't relieve my stress", "Nothing helps with my anxiety", "我没法缓解焦虑，每天都很难受",
     "我最近压力很大，想找个办法减压"],
)
def test_relief_that_fails_or_is_only_wanted_leaves_the_distress(text: str) -> None:
    assert detect_emotion(text).label == "negative"


NEG_WORDS = {"scared", "sad", "紧张", "害怕", "不安"}


@pytest.mark.parametrize(
    "text",
    [
        "I'm a mix of excited and scared to get into fashion",
        "I'm excited and scared about the move",
        "I have mixed feelings: happy to graduate, sad to leave my friends",
        "我又兴奋又紧张，明天第一天上班",
        "既期待又害怕",
        "要搬去新城市了，开心又有点不安",
    ],
)
def test_feelings_of_both_kinds_are_mixed_not_negative(text: str) -> None:
    emotion = detect_emotion(text)
    assert emotion.label == "mixed" and emotion.score > 0, emotion
    assert {"negative", "positive"} == {("negative" if c in NEG_WORDS else "positive") for c in emotion.cues}


@pytest.mark.parametrize("text", ["I'm excited but really scared", "有点期待，但我真的非常害怕",
                                  "我很兴奋，但更多的是焦虑和难过"])
def test_one_side_outweighing_the_other_by_an_intensifier_decides(text: str) -> None:
    assert detect_emotion(text).label == "negative"


@pytest.mark.parametrize(("message", "kept", "left"), [
    ("my boyfriend broke up with me last night by text, I keep crying and I can't focus at work",
     {"boyfriend", "crying"}, {"last", "keep", "night"}),
    ("I'm anxious, my thesis defence is next week and I have kept failing the first experiment",
     {"thesis", "defence"}, {"next", "kept", "first"}),
    ("My dog died last week and I keep crying at night, I can't focus at work anymore",
     {"dog", "focus"}, {"week", "anymore", "night"}),
    ("I failed my exam and my mom got mad at me", {"exam", "mom"}, {"got"}),
    ("My grandma died two weeks ago and I don\u2019t know how to cope", {"grandma", "cope"}, {"two", "ago", "don"}),
    ("My cat is sick and the vet bill is huge, I'm so worried", {"cat", "vet"}, {"the", "and"}),
])
def test_key_terms_are_content_words_not_time_or_aspect_words(message: str, kept: set[str], left: set[str]) -> None:
    from mneme.memory.gist import key_terms

    terms = set(key_terms(message, [], zh=False))
    assert kept <= terms and not (left & terms)
