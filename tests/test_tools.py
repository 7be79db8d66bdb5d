"""Memory tools in a real ``create_react_agent`` graph: the model saves, searches and forgets; the user is the run's."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.prebuilt import create_react_agent

from mneme.clock import FixedClock
from mneme.errors import InvalidTenantError
from mneme.memory.base import Kind
from mneme.memory.inprocess import InProcessStore
from mneme.memory.service import MemoryService
from mneme.testing import FakeChatModel, FakeEmbeddings
from mneme.tools import create_memory_tools

NOW = 1_750_000_000.0


class ToolScript:
    """A model that calls one tool per run, then answers with what the tool returned."""

    def __init__(self) -> None:
        self.next_call: tuple[str, dict[str, Any]] | None = None

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage) or self.next_call is None:
            return AIMessage(content=f"done: {messages[-1].content}")
        name, args = self.next_call
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{len(messages)}"}])


@pytest.fixture
def service() -> MemoryService:
    return MemoryService(InProcessStore(FakeEmbeddings()), clock=FixedClock(NOW))


@pytest.fixture
def script() -> ToolScript:
    return ToolScript()


@pytest.fixture
def agent(service: MemoryService, script: ToolScript) -> Any:
    return create_react_agent(FakeChatModel(handler=script), create_memory_tools(service=service))


def call(agent: Any, script: ToolScript, name: str, args: dict[str, Any], **who: Any) -> Any:
    """Run the agent once with the model scripted to call ``name(args)``; the tool's JSON result."""
    script.next_call = (name, args)
    out = agent.invoke({"messages": [("user", "…")]}, **who)
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return json.loads(str(tool_messages[-1].content))


def test_the_model_saves_searches_and_forgets_for_the_runs_user(agent: Any, script: ToolScript,
                                                               service: MemoryService) -> None:
    alice = {"context": {"user_id": "alice"}}
    saved = call(agent, script, "save_memory", {"content": "用户喜欢周末去爬山", "kind": "preference"}, **alice)
    record = service.store.get("alice", [saved["saved"]])
    assert record and record[0].kind == Kind.PREFERENCE and record[0].text == "用户喜欢周末去爬山"
    found = call(agent, script, "search_memory", {"query": "爬山"}, **alice)
    assert [f["id"] for f in found][:1] == [saved["saved"]] and found[0]["text"] == "用户喜欢周末去爬山"
    # by config too (servers that only forward configurable)
    by_config = call(agent, script, "search_memory", {"query": "爬山"},
                     config={"configurable": {"user_id": "alice"}})
    assert by_config[0]["id"] == saved["saved"]
    assert call(agent, script, "forget_memory", {"memory_id": saved["saved"]}, **alice) == {"deleted": 1}
    assert call(agent, script, "search_memory", {"query": "爬山"}, **alice) == []
    assert saved["saved"] not in service.keyword.ids("alice")


def test_another_users_run_sees_and_deletes_nothing(agent: Any, script: ToolScript, service: MemoryService) -> None:
    saved = call(agent, script, "save_memory", {"content": "Alice's locker code is in the blue notebook"},
                 context={"user_id": "alice"})
    bob = {"context": {"user_id": "bob"}}
    assert call(agent, script, "search_memory", {"query": "locker code blue notebook"}, **bob) == []
    assert call(agent, script, "forget_memory", {"memory_id": saved["saved"]}, **bob) == {"deleted": 0}
    assert service.store.get("alice", [saved["saved"]])


def test_the_model_cannot_name_the_user(agent: Any, script: ToolScript, service: MemoryService) -> None:
    tools = {t.name: t for t in create_memory_tools(service=service)}
    assert set(tools) == {"search_memory", "save_memory", "forget_memory"}
    assert set(tools["search_memory"].args) == {"query"}
    assert set(tools["save_memory"].args) == {"content", "kind"}
    assert set(tools["forget_memory"].args) == {"memory_id"}
    # an argument the model invents is not a way in
    call(agent, script, "save_memory", {"content": "用户住在成都", "user_id": "bob"}, context={"user_id": "alice"})
    assert service.store.count("bob", kinds=None) == 0 and service.store.count("alice", kinds=None) == 1
    with pytest.raises(InvalidTenantError):
        call(agent, script, "search_memory", {"query": "成都"})


def test_the_servers_authenticated_user_wins_over_a_claimed_one(agent: Any, script: ToolScript,
                                                                service: MemoryService) -> None:
    call(agent, script, "save_memory", {"content": "likes green tea"},
         context={"user_id": "bob"}, config={"configurable": {"langgraph_auth_user_id": "alice"}})
    assert service.store.count("alice", kinds=None) == 1 and service.store.count("bob", kinds=None) == 0


def test_saved_memories_are_redacted_and_the_agent_recalls_them(service: MemoryService, agent: Any,
                                                                 script: ToolScript) -> None:
    from mneme import build_graph

    saved = call(agent, script, "save_memory", {"content": "我的手机号是13812345678，我对花生过敏"},
                 context={"user_id": "alice"})
    record = service.store.get("alice", [saved["saved"]])[0]
    assert "13812345678" not in record.text and record.metadata["redacted_phone"] == 1
    # Mneme's own agent (memory-only mode) recalls what the model chose to keep
    out = build_graph(service=service).invoke({"messages": [("user", "我对什么过敏？")]}, context={"user_id": "alice"})
    assert "花生" in out["answer"]


def test_the_tools_work_async(agent: Any, script: ToolScript, service: MemoryService) -> None:
    async def run() -> list[Any]:
        script.next_call = ("save_memory", {"content": "用户的猫叫豆豆"})
        await agent.ainvoke({"messages": [("user", "…")]}, context={"user_id": "alice"})
        script.next_call = ("search_memory", {"query": "豆豆"})
        out = await agent.ainvoke({"messages": [("user", "…")]}, context={"user_id": "alice"})
        return [m for m in out["messages"] if isinstance(m, ToolMessage)]

    found = json.loads(str(asyncio.run(run())[-1].content))
    assert found and found[0]["text"] == "用户的猫叫豆豆"


def test_the_readmes_hot_path_example_keeps_the_models_choice_and_the_policys(script: ToolScript,
                                                                              service: MemoryService) -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- hot-path-example -->\s*```python\n(.*?)```", readme, re.S)
    assert block is not None
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    script.next_call = ("save_memory", {"content": "用户对花生过敏", "kind": "fact"})
    graph = namespace["build_hot_path_agent"](FakeChatModel(handler=script), service)
    graph.invoke({"messages": [("user", "记住：我对花生过敏，我住在成都")]}, context={"user_id": "alice"})
    records = list(service.store.scan("alice", kinds=None))
    assert any(r.text == "用户对花生过敏" and r.metadata.get("store_key") for r in records)  # the model's choice
    assert any(r.kind == Kind.EPISODIC and "花生" in r.text for r in records)  # Mneme's policy, same turn
    assert service.store.count("bob", kinds=None) == 0
