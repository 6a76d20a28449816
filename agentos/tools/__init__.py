"""Tools the model can call: the @tool decorator, the registry that runs them, built-in memory tools."""

from agentos.tools.decorator import Tool, ToolContext, tool
from agentos.tools.registry import ToolOutcome, ToolRegistry

__all__ = ["Tool", "ToolContext", "tool", "ToolOutcome", "ToolRegistry"]
