"""The LangServe app: the agent over HTTP at ``/agent`` (invoke, batch, stream, playground).

Who is calling is decided in one place, ``resolve_identity(request)``: today the ``X-User-Id`` and
``X-Thread-Id`` headers; with authentication it becomes the verified identity, and nothing else changes.
The identity always overrides any ``configurable.user_id`` a client sends in the body.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, Discriminator, Field, Tag

from mneme.errors import InvalidInputError, InvalidTenantError, MnemeError
from mneme.memory.base import validate_tenant

USER_HEADER = "X-User-Id"
THREAD_HEADER = "X-Thread-Id"
_THREAD_MAX = 128


@dataclass(frozen=True)
class Identity:
    """Who is calling and in which conversation thread."""

    user_id: str
    thread_id: str


def resolve_identity(request: Request) -> Identity:
    """The caller's user and thread, from ``X-User-Id`` (required) and ``X-Thread-Id`` (new if absent).

    Raises ``HTTPException(400)`` with a clear message when the user id is missing or malformed.
    """
    user = (request.headers.get(USER_HEADER) or "").strip()
    if not user:
        raise HTTPException(400, f"missing {USER_HEADER} header: say whose memory this request uses")
    try:
        validate_tenant(user)
    except InvalidTenantError as exc:
        raise HTTPException(400, f"{USER_HEADER}: {exc}") from exc
    thread = (request.headers.get(THREAD_HEADER) or "").strip()[:_THREAD_MAX]
    return Identity(user_id=user, thread_id=thread or f"http-{uuid.uuid4().hex}")


class OpenAIMessage(BaseModel):
    """A message as OpenAI's API writes it: ``{"role": "user", "content": "..."}``."""

    role: Literal["user", "assistant", "system", "human", "ai"]
    content: str | list[Any]


def _message_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "openai" if "role" in value else str(value.get("type", "human"))
    return str(getattr(value, "type", "human"))


Message = Annotated[
    Annotated[HumanMessage, Tag("human")] | Annotated[AIMessage, Tag("ai")]
    | Annotated[SystemMessage, Tag("system")] | Annotated[OpenAIMessage, Tag("openai")],
    Discriminator(_message_kind),
]


class ChatRequest(BaseModel):
    """The agent's input: new messages of the thread, LangChain- or OpenAI-style."""

    messages: list[Message] = Field(min_length=1, description="New messages; the last is the user's turn.")


def _to_graph_input(payload: dict[str, Any]) -> dict[str, Any]:
    """LangServe hands OpenAI-style messages over as dicts: make them LangChain messages."""
    messages = payload.get("messages") or []
    return {"messages": convert_to_messages(
        [m.model_dump() if isinstance(m, OpenAIMessage) else m for m in messages])}


def agent_runnable(graph: Runnable) -> Runnable:
    """The graph behind the HTTP routes, typed for LangServe's validation and playground."""
    chain = RunnableLambda(_to_graph_input, name="to_messages") | graph
    return chain.with_types(input_type=ChatRequest)  # type: ignore[arg-type]


def _config_modifier(
    identity: Callable[[Request], Identity], default_user_id: str | None,
) -> Callable[[dict[str, Any], Request], dict[str, Any]]:
    def modify(config: dict[str, Any], request: Request) -> dict[str, Any]:
        if default_user_id and not request.headers.get(USER_HEADER):
            who = Identity(user_id=default_user_id,
                           thread_id=request.headers.get(THREAD_HEADER) or f"http-{uuid.uuid4().hex}")
        else:
            who = identity(request)
        configurable = dict(config.get("configurable") or {})
        configurable.update(user_id=who.user_id, thread_id=who.thread_id)
        return {**config, "configurable": configurable}

    return modify


def _default_graph() -> tuple[Runnable, Callable[[], None]]:
    from langgraph.checkpoint.memory import InMemorySaver

    from mneme.config import Settings
    from mneme.graph.graph import build_graph
    from mneme.models import load_chat_model
    from mneme.stores import open_service

    settings = Settings.from_env()
    service = open_service(settings)
    graph = build_graph(model=load_chat_model(settings), service=service, checkpointer=InMemorySaver())
    return graph, service.close


def create_app(
    *, graph: Runnable | None = None, identity: Callable[[Request], Identity] = resolve_identity,
    default_user_id: str | None = None, title: str = "Mneme",
) -> FastAPI:
    """A FastAPI app serving the agent at ``/agent`` (LangServe routes and ``/agent/playground/``).

    ``graph`` defaults to the environment's agent with an in-memory checkpointer (so ``X-Thread-Id``
    keeps short-term memory); pass one compiled with a checkpointer for the same. ``identity`` decides
    who the caller is; ``default_user_id`` lets requests without ``X-User-Id`` through (demos only).
    """
    from langserve import add_routes

    close: Callable[[], None] = lambda: None  # noqa: E731
    if graph is None:
        graph, close = _default_graph()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        close()

    app = FastAPI(title=title, description="A LangGraph agent with long-term memory.", lifespan=lifespan)
    add_routes(app, agent_runnable(graph), path="/agent",
               per_req_config_modifier=_config_modifier(identity, default_user_id))

    @app.exception_handler(InvalidInputError)
    async def invalid_input(_: Request, exc: InvalidInputError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(MnemeError)
    async def mneme_error(_: Request, exc: MnemeError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/agent/playground/")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
