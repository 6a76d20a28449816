"""What one model call of an agent is asked with: the request, the pager's view of it, and the output cap.

Every function here reads; none changes the agent. The request is built once per step (again only when the pager
changed the context), from the state, the prompts, the tiers' metadata lines and the tool list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentos.agent.paging import PagerView
from agentos.agent.prompts import PromptRenderer
from agentos.agent.state import AgentSettings
from agentos.agent.turn_state import TurnState
from agentos.blocks import Block
from agentos.config import configured_window
from agentos.memory.tier import MemoryStats
from agentos.messages import Message, utc_now
from agentos.providers.base import ModelRequest, Provider
from agentos.providers.models import LOCAL_FAMILIES
from agentos.tools.decorator import Tool

MIN_LOCAL_OUTPUT_CAP = 256  # a local model's default output cap never goes below this, however small its window


def output_cap(settings: AgentSettings, provider: Provider | None, window: int) -> int | None:
    """The most tokens one model call may write: the agent's setting; for a local server (where a rambling small
    model otherwise writes until the server's window runs out) a quarter of the window, within the model's limit;
    else None (the provider's own default)."""
    setting = settings.max_output_tokens
    if setting or getattr(provider, "name", None) not in LOCAL_FAMILIES:
        return setting
    limit = getattr(getattr(provider, "info", None), "max_output_tokens", None) or window
    return max(MIN_LOCAL_OUTPUT_CAP, min(limit, window // 4))


def reads_text_calls(settings: AgentSettings, provider: Provider | None) -> bool:
    """Whether a reply that is a tool call written as text runs as that call (see `AgentSettings.text_tool_calls`)."""
    if settings.text_tool_calls is not None:
        return settings.text_tool_calls
    return getattr(provider, "name", None) in LOCAL_FAMILIES


def window_source(settings: AgentSettings, model: str, provider: Provider | None) -> str:
    """Where the context window figure comes from: the agent's setting, the config file, the server, or the
    model catalogue."""
    if settings.context_window:
        return "this agent's setting"
    if configured_window(model):
        return "context_windows in the config file"
    return getattr(provider, "window_source", None) or "model catalogue"


def overfull(breakdown: dict[str, Any]) -> str | None:
    """How far the next request (a `context_breakdown`) is over its window, said in words; None when it fits."""
    total, window = breakdown["total"], breakdown["window"]
    if total <= window:
        return None
    return f"the next request takes {total:,} tokens, {round(100 * total / window)}% of its {window:,}-token context window"


def window_hint(name: str, window: int, source: str) -> str:
    """What a request too big for the window adds: the window, where its figure comes from, and how to change it."""
    return (f"The context window is {window:,} tokens ({source}); if the model takes more, change it with "
            f"`agentos window {name} TOKENS`.")


@dataclass(frozen=True)
class RequestBuilder:
    """Builds an agent's requests from its state: prompts, the tiers' metadata lines, tools and the output cap."""

    prompts: PromptRenderer
    tier_lines: Callable[[MemoryStats], list[str]]
    tools: Sequence[Tool]
    max_output_tokens: int | None

    def build(self, state: TurnState, pending: Sequence[Message] = (),
              blocks: Sequence[Block] | None = None) -> ModelRequest:
        """The request for the next model call; `pending` messages are about to join the context and are in it as
        if they had, and `blocks` (an edit's preview) stand in for the state's."""
        stats = MemoryStats(message_count=state.message_count + len(pending), hidden_count=state.hidden_count)
        dynamic = self.prompts.dynamic(state.blocks_view() if blocks is None else blocks, now=utc_now(),
                                       last_edit=state.last_memory_edit_at, tier_lines=self.tier_lines(stats))
        summary = self.prompts.summary_message(state.summary, state.hidden_count)
        return ModelRequest(
            system_static=self.prompts.static(),
            system_dynamic=dynamic,
            messages=([summary] if summary else []) + [*state.context, *pending],
            tools=list(self.tools),
            max_output_tokens=self.max_output_tokens,
        )


def pager_view(state: TurnState, request: ModelRequest) -> PagerView:
    """What the pager reads of the state for one decision about `request`."""
    return PagerView(request=request, context=state.context, summary=state.summary,
                     message_count=state.recall_count, alerted=state.alerted, calibration=state.calibration)
