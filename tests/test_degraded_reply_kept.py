"""With the chat model down, the labelled reply to a statement says what the turn is kept as, as memory-only mode
does (it said "I have no memories about this yet" while the fact was being stored)."""

from __future__ import annotations

from mneme.testing import FakeOpenAIServer, Status
from tests.test_model_faults import LINE_EN, LINE_ZH, agent, turn


def test_a_statement_answered_from_memory_says_what_is_kept(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail(Status(500))
    graph, _ = agent(fake_openai)
    out = turn(graph, "I like oolong tea")
    assert out["answer"].startswith(LINE_EN) and "oolong tea" in out["answer"]
    assert "no memories" not in out["answer"]
    zh = turn(graph, "我住在杭州", thread="t2")
    assert zh["answer"].startswith(LINE_ZH) and "杭州" in zh["answer"]
