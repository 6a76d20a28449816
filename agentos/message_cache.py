"""Values a layer derives from messages (a token measure, a wire encoding), kept by that layer, not on the message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from agentos.messages import Message, ToolCall

T = TypeVar("T")

# (the message, the content and tool calls the value was derived from, the value)
Entry = tuple[Message, str, list[ToolCall], T]
SLACK = 64  # entries kept beyond what the sequence in use holds before the older ones are let go


class MessageCache(Generic[T]):
    """`derive(message)`, kept per message object and derived anew when its content or tool calls are other objects.

    Keyed by identity: each entry holds its message, so no other message can take its id while it is kept.
    `renewed()` starts a new generation that keeps only what is asked for again; `fitted(count)` renews once
    the entries outgrow a sequence of `count` messages, so a caller keeps about what its last sequences hold.
    """

    __slots__ = ("_derive", "_earlier", "_entries")

    def __init__(self, derive: Callable[[Message], T], earlier: dict[int, Entry[T]] | None = None) -> None:
        self._derive = derive
        self._earlier: dict[int, Entry[T]] = earlier or {}
        self._entries: dict[int, Entry[T]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, message: Message) -> T:
        """The value for `message`: the kept one if it was derived from this very content, else derived now."""
        key = id(message)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is message and entry[1] is message.content and entry[2] is message.tool_calls:
            return entry[3]
        entry = self._earlier.get(key)
        if entry is None or entry[0] is not message or entry[1] is not message.content \
                or entry[2] is not message.tool_calls:
            entry = (message, message.content, message.tool_calls, self._derive(message))
        self._entries[key] = entry
        return entry[3]

    def renewed(self) -> MessageCache[T]:
        """A cache that finds this one's values but keeps only those asked for again (the rest are let go)."""
        return MessageCache(self._derive, self._entries)

    def fitted(self, count: int) -> MessageCache[T]:
        """This cache while it holds no more than `count` messages and SLACK more, else `renewed()`: what a
        sequence of `count` messages is kept with (a short one in between, such as a summarizer's request,
        leaves the previous generation to be found again)."""
        return self if len(self._entries) <= count + SLACK else self.renewed()
