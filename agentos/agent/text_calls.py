"""Tool calls written as text: what small local models send when their server's chat template does not turn
their intent into native tool calls.

A reply counts as tool calls only when it is essentially nothing else: one or more calls, each a fenced
block or a `<tool_call>…</tool_call>` tag, or the rest of the reply as one bare JSON object (or a list of
them), with at most a short lead-in before them (`LEAD_IN_CHARS`) and nothing but whitespace between and after them. A
call is an object with `name` (or `function: {name, arguments}`) and `arguments` or `parameters`. It is
taken when it names an offered tool, and also, as a near miss that earns a hint, when it names a memory
block or an unknown tool while carrying arguments. A JSON example inside a longer answer stays text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from agentos.messages import ToolCall, new_id

LEAD_IN_CHARS = 80  # "Sure, I'll remember that:" before the call; more prose than this and it is an answer
SCHEMA_LEFTOVERS = frozenset({"required", "type", "properties", "additionalProperties", "$schema", "title"})
_SEGMENT = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(?P<fenced>.*?)```|<tool_call>(?P<tagged>.*?)</tool_call>", re.DOTALL)
OPENERS = ("```", "<tool_call>", "{", "[")  # how a reply that is a call can begin (after its lead-in)


@dataclass(frozen=True)
class TextCalls:
    """The calls found in a reply, and the lead-in text before them (kept as the reply's text)."""

    calls: list[ToolCall]
    lead_in: str


def _loads(text: str) -> Any:
    """JSON, forgiving trailing commas; None when it is not JSON."""
    text = text.strip()
    for candidate in (text, re.sub(r",\s*([}\]])", r"\1", text)):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return None


def _as_call(value: Any, offered: Collection[str], labels: Collection[str]) -> ToolCall | None:
    """One call object as a ToolCall, or None when it is not call-shaped (see the module docstring)."""
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    if isinstance(function, dict) and "name" in function:
        value = {**value, **function}
    name = value.get("name") or value.get("tool") or value.get("tool_name")
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip()
    arguments = value.get("arguments", value.get("parameters", value.get("args")))
    if isinstance(arguments, str):
        parsed = _loads(arguments)
        arguments = parsed if isinstance(parsed, dict) else arguments
    if name in labels and arguments is None:  # {"name": "human", "content": "..."}: a block named, not a tool
        arguments = {k: v for k, v in value.items() if k != "name"}
    if name not in offered and name not in labels and not isinstance(arguments, dict):
        return None
    if not isinstance(arguments, dict):
        arguments = {}
    arguments = {k: v for k, v in arguments.items() if k not in SCHEMA_LEFTOVERS}
    return ToolCall(id=new_id("call"), name=name, arguments=json.dumps(arguments, ensure_ascii=False))


def _calls_in(value: Any, offered: Collection[str], labels: Collection[str]) -> list[ToolCall] | None:
    items = value if isinstance(value, list) and value else [value]
    calls = [_as_call(item, offered, labels) for item in items]
    return None if any(c is None for c in calls) else [c for c in calls if c is not None]


def parse_text_calls(text: str, offered: Collection[str], labels: Collection[str] = ()) -> TextCalls | None:
    """The tool calls `text` consists of, or None when it is an ordinary reply (see the module docstring)."""
    stripped = text.strip()
    if not stripped or not offered:
        return None
    whole = _loads(stripped) if stripped[0] in "{[" else None
    if whole is not None:
        entire = _calls_in(whole, offered, labels)
        return TextCalls(entire, "") if entire else None
    segments = list(_SEGMENT.finditer(stripped))
    if not segments:  # a lead-in, then a bare object or list as the rest of the reply
        starts = [i for i in (stripped.find("{"), stripped.find("[")) if 0 <= i <= LEAD_IN_CHARS]
        rest = _loads(stripped[min(starts):]) if starts else None
        bare = _calls_in(rest, offered, labels) if rest is not None else None
        return TextCalls(bare, stripped[: min(starts)].strip()) if bare else None
    lead_in = stripped[: segments[0].start()].strip()
    between = [stripped[a.end(): b.start()] for a, b in zip(segments, segments[1:])] + [stripped[segments[-1].end():]]
    if len(lead_in) > LEAD_IN_CHARS or any(part.strip() for part in between):
        return None
    calls: list[ToolCall] = []
    for segment in segments:
        value = _loads(segment.group("fenced") if segment.group("fenced") is not None else segment.group("tagged"))
        found = _calls_in(value, offered, labels) if value is not None else None
        if not found:
            return None
        calls.extend(found)
    return TextCalls(calls, lead_in)


def may_become_call(text: str) -> bool:
    """Whether a reply that begins with `text` could still turn out to be tool calls (so its text is held back
    instead of shown): an opener within the lead-in allowance."""
    stripped = text.lstrip()
    positions = [stripped.find(o) for o in OPENERS if o in stripped]
    if positions:
        return min(positions) <= LEAD_IN_CHARS
    return len(stripped) <= LEAD_IN_CHARS and "\n\n" not in stripped


class CallWatch:
    """Streams a reply's text to the user, except from a possible text tool call on: that part is held back
    until the reply ends, then shown if it was not a call after all (`finish`)."""

    TAIL = len("<tool_call>") - 1  # chars kept back that could be the start of a split opener

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.text = ""
        self.shown = 0
        self.holding = False

    def feed(self, piece: str) -> str:
        """Take a piece of the streamed text; return what to show now."""
        self.text += piece
        if not self.enabled or self.holding:
            return self._show(len(self.text)) if not self.enabled else ""
        positions = [p for p in (self.text.find(o) for o in OPENERS) if p >= 0]
        start = len(self.text) - len(self.text.lstrip())
        if positions and min(positions) - start <= LEAD_IN_CHARS:
            self.holding = True
            return self._show(min(positions))
        if len(self.text) - start > LEAD_IN_CHARS + self.TAIL:
            self.enabled = False  # too much prose before any opener: an ordinary reply
            return self._show(len(self.text))
        return self._show(max(self.shown, len(self.text) - self.TAIL))

    def finish(self, offered: Collection[str], labels: Collection[str]) -> tuple[TextCalls | None, str]:
        """At the reply's end: the calls it consists of (None for an ordinary reply), and the text still to show."""
        found = parse_text_calls(self.text, offered, labels) if self.holding else None
        return found, ("" if found else self._show(len(self.text)))

    def _show(self, end: int) -> str:
        piece, self.shown = self.text[self.shown:end], max(self.shown, end)
        return piece
