"""agentos: an agent runtime in which the model manages its own memory.

Heavy modules (LanceDB, provider SDKs) are imported lazily so the CLI starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentos.version import __version__

if TYPE_CHECKING:
    from agentos.agent.agent import Agent
    from agentos.tools.decorator import tool

__all__ = ["Agent", "tool", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Agent":
        from agentos.agent.agent import Agent

        return Agent
    if name == "tool":
        from agentos.tools.decorator import tool

        return tool
    raise AttributeError(name)
