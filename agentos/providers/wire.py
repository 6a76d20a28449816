"""Request bodies as the bytes an SDK would send, assembled from pieces encoded once and reused.

The SDKs turn keyword arguments into a body on every call by walking every message (OpenAI's
`maybe_transform`, Anthropic's `copy_tree`), which costs a fraction of a millisecond per message
per call. A provider here encodes each message once (messages do not change once made), keeps
the bytes in a cache of its own keyed by the message, and joins them; the SDK then sends the bytes as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from agentos.message_cache import MessageCache
from agentos.messages import Message

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """JSON as both SDKs write a body: UTF-8, no spaces, no NaN."""
    return _encoder.encode(value).encode("utf-8")


def json_array(items: Iterable[bytes]) -> bytes:
    """A JSON array of already encoded values."""
    return b"[" + b",".join(items) + b"]"


def json_object(fields: Sequence[tuple[str, bytes]]) -> bytes:
    """A JSON object of already encoded values, in the order given."""
    return b"{" + b",".join(dumps(key) + b":" + value for key, value in fields) + b"}"


Encode = Callable[[Message], bytes]
Items = Callable[[Sequence[Message], bool, Encode], Iterator[tuple[int, bytes]]]


class EncodedSequence:
    """The JSON array items of a message sequence, remembered so that the next call's sequence (the same
    messages with more at the end) encodes only its tail.

    `items(messages, first, encoded)` yields (index of the group's first message, encoded item) for each group
    of messages that becomes one wire item; `first` says whether `messages` starts the sequence, and `encoded`
    is `encode` of one message, kept per message (a copy with changed content or tool calls is encoded anew).
    A group only ever grows at the end, so everything before the last group of the sequence kept is reused.
    """

    def __init__(self, items: Items, encode: Encode) -> None:
        self._items_of = items
        self._encodings: MessageCache[bytes] = MessageCache(encode)
        self._seen: tuple[Message, ...] = ()
        self._items: list[bytes] = []
        self._starts: list[int] = []

    def items(self, messages: Sequence[Message]) -> list[bytes]:
        current = tuple(messages)
        known = len(self._seen)
        if self._items and len(current) >= known and current[:known] == self._seen:  # identity first: cheap
            start, kept = self._starts[-1], len(self._items) - 1
        else:  # a new sequence, walked whole: the encodings kept are fitted to it
            start, kept = 0, 0
            self._encodings = self._encodings.fitted(len(current))
        fresh = list(self._items_of(current[start:], kept == 0, self._encodings.get))
        self._items = self._items[:kept] + [item for _, item in fresh]
        self._starts = self._starts[:kept] + [start + offset for offset, _ in fresh]
        self._seen = current
        return self._items


class EncodedOnce:
    """One value's encoding, remade only when the objects it came from change (a provider's tool list)."""

    def __init__(self, encode: Callable[[list[Any]], bytes]) -> None:
        self._encode = encode
        self._sources: list[Any] = []
        self._data = b""

    def get(self, sources: list[Any]) -> bytes:
        if len(sources) != len(self._sources) or any(a is not b for a, b in zip(sources, self._sources)):
            self._data = self._encode(sources)
            self._sources = list(sources)
        return self._data
