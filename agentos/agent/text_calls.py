"""Tool calls written as text: what small local models send when their server's chat template does not turn
their intent into native tool calls.

A reply counts as tool calls only when it is essentially nothing else: one or more calls, each a fenced block or a
`<tool_call>…</tool_call>` tag (or `<tools>`, the tag Qwen's template lists tools in), or the rest of the reply as
bare JSON objects (or lists of them), with at most a short lead-in before them (`LEAD_IN_CHARS`) and nothing but
whitespace between them. Calls that open the reply may be followed by a line of chatter in the same paragraph
(`TRAILING_CHARS`, dropped); a paragraph after a call, or prose both before and after it, is an answer showing an
example. Markers such as `[TOOL_CALLS]` and `<|python_tag|>` are ignored. A reply ends at a role marker that
begins a line (`User:`, `Human:`…) or at `<|im_end|>`/`<|im_start|>`: what follows is a next turn the model
invented.

A call is an object with `name` (or `function: {name, arguments}`) and `arguments` or `parameters`, also in doubled
braces (`{{"name": …}}`, as Qwen2.5's chat template shows the format); list arguments are taken as the tool's
parameters in order, when those are known. It is taken when it names an offered tool, and also, as a near miss
that earns a hint, when it names a memory block, or carries arguments under a name close to an offered tool's, or
when it is a tool result the model wrote itself (named `tool_response`, or in `<tool_response>` tags, as its chat
template writes results), so that the model is told to reply instead. A JSON example inside a longer answer stays
text, and so does JSON data whose names are no tool's.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from agentos.messages import ToolCall, new_id
from agentos.tools.registry import RESULT_NAMES

LEAD_IN_CHARS = 80  # "Sure, I'll remember that:" before the call; more prose than this and it is an answer
# A fenced or tagged call may be followed by a line of chatter ("Let me know if you have any other questions!"),
# which small models add; it is dropped (the model replies after the result). More than this and it is an answer.
TRAILING_CHARS = 120
SCHEMA_LEFTOVERS = frozenset({"required", "type", "properties", "additionalProperties", "$schema", "title"})
PREFIXES = ("[TOOL_CALLS]", "<|python_tag|>")  # markers some chat templates put before a call
_SEGMENT = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(?P<fenced>.*?)```"
                      r"|<(?P<tag>tool_call|tools)>(?P<tagged>.*?)(?:</(?P=tag)>|$)", re.DOTALL)
TAGS = ("<tool_call>", "<tools>", "<tool_response>", "<|python_tag|>")  # tags a call (or a result) is written in
OPENERS = ("```", *TAGS, "{", "[")  # how a reply that is a call can begin
CLOSE_NAME = 0.6  # an unknown tool name this close to an offered one is a near miss (difflib ratio)

_NEXT_TURN = re.compile(r"^[ \t]*(?:Human|User|Assistant|System)[ \t]*:|<\|im_end\|>|<\|im_start\|>", re.MULTILINE)

Tools = Union[Mapping[str, Sequence[str]], Collection[str]]  # offered tool names, with their parameters (in order)


@dataclass(frozen=True)
class TextCalls:
    """The calls found in a reply, and the lead-in text before them (kept as the reply's text)."""

    calls: list[ToolCall]
    lead_in: str


def _without_trailing_commas(text: str) -> str:
    """`text` with each comma that only a closing bracket follows removed, outside strings."""
    out, in_string, escaped = [], False, False
    for i, char in enumerate(text):
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), in_string and not (char == '"' and not escaped)
        elif char == '"':
            in_string = True
        elif char == "," and text[i + 1:].lstrip()[:1] in ("}", "]"):
            continue
        out.append(char)
    return "".join(out)


def _loads(text: str) -> Any:
    """JSON, forgiving trailing commas; None when it is not JSON."""
    text = text.strip()
    for candidate in (text, _without_trailing_commas(text)):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return None


def _decode(decoder: json.JSONDecoder, text: str, i: int) -> tuple[Any, int]:
    """The JSON value at `i` and where it ends, or an object in doubled braces; ValueError when neither."""
    try:
        return decoder.raw_decode(text, i)
    except ValueError:
        if not text.startswith("{{", i):
            raise
    value, end = decoder.raw_decode(text, i + 1)
    end += len(text[end:]) - len(text[end:].lstrip())
    if not isinstance(value, dict) or not text.startswith("}", end):
        raise ValueError("not an object in doubled braces")
    return value, end + 1


def _values(text: str) -> list[Any] | None:
    """One or more JSON values with only whitespace between and after them (objects on separate lines); None
    when anything else is there."""
    decoder, i, text = json.JSONDecoder(), 0, text.strip()
    values: list[Any] = []
    while i < len(text):
        try:
            value, end = _decode(decoder, text, i)
        except (ValueError, RecursionError):
            whole = _loads(text[i:])  # a trailing comma, perhaps
            if whole is None and text.startswith("{{", i) and text.endswith("}}"):
                whole = _loads(text[i + 1:-1])
                whole = whole if isinstance(whole, dict) else None
            return values + [whole] if whole is not None else None
        values.append(value)
        i = end + len(text[end:]) - len(text[end:].lstrip())
    return values or None


def _tool_map(tools: Tools) -> dict[str, tuple[str, ...] | None]:
    if isinstance(tools, Mapping):
        return {name: tuple(params) for name, params in tools.items()}
    return {name: None for name in tools}


def _as_call(value: Any, tools: dict[str, tuple[str, ...] | None], labels: Collection[str]) -> ToolCall | None:
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
        arguments = parsed if isinstance(parsed, (dict, list)) else arguments
    if name in labels and arguments is None:  # {"name": "human", "content": "..."}: a block named, not a tool
        arguments = {k: v for k, v in value.items() if k != "name"}
    if name not in tools and name not in labels and name not in RESULT_NAMES:
        near = difflib.get_close_matches(name, list(tools), n=1, cutoff=CLOSE_NAME)
        if not isinstance(arguments, dict) or not near:
            return None  # {"name": "resnet50", "parameters": {...}}: data the user asked for, not a call
    params = tools.get(name)
    if isinstance(arguments, list) and params and len(arguments) <= len(params):
        arguments = dict(zip(params, arguments))  # ["human", "Ada"]: positional, in the schema's order
    if not isinstance(arguments, dict):
        arguments = {}
    arguments = {k: v for k, v in arguments.items() if k not in SCHEMA_LEFTOVERS or (params and k in params)}
    return ToolCall(id=new_id("call"), name=name, arguments=json.dumps(arguments, ensure_ascii=False))


def _calls_in(values: list[Any], tools: dict[str, tuple[str, ...] | None],
              labels: Collection[str]) -> list[ToolCall] | None:
    items = [item for value in values for item in (value if isinstance(value, list) and value else [value])]
    calls = [_as_call(item, tools, labels) for item in items]
    return None if not calls or any(c is None for c in calls) else [c for c in calls if c is not None]


def _unmarked(text: str) -> str:
    for prefix in PREFIXES:
        text = text.replace(prefix, " ")
    return text.strip()


def _own_turn(text: str) -> str:
    """`text` up to the first role marker after its start (a next turn the model invented)."""
    marker = next((m for m in _NEXT_TURN.finditer(text) if text[:m.start()].strip()), None)
    return text[:marker.start()] if marker else text


def parse_text_calls(text: str, tools: Tools, labels: Collection[str] = ()) -> TextCalls | None:
    """The tool calls `text` consists of, or None when it is an ordinary reply (see the module docstring)."""
    stripped = _unmarked(_own_turn(text))
    offered = _tool_map(tools)
    if not stripped or not offered:
        return None
    if stripped.startswith("```") and stripped.count("```") == 1:
        stripped += "```"  # a reply that opened a fence and ended before closing it
    if stripped.startswith("<tool_response>"):  # a result the model wrote itself, in its template's tags
        body = stripped.removeprefix("<tool_response>").split("</tool_response>")[0].strip()
        return TextCalls([ToolCall(id=new_id("call"), name="tool_response",
                                   arguments=json.dumps({"response": body}, ensure_ascii=False))], "")
    segments = list(_SEGMENT.finditer(stripped))
    if segments:
        lead_in = stripped[: segments[0].start()].strip()
        between = [stripped[a.end(): b.start()] for a, b in zip(segments, segments[1:])]
        trailing = stripped[segments[-1].end():]
        if len(lead_in) > LEAD_IN_CHARS or not _chatter(trailing) or (lead_in and trailing.strip()) or \
                any(part.strip() for part in between):
            return None  # prose before and after a call is an answer that shows an example
        calls: list[ToolCall] = []
        for segment in segments:
            body = segment.group("fenced") if segment.group("fenced") is not None else segment.group("tagged")
            values = _values(_unmarked(body))
            found = _calls_in(values, offered, labels) if values else None
            if not found:
                return None
            calls.extend(found)
        return TextCalls(calls, lead_in)
    for i, char in enumerate(stripped[: LEAD_IN_CHARS + 1]):  # a lead-in, then bare objects as the rest
        if char in "{[":
            values = _values(stripped[i:])
            found = _calls_in(values, offered, labels) if values else None
            if found:
                return TextCalls(found, stripped[:i].strip())
    return _opening_bare_calls(stripped, offered, labels)


def _chatter(after: str) -> bool:
    """Whether what follows a call is at most a line of chatter on the call's own paragraph: short, and not after a
    blank line (a paragraph after a call explains an example)."""
    text = after.strip()
    return not text or (len(text) <= TRAILING_CHARS and "\n\n" not in after[: len(after) - len(after.lstrip())])


def _opening_bare_calls(text: str, tools: dict[str, tuple[str, ...] | None],
                        labels: Collection[str]) -> TextCalls | None:
    """Bare calls that open the reply, followed by a line of chatter (or a stray fence), which is dropped."""
    if not text.startswith(("{", "[")):
        return None
    ends = [i for i in range(len(text) - 1, max(-1, len(text) - TRAILING_CHARS - 2), -1) if text[i] in "}]"]
    for end in ends:
        if not _chatter(text[end + 1:]):
            continue
        values = _values(text[: end + 1])
        found = _calls_in(values, tools, labels) if values else None
        if found:
            return TextCalls(found, "")
    return None


def _possible(held: str) -> bool:
    """Whether text that begins with an opener can still turn out to be a call (so it stays held back)."""
    if held.startswith(TAGS) or any(tag.startswith(held) for tag in TAGS) or "[TOOL_CALLS]".startswith(held[:12]):
        return True
    if held.startswith("```"):
        newline = held.find("\n")
        body = held[newline + 1:].lstrip() if newline >= 0 else ""
        return newline < 0 or not body or body[0] in "{[<"
    after = held[1:].lstrip()
    if held[0] == "{" and after[:1] == "{":  # {{"name": …}}, as Qwen2.5's chat template shows a call
        after = after[1:].lstrip()
    if not after:
        return True
    return after[0] == '"' if held[0] == "{" else after[0] in "{["


class CallWatch:
    """Streams a reply's text to the user, except from a possible text tool call on: that part is held back
    while it can still be a call, and shown as soon as it cannot (or at the end, if it was not one)."""

    TAIL = len("<|python_tag|>") - 1  # chars kept back that could be the start of a split opener

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.text = ""
        self.shown = 0
        self.held: int | None = None  # where the held possible call begins
        self.scan_from = 0

    def feed(self, piece: str) -> str:
        """Take a piece of the streamed text; return what to show now."""
        self.text += piece
        if not self.enabled:
            return self._show(len(self.text))
        out = ""
        while True:
            if self.held is not None:
                if _possible(self.text[self.held:]):
                    return out
                self.scan_from, self.held = self.held + 1, None  # not a call after all: show it, look further
            start = len(self.text) - len(self.text.lstrip())
            positions = [p for p in (self.text.find(o, self.scan_from) for o in OPENERS) if p >= 0]
            if positions and min(positions) - start <= LEAD_IN_CHARS:
                self.held = min(positions)
                out += self._show(self.held)
                continue
            if len(self.text) - start > LEAD_IN_CHARS + self.TAIL:
                self.enabled = False  # too much prose before any opener: an ordinary reply
                return out + self._show(len(self.text))
            return out + self._show(max(self.shown, len(self.text) - self.TAIL))

    @property
    def holding(self) -> bool:
        """Whether part of the reply is held back as a possible call (only then is `finish` asked to parse)."""
        return self.held is not None

    def finish(self, tools: Tools, labels: Collection[str]) -> tuple[TextCalls | None, str]:
        """At the reply's end: the calls it consists of (None for an ordinary reply), and the text still to show."""
        found = parse_text_calls(self.text, tools, labels) if self.holding else None
        return found, ("" if found else self._show(len(self.text)))

    def _show(self, end: int) -> str:
        piece, self.shown = self.text[self.shown:end], max(self.shown, end)
        return piece
