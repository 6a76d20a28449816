"""Helpers for the recall/archival tests: agents with the deterministic embedder, direct tool calls."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.memory.archival import ArchivalTier
from agentos.memory.recall import RecallTier
from agentos.messages import Message, ToolCall
from agentos.providers.scripted import ScriptedProvider


def make_agent(name: str = "sam", embedder: str = "hash:64") -> Agent:
    return Agent.create(name, provider=ScriptedProvider([]), settings=AgentSettings(embedder=embedder))


def call(agent: Agent, tool: str, **args: Any) -> tuple[str, bool]:
    """Run a tool as the loop would; returns (text, is_error)."""
    outcome = agent.tools.execute(ToolCall(id="c1", name=tool, arguments=json.dumps(args)), agent.tool_context("c1"))
    return outcome.text, outcome.is_error


def say(agent: Agent, role: str, text: str, when: datetime | None = None) -> Message:
    """Save a message to recall, as a finished step would."""
    message = Message(role=role, content=text, created_at=when or datetime.now(UTC))  # type: ignore[arg-type]
    agent.add_history([message])
    return message


def archival(agent: Agent) -> ArchivalTier:
    return agent.tier(ArchivalTier)


def recall(agent: Agent) -> RecallTier:
    return agent.tier(RecallTier)


def day(d: int, month: int = 1, year: int = 2024) -> datetime:
    return datetime(year, month, d, 12, 0, tzinfo=UTC)


CONVERSATION_START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def conversation(agent: Agent, turns: list[tuple[str, str]], start: int = 0) -> list[Message]:
    """Save (role, text) turns as one step, a minute apart from CONVERSATION_START plus `start` minutes."""
    messages = [Message(role=role, content=text, created_at=CONVERSATION_START + timedelta(minutes=start + i))  # type: ignore[arg-type]
                for i, (role, text) in enumerate(turns)]
    agent.add_history(messages)
    return messages
