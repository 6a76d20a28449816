"""One turn: model calls until a reply with no tool calls, bounded by max_steps; each step is saved.

A `Turn` is handed everything it works with (the state, the model, the pager, the request builder, the tools, the
tiers and a commit callable) and never reaches back into the agent: during the turn it is the only writer of the
state, and the only place a tool's memory edit is made.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from agentos.actors import acting_as
from agentos.agent.paging import Pager
from agentos.agent.requests import RequestBuilder, pager_view
from agentos.agent.text_calls import CallWatch
from agentos.agent.turn_state import Compaction, TurnState
from agentos.blocks import Block, CoreMemory, Editor, MemoryEdit
from agentos.errors import AgentOSError, ConfigError, ContextOverflowError, LeaseLostError
from agentos.events import (
    Event,
    MemoryEdited,
    Notice,
    ReplyIncomplete,
    Retrying,
    SecretsRemoved,
    StepSaved,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from agentos.memory.secret_gate import describe as describe_secrets
from agentos.messages import Message, ToolCall, Usage
from agentos.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamRetrying,
    StreamText,
    StreamToolCall,
    StreamUsage,
)
from agentos.tools.context import ToolContext
from agentos.tools.registry import ToolOutcome, ToolRegistry

T = TypeVar("T")

# How a model's answer can end without being a complete reply, and what the user is told.
INCOMPLETE = {
    "max_tokens": "the reply was cut off: the model reached its output limit (max_tokens)",
    "window_full": "the reply was cut off: the conversation filled the model's context window",
    "refusal": "the model refused to answer",
    "no_finish_reason": "the model's stream ended without saying it was finished; the reply may be incomplete",
    "other": "the model stopped for an unexpected reason; the reply may be incomplete",
}


# What a retried provider error is called when the user is told about the retry; other kinds go by their name.
RETRY_REASONS = {
    "RateLimitError": "rate limited",
    "ServerError": "the server failed",
    "IncompleteStreamError": "the server sent no reply",
}


def _retrying(event: StreamRetrying) -> Retrying:
    """The agent event that tells the consumer about a provider's retry back-off."""
    return Retrying(reason=RETRY_REASONS.get(event.kind, event.kind), error=event.error, attempt=event.attempt,
                    max_retries=event.max_retries, wait=event.wait, remaining=event.remaining)


# Appended to a reply kept after its stream was cut, so that the model (and whoever reads the history) sees it
# is not a whole answer.
CUT_OFF_MARK = "\n[cut off: the connection was lost before this reply ended]"


def failure(exc: BaseException, steps: int) -> TurnFailed:
    kind = type(exc).__name__
    text = str(exc) if isinstance(exc, AgentOSError) else f"{kind}: {exc}"
    return TurnFailed(error=text, kind=kind, steps=steps)


def _call_key(call: ToolCall) -> tuple[str, str]:
    """A call's name and arguments in one spelling (keys sorted), so the same call written twice compares equal."""
    try:
        return call.name, json.dumps(json.loads(call.arguments or "{}"), sort_keys=True)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read: compared as written
        return call.name, call.arguments


def _told(result: str, removed: dict[str, int]) -> str:
    """A tool's result, telling the model what the secret gate kept out of the memory the call wrote."""
    if not removed:
        return result
    return (f"{result}\n(The secret gate stored {describe_secrets(removed)} of this call as a placeholder; the secret "
            f"itself was not kept.)")


def _by(edit: MemoryEdit, by: Editor) -> MemoryEdit:
    edit.by = by
    return edit


class TurnMemory:
    """The memory a tool call of this turn reaches: blocks (edits made by the turn, under the call's id), tiers."""

    def __init__(self, turn: Turn, call_id: str | None, by: Editor = "agent") -> None:
        self._turn = turn
        self._call_id = call_id
        self._by = by  # who the edit log says made the edits: the model, or an MCP client

    def block(self, label: str) -> Block:
        return self._turn.state.block(label)

    def append_block(self, label: str, content: str) -> Block:
        return self._turn.edit(lambda blocks: _by(blocks.append(label, content, self._call_id), self._by))

    def replace_block(self, label: str, old_content: str, new_content: str) -> Block:
        return self._turn.edit(lambda blocks: _by(blocks.replace(label, old_content, new_content, self._call_id),
                                                  self._by))

    def tier(self, kind: type[T]) -> T:
        return self._turn.tier(kind)


class Turn:
    """One user turn of one agent, run with the collaborators it is handed."""

    def __init__(self, state: TurnState, provider: Provider | None, pager: Pager, requests: RequestBuilder,
                 tools: ToolRegistry, tier: Callable[[type[Any]], Any], save: Callable[[str | None], StepSaved | None],
                 check_writable: Callable[[], None], reads_text_calls: bool, window_hint: str = "") -> None:
        self.state = state
        self.provider = provider  # None: the agent was opened without a model
        self.pager = pager
        self.requests = requests
        self.tools = tools
        self.tier = tier  # the agent's tier of a kind, for tools (`MemoryAccess.tier`)
        self.save = save  # commits what changed as one step (with the turn's question when it ends the turn)
        self.check_writable = check_writable
        self.reads_text_calls = reads_text_calls
        self.window_hint = window_hint  # said after a request too big for the window: which window, how to change it
        self.last_usage: Usage | None = None  # what the provider last reported

    def edit(self, change: Callable[[CoreMemory], MemoryEdit]) -> Block:
        """Make a tool's block edit, unless the blocks it leaves would crowd the conversation out of the window."""
        return self.state.edit(change, self.refusal)

    def refusal(self, blocks: list[Block]) -> str | None:
        """Why blocks reading like `blocks` would leave too little room for the conversation (None: they fit)."""
        request = self.requests.build(self.state, blocks=blocks)
        return self.pager.fixed_over_share(request, self.state.calibration)

    def _run(self, call: ToolCall, done: dict[tuple[str, str], ToolOutcome]) -> ToolOutcome:
        """Run a call, unless this turn already made the same memory edit: a small model that repeats a call it saw
        succeed (core_memory_append, again and again, to the end of max_steps) is told so, and the edit is not
        made twice. Other calls run again: what they return may have changed."""
        before = done.get(_call_key(call))
        if before is not None:
            return ToolOutcome(f"Error: this exact call was already made in this turn, and it worked: "
                               f"{before.text[:200]}. Do not repeat it: reply to the user now, in plain words.",
                               is_error=True)
        with acting_as("model", f"{call.name} {call.id}"):  # what the call reads or changes is the model's doing
            return self.tools.execute(call, ToolContext(memory=TurnMemory(self, call.id), call_id=call.id))

    def run(self, text: str) -> Generator[Event, None, None]:
        """Run the turn and yield its events.

        Every step (a model call and the tool calls it asked for) is saved before the next begins,
        and a failed save ends the turn with that error. Whatever happens (a provider error, Ctrl-C,
        the consumer closing the generator), the agent is left consistent: no tool call without a
        result, and everything finished saved, or kept for the next save if saving failed.
        """
        try:
            self.check_writable()
            if self.provider is None:
                raise ConfigError(f'agent "{self.state.name}" was opened without a model, so it cannot take turns.')
        except AgentOSError as exc:
            yield failure(exc, 0)
            return
        provider = self.provider
        owner = self.state
        owner.secrets.take()  # what the gate removed outside a turn (a block set by hand) was told of there
        user = owner.screened(Message.user(text))  # a secret in it never reaches the model, nor storage
        yield from self._seen_shared()
        first = self.requests.build(owner, pending=[user])
        too_large = self.pager.preflight(first, owner.calibration)
        if too_large:
            yield TurnFailed(error=f"{too_large} {self.window_hint}".strip(), kind="ContextOverflowError", steps=0)
            return
        owner.append(user)
        yield from self._secrets_told()
        settings = owner.settings
        total = Usage()
        done: dict[tuple[str, str], ToolOutcome] = {}  # the calls that edited memory this turn, by name and arguments
        steps = 0
        request: ModelRequest | None = first  # built once per step; again only after the pager changed the context
        try:
            while steps < settings.max_steps:
                steps += 1
                seen = self._seen_shared() if steps > 1 else []  # other agents' edits of blocks shared with them
                yield from seen
                request = None if seen else request
                request = request or self.requests.build(owner)
                decision = self.pager.before_call(pager_view(owner, request))
                owner.set_alerted(decision.alerted)
                if decision.alert is not None:
                    owner.append(decision.alert)
                if decision.notice is not None:
                    yield decision.notice
                if decision.compaction is not None:
                    yield self._apply(decision.compaction)
                if decision.alert is not None or decision.compaction is not None:
                    request = self.requests.build(owner)
                parts: list[str] = []
                calls: list[ToolCall] = []
                stop: str | None = None
                overflows = 0
                watch = CallWatch(self.reads_text_calls)
                while True:
                    try:
                        for event in provider.stream(request):
                            if isinstance(event, StreamText):
                                parts.append(event.text)
                                shown = watch.feed(event.text)
                                if shown:
                                    yield TextDelta(text=shown)
                            elif isinstance(event, StreamToolCall):
                                calls.append(event.call)
                            elif isinstance(event, StreamUsage):
                                total = total + event.usage
                                self.last_usage = event.usage
                                owner.calibrate(self.pager.observe(request, event.usage, owner.calibration))
                                yield UsageReported(usage=event.usage)
                            elif isinstance(event, StreamDone):
                                stop = event.stop_reason
                            elif isinstance(event, StreamRetrying):
                                yield _retrying(event)
                        break
                    except ContextOverflowError as exc:
                        overflows += 1
                        if parts or calls or overflows > settings.pager.overflow_retries:
                            yield failure(ContextOverflowError(f"{exc} {self.window_hint}".strip()), steps)
                            return
                        yield Notice(text=f"the model rejected the request as too long; compacting and retrying "
                                     f"({overflows}/{settings.pager.overflow_retries})")
                        compaction = self.pager.compact(pager_view(owner, request), "overflow", attempt=overflows)
                        yield self._apply(compaction) if isinstance(compaction, Compaction) else compaction
                        request = self.requests.build(owner)
                    except Exception as exc:  # noqa: BLE001 - a provider failure ends the turn, not the agent
                        if parts:  # cut mid-reply: what arrived is kept, as an incomplete reply, so the turn stays whole
                            rest = watch.finish((), ())[1]
                            if rest:
                                yield TextDelta(text=rest)
                            owner.append(Message.assistant("".join(parts) + CUT_OFF_MARK))
                            yield from self._secrets_told()
                            yield ReplyIncomplete(reason="disconnected", detail="the reply was cut off; what arrived "
                                                  "is kept, marked as cut off")  # why: the failure that follows
                        yield failure(exc, steps)
                        return
                request = None
                stop = stop or "no_finish_reason"
                if calls or not watch.holding:  # native calls, or nothing held: only the text left to show
                    found, rest = watch.finish({}, ())
                else:
                    found, rest = watch.finish({t.name: list(t.parameters.get("properties", {})) for t in self.tools},
                                               [b.label for b in owner.blocks_view()])
                if rest:
                    yield TextDelta(text=rest)
                if found is not None:
                    calls, parts, stop = found.calls, [found.lead_in], "tool_use"
                reply = Message.assistant("".join(parts), calls)
                owner.append(reply)
                if stop in INCOMPLETE:
                    yield ReplyIncomplete(reason=stop, detail=INCOMPLETE[stop])
                for call in calls:
                    yield ToolCallStarted(call_id=call.id, name=call.name, arguments=call.arguments)
                    mark = owner.secrets.mark()
                    outcome = self._run(call, done)
                    result = owner.append(Message.tool_result(call, _told(outcome.text, owner.secrets.since(mark)),
                                                              is_error=outcome.is_error))
                    edits = owner.take_edit_reports()
                    if edits:
                        done[_call_key(call)] = outcome  # the same edit again in this turn is not made
                    for edit in edits:
                        yield MemoryEdited(
                            label=edit.label, old_value=edit.old_value, new_value=edit.new_value, tool_call_id=call.id
                        )
                    yield ToolCallFinished(call_id=call.id, name=call.name, result=result.content,
                                           is_error=outcome.is_error)
                yield from self._secrets_told()
                try:
                    saved = self.save(None if calls else user.content)  # a finished turn is a restore point
                except AgentOSError as exc:
                    yield failure(exc, steps)
                    return
                if saved is not None:
                    yield saved
                if not calls:
                    yield TurnFinished(reply=reply, steps=steps, usage=total, stop_reason=stop)
                    return
            yield TurnFailed(
                error=f"stopped after {steps} steps without a final reply (max_steps={settings.max_steps}).",
                kind="MaxStepsExceeded",
                steps=steps,
            )
        finally:
            owner.close_open_calls()
            if owner.has_changes:
                try:
                    self.save(None)
                except LeaseLostError:
                    pass  # this session may not write the agent any more; the turn already said why
                except AgentOSError:
                    pass  # kept in memory; the next save writes it

    def _seen_shared(self) -> list[MemoryEdited]:
        """Take in other agents' edits of the blocks this agent shares with them; an event for each."""
        return [MemoryEdited(label=e.label, old_value=e.old_value, new_value=e.new_value)
                for e in self.state.refresh_shared()]

    def _secrets_told(self) -> list[SecretsRemoved]:
        """The event telling what the secret gate removed since it last told (none when nothing was)."""
        removed = self.state.secrets.take()
        return [removed] if removed is not None else []

    def _apply(self, compaction: Compaction) -> Event:
        """Apply a compaction the pager planned; its event."""
        self.state.apply(compaction)
        return compaction.event
