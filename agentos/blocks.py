"""Core memory: small labelled blocks the model edits and always sees in its system prompt."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from agentos.errors import MemoryEditError
from agentos.messages import utc_now
from agentos.text import ValidText

DEFAULT_BLOCK_LIMIT = 5000
_LABEL = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


class Block(BaseModel):
    """One core memory block. Limits bind edits only: a stored block over its limit still loads."""

    label: str
    value: ValidText = ""
    limit: int = DEFAULT_BLOCK_LIMIT
    description: ValidText = ""
    read_only: bool = False
    # Attached to a shared block (see `storage.shared_blocks`): its id, and the revision this copy shows.
    shared_id: str | None = None
    shared_rev: int = 0

    @field_validator("label")
    @classmethod
    def _valid_label(cls, label: str) -> str:
        if not _LABEL.match(label):
            raise ValueError(
                f"block label {label!r} must start with a lowercase letter and use only a-z, 0-9 and _ (max 48)"
            )
        return label

    @property
    def chars_over_limit(self) -> int:
        """How many characters the value is over the limit (0 within it); the prompt shows such a block cut."""
        return max(0, len(self.value) - self.limit)


Editor = Literal["agent", "user", "mcp", "shared"]  # shared: another agent, through a block they share


class MemoryEdit(BaseModel):
    """A record of one change to a block: when, what it was, what it became, which call did it."""

    at: datetime = Field(default_factory=utc_now)
    label: str
    old_value: ValidText
    new_value: ValidText
    tool_call_id: str | None = None
    rev: int | None = None  # the agent's state revision it landed with (None until saved, and in old logs)
    # The model through a tool, a person by hand (`agentos memory set`), an MCP client (its name in tool_call_id), or
    # another agent editing a block the two share ("shared:NAME" in tool_call_id).
    by: Editor = "agent"


class CoreMemory:
    """The agent's blocks, in display order, with the edit rules the memory tools enforce."""

    def __init__(self, blocks: list[Block] | None = None) -> None:
        self.blocks: dict[str, Block] = {}
        for block in blocks or []:
            self.add(block)

    def add(self, block: Block) -> None:
        if block.label in self.blocks:
            raise ValueError(f"a block labelled {block.label!r} already exists")
        self.blocks[block.label] = block

    def get(self, label: str) -> Block:
        block = self.blocks.get(label)
        if block is None:
            known = ", ".join(self.blocks) or "none"
            raise MemoryEditError(f'no memory block labelled "{label}". Blocks: {known}.')
        return block

    def __iter__(self) -> Iterator[Block]:
        return iter(self.blocks.values())

    def append(self, label: str, content: str, tool_call_id: str | None = None) -> MemoryEdit:
        """Add `content` on a new line at the end of the block."""
        block = self._editable(label)
        if not content:
            raise MemoryEditError("content is empty; there is nothing to append.")
        new_value = f"{block.value}\n{content}" if block.value else content
        return self._set(block, new_value, tool_call_id)

    def replace(self, label: str, old_content: str, new_content: str, tool_call_id: str | None = None) -> MemoryEdit:
        """Replace the one occurrence of `old_content`; an empty `new_content` deletes it."""
        block = self._editable(label)
        if not old_content:
            raise MemoryEditError("old_content is empty; give the exact text to replace.")
        count = block.value.count(old_content)
        if count == 0:
            raise MemoryEditError(
                f'old_content was not found in block "{label}". Copy the exact text from the block.'
            )
        if count > 1:
            raise MemoryEditError(
                f'old_content occurs {count} times in block "{label}"; include more surrounding text '
                f"so it matches exactly once."
            )
        start = block.value.index(old_content)
        before, after = block.value[:start], block.value[start + len(old_content) :]
        if not new_content:
            before, after = _join_after_deletion(before, after)
        return self._set(block, before + new_content + after, tool_call_id)

    def set(self, label: str, value: str) -> MemoryEdit:
        """Set the whole value by hand, as the user: read-only blocks too, within the block's limit."""
        edit = self._set(self.get(label), value, None)
        edit.by = "user"
        return edit

    def _editable(self, label: str) -> Block:
        block = self.get(label)
        if block.read_only:
            raise MemoryEditError(f'block "{label}" is read-only and cannot be edited.')
        return block

    @staticmethod
    def _set(block: Block, new_value: str, tool_call_id: str | None) -> MemoryEdit:
        if len(new_value) > block.limit and len(new_value) > len(block.value):
            over = len(new_value) - block.limit
            raise MemoryEditError(
                f'this edit would make block "{block.label}" {len(new_value):,} characters, '
                f"{over:,} over its limit of {block.limit:,}. Shorten or remove something first."
            )
        edit = MemoryEdit(label=block.label, old_value=block.value, new_value=new_value, tool_call_id=tool_call_id)
        block.value = new_value
        return edit


def _join_after_deletion(before: str, after: str) -> tuple[str, str]:
    """When a deletion removed whole lines, drop the line break it would leave dangling."""
    if after.startswith("\n") and (before == "" or before.endswith("\n")):
        after = after[1:]
    elif after == "" and before.endswith("\n"):
        before = before[:-1]
    return before, after
