"""The LangServe app: the agent over HTTP at ``/agent`` (invoke, batch, stream, playground).

Who is calling is decided in one place, ``resolve_identity(request)``, by the app's ``mneme.auth.Authenticator``:
the verified API key or JWT when either is configured (then ``X-User-Id`` and the body cannot change it), else dev
mode's ``X-User-Id`` header. The identity always overrides any ``configurable.user_id`` a client sends in the body.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, Discriminator, Field, Tag

from mneme.auth import DEV_MODE_WARNING, Authenticator, Principal
from mneme.errors import AuthenticationError, ForbiddenError, InvalidInputError, InvalidTenantError, MnemeError

if TYPE_CHECKING:
    from mneme.memory.service import MemoryService

log = logging.getLogger(__name__)

USER_HEADER = "X-User-Id"
THREAD_HEADER = "X-Thread-Id"
_THREAD_MAX = 128


@dataclass(frozen=True)
class Identity:
    """Who is calling and in which conversation thread."""

    user_id: str
    thread_id: str


AUTH_CONFIGURABLE = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")
"""Configurable keys only the server sets: a client's values are dropped (see ``graph.context.resolve_context``)."""


def resolve_principal(request: Request) -> Principal:
    """The caller as the app's authenticator sees it; 401/403/400 ``HTTPException`` when it cannot say."""
    authenticator: Authenticator = request.app.state.authenticator
    try:
        return authenticator.authenticate(request.headers.get("authorization"), request.headers.get(USER_HEADER))
    except ForbiddenError as exc:
        raise HTTPException(403, str(exc)) from exc
    except AuthenticationError as exc:
        raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc
    except InvalidTenantError as exc:
        raise HTTPException(400, f"{USER_HEADER}: {exc}") from exc


def resolve_identity(request: Request) -> Identity:
    """The caller's user (verified, or ``X-User-Id`` in dev mode) and thread (``X-Thread-Id``, new if absent).

    Raises ``HTTPException`` 401 without valid credentials where they are required, 400 when no user is named.
    """
    user = resolve_principal(request).user_id
    if not user:
        raise HTTPException(400, f"missing {USER_HEADER} header: say whose memory this request uses")
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
    identity: Callable[[Request], Identity],
) -> Callable[[dict[str, Any], Request], dict[str, Any]]:
    def modify(config: dict[str, Any], request: Request) -> dict[str, Any]:
        who = identity(request)
        configurable = {k: v for k, v in (config.get("configurable") or {}).items() if k not in AUTH_CONFIGURABLE}
        configurable.update(user_id=who.user_id, thread_id=who.thread_id, langgraph_auth_user_id=who.user_id)
        return {**config, "configurable": configurable}

    return modify


def _default_graph() -> tuple[Runnable, MemoryService]:
    from langgraph.checkpoint.memory import InMemorySaver

    from mneme.config import Settings
    from mneme.graph.graph import build_graph
    from mneme.models import load_chat_model
    from mneme.stores import open_service

    settings = Settings.from_env()
    service = open_service(settings)
    graph = build_graph(model=load_chat_model(settings), service=service, checkpointer=InMemorySaver())
    return graph, service


def create_app(
    *, graph: Runnable | None = None, service: MemoryService | None = None,
    authenticator: Authenticator | None = None, identity: Callable[[Request], Identity] = resolve_identity,
    default_user_id: str | None = None, title: str = "Mneme",
) -> FastAPI:
    """A FastAPI app serving the agent at ``/agent`` (LangServe routes and ``/agent/playground/``).

    ``graph`` defaults to the environment's agent with an in-memory checkpointer (so ``X-Thread-Id``
    keeps short-term memory); pass one compiled with a checkpointer for the same. ``service`` (the
    environment's with the default graph) serves the memory API at ``/memories``. ``authenticator``
    (default: the environment's keys and JWT settings) decides who the caller is; ``default_user_id``
    names the user of dev-mode requests without ``X-User-Id`` (demos only).
    """
    from langserve import add_routes

    owned: MemoryService | None = None
    if graph is None:
        graph, owned = _default_graph()
        service = service or owned
    if authenticator is None:
        from mneme.config import Settings

        authenticator = Authenticator.from_settings(Settings.from_env(), default_user=default_user_id)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if authenticator.dev_mode:
            log.warning(DEV_MODE_WARNING)
        yield
        if owned is not None:
            owned.close()

    app = FastAPI(title=title, description="A LangGraph agent with long-term memory.", lifespan=lifespan)
    app.state.authenticator = authenticator
    add_routes(app, agent_runnable(graph), path="/agent", per_req_config_modifier=_config_modifier(identity))
    if service is not None:
        from mneme.api import memory_router

        app.include_router(memory_router(service))

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
