"""LangServe's responses encoded without the second walk are the same bytes as LangServe's own encoding."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langserve import api_handler
from langserve.api_handler import APIHandler
from langserve.schema import BatchResponseMetadata, InvokeResponseMetadata

from mneme.http_turn import turn_runnable
from mneme.langserve_response import _ORIGINAL, encode_response, install


def _turn(answer: str, recalled_meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "answer": answer, "thread_id": "t1", "degraded": [],
        "recalled": [{"id": "m1", "text": "用户住在杭州", "score": 0.83, "source": "memory", "kind": "fact",
                      "signals": {"relevant": 1.0, "dense": 0.61}, "metadata": recalled_meta},
                     {"id": "m2", "text": "I keep bees on my roof", "score": 0.5, "source": "memory",
                      "kind": "episodic", "metadata": {}}],
        "memory_report": {"stored": [], "skipped": None, "redactions": {"phone": 1}, "model_calls": 0,
                          "embedding_calls": 1, "queued": ["j-1"]},
        "messages": [{"type": "ai", "content": answer, "id": "a1", "response_metadata": {"mneme_from_memory": True}}],
    }


def test_invoke_and_batch_responses_are_langserve_s_bytes() -> None:
    install()
    original = _ORIGINAL["encode"]
    assert api_handler._json_encode_response is encode_response and original is not encode_response
    handler = APIHandler(turn_runnable(lambda: None, limits={"max_chars": 10, "max_messages": 2}),  # type: ignore[arg-type, return-value]
                         path="/agent")
    run_id = uuid.uuid4()
    outputs = [_turn("[仅记忆模式] 记下了：用户住在杭州", {"title": "手册", "n": 3, "ok": True, "x": 1.5}),
               _turn('She said "hi" \\ \u2028 done 😀', {"user_id": "alice"})]
    for output in outputs:
        model = handler._InvokeResponse(output=output, callback_events=[],
                                        metadata=InvokeResponseMetadata(run_id=run_id, feedback_tokens=[]))
        ours, theirs = encode_response(model), original(model)
        assert ours.body == theirs.body and ours.status_code == theirs.status_code
        assert b"\\u" not in ours.body or b"\\u2028" in ours.body  # Chinese kept as UTF-8, like LangServe
    batch = handler._BatchResponse(
        output=outputs, callback_events=[],
        metadata=BatchResponseMetadata(run_ids=[run_id, run_id], responses=[
            InvokeResponseMetadata(run_id=run_id, feedback_tokens=[])] * 2))
    assert encode_response(batch).body == original(batch).body


def test_a_key_fastapi_drops_is_dropped_the_same_way() -> None:
    install()
    handler = APIHandler(turn_runnable(lambda: None, limits={"max_chars": 10, "max_messages": 2}),  # type: ignore[arg-type, return-value]
                         path="/agent")
    model = handler._InvokeResponse(output=_turn("ok", {"_sa_state": "x", "title": "t"}), callback_events=[],
                                    metadata=InvokeResponseMetadata(run_id=uuid.uuid4(), feedback_tokens=[]))
    body = encode_response(model).body
    assert body == _ORIGINAL["encode"](model).body and b"_sa_state" not in body and b'"title"' in body


def test_a_langserve_without_the_private_encoder_keeps_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from mneme import langserve_response

    monkeypatch.setattr(langserve_response, "_ORIGINAL", {})
    monkeypatch.delattr(api_handler, "_json_encode_response")
    langserve_response.install()  # another release: nothing to replace, nothing raised
    assert not hasattr(api_handler, "_json_encode_response") and langserve_response._ORIGINAL == {}
