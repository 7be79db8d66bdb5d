"""What a line typed into ``mneme chat`` is: a slash command, answered here and never stored, or a message.

``/help``, ``/memories``, ``/forget ID``, ``/thread`` and ``/quit`` (also ``/exit``) are commands, in a
terminal and from a pipe alike. A line is a command only when it is ``/word`` (letters) and optional
arguments, so ``/usr/bin/python is slow`` is still a message. An unknown ``/word`` is answered with the
list of commands and is not stored either: a mistyped command must not become a memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

QUIT = frozenset({"quit", "exit", "q"})
QUIT_WORDS = frozenset({"exit", "quit", "退出"})
"""Plain words that end an interactive session (typed alone)."""
_COMMAND = re.compile(r"^/([A-Za-z]+)(?:\s+(.*))?$", re.S)
MEMORIES_SHOWN = 50

HELP = """commands (never stored as memories) / 命令（不会被记住）:
  /help          this list / 显示本帮助
  /memories      what Mneme keeps about you / 列出我记得的内容
  /forget ID     forget one memory by its id / 按编号忘记一条记忆
  /thread        this conversation's thread id / 当前对话线程
  /quit          leave (also /exit, Ctrl-D) / 退出
anything else is a message / 其他输入都是消息"""


@dataclass(frozen=True)
class Command:
    """A parsed slash command."""

    name: str
    arg: str


@dataclass(frozen=True)
class Outcome:
    """What a command printed (stdout), what went wrong (stderr, one line or empty), and whether to quit."""

    text: str
    error: str = ""
    quit: bool = False


def parse_command(line: str) -> Command | None:
    """The command on ``line``, or ``None`` when the line is a message."""
    match = _COMMAND.match(line.strip())
    if match is None:
        return None
    return Command(match.group(1).lower(), (match.group(2) or "").strip())


def _one_line(text: str, limit: int = 100) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def run_command(command: Command, *, user: str, thread: str, admin: Any) -> Outcome:
    """Answer ``command`` for ``user`` in ``thread``; ``admin`` is a ``mneme.admin.MemoryAdmin``."""
    name = command.name
    if name in QUIT:
        return Outcome("", quit=True)
    if name == "help":
        return Outcome(HELP)
    if name == "thread":
        return Outcome(f"thread {thread} (come back to it with: mneme chat --user {user} --thread {thread})")
    if name == "memories":
        records = [r for r in admin.list_memories(user) if not r.get("archived")]
        if not records:
            return Outcome(f"no memories of {user} yet / 还没有关于 {user} 的记忆")
        shown = records[-MEMORIES_SHOWN:]
        lines = [f"{r['id']}  {r['kind']:<10} {_one_line(r['text'])}" for r in shown]
        if len(records) > len(shown):
            lines.insert(0, f"… {len(records) - len(shown)} older (mneme memories list --user {user})")
        return Outcome("\n".join(lines))
    if name == "forget":
        ids = command.arg.split()
        if not ids:
            return Outcome("usage: /forget ID (ids are listed by /memories)", error="/forget needs a memory id")
        try:
            deleted = admin.delete(user, ids)
        except Exception as exc:  # noqa: BLE001 - an unknown id is one line, not the end of the session
            return Outcome(f"[error] {exc}", error=str(exc))
        return Outcome(f"forgotten / 已忘记: {', '.join(deleted)}")
    return Outcome(f"unknown command /{name} (not stored)\n{HELP}", error=f"unknown command /{name}")
