"""The secret gate: API keys, private keys, passwords given as such, card numbers and an agent's own patterns are
replaced by a placeholder before text is stored or sent to the model again. Findings are counted by kind; no part of
a secret is ever kept, returned or logged. The detectors are in `secret_detectors`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from agentos.memory.secret_detectors import BUILT_IN, Finder, regex_finder, secret_key
from agentos.messages import Message

PLACEHOLDER = "[secret removed: {kind}]"
PLACED = re.compile(r"\[secret removed: [^\]\n]{1,60}\]")  # a placeholder already in the text is left as it is
CUSTOM = "custom secret"  # what a match of the agent's own patterns is called


@dataclass(frozen=True)
class Redacted:
    """Text with its secrets replaced, and how many of each kind were removed."""

    text: str
    found: dict[str, int] = field(default_factory=dict)


def check_pattern(pattern: str) -> str:
    """`pattern` when it is a usable regular expression for the gate; ValueError saying why it is not."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    if compiled.fullmatch(""):
        raise ValueError(f"{pattern!r} matches empty text, so it would match everywhere; make it match the secret")
    return pattern


class SecretGate:
    """The detectors of one agent (the built-in ones and its own patterns); `enabled=False` lets everything pass."""

    def __init__(self, enabled: bool = True, patterns: Sequence[str] = ()) -> None:
        self.enabled = enabled
        own = [(CUSTOM, regex_finder(re.compile(check_pattern(p)))) for p in patterns]
        self.finders: list[tuple[str, Finder]] = [*BUILT_IN, *own] if enabled else []

    def redact(self, text: str) -> Redacted:
        """`text` with every secret replaced by a placeholder naming its kind."""
        if not self.finders or not text:
            return Redacted(text)
        spans: list[tuple[int, int, int, str]] = []
        for rank, (kind, find) in enumerate(self.finders):
            spans += [(start, end, rank, kind) for start, end in find(text)]
        if not spans:
            return Redacted(text)
        placed = [m.span() for m in PLACED.finditer(text)]
        spans.sort(key=lambda s: (s[0], s[0] - s[1], s[2]))  # leftmost, then longest, then the most specific kind
        parts: list[str] = []
        found, pos, p = Counter[str](), 0, 0
        for start, end, _, kind in spans:
            while p < len(placed) and placed[p][1] <= start:
                p += 1
            if start < pos or (p < len(placed) and placed[p][0] < end):
                continue  # inside a secret already removed, or a placeholder already there
            parts += [text[pos:start], PLACEHOLDER.format(kind=kind)]
            found[kind] += 1
            pos = end
        if not found:
            return Redacted(text)
        return Redacted("".join([*parts, text[pos:]]), dict(found))

    def redact_arguments(self, arguments: str) -> Redacted:
        """A tool call's JSON arguments with each string value redacted (the value of a key such as "password" or
        "api_key" whole); arguments that are not JSON are redacted as text."""
        if not self.finders or not arguments:
            return Redacted(arguments)
        try:
            value = json.loads(arguments)
            found: Counter[str] = Counter()
            clean = self._walk(value, found, None, 0)
        except (ValueError, RecursionError):
            return self.redact(arguments)
        if not found:
            return Redacted(arguments)
        return Redacted(json.dumps(clean, ensure_ascii=False), dict(found))

    def _walk(self, value: Any, found: Counter[str], key: str | None, depth: int) -> Any:
        if depth > 100:
            raise ValueError("nested too deeply")
        if isinstance(value, dict):
            return {k: self._walk(v, found, k, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, found, None, depth + 1) for v in value]
        if not isinstance(value, str):
            return value
        kind = secret_key(key, value)
        if kind and not PLACED.fullmatch(value):
            found[kind] += 1
            return PLACEHOLDER.format(kind=kind)
        done = self.redact(value)
        found.update(done.found)
        return done.text

    def redact_message(self, message: Message) -> tuple[Message, dict[str, int], dict[str, int]]:
        """The message with its text and its tool calls' arguments redacted; what was found in each."""
        text = self.redact(message.content)
        calls, in_calls = [], Counter[str]()
        for call in message.tool_calls:
            done = self.redact_arguments(call.arguments)
            in_calls.update(done.found)
            calls.append(call.model_copy(update={"arguments": done.text}) if done.found else call)
        if not text.found and not in_calls:
            return message, {}, {}
        return message.model_copy(update={"content": text.text, "tool_calls": calls}), text.found, dict(in_calls)


@lru_cache(maxsize=64)
def _gate(enabled: bool, patterns: tuple[str, ...]) -> SecretGate:
    return SecretGate(enabled, patterns)


def gate_of(settings: Any) -> SecretGate:
    """The gate an agent's settings ask for (`secret_gate`, `secret_patterns`); on when they say nothing."""
    return _gate(bool(getattr(settings, "secret_gate", True)), tuple(getattr(settings, "secret_patterns", ()) or ()))


def placeholders(text: str) -> dict[str, int]:
    """The placeholders in `text`, counted by kind."""
    return dict(Counter(m.group()[len("[secret removed: "):-1] for m in PLACED.finditer(text)))


def removed_between(given: str, stored: str) -> dict[str, int]:
    """What the gate removed when `given` was stored as `stored`: the placeholders `stored` has that `given` had not."""
    before = placeholders(given)
    return {kind: n - before.get(kind, 0) for kind, n in placeholders(stored).items() if n > before.get(kind, 0)}


def describe(found: dict[str, int]) -> str:
    """`found` for people: "1 OpenAI API key, 2 card numbers"."""
    return ", ".join(f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in found.items())
