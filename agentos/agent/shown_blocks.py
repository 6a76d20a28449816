"""What of each memory block the system prompt shows: at most the block's limit, and all blocks together at most a
share of the context window. A cut block ends with a one-line notice asking the model to shorten it; the stored
block always stays whole (the model's own edits, or `agentos memory NAME set`, shorten it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentos.blocks import Block
from agentos.tokens import TokenCounter

BLOCKS_SHARE = 0.5  # the most of the context window the memory blocks may fill in the prompt
MAX_TOKENS_PER_CHAR = 6  # no counter makes more of one character (4 UTF-8 bytes, at most 1.5 tokens a byte)
ROUNDS = 4  # cuts tried until the blocks fit their room (blocks differ in tokens per character)


@dataclass(frozen=True)
class BlockRoom:
    """How much of the prompt the blocks may fill: `tokens`, as `counter` counts them."""

    tokens: int
    counter: TokenCounter


def block_room(window: int, counter: TokenCounter) -> BlockRoom:
    """The blocks' share of a `window`-token context window."""
    return BlockRoom(max(1, int(window * BLOCKS_SHARE)), counter)


@dataclass(frozen=True)
class Cut:
    """A block the prompt shows cut: its label, its stored size, the characters shown, and its limit."""

    label: str
    chars: int
    shown: int
    limit: int
    read_only: bool = False

    @property
    def over_limit(self) -> bool:
        return self.chars > self.limit


def cut_notice(cut: Cut) -> str:
    """The line a cut block ends with in the prompt: what was cut, why, and how the model shortens the block."""
    why = [f"it is over its limit of {cut.limit:,}"] if cut.over_limit else []
    if cut.shown < min(cut.chars, cut.limit):
        why.append("the context window has no room for more")
    fix = ("it is read-only to you, so ask the user to shorten it (agentos memory set)" if cut.read_only else
           "shorten it with core_memory_replace (an empty new_content deletes text) and the rest comes into view")
    return (f"[agentos: this block was cut from {cut.chars:,} to {cut.shown:,} characters for this prompt because "
            f"{' and '.join(why)}. The rest is stored but hidden from you: {fix}.]")


def _shown_value(block: Block, shown: int) -> str:
    if shown >= len(block.value):
        return block.value
    cut = Cut(block.label, len(block.value), shown, block.limit, block.read_only)
    return f"{block.value[:shown]}\n{cut_notice(cut)}"


def _level(caps: list[int], budget: int) -> list[int]:
    """`caps` lowered, the largest first, to one common level so that together they are at most `budget`."""
    if sum(caps) <= budget:
        return caps
    remaining, count = max(0, budget), len(caps)
    level = 0
    for index, cap in enumerate(sorted(caps)):
        share = remaining // (count - index)
        if cap > share:
            level = share
            break
        remaining -= cap
    return [min(cap, level) for cap in caps]


def shown_lengths(blocks: Sequence[Block], room: BlockRoom | None) -> list[int]:
    """How many characters of each block the prompt shows: at most its limit and, with a `room`, so few that the
    blocks (notices included) fit it, the largest cut first."""
    caps = [min(len(b.value), b.limit) for b in blocks]
    if room is None:
        return caps
    for _ in range(ROUNDS):
        if sum(caps) * MAX_TOKENS_PER_CHAR <= room.tokens:
            break  # fits, whatever the counter
        used = sum(room.counter.count(_shown_value(b, cap)) for b, cap in zip(blocks, caps, strict=True))
        if used <= room.tokens:
            break
        total = sum(caps)
        caps = _level(caps, min(total - 1, int(total * room.tokens / used)))
    return caps


def shown_blocks(blocks: Sequence[Block], room: BlockRoom | None) -> list[Block]:
    """The blocks as the prompt shows them: the same objects where whole, copies cut and noted where not."""
    lengths = shown_lengths(blocks, room)
    return [b if n >= len(b.value) else b.model_copy(update={"value": _shown_value(b, n)})
            for b, n in zip(blocks, lengths, strict=True)]


def cuts(blocks: Sequence[Block], room: BlockRoom | None) -> list[Cut]:
    """The blocks the prompt shows cut, with their sizes."""
    return [Cut(b.label, len(b.value), n, b.limit, b.read_only)
            for b, n in zip(blocks, shown_lengths(blocks, room), strict=True) if n < len(b.value)]
