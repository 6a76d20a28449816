"""Tools the model can call: the @tool decorator, the registry that runs them, built-in memory tools."""

from agentos.tools.context import MemoryAccess, ToolContext
from agentos.tools.decorator import Tool, tool
from agentos.tools.registry import ToolOutcome, ToolRegistry

__all__ = ["MemoryAccess", "Tool", "ToolContext", "tool", "ToolOutcome", "ToolRegistry"]
