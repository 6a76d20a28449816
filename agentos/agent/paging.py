"""Carries out the pager's plans for one agent: counts, the pressure alert, summaries, eviction."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator

from agentos.events import Event, MessagesEvicted, Notice
from agentos.messages import Message, Usage
from agentos.pager import Budget, Counts, Plan, Reason, plan
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.tokens import (
    DEFAULT_CONTEXT_WINDOW,
    EstimateCounter,
    MessageSizes,
    MESSAGE_OVERHEAD,
    count_message,
    counter_for,
    known_context_window,
)

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

SUMMARY_ID = "summary"
LINE_LIMIT = 2000  # characters of one message in the summarizer's transcript
_MARKER = re.compile(r"\[(\d+) earlier messages were removed from context without a summary[^\]]*\]\s*$")


def _marker(previous: str, count: int, limit_chars: int) -> str:
    """The previous summary plus one merged marker line for `count` more unsummarized messages."""
    match = _MARKER.search(previous)
    if match:
        count += int(match.group(1))
        previous = previous[: match.start()].rstrip()
    line = f"[{count} earlier messages were removed from context without a summary; they remain in recall memory.]"
    room = max(0, limit_chars - len(line) - 1)
    previous = previous if len(previous) <= room else previous[: max(0, room - 1)] + "…"
    return f"{previous}\n{line}".strip()


def _call(provider: Provider, request: ModelRequest, timeout: float) -> str:
    """One model call that gives up after `timeout` seconds (the call is left to finish in the background)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["text"] = complete(provider, request).text
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True, name="agentos-summarizer")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return str(box["text"])


class Pager:
    """One agent's pager: counts its context, alerts under pressure and compacts."""

    def __init__(self, agent: "Agent") -> None:
        self.agent = agent
        self.counter = counter_for(agent.state.model)
        self.sizes = MessageSizes(self.counter)
        self.summarizer: Provider | None = None
        self.offset = agent.state.token_offset  # provider-reported minus estimated tokens of the last request
        if agent.state.token_ratio and isinstance(self.counter, EstimateCounter):
            self.counter.tokens_per_byte, self.counter.calibrated = agent.state.token_ratio, True
        self.seconds = 0.0  # time spent in the pager, summaries included
        self.compactions = 0
        self._tools_key: tuple[str, ...] | None = None
        self._tools_text = ""

    # -- budget and counts ---------------------------------------------------------------------

    @property
    def settings(self) -> Any:
        return self.agent.state.settings.pager

    @property
    def window(self) -> int:
        """The context window: the agent's override, the provider's, the model family's, or 8k."""
        return (
            self.agent.state.settings.context_window
            or getattr(self.agent.provider, "context_window", 0)
            or known_context_window(self.agent.state.model)
            or DEFAULT_CONTEXT_WINDOW
        )

    def budget(self) -> Budget:
        s, window = self.settings, self.window
        return Budget(window=window, warn_at=s.warn_at, evict_at=s.evict_at, target=s.target,
                      keep_last=s.keep_last, summary_tokens=max(32, int(window * s.summary_fraction)))

    def summary_message(self) -> Message | None:
        """The running summary as the first message of the request, if there is one."""
        if not self.agent.state.summary:
            return None
        hidden = max(0, self.agent.state.message_count - len(self.agent.context))
        text = self.agent.prompts.render("summary_message.j2", summary=self.agent.state.summary, hidden=hidden)
        return Message(id=SUMMARY_ID, role="user", content=text)

    def _tools(self, tools: list[Any]) -> str:
        key = tuple(t.name for t in tools)
        if key != self._tools_key:
            self._tools_key = key
            self._tools_text = json.dumps([t.openai_schema() for t in tools], separators=(",", ":"))
        return self._tools_text

    def counts(self, request: ModelRequest | None = None, *, offset: bool = True, fixed_only: bool = False) -> Counts:
        """Token counts per part of a request (default: the next one); `fixed_only` skips the messages."""
        request = request or self.agent.build_request()
        messages = [] if fixed_only else request.messages
        summary = 0
        if messages and messages[0].id == SUMMARY_ID:
            summary, messages = self.sizes.tokens(messages[0]), messages[1:]
        return Counts(
            system=self.counter.count(request.system_static),
            memory=self.counter.count(request.system_dynamic),
            tools=self.counter.count(self._tools(request.tools)),
            summary=summary,
            messages=tuple(self.sizes.tokens(m) for m in messages),
            offset=self.offset if offset else 0,
        )

    def observe(self, request: ModelRequest, usage: Usage) -> None:
        """Anchor the estimate to the input tokens the provider reported for `request`."""
        started = time.perf_counter()
        reported = usage.input_tokens
        if reported > 0:
            texts = [request.system_static, request.system_dynamic, self._tools(request.tools)]
            nbytes = sum(len(t.encode("utf-8")) for t in texts) + sum(self.sizes.nbytes(m) for m in request.messages)
            self.counter.calibrate(nbytes, reported - MESSAGE_OVERHEAD * len(request.messages))
            self.offset = reported - self.counts(request, offset=False).total
            self.agent.state.token_offset = self.offset
            if isinstance(self.counter, EstimateCounter):
                self.agent.state.token_ratio = self.counter.tokens_per_byte
        self.seconds += time.perf_counter() - started

    def breakdown(self) -> dict[str, Any]:
        """The context by part, in tokens, with the window and thresholds."""
        c, b = self.counts(), self.budget()
        return {
            "window": b.window, "counter": self.counter.name, "system": c.system, "memory": c.memory,
            "tools": c.tools, "summary": c.summary, "messages": sum(c.messages), "message_count": len(c.messages),
            "correction": c.offset, "total": c.total,
            "last_reported": self.agent.last_usage.input_tokens if self.agent.last_usage else None,
            "hidden": max(0, self.agent.state.message_count - len(self.agent.context)),
            "warn_at": b.warn_at, "evict_at": b.evict_at, "target": b.target, "keep_last": b.keep_last,
        }

    # -- plans ---------------------------------------------------------------------------------

    def preflight(self) -> str | None:
        """Why no turn can run (the system prompt alone exceeds the window), or None."""
        c, b = self.counts(fixed_only=True), self.budget()
        if c.fixed <= b.window:
            return None
        return plan([], Counts(c.system, c.memory, c.tools), b).reason + (
            ". Shorten the memory blocks, remove tools, or use a model with a larger window."
        )

    def before_call(self) -> Iterator[Event]:
        """Check the budget before a model call: alert once per pressure episode, evict past the threshold."""
        started = time.perf_counter()
        events: list[Event] = []
        try:
            state = self.agent.state
            p = plan(self.agent.context, self.counts(), self.budget(), alerted=state.memory_pressure_alerted)
            state.memory_pressure_alerted = p.alerted
            if p.action == "alert":
                b = self.budget()
                alert = self.agent.prompts.render(
                    "pressure_alert.j2", percent=round(100 * p.tokens_before / b.window),
                    used=f"{p.tokens_before:,}", window=f"{b.window:,}",
                )
                self.agent.append(Message.user(alert))
                events.append(Notice(text=f"memory pressure: {p.tokens_before:,} of {b.window:,} tokens; the agent "
                                     "was asked to save what matters", data={"tokens": p.tokens_before, "window": b.window}))
            elif p.action == "evict":
                events.append(self._apply(p))
        finally:
            self.seconds += time.perf_counter() - started
        yield from events

    def compact(self, reason: Reason = "manual", attempt: int = 1) -> Iterator[Event]:
        """Force a compaction: after a provider overflow, or on request (evicts all it may)."""
        started = time.perf_counter()
        try:
            state = self.agent.state
            p = plan(self.agent.context, self.counts(), self.budget(),
                     alerted=state.memory_pressure_alerted, reason=reason, attempt=attempt)
            if p.action == "evict":
                state.memory_pressure_alerted = p.alerted
                event: Event = self._apply(p)
            else:
                event = Notice(text=f"nothing to compact: {p.reason or 'the context is already small'}",
                               data={"tokens": p.tokens_before})
        finally:
            self.seconds += time.perf_counter() - started
        yield event

    def _apply(self, p: Plan) -> MessagesEvicted:
        agent = self.agent
        before = self.counts().total
        agent.context_changed = True
        for index, keep in p.truncate:
            agent.context[index] = self._truncated(agent.context[index], keep)
        evicted = agent.context[: p.evict]
        note = ""
        if evicted:
            summary, note = self._summarize(evicted, p.summary_tokens)
            agent.context = agent.context[p.evict :]
            agent.state.summary = summary
        if p.truncate:
            note = f"{note}; " if note else ""
            note += f"truncated {len(p.truncate)} oversized message(s) that stay in context"
        self.compactions += 1
        after = self.counts().total
        if after <= self.budget().tokens(self.settings.warn_at):
            agent.state.memory_pressure_alerted = False
        return MessagesEvicted(count=len(evicted), tokens_before=before, tokens_after=after,
                               summarized=bool(evicted) and not note.startswith("not summarized"), note=note)

    def _truncated(self, message: Message, keep_tokens: int) -> Message:
        """A copy of `message` cut to about `keep_tokens` (the full text stays in recall)."""
        size = max(1, count_message(self.counter, message))
        content = message.content
        keep = max(0, min(len(content), int(len(content) * keep_tokens / size) - 120))
        if keep >= len(content):
            return message
        tail = f"\n[truncated by the pager: showing {keep:,} of {len(content):,} characters; the full text is in recall memory]"
        return message.model_copy(update={"content": content[:keep] + tail})

    # -- the summary ---------------------------------------------------------------------------

    def summarizer_provider(self) -> Provider:
        """The provider that writes summaries: set explicitly, the configured summary model, or the agent's."""
        if self.summarizer is None and self.settings.summary_model:
            from agentos.providers.registry import resolve_model

            self.summarizer = resolve_model(self.settings.summary_model)
        return self.summarizer or self.agent.provider

    def _summarize(self, evicted: list[Message], limit: int) -> tuple[str, str]:
        """The new running summary (at most `limit` tokens) and an empty note, or a plain marker and why."""
        previous = self.agent.state.summary
        fallback_chars = max(len(previous), self.budget().summary_tokens * 4)
        wrapper = self.agent.prompts.render("summary_message.j2", summary="", hidden=self.agent.state.message_count)
        limit = max(16, limit - count_message(self.counter, Message.user(wrapper)))
        try:
            provider = self.summarizer_provider()
            request = self._summary_request(provider, previous, evicted, limit)
            text = _call(provider, request, self.settings.summary_timeout_s).strip()
        except Exception as exc:  # noqa: BLE001 - any summarizer failure degrades to a marker
            why = f"the summarizer failed ({type(exc).__name__}: {str(exc)[:160]})"
            if isinstance(exc, TimeoutError):
                why = f"the summarizer timed out ({exc})"
            return _marker(previous, len(evicted), fallback_chars), f"not summarized: {why}; evicted with a marker"
        if not text:
            return _marker(previous, len(evicted), fallback_chars), "not summarized: the summary was empty; evicted with a marker"
        size = self.counter.count(text)
        if size > limit:
            why = f"the summary was too long ({size:,} tokens, limit {limit:,})"
            return _marker(previous, len(evicted), fallback_chars), f"not summarized: {why}; evicted with a marker"
        return text, ""

    def _summary_request(self, provider: Provider, previous: str, evicted: list[Message], limit: int) -> ModelRequest:
        window = getattr(provider, "context_window", 0) or self.window
        room_tokens = max(256, int(window * 0.6) - self.counter.count(previous) - limit)
        lines = [self._line(m) for m in evicted]
        transcript = self._fit(lines, room_tokens)
        max_words = max(10, int(limit * 0.6))
        return ModelRequest(
            system_static=self.agent.prompts.render("summarizer.j2", max_words=max_words),
            system_dynamic="",
            messages=[Message.user(self.agent.prompts.render(
                "summarize.j2", previous=previous, transcript=transcript, count=len(evicted), max_words=max_words))],
            max_output_tokens=limit,
        )

    @staticmethod
    def _line(m: Message) -> str:
        if m.role == "tool":
            text = f"tool result ({m.name}{', error' if m.is_error else ''}): {m.content}"
        elif m.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
            text = f"{m.role}: {m.content} [called {calls}]".replace(":  [", ": [")
        else:
            text = f"{m.role}: {m.content}"
        return text if len(text) <= LINE_LIMIT else text[:LINE_LIMIT] + " […]"

    def _fit(self, lines: list[str], room_tokens: int) -> str:
        """Join transcript lines, dropping lines from the middle if they exceed `room_tokens`."""
        sizes = [self.counter.count(line) + 1 for line in lines]
        if sum(sizes) <= room_tokens:
            return "\n".join(lines)
        head: list[str] = []
        tail: list[str] = []
        used, i, j, from_head = 0, 0, len(lines) - 1, True
        while i <= j:
            index = i if from_head else j
            if used + sizes[index] > room_tokens:
                break
            used += sizes[index]
            if from_head:
                head.append(lines[i])
                i += 1
            else:
                tail.insert(0, lines[j])
                j -= 1
            from_head = not from_head
        omitted = len(lines) - len(head) - len(tail)
        return "\n".join(head + [f"[... {omitted} messages omitted ...]"] + tail)
