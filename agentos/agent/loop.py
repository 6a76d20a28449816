"""The turn loop: model calls until a reply with no tool calls, bounded by max_steps; each step is saved."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from agentos.agent.text_calls import CallWatch
from agentos.agent.turn_state import Compaction
from agentos.errors import AgentOSError, ContextOverflowError, LeaseLostError
from agentos.events import (
    Event,
    MemoryEdited,
    Notice,
    ReplyIncomplete,
    Retrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from agentos.messages import Message, ToolCall, Usage
from agentos.providers.base import ModelRequest, StreamDone, StreamRetrying, StreamText, StreamToolCall, StreamUsage

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

# How a model's answer can end without being a complete reply, and what the user is told.
INCOMPLETE = {
    "max_tokens": "the reply was cut off: the model reached its output limit (max_tokens)",
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


def _failure(exc: BaseException, steps: int) -> TurnFailed:
    kind = type(exc).__name__
    text = str(exc) if isinstance(exc, AgentOSError) else f"{kind}: {exc}"
    return TurnFailed(error=text, kind=kind, steps=steps)


def run_turn(agent: Agent, text: str) -> Generator[Event, None, None]:
    """Run one user turn and yield its events.

    Every step (a model call and the tool calls it asked for) is saved before the next begins,
    and a failed save ends the turn with that error. Whatever happens (a provider error, Ctrl-C,
    the consumer closing the generator), the agent is left consistent: no tool call without a
    result, and everything finished saved, or kept for the next save if saving failed.
    """
    try:
        agent.check_writable()
    except AgentOSError as exc:
        yield _failure(exc, 0)
        return
    owner = agent.state
    user = Message.user(text)
    first = agent.build_request(pending=[user])
    too_large = agent.pager.preflight(first, owner.calibration)
    if too_large:
        yield TurnFailed(error=too_large, kind="ContextOverflowError", steps=0)
        return
    owner.append(user)
    settings = owner.settings
    total = Usage()
    steps = 0
    request: ModelRequest | None = first  # built once per step; again only after the pager changed the context
    try:
        while steps < settings.max_steps:
            steps += 1
            request = request or agent.build_request()
            decision = agent.pager.before_call(agent.pager_view(request))
            owner.set_alerted(decision.alerted)
            if decision.alert is not None:
                owner.append(decision.alert)
            if decision.notice is not None:
                yield decision.notice
            if decision.compaction is not None:
                yield agent.apply(decision.compaction)
            if decision.alert is not None or decision.compaction is not None:
                request = agent.build_request()
            parts: list[str] = []
            calls: list[ToolCall] = []
            stop: str | None = None
            overflows = 0
            watch = CallWatch(agent.reads_text_calls())
            while True:
                try:
                    for event in agent.provider.stream(request):
                        if isinstance(event, StreamText):
                            parts.append(event.text)
                            shown = watch.feed(event.text)
                            if shown:
                                yield TextDelta(text=shown)
                        elif isinstance(event, StreamToolCall):
                            calls.append(event.call)
                        elif isinstance(event, StreamUsage):
                            total = total + event.usage
                            agent.last_usage = event.usage
                            owner.calibrate(agent.pager.observe(request, event.usage, owner.calibration))
                            yield UsageReported(usage=event.usage)
                        elif isinstance(event, StreamDone):
                            stop = event.stop_reason
                        elif isinstance(event, StreamRetrying):
                            yield _retrying(event)
                    break
                except ContextOverflowError as exc:
                    overflows += 1
                    if parts or calls or overflows > settings.pager.overflow_retries:
                        yield _failure(exc, steps)
                        return
                    yield Notice(text=f"the model rejected the request as too long; compacting and retrying "
                                 f"({overflows}/{settings.pager.overflow_retries})")
                    compaction = agent.pager.compact(agent.pager_view(request), "overflow", attempt=overflows)
                    yield agent.apply(compaction) if isinstance(compaction, Compaction) else compaction
                    request = agent.build_request()
                except Exception as exc:  # noqa: BLE001 - a provider failure ends the turn, not the agent
                    if parts:  # cut mid-reply: what arrived is kept, as an incomplete reply, so the turn stays whole
                        rest = watch.finish((), ())[1]
                        if rest:
                            yield TextDelta(text=rest)
                        owner.append(Message.assistant("".join(parts) + CUT_OFF_MARK))
                        yield ReplyIncomplete(reason="disconnected", detail=f"the reply was cut off: {exc}")
                    yield _failure(exc, steps)
                    return
            request = None
            stop = stop or "no_finish_reason"
            if calls or not watch.holding:  # native calls, or nothing held: only the text left to show
                found, rest = watch.finish({}, ())
            else:
                found, rest = watch.finish({t.name: list(t.parameters.get("properties", {})) for t in agent.tools},
                                           [b.label for b in agent.blocks])
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
                outcome = agent.tools.execute(call, agent.tool_context(call.id))
                owner.append(Message.tool_result(call, outcome.text, is_error=outcome.is_error))
                for edit in owner.take_edit_reports():
                    yield MemoryEdited(
                        label=edit.label, old_value=edit.old_value, new_value=edit.new_value, tool_call_id=call.id
                    )
                yield ToolCallFinished(call_id=call.id, name=call.name, result=outcome.text, is_error=outcome.is_error)
            try:
                saved = agent.save(restore_point=None if calls else user.content)  # a finished turn is a restore point
            except AgentOSError as exc:
                yield _failure(exc, steps)
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
                agent.save()
            except LeaseLostError:
                pass  # this session may not write the agent any more; the turn already said why
            except AgentOSError:
                pass  # kept in memory; the next save writes it
