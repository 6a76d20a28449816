"""A Letta agent's history as agentos messages: text, tool calls and results, its summary, what is in context.

- **Messages**: text parts of `content` (or `text`) are joined; reasoning parts and images are left out. A user
  message holding Letta's JSON envelope `{"type": "user_message", "message": ...}` becomes that text;
  `heartbeat` and `login` envelopes are Letta loop control and are left out; a `system_alert` that carries
  Letta's summary of evicted messages becomes the agent's summary when it is in context (older ones are
  superseded), any other alert a system message. Letta's system-role messages that are its compiled prompt
  (instructions plus rendered blocks and a dated metadata section) are left out, its first message always (Letta
  keeps its compiled prompt there, so it is stale even when the file's `system` is empty): agentos renders its
  prompt from the blocks on every call.
  agentos has no `send_message`: a `send_message` call's `message` argument becomes the assistant's reply text,
  and its "OK" result goes. Agents that speak through `send_message` (MemGPT-style) write hidden inner thoughts as
  their text; those are left out, as are the `inner_thoughts` and `request_heartbeat` arguments of their other
  calls. Tool results lose Letta's `{"status", "message", "time"}` wrapper (a status other than OK marks an
  error); a result message with several `tool_returns` (parallel calls) becomes one result each. Approval
  requests are assistant tool calls; approval responses are left out (the results that follow them are kept).
  Results with no call before them are left out and calls with no result get an error result, as
  `repair_context` does for any agentos context.
- **In context**: the messages made from Letta's in-context ones. agentos keeps a suffix of the history in
  context, so when Letta's set is not one, the smallest suffix that covers it is taken (and reported).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentos.agent.context import repair_context
from agentos.messages import Message, ToolCall, new_id, utc_now
from agentos.portable.letta_file import AfSource, Findings, _dict, _text, _time
from agentos.text import plural

MONOLOGUE_AGENT_TYPES = {"memgpt_agent", "memgpt_v2_agent", "sleeptime_agent"}
REASONING_PARTS = {"reasoning", "redacted_reasoning", "omitted_reasoning", "summarized_reasoning"}
LETTA_ONLY_ARGUMENTS = ("inner_thoughts", "request_heartbeat")
SUMMARY_MARK = re.compile(r"The following is a summary of the previous(?: \d+)? messages:\s*(.*)", re.DOTALL)
COMPILED_MARKS = ("<memory_blocks>", "### Memory [last modified", "<memory_metadata>", "The current system date is:")
MESSAGE_FIELDS = {"type", "id", "role", "content", "text", "name", "otid", "sender_id", "batch_item_id", "group_id",
                  "model", "agent_id", "tool_calls", "tool_call_id", "tool_returns", "created_at", "updated_at", "approve",
                  "approval_request_id", "denial_reason", "approvals", "step_id", "run_id", "is_err", "organization_id"}


@dataclass
class History:
    """The agentos messages made from a Letta history, the summary it carries, and counts of what was done."""

    messages: list[Message]
    origins: list[str]  # the key of the Letta message each came from
    summary: str = ""
    counts: Counter[str] = field(default_factory=Counter)


def _parts(message: dict[str, Any], counts: Counter[str]) -> list[str]:
    content = message.get("content")
    if content is None:
        content = message.get("text")
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        counts["message contents that are neither text nor a list of parts"] += 1
        return []
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str):
            texts.append(part)
        elif kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in REASONING_PARTS:
            counts["reasoning"] += 1
        elif kind == "image":
            counts["images"] += 1
        else:
            counts[f"content parts of type {kind!r}"] += 1
    return texts


def _envelope(text: str) -> dict[str, Any] | None:
    stripped = text.strip()
    if not (stripped.startswith("{") and '"type"' in stripped):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("type"), str) else None


def _calls(message: dict[str, Any], counts: Counter[str]) -> list[ToolCall]:
    calls = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, dict):
            counts["tool calls that are not objects"] += 1
            continue
        function = _dict(raw.get("function")) or raw
        name, arguments = function.get("name"), function.get("arguments", function.get("input", "{}"))
        if not isinstance(name, str) or not name:
            counts["tool calls without a name"] += 1
            continue
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(ToolCall(id=str(raw.get("id") or new_id("call")), name=name, arguments=arguments or "{}"))
    return calls


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _without_letta_arguments(call: ToolCall, counts: Counter[str]) -> ToolCall:
    arguments = _arguments(call)
    if arguments is None or not any(k in arguments for k in LETTA_ONLY_ARGUMENTS):
        return call
    if arguments.get("inner_thoughts"):
        counts["inner thoughts"] += 1
    counts["letta arguments"] += 1
    kept = {k: v for k, v in arguments.items() if k not in LETTA_ONLY_ARGUMENTS}
    return call.model_copy(update={"arguments": json.dumps(kept)})


def _unwrap_result(text: str) -> tuple[str, bool]:
    """A Letta tool result without its {"status", "message", "time"} wrapper, and whether it reports a failure."""
    if not text.lstrip().startswith("{") or '"status"' not in text:
        return text, False
    try:
        value = json.loads(text)
    except ValueError:
        return text, False
    if not isinstance(value, dict) or "status" not in value or "message" not in value:
        return text, False
    message = value["message"]
    body = message if isinstance(message, str) else "" if message is None else json.dumps(message)
    return body, value["status"] != "OK"


def _is_compiled_prompt(text: str, system: str) -> bool:
    head = system.strip()[:200]
    return bool(head and text.lstrip().startswith(head)) or any(mark in text for mark in COMPILED_MARKS)


def _summary_text(text: str) -> str:
    found = SUMMARY_MARK.search(text)
    return (found.group(1) if found else text).strip()


def imported_history(source: AfSource) -> History:
    """The agentos messages Letta's history becomes (see the module docstring for each rule)."""
    system = _text(source.raw.get("system")) or ""
    in_context = set(source.in_context) if source.in_context is not None else None
    monologue = str(source.raw.get("agent_type")) in MONOLOGUE_AGENT_TYPES or any(
        _dict(_dict(c).get("function")).get("name") == "send_message"
        for _, m in source.messages for c in (m.get("tool_calls") or []))
    out = History([], [])
    counts = out.counts
    dropped_calls: set[str] = set()
    names: dict[str, str] = {}
    when = _time(source.raw.get("created_at")) or utc_now()

    def add(key: str, message: Message) -> None:
        out.messages.append(message)
        out.origins.append(key)

    for position, (key, raw) in enumerate(source.messages):
        for name in set(raw) - MESSAGE_FIELDS:
            if raw[name] not in (None, [], {}, ""):
                counts[f"message field {name!r}"] += 1
        when = _time(raw.get("created_at")) or when
        role = raw.get("role")
        texts = _parts(raw, counts)
        text = "\n".join(texts)
        if role == "system":
            if position == 0 or _is_compiled_prompt(text, system):
                counts["compiled prompts"] += 1
            else:
                add(key, Message(role="system", content=text, created_at=when))
            continue
        envelope = (_envelope(text) if role in ("user", "summary") else None) or {}
        kind, said = envelope.get("type"), str(envelope.get("message") or "")
        if role == "summary" or (kind == "system_alert" and SUMMARY_MARK.search(said)):
            summary = _summary_text(said if envelope else text)
            if in_context is None or key in in_context:
                if out.summary:
                    counts["earlier summaries"] += 1
                out.summary = summary
            else:
                counts["earlier summaries"] += 1
            continue
        if role == "user":
            if kind in ("heartbeat", "login"):
                counts[kind] += 1
            elif kind == "user_message":
                counts["envelopes"] += 1
                add(key, Message(role="user", content=said, created_at=when, name=_text(raw.get("name"))))
            elif kind == "system_alert":
                add(key, Message(role="system", content=said, created_at=when))
            else:
                add(key, Message(role="user", content=text, created_at=when, name=_text(raw.get("name"))))
        elif role in ("assistant", "approval"):
            calls = _calls(raw, counts)
            if role == "approval" and not calls:
                counts["approval responses"] += 1
                continue
            replies = []
            for call in [c for c in calls if c.name == "send_message"]:
                arguments = _arguments(call)
                if arguments is None:
                    continue
                calls.remove(call)
                dropped_calls.add(call.id)
                counts["send_message"] += 1
                reply = arguments.get("message")
                replies.append(reply if isinstance(reply, str) else json.dumps(reply))
            if monologue and text:
                counts["inner thoughts"] += 1
            content = "\n\n".join(replies) if monologue or replies else text
            calls = [_without_letta_arguments(c, counts) for c in calls]
            names.update({c.id: c.name for c in calls})
            if content or calls:
                add(key, Message(role="assistant", content=content, tool_calls=calls, created_at=when))
        elif role in ("tool", "function"):
            returns = [r for r in raw.get("tool_returns") or [] if isinstance(r, dict) and r.get("func_response") is not None]
            results = [(r.get("tool_call_id") or raw.get("tool_call_id"), r["func_response"], r.get("status") == "error")
                       for r in returns] or [(raw.get("tool_call_id"), text, False)]
            for call_id, response, failed in results:
                if call_id in dropped_calls:
                    continue
                body, error = _unwrap_result(response if isinstance(response, str) else json.dumps(response))
                tool_name = names.get(str(call_id)) or _text(raw.get("name"))
                add(key, Message(role="tool", content=body, tool_call_id=str(call_id) if call_id else None, name=tool_name,
                                 is_error=failed or error, created_at=when))
        else:
            counts[f"messages with role {role!r}"] += 1
    return _repaired(out)


def _repaired(history: History) -> History:
    """Tool results right after their calls, as agentos requires of a context: results with no call are left out,
    calls with no result get an error result (counted, for the report)."""
    origin = {id(m): key for m, key in zip(history.messages, history.origins)}
    repaired = repair_context(history.messages)
    counts = history.counts.copy()
    counts["orphan results"] += len(history.messages) - sum(id(m) in origin for m in repaired)
    origins: list[str] = []
    for index, message in enumerate(repaired):
        if id(message) not in origin:  # an error result closing a call, made now: dated as the call
            counts["closed calls"] += 1
            repaired[index] = message.model_copy(update={"created_at": repaired[index - 1].created_at})
        origins.append(origin.get(id(message), origins[-1] if origins else ""))
    return History(repaired, origins, history.summary, counts)


def in_context_count(source: AfSource, history: History) -> tuple[int, Findings]:
    """How many of the last messages are in context: the smallest suffix covering Letta's in-context ones."""
    found = Findings()
    if source.in_context is None:
        if history.messages:
            found.notes.append("the file does not say which messages are in context: all of them are")
        return len(history.messages), found
    keys = set(source.in_context)
    known = {key for key, _ in source.messages}
    missing = [k for k in source.in_context if k not in known]
    if missing:
        found.left_out.append(f"{plural(len(missing), 'in-context message id')} naming no message of the file: "
                           f"{', '.join(missing[:5])}")
    hits = [i for i, key in enumerate(history.origins) if key in keys]
    if not hits:
        return 0, found
    first = hits[0]
    while first > 0 and history.messages[first].role == "tool":
        first -= 1  # a result stays with its call
    outside = sum(1 for key in history.origins[first:] if key not in keys)
    if outside:
        found.notes.append(f"Letta's in-context messages are not the end of its history: the smallest suffix that "
                           f"covers them is in context here, with {plural(outside, 'message')} Letta had out of context")
    return len(history.messages) - first, found


def history_findings(history: History) -> Findings:
    """The report's lines on what became of Letta's history: each kind of thing changed or left out, counted."""
    said = {  # count -> (what was done, and whether it is left out)
        "compiled prompts": ("Letta's compiled system prompt (system messages: {n}): agentos renders its own from the "
                             "blocks on every call", True),
        "heartbeat": ("heartbeats (messages: {n}): Letta's loop control; agentos continues after tool calls by itself", True),
        "login": ("login events (messages: {n}): Letta's session bookkeeping", True),
        "inner thoughts": ("inner thoughts ({n}): the hidden monologue of an agent that speaks through send_message", True),
        "reasoning": ("reasoning (parts: {n}): the model's hidden reasoning", True),
        "approval responses": ("approval responses ({n}): the tool results that follow them are imported", True),
        "earlier summaries": ("earlier summaries ({n}): superseded; the messages they summarize are in the history", True),
        "orphan results": ("tool results with no call before them ({n})", True),
        "images": ("images ({n}): agentos messages are text", True),
        "send_message": ("send_message calls became the assistant's reply text ({n})", False),
        "envelopes": ("user messages unwrapped from Letta's JSON envelope ({n})", False),
        "letta arguments": ("Letta-only arguments inner_thoughts and request_heartbeat removed from tool calls ({n})", False),
        "closed calls": ("tool calls with no result in the file got an error result saying they were cancelled ({n})",
                         False),
    }
    found = Findings()
    for key, n in history.counts.items():
        if n:
            text, left_out = said.get(key, (f"{key} ({{n}})", True))
            (found.left_out if left_out else found.notes).append(text.format(n=f"{n:,}"))
    if history.summary:
        found.notes.append(f"Letta's summary of the evicted messages ({len(history.summary):,} characters) is the "
                           f"agent's summary")
    return found

