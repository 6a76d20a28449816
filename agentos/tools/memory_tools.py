"""The built-in core memory tools the model uses to edit its own blocks."""

from __future__ import annotations

from agentos.blocks import Block
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool, tool


def _confirm(block: Block, verb: str) -> str:
    return f'{verb} block "{block.label}"; it now has {len(block.value):,} of {block.limit:,} characters.'


@tool
def core_memory_append(label: str, content: str, ctx: ToolContext) -> str:
    """Append text to one of your core memory blocks, which you always see in your system prompt.

    Args:
        label: The block to edit, for example "human" or "persona".
        content: The text to add; it goes on a new line at the end of the block.
    """
    return _confirm(ctx.memory.append_block(label, content), "Appended to")


@tool
def core_memory_replace(label: str, old_content: str, new_content: str, ctx: ToolContext) -> str:
    """Replace exact text in one of your core memory blocks. An empty new_content deletes the old text.

    Args:
        label: The block to edit, for example "human" or "persona".
        old_content: The exact text to replace; it must occur exactly once in the block.
        new_content: The text to put in its place; an empty string deletes old_content.
    """
    block = ctx.memory.replace_block(label, old_content, new_content)
    return _confirm(block, "Deleted text from" if not new_content else "Updated")


def core_memory_tools() -> list[Tool]:
    """The tools every agent has for its core memory."""
    return [core_memory_append, core_memory_replace]
