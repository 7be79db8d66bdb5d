"""``mneme chat``: talk to the agent in a terminal, or script it one message per line.

On a terminal it is an interactive prompt with a one-line banner, line editing and history (readline), and the
answer is printed as the model writes it (``stream_reply``). With
stdin from a pipe or file it reads one message per line and prints exactly one reply per message (a reply
may span lines), flushed after each, so other programs can drive it. Slash commands (``/help``) are
answered, never stored (``mneme.cli.chat_commands``). No line ends the session: a failure is one line on
stderr (and ``[error] …`` as that line's reply), and a degraded turn says what it went without on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, TextIO

from mneme.cli.chat_commands import QUIT_WORDS, parse_command, run_command
from mneme.cli.line_input import enable_history, read_line, tolerant
from mneme.errors import MnemeError

EXIT_WORDS = QUIT_WORDS
log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    """Add the ``chat`` subcommand."""
    p = subparsers.add_parser("chat", help="chat with the agent (interactive, or one message per stdin line)")
    p.add_argument("--user", "-u", required=True, help="whose memories to use (a user id)")
    p.add_argument("--thread", "-t", default=None,
                   help="conversation thread id (default: a new one); threads share long-term memory")
    p.add_argument("-k", "--k", type=int, default=None, help="how many memories and documents to recall")
    p.add_argument("--no-write", action="store_true", help="do not store this conversation as memory")
    p.set_defaults(func=run)


def _open_graph(stack: ExitStack, settings: Any = None) -> tuple[Any, Any]:
    """The agent (with the settings' store, model and persistent checkpointer) and its memory service."""
    from mneme.config import Settings
    from mneme.graph.graph import build_graph
    from mneme.models import load_chat_model
    from mneme.stores import open_service
    from mneme.threads import open_checkpointer

    settings = settings or Settings.from_env()
    service = open_service(settings)
    stack.callback(close_after_drain, service)
    # Threads persist (SQLite under MNEME_DATA_DIR, or PostgreSQL): `--thread T` comes back to T.
    checkpointer = stack.enter_context(open_checkpointer(settings))
    return build_graph(model=load_chat_model(settings), service=service, checkpointer=checkpointer,
                       max_message_chars=settings.max_message_chars), service


DRAIN_SECONDS = 60.0
"""How long ``mneme chat`` waits at exit for its queued turns to be stored."""


def close_after_drain(service: Any, *, timeout: float = DRAIN_SECONDS) -> None:
    """Store this session's queued turns (journal) before closing, saying so when it takes a moment."""
    if not service.drain(0.5):
        backlog = service.journal.backlog() if service.journal is not None else 0
        print(f"mneme: storing {backlog} queued turn(s) before exiting (up to {timeout:.0f} s)...",
              file=sys.stderr, flush=True)
        if not service.drain(timeout):
            left = service.journal.backlog() if service.journal is not None else 0
            where = service.journal.path if service.journal is not None else "the journal"
            print(f"mneme: {left} turn(s) not stored yet; they are kept in {where} and stored the next time "
                  "mneme opens this data directory", file=sys.stderr, flush=True)
    service.close(drain_timeout=0)


def _guarded(turn: Callable[[], dict[str, Any]]) -> dict[str, Any] | str:
    """The turn's final state, or the ``[error] …`` reply its failure becomes (one stderr line, never a crash)."""
    try:
        state = turn()
    except MnemeError as exc:
        print(f"mneme: error: {exc}", file=sys.stderr, flush=True)
        return f"[error] {exc}"
    except Exception as exc:  # noqa: BLE001 - one line lost, never the session (details with -v)
        log.debug("turn failed", exc_info=True)
        print(f"mneme: error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr, flush=True)
        return f"[error] {type(exc).__name__}: {exc}"
    if state.get("degraded"):
        print(f"mneme: {'; '.join(state['degraded'])}", file=sys.stderr, flush=True)
    return state


def reply(graph: Any, message: str, *, config: dict[str, Any], context: dict[str, Any]) -> str:
    """One turn: the agent's answer to ``message`` (errors become a labelled reply, never a crash)."""
    state = _guarded(lambda: graph.invoke({"messages": [{"role": "user", "content": message}]}, config,
                                          context=context))
    return state if isinstance(state, str) else str(state.get("answer", ""))


def stream_reply(graph: Any, message: str, *, config: dict[str, Any], context: dict[str, Any], out: TextIO,
                 shown: set[str]) -> str:
    """One turn on a terminal: the model's answer printed as it is written, then the line ends; returns the
    final answer. Text the model broke off is withdrawn the way ``/agent/stream`` withdraws it (``StreamedReply``):
    a stderr line says why and the answer follows on a new line, so the last thing printed is the reply. A reply
    that did not stream (memory-only, a degraded answer, an error) is printed whole."""
    from langchain_core.messages import AIMessageChunk

    from mneme.http_turn import StreamedReply

    streamed = StreamedReply()

    def show(events: list[dict[str, Any]]) -> None:
        for event in events:
            if event.get("reset"):
                print(file=out, flush=True)
                print(f"mneme: {event['reason']}", file=sys.stderr, flush=True)
            else:
                out.write(event["delta"])
                out.flush()

    def turn() -> dict[str, Any]:
        state: dict[str, Any] = {}
        for mode, chunk in graph.stream({"messages": [{"role": "user", "content": message}]}, config,
                                        context=context, stream_mode=["messages", "values"]):
            if mode == "values":
                state = chunk
                continue
            part, meta = chunk
            if meta.get("langgraph_node") == "generate" and isinstance(part, AIMessageChunk):
                show(streamed.add(part.id, part.text))
        return state

    state = _guarded(turn)
    answer = state if isinstance(state, str) else str(state.get("answer", ""))
    if not streamed.text:
        print(label_once(answer, shown), file=out, flush=True)
        return answer
    if isinstance(state, str):  # failed after some text was shown: end that line, then the error reply
        print(file=out)
        print(answer, file=out, flush=True)
        return answer
    show(streamed.settle(answer, list(state.get("degraded") or [])))
    print(file=out, flush=True)
    return answer


def label_once(answer: str, shown: set[str]) -> str:
    """``answer`` without its memory-only mode label line when this chat has shown that label already, in
    either language (a reply in the other language does not make the mode news again)."""
    from mneme.prompts import MEMORY_ONLY_EN, MEMORY_ONLY_ZH

    first, _, rest = answer.partition("\n")
    if first in (MEMORY_ONLY_ZH["label"], MEMORY_ONLY_EN["label"]):
        if "memory-only" in shown and rest:
            return rest
        shown.add("memory-only")
    return answer


def run(args: argparse.Namespace, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the chat loop until end of input; returns the exit code."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    from mneme.memory.base import validate_tenant
    from mneme.threads import scoped_thread_id

    user = validate_tenant(args.user)
    thread = args.thread or f"cli-{uuid.uuid4().hex[:8]}"
    scoped = scoped_thread_id(user, thread)  # a bad --thread is refused here, before anything opens
    context: dict[str, Any] = {"user_id": user, "write_memory": not args.no_write}
    if args.k is not None:
        context["k"] = args.k
    config = {"configurable": {"thread_id": scoped}}
    stdin, stdout = tolerant(stdin), tolerant(stdout)
    tolerant(sys.stderr)
    interactive = stdin.isatty()
    if not getattr(args, "verbose", False):  # the stderr line per turn says it; details with -v
        logging.getLogger("mneme").setLevel(logging.ERROR)
    from mneme.admin import LocalAdmin
    from mneme.config import Settings

    settings = Settings.from_env()
    shown: set[str] = set()  # the memory-only mode label is said once per chat, not on every reply
    with ExitStack() as stack:
        graph, service = _open_graph(stack, settings)
        admin = LocalAdmin(service)
        if interactive:
            stack.callback(enable_history(settings.data_dir))
            banner = (f"mneme chat - user {user}, thread {thread} (come back to it with --thread {thread}; "
                      "/help for commands, Ctrl-D or /quit to quit)")
            print(banner, file=stdout, flush=True)
        while True:
            try:
                if not _one_line(stdin, stdout, interactive=interactive, user=user, thread=thread, admin=admin,
                                 service=service, graph=graph, config=config, context=context, shown=shown):
                    break
            except KeyboardInterrupt:  # Ctrl-C on a terminal drops the line (or the turn), not the session
                if not interactive:
                    raise
                print("^C", file=stdout, flush=True)
    return 0


def _one_line(stdin: TextIO, stdout: TextIO, *, interactive: bool, user: str, thread: str, admin: Any, service: Any,
              graph: Any, config: dict[str, Any], context: dict[str, Any], shown: set[str]) -> bool:
    """Read and answer one line; False at the end of input or on a quit command."""
    line = read_line(stdin, interactive=interactive)
    if line is None:
        if interactive:
            print(file=stdout)
        return False
    if interactive and line.strip() in EXIT_WORDS:
        return False
    if interactive and not line.strip():
        return True
    command = parse_command(line)
    if command is not None:
        if command.name in ("memories", "forget"):
            service.drain(10)  # this chat's queued turns are part of what Mneme keeps
        outcome = run_command(command, user=user, thread=thread, admin=admin)
        if outcome.error:
            print(f"mneme: {outcome.error}", file=sys.stderr, flush=True)
        if outcome.quit:
            return False
        print(outcome.text, file=stdout, flush=True)
        return True
    if interactive:  # a person watching: the answer as the model writes it
        stream_reply(graph, line, config=config, context=context, out=stdout, shown=shown)
    else:  # a script: exactly one reply per line, printed whole
        print(label_once(reply(graph, line, config=config, context=context), shown), file=stdout, flush=True)
    return True
