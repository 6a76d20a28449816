"""What a running tool may reach besides its arguments: a narrow, typed interface to the agent's memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from agentos.blocks import Block

T = TypeVar("T")


class MemoryAccess(Protocol):
    """The agent's memory as tools see it: blocks to read and edit, and its tiers by kind.

    Edits go through the agent's state owner, which records each one in the edit log."""

    def block(self, label: str) -> Block:
        """A copy of one core memory block; MemoryEditError when there is none."""
        ...

    def append_block(self, label: str, content: str) -> Block:
        """Append `content` to a block on a new line; returns the block as it now is."""
        ...

    def replace_block(self, label: str, old_content: str, new_content: str) -> Block:
        """Replace the one occurrence of `old_content` (an empty `new_content` deletes it)."""
        ...

    def tier(self, kind: type[T]) -> T:
        """The agent's tier of this kind (for example `ArchivalTier`); ToolError when it has none."""
        ...


@dataclass
class ToolContext:
    """Handed to a tool that declares a parameter of this type: the agent's memory and the call being served."""

    memory: MemoryAccess
    call_id: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
