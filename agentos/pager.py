"""The pager's policy: a pure function from (messages, token counts, budget) to a plan. No I/O.

The caller (agentos.agent.paging) performs the plan: it sends the alert, writes the summary,
evicts the planned prefix of the in-context messages and truncates the planned messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentos.messages import Message

Reason = Literal["auto", "overflow", "manual"]
Action = Literal["ok", "alert", "evict", "too_large"]

MIN_TRUNCATED_TOKENS = 16
ALERT_NAME = "memory_pressure"  # the `name` of the pager's own alert messages (user-role, but not the user's)
MARKER_TOKENS = 96  # what a plain "N messages were evicted" marker may add to the summary message


@dataclass(frozen=True)
class Budget:
    """The window and the thresholds, as fractions of it."""

    window: int
    warn_at: float = 0.75
    evict_at: float = 0.90
    target: float = 0.60
    keep_last: int = 3
    summary_tokens: int = 0  # room reserved for the summary written after an eviction
    truncate_floor: int = 256  # a truncated message keeps at least this many tokens if it can

    def tokens(self, fraction: float) -> int:
        return int(self.window * fraction)


@dataclass(frozen=True)
class Counts:
    """Token counts per part of the request. `offset` corrects the estimate to the provider's last report."""

    system: int = 0
    memory: int = 0
    tools: int = 0
    summary: int = 0
    messages: tuple[int, ...] = ()
    offset: int = 0

    @property
    def fixed(self) -> int:
        """What can never be evicted: instructions, memory blocks and tool schemas."""
        return self.system + self.memory + self.tools

    @property
    def total(self) -> int:
        return max(0, self.fixed + self.summary + sum(self.messages) + self.offset)


@dataclass(frozen=True)
class Plan:
    """What to do before the next model call.

    `evict` is how many of the oldest messages leave the context; `truncate` lists
    (message index, tokens to keep, in the units of `Counts`) for messages that stay but must
    shrink; token totals are in provider units (scaled after an overflow); `alerted` is the
    pressure-episode flag to store for next time.
    """

    action: Action
    tokens_before: int
    tokens_after: int
    evict: int = 0
    truncate: tuple[tuple[int, int], ...] = field(default_factory=tuple)
    alerted: bool = False
    reason: str = ""
    summary_tokens: int = 0  # the most the new summary may take (in `Counts` units)


def valid_cuts(messages: Sequence[Message]) -> list[bool]:
    """cuts[k] is True when evicting messages[:k] separates no tool call from any of its results."""
    n = len(messages)
    calls: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for c in m.tool_calls:
                calls.setdefault(c.id, i)
    blocked = [0] * (n + 2)
    for j, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id in calls:
            i = calls[m.tool_call_id]
            if i < j:  # cuts i+1..j would split the call at i from its result at j
                blocked[i + 1] += 1
                blocked[j + 1] -= 1
    cuts, running = [], 0
    for k in range(n + 1):
        running += blocked[k]
        cuts.append(running == 0)
    return cuts


def _truncations(sizes: Sequence[int], start: int, excess: int, floor: int,
                 protected: frozenset[int] = frozenset()) -> tuple[list[tuple[int, int]], int]:
    """Shrink the largest of sizes[start:] (never below `floor`, never those `protected`) until `excess` tokens
    are gone."""
    plan: dict[int, int] = {}
    order = sorted((i for i in range(start, len(sizes)) if i not in protected), key=lambda i: (-sizes[i], i))
    for i in order:
        if excess <= 0:
            break
        current = plan.get(i, sizes[i])
        if current <= floor:
            continue
        keep = max(floor, current - excess)
        excess -= current - keep
        plan[i] = keep
    return sorted(plan.items()), excess


def plan(
    messages: Sequence[Message],
    counts: Counts,
    budget: Budget,
    *,
    alerted: bool = False,
    reason: Reason = "auto",
    attempt: int = 1,
) -> Plan:
    """Decide whether to alert, evict (how many) and truncate (what) before the next call.

    `reason`: "auto" before every call, "overflow" after the provider rejected the request
    (attempt counts the retries), "manual" for a forced compaction.
    """
    if len(counts.messages) != len(messages):
        raise ValueError("counts.messages must have one count per message")
    total = counts.total
    window = budget.window
    if counts.fixed > window:
        why = (
            f"the system prompt alone takes {counts.fixed:,} tokens (instructions {counts.system:,}, "
            f"memory blocks {counts.memory:,}, tool schemas {counts.tools:,}), more than the model's "
            f"context window of {window:,} tokens"
        )
        return Plan("too_large", total, total, alerted=alerted, reason=why)
    warn, hard, target = budget.tokens(budget.warn_at), budget.tokens(budget.evict_at), budget.tokens(budget.target)
    if reason == "auto" and total <= hard:
        if total > warn:
            return Plan("ok" if alerted else "alert", total, total, alerted=True,
                        reason="" if alerted else f"{total:,} of {window:,} tokens in use")
        return Plan("ok", total, total, alerted=False)

    # How big the request really is: after an overflow the provider says "over the window".
    assumed = total
    if reason == "overflow":
        assumed = int(max(total, window + 1) * (1 + 0.5 * (attempt - 1)))
    scale = assumed / total if total else 1.0
    n = len(messages)
    sizes = [round(s * scale) for s in counts.messages]
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)
    cuts = valid_cuts(messages)
    # what the next call answers is never cut: the newest message from the user (not the pager's alert)
    newest = next((i for i in range(n - 1, -1, -1) if messages[i].role == "user" and messages[i].name != ALERT_NAME),
                  None)
    protected = frozenset() if newest is None else frozenset({newest})
    unscaled_prefix = [0]
    for s in counts.messages:
        unscaled_prefix.append(unscaled_prefix[-1] + s)

    def allowed(k: int) -> int:
        """The new summary's size limit: never more than what it replaces, nor the budget's share."""
        freed = counts.summary + unscaled_prefix[k]
        return max(counts.summary + MARKER_TOKENS, min(budget.summary_tokens, freed))

    def after(k: int) -> int:
        if k == 0:
            return assumed
        return max(0, assumed - prefix[k] + round((allowed(k) - counts.summary) * scale))

    def choose(limit: int) -> int:
        """The fewest messages (at most `limit`) whose eviction reaches the target, else all it may."""
        candidates = [k for k in range(1, limit + 1) if cuts[k]]
        if not candidates:
            return 0
        if reason == "manual":
            return candidates[-1]
        return next((c for c in candidates if after(c) <= target), candidates[-1])

    # The last few messages stay, unless the request would stay over the eviction threshold with them: then
    # (as after a rejection) everything before the question may go, and the recall tier still holds it all.
    question = min(protected) if protected else None
    k = choose(question if reason == "overflow" and question is not None else max(0, n - budget.keep_last))
    if reason != "overflow" and question is not None and question > k and after(k) > hard:
        k = choose(question)
    tokens_after = after(k)
    kept = list(sizes)
    truncated: dict[int, int] = {}
    if tokens_after > hard or (reason == "overflow" and tokens_after > target):
        floor = min(budget.truncate_floor, max(MIN_TRUNCATED_TOKENS, target // 8))
        for this_floor in (floor, MIN_TRUNCATED_TOKENS):
            if tokens_after <= target or (this_floor != floor and tokens_after <= hard):
                break
            cuts_made, _ = _truncations(kept, k, tokens_after - target, this_floor, protected)
            for i, keep in cuts_made:
                tokens_after -= kept[i] - keep
                kept[i] = keep
                truncated[i] = keep
    still_over = f"; still {tokens_after:,} tokens, over the window of {window:,}" if tokens_after > window else ""
    if k == 0 and not truncated:
        note = "nothing can be evicted" if reason != "auto" or tokens_after > hard else ""
        return Plan("ok", total, tokens_after, alerted=alerted and tokens_after > warn, reason=note + still_over)
    unscaled = {i: max(1, int(keep / scale)) for i, keep in truncated.items()}
    keep_counts = tuple(sorted((i, keep) for i, keep in unscaled.items() if keep < counts.messages[i]))
    if k == 0 and not keep_counts:
        return Plan("ok", total, after(0), alerted=alerted and total > warn, reason="nothing can be evicted" + still_over)
    return Plan("evict", total, tokens_after, evict=k, truncate=keep_counts,
                alerted=alerted and tokens_after > warn, reason=reason + still_over,
                summary_tokens=allowed(k) if k else counts.summary)
