"""The LangServe app: the agent over HTTP at ``/agent`` (invoke, batch, stream) and a chat page.

Who is calling is decided in one place, ``resolve_identity(request)``, by the app's ``mneme.auth.Authenticator``:
the verified API key or JWT when either is configured (then ``X-User-Id`` and the body cannot change it), else dev
mode's ``X-User-Id`` header. The identity always overrides any ``configurable.user_id`` a client sends in the body,
and a thread id is always scoped to its user (``mneme.threads``). What a request may carry and what a response
holds is decided in ``mneme.http_turn``; size limits in ``mneme.limits``; the chat page in ``mneme.playground``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse
from langchain_core.runnables import Runnable

from mneme.auth import DEV_MODE_WARNING, Authenticator, Principal
from mneme.config import Settings
from mneme.errors import (
    AuthenticationError,
    ForbiddenError,
    InvalidInputError,
    InvalidTenantError,
    JournalWriteError,
    MnemeError,
    RequestTooLargeError,
)
from mneme.health import (
    acheckpointer_probe,
    arun_checks,
    embedder_probe,
    journal_probe,
    readiness,
    store_probe,
)
from mneme.http_errors import ClipEchoMiddleware
from mneme.http_input import (
    JSONBodyMiddleware,
    LastResortMiddleware,
    check_message_shapes,
    client_error_handlers,
)
from mneme.http_turn import (
    AUTH_CONFIGURABLE,
    RUN_SETTINGS,
    ChatRequest,
    OpenAIMessage,
    TurnOutput,
    run_settings,
    turn_runnable,
)
from mneme.limits import BodyLimitMiddleware, check_sizes, content_chars, limits_of
from mneme.playground import add_playground
from mneme.threads import new_thread_id, scoped_thread_id, validate_thread_id

if TYPE_CHECKING:
    from mneme.memory.service import MemoryService

log = logging.getLogger(__name__)

USER_HEADER = "X-User-Id"
THREAD_HEADER = "X-Thread-Id"
_BODY_KEYS = frozenset({"input", "inputs", "config", "kwargs"})
"""Top-level fields of a LangServe request body; anything else (``"k": 1`` beside ``input``) is refused."""

__all__ = ["AUTH_CONFIGURABLE", "ChatRequest", "Identity", "OpenAIMessage", "TurnOutput", "create_app",
           "resolve_identity", "resolve_principal"]


@dataclass(frozen=True)
class Identity:
    """Who is calling and in which of their conversation threads (the id as the client names it)."""

    user_id: str
    thread_id: str
    named: bool = True
    """Whether the request named the thread (``X-Thread-Id``); ``False``: ``thread_id`` is a new one."""


def resolve_principal(request: Request) -> Principal:
    """The caller as the app's authenticator sees it; 401/403/400 ``HTTPException`` when it cannot say."""
    authenticator: Authenticator = request.app.state.authenticator
    try:
        principal = authenticator.authenticate(request.headers.get("authorization"), request.headers.get(USER_HEADER))
    except ForbiddenError as exc:
        raise HTTPException(403, str(exc)) from exc
    except AuthenticationError as exc:
        raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc
    except InvalidTenantError as exc:
        raise HTTPException(400, f"{USER_HEADER}: {exc}") from exc
    if principal.via == "dev" and not getattr(request.app.state, "remote_dev_auth", False) \
            and not _from_this_machine(request):
        raise HTTPException(403, "dev mode (no API keys, no JWT settings: the caller names the user) answers this "
                            "machine only: create keys (`mneme keys create --user U`), set MNEME_JWT_*, or start "
                            "`mneme serve --insecure-dev-auth`")
    return principal


def _from_this_machine(request: Request) -> bool:
    """Whether the client is on loopback: ``mneme serve`` refuses a non-loopback host in dev mode, and this holds
    the same line for an app served another way (``uvicorn --factory mneme.serve:create_app --host 0.0.0.0``)."""
    from mneme.auth import client_is_local

    return client_is_local(request.client.host if request.client is not None else None)


def _checked_thread(thread: str, where: str = THREAD_HEADER) -> str:
    try:
        return validate_thread_id(thread) if thread else ""
    except InvalidInputError as exc:
        raise HTTPException(422, f"{where}: {exc}") from exc


def resolve_identity(request: Request) -> Identity:
    """The caller's user (verified, or ``X-User-Id`` in dev mode) and thread (``X-Thread-Id``, new if absent).

    Raises ``HTTPException`` 401 without valid credentials where they are required, 400 when no user is named,
    422 for a malformed or over-long thread id (never truncated).
    """
    user = resolve_principal(request).user_id
    if not user:
        raise HTTPException(400, f"missing {USER_HEADER} header: say whose memory this request uses")
    thread = _checked_thread((request.headers.get(THREAD_HEADER) or "").strip())
    return Identity(user_id=user, thread_id=thread or new_thread_id(), named=bool(thread))


def _thread_of(who: Identity, client: dict[str, Any]) -> str:
    """The turn's thread: ``X-Thread-Id``, else the ``config.configurable.thread_id`` a LangServe or LangGraph
    client sends (``RemoteRunnable.invoke(..., config={"configurable": {"thread_id": "t1"}})``), else a new one.
    Either way it is the caller's own thread (scoped to the user), so naming it grants nothing; the two naming
    different threads is a 422, not a silent pick."""
    named = client.get("thread_id")
    if named is None or named == "":
        return who.thread_id
    if not isinstance(named, str):
        raise HTTPException(422, "config.configurable.thread_id must be a string")
    named = _checked_thread(named.strip(), "config.configurable.thread_id")
    if who.named and named != who.thread_id:
        raise HTTPException(422, f"{THREAD_HEADER} names thread {who.thread_id!r} but config.configurable.thread_id "
                                 f"names {named!r}: name the thread once")
    return named


def _client_configurable(body: Any) -> dict[str, Any]:
    """The ``config.configurable`` a client sent in a LangServe body (which LangServe itself would drop)."""
    if not isinstance(body, dict):
        return {}
    unknown = sorted(set(body) - _BODY_KEYS)
    if unknown:
        raise InvalidInputError(
            f"unknown field(s) {', '.join(unknown)} in the request body; run settings go in "
            f"config.configurable ({', '.join(RUN_SETTINGS)})")
    config = body.get("config")
    if isinstance(config, list):
        if any(isinstance(c, dict) and c.get("configurable") for c in config):
            raise InvalidInputError("a batch takes its run settings from one config for all inputs, not a list")
        return {}
    if not isinstance(config, dict):
        return {}
    configurable = config.get("configurable") or {}
    if not isinstance(configurable, dict):
        raise InvalidInputError("config.configurable must be an object of run settings")
    return dict(configurable)


def _check_body_messages(body: Any, limits: dict[str, int]) -> None:
    """Message limits on the raw body, so stream and batch refuse with 413 before anything runs."""
    if not isinstance(body, dict):
        return
    batch = body.get("inputs")
    inputs: list[Any] = batch if isinstance(batch, list) else [body.get("input")]
    if len(inputs) > limits["max_messages"]:
        raise RequestTooLargeError(f"batch carries {len(inputs)} inputs; the limit is {limits['max_messages']} "
                                   "(MNEME_MAX_REQUEST_MESSAGES)")
    for item in inputs:
        messages = item.get("messages") if isinstance(item, dict) else None
        if isinstance(messages, list):
            check_sizes([content_chars(m.get("content")) if isinstance(m, dict) else 0 for m in messages],
                        **limits)
            check_message_shapes(messages)


def _config_modifier(
    identity: Callable[[Request], Identity], limits: dict[str, int],
) -> Callable[[dict[str, Any], Request], Awaitable[dict[str, Any]]]:
    async def modify(config: dict[str, Any], request: Request) -> dict[str, Any]:
        who = identity(request)
        try:
            body = await request.json()
        except ValueError:
            body = None
        _check_body_messages(body, limits)
        configurable = {k: v for k, v in (config.get("configurable") or {}).items() if k not in AUTH_CONFIGURABLE}
        client = _client_configurable(body)
        configurable.update(run_settings(client))
        configurable.update(user_id=who.user_id, thread_id=scoped_thread_id(who.user_id, _thread_of(who, client)),
                            langgraph_auth_user_id=who.user_id)
        return {**config, "configurable": configurable}

    return modify


def _graph_factory(settings: Settings) -> tuple[Callable[[Any], Runnable], MemoryService]:
    """The environment's agent, compiled once the checkpointer is open, and its memory service."""
    from mneme.graph.graph import build_graph
    from mneme.models import load_chat_model
    from mneme.stores import open_service

    service = open_service(settings)
    model = load_chat_model(settings)

    def build(checkpointer: Any) -> Runnable:
        return build_graph(model=model, service=service, checkpointer=checkpointer,
                           max_message_chars=settings.max_message_chars)

    return build, service


def _readiness_probes(service: MemoryService | None, graph: Runnable | None) -> dict[str, Any]:
    """What ``/readyz`` asks: the memory store and embedder (when the app has the service), the checkpointer."""
    probes: dict[str, Any] = {}
    if service is not None:
        probes["memory_store"] = store_probe(service.store)
        probes["embedder"] = embedder_probe(service.store.embedder)
        probes["journal"] = journal_probe(service)
    checkpointer = getattr(graph, "checkpointer", None)
    if graph is None or checkpointer is not None:
        probes["checkpointer"] = acheckpointer_probe(checkpointer) if checkpointer is not None else _not_open
    return probes


async def _not_open() -> str:
    raise RuntimeError("the checkpointer is not open yet (the app is starting or stopping)")


def create_app(
    *, graph: Runnable | None = None, service: MemoryService | None = None,
    authenticator: Authenticator | None = None, identity: Callable[[Request], Identity] = resolve_identity,
    default_user_id: str | None = None, title: str = "Mneme", settings: Settings | None = None,
    remote_dev_auth: bool = False,
) -> FastAPI:
    """A FastAPI app serving the agent at ``/agent`` (LangServe invoke, batch, stream) and a chat page.

    ``graph`` defaults to the environment's agent with the settings' persistent checkpointer (SQLite under
    ``MNEME_DATA_DIR``, or PostgreSQL), opened in the app's lifespan; a graph passed in should be compiled
    with a checkpointer so threads keep their turns. ``service`` (the environment's with the default graph)
    serves the memory API at ``/memories``. ``authenticator`` (default: the environment's keys and JWT
    settings) decides who the caller is; ``default_user_id`` names the user of dev-mode requests without
    ``X-User-Id`` (demos only). ``settings`` (default: the environment's) give the request limits. In dev mode
    only loopback clients are answered (403 otherwise) unless ``remote_dev_auth`` (``--insecure-dev-auth``).
    """
    from langserve import add_routes

    from mneme.langserve_response import install as encode_responses_once
    from mneme.threads import aopen_checkpointer

    encode_responses_once()  # LangServe's JSON, without walking each response twice (mneme.langserve_response)

    settings = settings or Settings.from_env()
    limits = limits_of(settings)
    slot: dict[str, Runnable] = {}
    owned: MemoryService | None = None
    build: Callable[[Any], Runnable] | None = None
    if graph is None:
        build, owned = _graph_factory(settings)
        service = service or owned
    else:
        slot["graph"] = graph
    if authenticator is None:
        authenticator = Authenticator.from_settings(settings, default_user=default_user_id)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if authenticator.dev_mode:
            log.warning(DEV_MODE_WARNING)
        try:
            if build is None:
                yield
                return
            async with aopen_checkpointer(settings) as checkpointer:
                slot["graph"] = build(checkpointer)
                yield
        finally:
            if owned is not None:
                owned.close()

    app = FastAPI(title=title, description="A LangGraph agent with long-term memory.", lifespan=lifespan)
    app.state.authenticator = authenticator
    app.state.remote_dev_auth = remote_dev_auth
    app.add_middleware(JSONBodyMiddleware)  # inside the size limit: only bodies within it are parsed
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(ClipEchoMiddleware)  # a 4xx never echoes a huge input back (mneme.http_errors)
    app.add_middleware(LastResortMiddleware)  # outermost: no error drops a keep-alive connection unsaid
    for error, handler in client_error_handlers().items():
        app.add_exception_handler(error, handler)
    add_routes(app, turn_runnable(lambda: slot["graph"], limits=limits), path="/agent",
               per_req_config_modifier=_config_modifier(identity, limits),
               # stream_log / stream_events would show the graph's inner state (the whole thread)
               disabled_endpoints=["playground", "stream_log", "stream_events", "config_hashes"])
    add_playground(app, "/agent/playground/")
    if service is not None:
        from mneme.api import memory_router

        # erasure and export reach the threads through the checkpointer the lifespan opened
        app.include_router(memory_router(service, checkpointer=lambda: getattr(slot.get("graph"), "checkpointer",
                                                                                None)))

    @app.exception_handler(RequestTooLargeError)
    async def too_large(_: Request, exc: RequestTooLargeError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=413)

    @app.exception_handler(InvalidInputError)
    async def invalid_input(_: Request, exc: InvalidInputError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(JournalWriteError)
    async def not_kept(_: Request, exc: JournalWriteError) -> JSONResponse:
        # the turn was not acknowledged: 507 Insufficient Storage, never a 200 that kept nothing
        return JSONResponse({"detail": str(exc)}, status_code=507)

    @app.exception_handler(MnemeError)
    async def mneme_error(_: Request, exc: MnemeError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/agent/playground/")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """The process answers (nothing else is asked: see ``/readyz``)."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        """The store, the embedder and the checkpointer answer: 200, else 503 naming the one that failed."""
        status, body = readiness(await arun_checks(_readiness_probes(service, slot.get("graph"))))
        return JSONResponse(body, status_code=status)

    return app
