"""Token measures and wire encodings are kept by the layers that make them, keyed by message, not on the message."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator, Sequence

from agentos.message_cache import SLACK, MessageCache
from agentos.messages import Message, ToolCall
from agentos.providers.wire import Encode, EncodedSequence, dumps
from agentos.tokens import EstimateCounter, MessageSizes


def counting(derive: list[Message]) -> MessageCache[int]:
    def measure(message: Message) -> int:
        derive.append(message)
        return len(message.content)

    return MessageCache(measure)


def test_a_message_carries_no_cache() -> None:
    message = Message.user("hello")
    assert Message.__private_attributes__ == {} and message.__pydantic_private__ is None
    MessageSizes(EstimateCounter()).all_tokens([message], EstimateCounter())
    assert message.__pydantic_private__ is None and message.model_dump()["content"] == "hello"


def test_a_value_is_derived_once_per_message_and_anew_for_changed_content_or_tool_calls() -> None:
    derived: list[Message] = []
    cache = counting(derived)
    message = Message.user("hello")
    assert cache.get(message) == 5 and cache.get(message) == 5 and derived == [message]
    copy = message.model_copy()  # another object, though equal: its own entry
    cache.get(copy)
    message.content = "hello again"  # edited in place: derived anew
    assert cache.get(message) == 11
    message.tool_calls = [ToolCall(id="c", name="f")]
    cache.get(message)
    assert derived == [message, copy, message, message]


def test_a_kept_message_holds_its_id() -> None:
    """The entry holds its message, so no new message can take the id of one that is kept."""
    cache = counting([])
    message = Message.user("hello")
    alive = weakref.ref(message)
    cache.get(message)
    del message
    gc.collect()
    assert alive() is not None


def test_a_renewed_cache_keeps_only_what_is_asked_for_again() -> None:
    derived: list[Message] = []
    cache = counting(derived)
    old, kept = Message.user("old"), Message.user("kept")
    cache.get(old), cache.get(kept)
    renewed = cache.renewed()
    assert renewed.get(kept) == 4 and len(renewed) == 1 and derived == [old, kept]  # found, not derived again
    gone = weakref.ref(old)
    newest = renewed.renewed()
    derived.clear()
    del cache, renewed, old
    gc.collect()
    assert gone() is None and newest.get(kept) == 4 and derived == []


class CountingCounter:
    """An exact counter (as tiktoken is) that records each text it counts."""

    name = "counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())

    def recalibrated(self, nbytes: int, tokens: int) -> CountingCounter:
        return self


def test_message_sizes_keep_what_the_sequence_holds_and_measure_only_the_new() -> None:
    counter = CountingCounter()
    sizes = MessageSizes(counter)
    context = [Message.user(f"message {i}") for i in range(3000)]
    sizes.all_tokens(context, counter)
    context.append(Message.assistant("one more"))
    counter.texts.clear()
    sizes.all_tokens(context, counter)
    assert counter.texts == ["one more"]  # a continuation measures only its tail
    context = [Message.user("summary"), *context[2000:]]  # evicted from the front: a new sequence
    counter.texts.clear()
    sizes.all_tokens(context, counter)
    assert counter.texts == ["summary"] and len(sizes._kept) == len(context)
    for i in range(3 * SLACK):  # measured outside the sequence (summaries): kept within a bound
        sizes.tokens(Message.user(f"note {i}"), counter)
    assert len(sizes._kept) <= len(context) + SLACK + 1


def recording_sequence() -> tuple[EncodedSequence, list[Message]]:
    """An encoded sequence of one item per message, and the messages it encoded, in order."""
    encoded: list[Message] = []

    def encode(message: Message) -> bytes:
        encoded.append(message)
        return dumps(message.content)

    def items(messages: Sequence[Message], first: bool, one: Encode) -> Iterator[tuple[int, bytes]]:
        return ((i, one(m)) for i, m in enumerate(messages))

    return EncodedSequence(items, encode), encoded


def test_an_encoded_sequence_keeps_the_encodings_its_sequence_holds() -> None:
    sequence, encoded = recording_sequence()
    context = [Message.user(f"m{i}") for i in range(300)]
    sequence.items(context)
    sequence.items([*context, Message.user("new")])
    assert len(encoded) == 301
    later = [Message.user("summary"), *context[200:]]  # a new sequence: only its new message is encoded
    assert sequence.items(later) == [dumps(m.content) for m in later]
    assert len(encoded) == 302 and len(sequence._encodings) == len(later)


def test_a_short_sequence_in_between_leaves_the_long_one_to_be_found_again() -> None:
    """A summarizer's request through the same provider does not cost the agent's context its encodings."""
    sequence, encoded = recording_sequence()
    context = [Message.user(f"m{i}") for i in range(300)]
    sequence.items(context)
    sequence.items([Message.user("summarize this")])
    sequence.items([Message.user("summary"), *context[100:]])
    assert len(encoded) == 302
