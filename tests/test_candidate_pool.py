"""A user's top k is the ranking the evaluation measures: the candidate pool does not shrink with k.

Dense scores are min-max normalised over the pool, so a pool that followed k (30 candidates for k=6, 100 for
the evaluation's 25) ranked the same memories differently for a user than for ``mneme eval``.
"""

from __future__ import annotations

import random

import pytest

from mneme.clock import FixedClock
from mneme.memory.inprocess import InProcessStore
from mneme.memory.keyword import KeywordIndex
from mneme.memory.ranking import CANDIDATE_POOL, RecallOptions
from mneme.memory.service import MemoryService
from mneme.testing import FakeEmbeddings

NOW = 1_750_000_000.0
DAY = 86_400.0

WORDS = {
    "en": ["tea", "coffee", "sister", "Berlin", "garden", "piano", "bus", "work", "report", "cat", "dinner",
           "friends", "weekend", "rain", "book", "train", "doctor", "school", "movie", "bike"],
    "zh": ["茶", "咖啡", "妹妹", "柏林", "花园", "钢琴", "公交", "工作", "报告", "猫", "晚饭",
           "朋友", "周末", "下雨", "书", "火车", "医生", "学校", "电影", "自行车"],
}
QUERIES = {
    "en": ["What tea does my sister like?", "When did I take the train to Berlin?", "What did the doctor say?",
           "Which movie did we see with friends?", "How is the garden doing after the rain?"],
    "zh": ["我妹妹喜欢什么茶？", "我什么时候坐火车去柏林的？", "医生说了什么？", "我们和朋友看了什么电影？",
           "下雨以后花园怎么样了？"],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_users_top_six_is_the_head_of_the_evaluations_top_25(lang: str) -> None:
    rng = random.Random(7)
    words = WORDS[lang]
    sep = " " if lang == "en" else "，"
    service = MemoryService(InProcessStore(FakeEmbeddings()), keyword=KeywordIndex(None), clock=FixedClock(NOW))
    for i in range(3 * CANDIDATE_POOL):  # more candidates than the pool, sharing words with the queries
        text = sep.join(rng.sample(words, 4))
        service.remember_turn("u", user_text=text, assistant_text="ok" if lang == "en" else "好的",
                              thread_id=f"t{i % 40}", now=NOW - (i + 1) * DAY / 3)
    for query in QUERIES[lang]:
        top6 = service.recall("u", query, options=RecallOptions(k=6, reinforce=False))
        top25 = service.recall("u", query, options=RecallOptions(k=25, reinforce=False, max_context_tokens=100_000))
        assert len(top6) == 6
        assert [it.id for it in top6] == [it.id for it in top25[:6]], query
