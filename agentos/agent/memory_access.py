"""The memory interface a running tool gets: block edits through the state owner, tiers by kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from agentos.agent.turn_state import TurnState
from agentos.blocks import Block
from agentos.memory.tiers import Tiers

T = TypeVar("T")


class AgentMemory:
    """`MemoryAccess` for one tool call of one agent: edits are recorded with the call's id."""

    def __init__(self, owner: TurnState, tiers: Tiers, call_id: str | None,
                 check: Callable[[], None] | None = None) -> None:
        self._owner = owner
        self._tiers = tiers
        self._call_id = call_id
        self._check = check  # run after an edit that grows a block; raising undoes the edit

    def block(self, label: str) -> Block:
        return self._owner.block(label)

    def append_block(self, label: str, content: str) -> Block:
        return self._owner.append_block(label, content, self._call_id, self._check)

    def replace_block(self, label: str, old_content: str, new_content: str) -> Block:
        return self._owner.replace_block(label, old_content, new_content, self._call_id, self._check)

    def tier(self, kind: type[T]) -> T:
        return self._tiers.get(kind)
