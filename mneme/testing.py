"""Test doubles for people who write graph unit tests with a mocked LLM (and for Mneme's own tests).

- ``FakeChatModel``: a chat model that answers from a script or a function, records every prompt it saw,
  streams, and (unlike langchain-core's fakes) supports ``with_structured_output`` and ``bind_tools``.
- ``FakeEmbeddings``: deterministic, readable embeddings (hashed words and Chinese characters), so a
  failing similarity test explains itself; no model is loaded.
- ``FakeOpenAIServer`` (from ``mneme.fake_openai``): a real OpenAI-compatible HTTP server on a loopback
  port that answers from a script and fails on demand (``Status(500)``, ``Hang(s)``, ``Drop()``,
  ``Garbage()``, ``Cut(after=N)``), counting attempts: tests the real ``ChatOpenAI`` path, timeouts and retries.

Example::

    from mneme.testing import FakeChatModel, FakeEmbeddings
    from mneme import build_graph
    from mneme.memory.inprocess import InProcessStore

    model = FakeChatModel(responses=["你住在北京。"])
    graph = build_graph(model=model, store=InProcessStore(FakeEmbeddings()))
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from mneme.fake_openai import Cut, Drop, FakeOpenAIServer, Garbage, Hang, Status, ToolCall
from mneme.memory.base import EmbedderInfo

__all__ = ["Cut", "Drop", "FakeChatModel", "FakeEmbeddings", "FakeOpenAIServer", "Garbage", "Hang", "Status",
           "ToolCall"]

Response = str | AIMessage | dict[str, Any] | BaseModel | Exception
Handler = Callable[[list[BaseMessage]], Response]


class FakeChatModel(BaseChatModel):
    """A scripted chat model.

    Answers come from ``responses`` in order (then the last one repeats), or from ``handler(messages)``
    when given. A response may be text, an ``AIMessage`` (e.g. with tool calls), a dict or pydantic
    object (for structured output), or an exception to raise. ``calls`` records every prompt.
    ``with_structured_output(schema)`` parses the next response into ``schema`` and raises
    ``OutputParserException`` on malformed output, as a real model's parser would.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: list[Any] = Field(default_factory=list)
    handler: Handler | None = None
    default: str = "好的。"
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    structured_responses: list[Any] | None = None
    """When set, ``with_structured_output`` answers from this script instead (the last one repeats) and
    records its prompts in ``structured_calls``, so ``responses`` and ``calls`` stay the chat's own: handy
    when one model both answers and extracts memories (``{}`` extracts nothing)."""
    structured_calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)
    _index: int = PrivateAttr(default=0)
    _structured_index: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "mneme-fake-chat"

    def _next(self, messages: Sequence[BaseMessage]) -> Response:
        self.calls.append(list(messages))
        if self.handler is not None:
            out = self.handler(list(messages))
        elif self.responses:
            out = self.responses[min(self._index, len(self.responses) - 1)]
            self._index += 1
        else:
            out = self.default
        if isinstance(out, Exception):
            raise out
        return out

    def _next_structured(self, messages: Sequence[BaseMessage]) -> Response:
        self.structured_calls.append(list(messages))
        script = self.structured_responses or [{}]
        out = script[min(self._structured_index, len(script) - 1)]
        self._structured_index += 1
        if isinstance(out, Exception):
            raise out
        return out

    @staticmethod
    def _as_message(out: Response) -> AIMessage:
        if isinstance(out, AIMessage):
            return out
        if isinstance(out, BaseModel):
            return AIMessage(content=out.model_dump_json())
        if isinstance(out, dict):
            return AIMessage(content=json.dumps(out, ensure_ascii=False))
        return AIMessage(content=str(out))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._as_message(self._next(messages)))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._as_message(self._next(messages))
        text = message.content if isinstance(message.content, str) else json.dumps(message.content)
        pieces = re.findall(r"\S+\s*|\s+", text) or [""]
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            chunk = AIMessageChunk(content=piece, tool_call_chunks=[] if not last else [
                {"name": tc["name"], "args": json.dumps(tc["args"]), "id": tc.get("id"), "index": n}
                for n, tc in enumerate(message.tool_calls)
            ])
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChatModel:  # type: ignore[override]
        """Record the tools and return this model; scripted ``AIMessage`` responses carry the tool calls."""
        self.bound_tools = list(tools)
        return self

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """Return a runnable that parses the next response into ``schema`` (a pydantic class or dict schema)."""

        def invoke(value: Any) -> Any:
            messages = _to_messages(value)
            out = self._next(messages) if self.structured_responses is None else self._next_structured(messages)
            raw = self._as_message(out)
            try:
                parsed = _parse(out, schema)
            except OutputParserException as exc:
                if include_raw:
                    return {"raw": raw, "parsed": None, "parsing_error": exc}
                raise
            return {"raw": raw, "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(invoke, name="FakeStructuredOutput")


def _to_messages(value: Any) -> list[BaseMessage]:
    from langchain_core.language_models.base import LanguageModelInput  # noqa: F401
    from langchain_core.prompt_values import PromptValue

    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, str):
        from langchain_core.messages import HumanMessage

        return [HumanMessage(content=value)]
    from langchain_core.messages import convert_to_messages

    return list(convert_to_messages(value))


def _parse(out: Response, schema: Any) -> Any:
    if isinstance(out, BaseModel):
        data: Any = out.model_dump()
    elif isinstance(out, dict):
        data = out
    else:
        text = out.content if isinstance(out, AIMessage) else str(out)
        try:
            data = json.loads(text if isinstance(text, str) else json.dumps(text))
        except json.JSONDecodeError as exc:
            raise OutputParserException(f"model output is not JSON: {str(text)[:200]!r}") from exc
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            raise OutputParserException(f"model output does not fit {schema.__name__}: {exc}") from exc
    if not isinstance(data, dict):
        raise OutputParserException(f"model output is not an object: {data!r}")
    return data


_TOKEN_RE = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]", re.IGNORECASE)


FUNCTION_WORDS = frozenset("我你他她它的了是在吗呢吧啊么什哪谁这那个和也都就有一不很还把被给对说到会要想") | frozenset(
    re.findall(r"\w+", "i me my mine you your he him his she her it its we our they their the a an is are was were be "
               "been am do does did what where who when which how to of in on at for and or but with this that have "
               "has had"))
"""Words that carry little meaning of their own (pronouns, particles, question words): ``FakeEmbeddings`` weighs
them ``FUNCTION_WEIGHT``, as a trained embedder does, so "我的猫叫什么？" is close to "我养了一只叫豆豆的猫" for the
cat, not to every first-person sentence for 我/的/什么."""
FUNCTION_WEIGHT = 0.25


class FakeEmbeddings:
    """Deterministic bag-of-words embeddings: each word (or Chinese character) hashes to a dimension.

    Texts that share words are similar, texts that share none are orthogonal; readable in a failing test.
    Function words (``FUNCTION_WORDS``) count a quarter, content words fully.
    """

    def __init__(self, dimension: int = 256, *, name: str = "fake-hash") -> None:
        self._info = EmbedderInfo(name=name, dimension=dimension)

    @property
    def info(self) -> EmbedderInfo:
        """Model name and dimension."""
        return self._info

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text as a normalised count vector of hashed tokens."""
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self._info.dimension
        for token in _TOKEN_RE.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little")
            vec[h % self._info.dimension] += FUNCTION_WEIGHT if token in FUNCTION_WORDS else 1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]
