"""How Mneme calls its chat model: a deadline per purpose, which failures are retried, when it counts as down.

- Every call has a purpose and a deadline (``ModelPolicy``): the answer gets ``MNEME_MODEL_TIMEOUT`` (the
  ``ChatOpenAI`` timeout ``load_chat_model`` sets), the query rewrite a quarter of it and the memory
  extraction half, because a late rewrite or extraction is worth less than the answer it delays.
- Retries are Mneme's, not the SDK's: ``load_chat_model`` builds ``ChatOpenAI`` with ``max_retries=0``, so
  each attempt here is one HTTP request and the ``model_calls`` a turn reports are requests really sent.
  The answer retries one transient failure (5xx, 429, a dropped connection, a garbled body); a timeout is
  not retried (it already cost the whole deadline); rewrite and extraction are not retried.
- After an attempt that ran the full answer timeout (the SDK's timeout or the answer's deadline) the model
  counts as down for ``cooldown`` seconds: calls fail at once without a request, so a hanging endpoint costs
  one deadline, not one per turn and per purpose. A rewrite or extraction deadline does not trip it (a
  cold local model may be slow, not down).
- A streamed answer that ends without a finish reason broke off midway (the connection closed cleanly after
  some words): ``BrokenOffAnswer``, a transient failure like a dropped connection, never an answer.
- An endpoint failure becomes ``ModelUnavailableError`` (with the attempts made); a reply that does not
  parse is raised as is (the extraction retries it once, naming the error). The nodes answer from memory
  and label the turn instead of raising either (``mneme.graph.degraded``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from mneme.deadlines import DeadlineExceeded, call_with_deadline
from mneme.errors import ModelUnavailableError

log = logging.getLogger(__name__)
Purpose = Literal["answer", "rewrite", "extraction"]
T = TypeVar("T")
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, kw_only=True)
class ModelPolicy:
    """Deadlines (seconds per attempt), retries and the cool-down after a timeout."""

    answer_timeout: float = DEFAULT_TIMEOUT
    rewrite_timeout: float = DEFAULT_TIMEOUT / 4
    extraction_timeout: float = DEFAULT_TIMEOUT / 2
    answer_retries: int = 1
    """Extra attempts of the answer after a transient failure (never after a timeout)."""
    retry_backoff: float = 0.5
    cooldown: float = 30.0
    """Seconds after a timeout during which calls fail at once (0: always try)."""

    @classmethod
    def from_timeout(cls, timeout: float, **overrides: Any) -> ModelPolicy:
        """The policy for one answer timeout: rewrite gets a quarter of it, extraction half."""
        return cls(**{"answer_timeout": timeout, "rewrite_timeout": timeout / 4,
                      "extraction_timeout": timeout / 2, **overrides})

    @classmethod
    def for_model(cls, model: BaseChatModel | None, **overrides: Any) -> ModelPolicy:
        """The policy matching a model's own request timeout (``ChatOpenAI(timeout=...)``), else the default."""
        timeout = getattr(model, "request_timeout", None)
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
            return cls.from_timeout(float(timeout), **overrides)
        return cls(**overrides)

    def timeout(self, purpose: Purpose) -> float:
        """The deadline of one attempt for ``purpose``."""
        return {"answer": self.answer_timeout, "rewrite": self.rewrite_timeout,
                "extraction": self.extraction_timeout}[purpose]


def is_timeout(exc: BaseException) -> bool:
    """True for a deadline or client timeout (the SDK's, httpx's, asyncio's)."""
    if isinstance(exc, TimeoutError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout"})


def is_transient(exc: BaseException) -> bool:
    """True for failures worth one more try: 5xx, 429, dropped or refused connections, garbled bodies."""
    if is_timeout(exc):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status >= 500 or status in (408, 409, 429)
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APIConnectionError", "TransportError", "JSONDecodeError", "APIResponseValidationError",
                         "ConnectionError"})


def is_unavailable(exc: BaseException) -> bool:
    """True when the endpoint failed (timeout, connection, any HTTP error status, a garbled body), as opposed
    to a reply that arrived but does not parse (which a retry with the error named may fix)."""
    if is_timeout(exc) or is_transient(exc) or isinstance(getattr(exc, "status_code", None), int):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APIError", "OpenAIError", "HTTPError"})


def describe(exc: BaseException) -> str:
    """One short line saying what went wrong (for logs and the CLI's stderr)."""
    if isinstance(exc, DeadlineExceeded):
        return str(exc)
    status = getattr(exc, "status_code", None)
    kind = "timed out" if is_timeout(exc) else f"HTTP {status}" if isinstance(status, int) else type(exc).__name__
    text = " ".join(str(exc).split())[:160]
    return f"{kind}: {text}" if text and kind != text else kind


class BrokenOffAnswer(ConnectionError):
    """The model's streamed answer stopped before the model finished it (no finish reason arrived)."""


def check_finished(message: BaseMessage) -> BaseMessage:
    """``message``, or ``BrokenOffAnswer`` when an OpenAI-style answer carries no finish reason.

    ``ChatOpenAI`` sets ``finish_reason`` on every complete answer, streamed or not; a stream cut off after
    some words (the connection closed without an error) yields a message without it. Other providers'
    messages are taken as they are.
    """
    meta = getattr(message, "response_metadata", None) or {}
    if meta.get("model_provider") == "openai" and not meta.get("finish_reason"):
        words = len(str(message.content).split())
        raise BrokenOffAnswer(f"the model's answer broke off after {words} word(s) (no finish reason)")
    return message


class ModelCaller:
    """One chat model behind the policy: deadlines, retries, the cool-down, attempts counted.

    Shared by the graph's nodes (thread-safe); ``bounded(purpose)`` gives the memory writer a chat model
    that goes through the same rules.
    """

    def __init__(self, model: BaseChatModel, policy: ModelPolicy | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.model = model
        self.policy = policy or ModelPolicy.for_model(model)
        self._clock = clock
        self._down_until = 0.0
        self._lock = threading.Lock()

    # -- state -------------------------------------------------------------------------------------
    def down(self) -> bool:
        """True while cooling down after a timeout: calls fail without a request."""
        with self._lock:
            return self._clock() < self._down_until

    def _check(self) -> None:
        if self.down():
            raise ModelUnavailableError("the chat model timed out recently; not asked again yet", attempts=0)

    def _tripped(self, exc: BaseException, elapsed: float) -> None:
        if is_timeout(exc) and self.policy.cooldown > 0 and elapsed >= self.policy.answer_timeout * 0.95:
            with self._lock:
                self._down_until = self._clock() + self.policy.cooldown

    def _retries(self, purpose: Purpose) -> int:
        return self.policy.answer_retries if purpose == "answer" else 0

    def _give_up(self, purpose: Purpose, exc: BaseException, attempts: int,
                 started: float) -> ModelUnavailableError:
        self._tripped(exc, time.monotonic() - started)
        log.warning("chat model unavailable for the %s after %d attempt(s): %s", purpose, attempts, describe(exc))
        return ModelUnavailableError(f"chat model unavailable ({describe(exc)})", attempts=attempts)

    # -- calls -------------------------------------------------------------------------------------
    def run(self, purpose: Purpose, fn: Callable[[], T]) -> tuple[T, int]:
        """Call ``fn`` (one model request) under the policy; returns its result and the attempts made."""
        self._check()
        attempts = 0
        while True:
            attempts += 1
            started = time.monotonic()
            try:
                return call_with_deadline(fn, self.policy.timeout(purpose), what=f"the model's {purpose}"), attempts
            except Exception as exc:
                if not is_unavailable(exc):
                    raise  # a reply that does not parse: the caller decides
                if attempts > self._retries(purpose) or not is_transient(exc):
                    raise self._give_up(purpose, exc, attempts, started) from exc
                time.sleep(self.policy.retry_backoff)

    async def arun(self, purpose: Purpose, fn: Callable[[], Awaitable[T]]) -> tuple[T, int]:
        """Async twin of ``run`` (the deadline cancels the request)."""
        self._check()
        attempts = 0
        while True:
            attempts += 1
            started = time.monotonic()
            try:
                return await asyncio.wait_for(fn(), self.policy.timeout(purpose)), attempts
            except TimeoutError as exc:  # asyncio's deadline (and the SDK's timeouts, which subclass it)
                failure: Exception = exc if is_timeout(exc) and str(exc) else DeadlineExceeded(
                    f"the model's {purpose}: no answer within {self.policy.timeout(purpose):g} s")
                raise self._give_up(purpose, failure, attempts, started) from exc
            except Exception as exc:
                if not is_unavailable(exc):
                    raise
                if attempts > self._retries(purpose) or not is_transient(exc):
                    raise self._give_up(purpose, exc, attempts, started) from exc
                await asyncio.sleep(self.policy.retry_backoff)

    def invoke(self, purpose: Purpose, prompt: list[BaseMessage], config: RunnableConfig | None = None,
               *, model: Runnable[Any, Any] | None = None) -> tuple[BaseMessage, int]:
        """``model.invoke(prompt, config)`` under the policy (an answer that broke off is a failed attempt)."""
        runnable = model or self.model
        return self.run(purpose, lambda: check_finished(runnable.invoke(prompt, config)))

    async def ainvoke(self, purpose: Purpose, prompt: list[BaseMessage], config: RunnableConfig | None = None,
                      *, model: Runnable[Any, Any] | None = None) -> tuple[BaseMessage, int]:
        """Async twin of ``invoke``."""
        runnable = model or self.model

        async def call() -> BaseMessage:
            return check_finished(await runnable.ainvoke(prompt, config))

        return await self.arun(purpose, call)

    def bounded(self, purpose: Purpose = "extraction") -> BoundedChatModel:
        """A chat model whose calls (and ``with_structured_output`` calls) go through this policy."""
        return BoundedChatModel(caller=self, purpose=purpose)


class BoundedChatModel(BaseChatModel):
    """The model of a ``ModelCaller`` for one purpose, usable wherever a chat model is expected.

    Failures raise ``ModelUnavailableError`` (a ``ModelOutputError``): the memory writer falls back to its
    no-model path and does not retry an unreachable model.
    """

    caller: Any
    purpose: str = "extraction"

    @property
    def _llm_type(self) -> str:
        return "mneme-bounded"

    def _purpose(self) -> Purpose:
        return "rewrite" if self.purpose == "rewrite" else "answer" if self.purpose == "answer" else "extraction"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> Any:
        out, _ = self.caller.run(self._purpose(), lambda: self.caller.model._generate(messages, stop, **kwargs))
        return out

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: Any = None, **kwargs: Any) -> Any:
        out, _ = await self.caller.arun(self._purpose(),
                                        lambda: self.caller.model._agenerate(messages, stop, **kwargs))
        return out

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """The inner model's structured output, each call under the policy."""
        inner = self.caller.model.with_structured_output(schema, **kwargs)
        caller, purpose = self.caller, self._purpose()

        def call(value: Any, config: RunnableConfig) -> Any:
            return caller.run(purpose, lambda: inner.invoke(value, config))[0]

        async def acall(value: Any, config: RunnableConfig) -> Any:
            return (await caller.arun(purpose, lambda: inner.ainvoke(value, config)))[0]

        return RunnableLambda(call, afunc=acall, name="BoundedStructuredOutput")
