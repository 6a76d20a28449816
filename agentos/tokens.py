"""Token counting: tiktoken when its encoding is on disk, else a bytes-based estimate calibrated to the provider.

Nothing here touches the network: tiktoken is used only if it is installed *and* its encoding
file is already in its local cache.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from agentos.errors import ConfigError
from agentos.message_cache import MessageCache
from agentos.messages import Message
from agentos.providers.models import parse_spec

MESSAGE_OVERHEAD = 4  # role and separators, per message (OpenAI's published figure)
DEFAULT_TOKENS_PER_BYTE = 0.325  # bytes/4 x 1.3: deliberately high until calibrated
RATIO_TOLERANCE = 0.01  # a calibrated ratio moves only when a report is off by more; the offset corrects the rest
DISABLE_TIKTOKEN_VARIABLE = "AGENTOS_NO_TIKTOKEN"

_ENCODING_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


class TokenCounter(Protocol):
    """Counts tokens of text; `recalibrated` is the counter that learned from a provider-reported count."""

    name: str

    def count(self, text: str) -> int: ...

    def recalibrated(self, nbytes: int, tokens: int) -> TokenCounter: ...


class EstimateCounter:
    """Bytes times a ratio learned from the provider's reported input tokens. Immutable: learning makes a new one."""

    name = "estimate"

    def __init__(self, tokens_per_byte: float | None = None) -> None:
        self.calibrated = tokens_per_byte is not None
        self.tokens_per_byte = DEFAULT_TOKENS_PER_BYTE if tokens_per_byte is None else tokens_per_byte

    def count(self, text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) * self.tokens_per_byte) if text else 0

    def recalibrated(self, nbytes: int, tokens: int) -> EstimateCounter:
        """The counter moved to what the provider measured (the same one for tiny samples); later reports are
        averaged in."""
        if nbytes < 200 or tokens <= 0:
            return self
        observed = min(max(tokens / nbytes, 0.05), 1.5)
        if not self.calibrated:
            return EstimateCounter(observed)
        if abs(observed - self.tokens_per_byte) <= RATIO_TOLERANCE * self.tokens_per_byte:
            return self  # a steady ratio keeps every message's count (and the pager's cache of them) valid
        return EstimateCounter(0.5 * (self.tokens_per_byte + observed))


class TiktokenCounter:
    """Exact counts with a tiktoken encoding."""

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self.name = f"tiktoken/{encoding.name}"

    def count(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=())) if text else 0

    def recalibrated(self, nbytes: int, tokens: int) -> TiktokenCounter:
        """Exact already; the provider's anchor corrects any per-model difference."""
        return self


def _tiktoken_cache_dir() -> Path:
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def local_tiktoken(encoding: str = "o200k_base") -> TiktokenCounter | None:
    """A tiktoken counter if tiktoken is installed and the encoding is cached locally; else None."""
    if os.environ.get(DISABLE_TIKTOKEN_VARIABLE) == "1" or encoding not in _ENCODING_URLS:
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    cached = _tiktoken_cache_dir() / hashlib.sha1(_ENCODING_URLS[encoding].encode()).hexdigest()
    if not cached.is_file():
        return None
    try:
        return TiktokenCounter(tiktoken.get_encoding(encoding))
    except Exception:  # noqa: BLE001 - a broken cache means we estimate instead
        return None


def tiktoken_encoding(model: str) -> str:
    """The tiktoken encoding of a model spec's model (a bare model name, or a spec it cannot read, is taken whole)."""
    try:
        name = parse_spec(model).model.lower()
    except ConfigError:
        name = model.lower()
    return "cl100k_base" if name.startswith(("gpt-4-", "gpt-3.5")) or name == "gpt-4" else "o200k_base"


def counter_for(model: str) -> TokenCounter:
    """The best counter available offline for a model spec."""
    return local_tiktoken(tiktoken_encoding(model)) or EstimateCounter()


def message_text(message: Message) -> str:
    """The text of a message that a provider sends: content, tool names and arguments."""
    parts = [message.content]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(call.arguments)
    return "\n".join(p for p in parts if p)


def count_message(counter: TokenCounter, message: Message) -> int:
    """Tokens one message takes in a request, with its per-message overhead."""
    return counter.count(message_text(message)) + MESSAGE_OVERHEAD


class MessageSizes:
    """Per-message token counts, kept so that a call counts only the messages that are new.

    Each message's raw measure (bytes for the estimator, tokens for tiktoken) is kept in a cache of
    this object's, keyed by the message, so a recalibrated ratio applies at once without measuring
    again; it keeps about what the last sequences asked about hold (see `MessageCache.fitted`).
    The counts of the last sequence asked about are kept too: the next call, the same messages with a
    few more at the end, measures and counts only those few.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self._estimating = isinstance(counter, EstimateCounter)
        self._exact = None if self._estimating else counter
        self._kept: MessageCache[int] = MessageCache(self._raw_measure)
        self._seen: tuple[Message, ...] = ()  # the last sequence counted
        self._measures: list[int] = []  # its raw measures
        self._measured = 0  # their sum
        self._ratio: float | None = None  # the ratio `_tokens` were counted with
        self._tokens: list[int] = []  # tokens of the first len(_tokens) messages of `_seen`

    def _raw_measure(self, message: Message) -> int:
        text = message_text(message)
        return len(text.encode("utf-8")) if self._exact is None else self._exact.count(text)

    def _measure(self, message: Message) -> int:
        """The message's raw measure, kept (of messages asked about outside the sequence, a bounded number)."""
        self._kept = self._kept.fitted(len(self._seen))
        return self._kept.get(message)

    def _follow(self, messages: Sequence[Message]) -> None:
        """Make `messages` the sequence kept, measuring only what is not a continuation of the last one."""
        current = tuple(messages)
        known = len(self._seen)
        if current is self._seen:
            return
        if len(current) < known or current[:known] != self._seen:  # compared by identity first: cheap
            known = 0
            self._measures, self._measured, self._tokens = [], 0, []
            self._kept = self._kept.fitted(len(current))  # keeps about what this sequence holds
        self._seen = current
        measure = self._kept.get
        fresh = [measure(m) for m in current[known:]]
        self._measures += fresh
        self._measured += sum(fresh)

    def nbytes(self, message: Message) -> int:
        """UTF-8 size of the message's text (measured once when estimating)."""
        if self._estimating:
            return self._measure(message)
        return len(message_text(message).encode("utf-8"))

    def total_nbytes(self, messages: Sequence[Message]) -> int:
        """UTF-8 size of all the messages' texts."""
        if not self._estimating:
            return sum(self.nbytes(m) for m in messages)
        self._follow(messages)
        return self._measured

    def _scaled(self, measure: int, counter: TokenCounter) -> int:
        if isinstance(counter, EstimateCounter):
            measure = math.ceil(measure * counter.tokens_per_byte) if measure else 0
        return measure + MESSAGE_OVERHEAD

    def tokens(self, message: Message, counter: TokenCounter) -> int:
        """Tokens the message takes in a request under `counter`, with its per-message overhead."""
        return self._scaled(self._measure(message), counter)

    def all_tokens(self, messages: Sequence[Message], counter: TokenCounter) -> tuple[int, ...]:
        """`tokens` of each message, counting only those new since the last call under the same ratio."""
        self._follow(messages)
        ratio = counter.tokens_per_byte if isinstance(counter, EstimateCounter) else None
        if ratio != self._ratio:
            self._ratio, self._tokens = ratio, []
        done = len(self._tokens)
        self._tokens += [self._scaled(m, counter) for m in self._measures[done:]]
        return tuple(self._tokens)
