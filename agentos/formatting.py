"""How agents and their events read as text: shared by the line REPL, the TUI and the CLI."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from agentos.blocks import Block, MemoryEdit
from agentos.events import MemoryEdited, MessagesEvicted, ReplyIncomplete, Retrying, TurnFailed
from agentos.memory.tier import MemoryStats
from agentos.text import plural

if TYPE_CHECKING:
    from agentos.agent.agent import Agent


def short(text: str, limit: int = 80) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def who_made(edit: MemoryEdit) -> str:
    """Who made a core memory edit, in words: you, the model (and its call), an MCP client (and its name), or another
    agent sharing the block."""
    if edit.by == "user":
        return "you (by hand)"
    if edit.by == "mcp":
        client = (edit.tool_call_id or "").removeprefix("mcp:")
        return "an MCP client" + (f" ({client})" if client else "")
    if edit.by == "shared":
        other = (edit.tool_call_id or "").removeprefix("shared:")
        return f"agent {other or '(unknown)'} (a shared block)"
    return "the model" + (f" ({edit.tool_call_id})" if edit.tool_call_id else "")


def block_header(block: Block) -> str:
    flag = ", read-only" if block.read_only else ""
    excess = block.chars_over_limit
    over = f", {excess:,} over its limit: the model sees it cut until it is shortened" if excess else ""
    return f"[{block.label}] {len(block.value)}/{block.limit} chars{flag}{over}"


def format_blocks(blocks: list[Block]) -> str:
    """Every core memory block with its size and limit."""
    lines = []
    for block in blocks:
        lines.append(block_header(block))
        lines.extend(f"  {line}" for line in (block.value or "(empty)").splitlines())
    return "\n".join(lines)


def format_context(breakdown: dict[str, Any]) -> str:
    """The context window by part, in tokens (from `Agent.context_breakdown`)."""
    b = breakdown
    window = b["window"]
    lines = [f"Context: {b['total']:,} of {window:,} tokens ({100 * b['total'] / window:.0f}%), counted with {b['counter']}"]
    for key, label in (("system", "system instructions"), ("memory", "memory blocks"), ("tools", "tool schemas"),
                       ("summary", "summary"), ("messages", f"messages ({b['message_count']})")):
        lines.append(f"  {label:<22}{b[key]:>9,}")
    if b["correction"]:
        lines.append(f"  {'provider correction':<22}{b['correction']:>+9,}")
    older = plural(b["hidden"], "older message") + (" is" if b["hidden"] == 1 else " are")
    lines.append(f"  {older} out of context (in recall); alert at {b['warn_at']:.0%},")
    lines.append(f"  compact at {b['evict_at']:.0%} down to {b['target']:.0%}, keep the last {b['keep_last']}")
    return "\n".join(lines)


def describe_agent(agent: Agent) -> str:
    """The header of `agentos show`: model, window, each memory tier's counts, and the tools."""
    s = agent.state
    created = s.snapshot().created_at.astimezone()
    lines = [f"Agent {s.name}  model {s.model}  window {agent.window:,} tokens ({agent.window_source})  "
             f"created {created:%Y-%m-%d %H:%M}",
             f"{plural(len(s.context), 'message')} in context, {s.recall_count:,} in recall memory; "
             f"{plural(s.compactions, 'compaction')} so far",
             *agent.tiers.metadata(MemoryStats(s.message_count, s.hidden_count)),
             f"Tools: {', '.join(t.name for t in agent.tools)}"]
    return "\n".join(lines)


def describe_eviction(event: MessagesEvicted) -> str:
    """One line saying what the pager did."""
    how = "summarized" if event.summarized else "not summarized"
    note = f"; {event.note}" if event.note else ""
    return (f"⋯ {plural(event.count, 'old message')} moved out of context, {how} "
            f"({event.tokens_before:,}→{event.tokens_after:,} tokens{note})")


def describe_edit(event: MemoryEdited) -> str:
    """One line saying how a block changed."""
    delta = len(event.new_value) - len(event.old_value)
    return f"✎ memory [{event.label}] {delta:+d} chars: {short(event.new_value, 60)}"


def describe_retry(event: Retrying) -> str:
    """One line saying why a model call is retried and in how long: `rate limited, retrying in 4 s (attempt 1 of 3)`."""
    seconds = math.ceil(event.remaining - 1e-9)  # a countdown's float dust is not another second
    when = f"in {seconds} s" if seconds > 0 else "now"
    return f"{event.reason}, retrying {when} (attempt {event.attempt} of {event.max_retries})"


def describe_incomplete(event: ReplyIncomplete) -> str:
    return f"! {event.detail}"


def describe_failure(event: TurnFailed) -> str:
    kind = "" if event.kind in event.error else f" ({event.kind})"
    return f"error: {event.error}{kind}"


def ends_session(event: TurnFailed) -> bool:
    """Whether a failed turn means this session can no longer save the agent (deleted, or taken over)."""
    return event.kind in ("AgentDeletedError", "LeaseLostError")
