"""The turn loop: model calls until a reply with no tool calls, bounded by max_steps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from agentos.agent.context import unanswered_calls
from agentos.errors import AgentOSError, ContextOverflowError
from agentos.events import (
    Event,
    MemoryEdited,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from agentos.messages import Message, ToolCall, Usage
from agentos.providers.base import StreamText, StreamToolCall, StreamUsage
from agentos.tools.decorator import ToolContext

if TYPE_CHECKING:
    from agentos.agent.agent import Agent


def _failure(exc: BaseException, steps: int) -> TurnFailed:
    kind = type(exc).__name__
    text = str(exc) if isinstance(exc, AgentOSError) else f"{kind}: {exc}"
    return TurnFailed(error=text, kind=kind, steps=steps)


def run_turn(agent: "Agent", text: str) -> Iterator[Event]:
    """Run one user turn and yield its events.

    Whatever happens (a provider error, a storage error, Ctrl-C, the consumer closing the
    generator), the agent is left consistent: no tool call without a result, and every
    finished message saved or still pending for the next save.
    """
    too_large = agent.pager.preflight()
    if too_large:
        yield TurnFailed(error=too_large, kind="ContextOverflowError", steps=0)
        return
    agent.append(Message.user(text))
    total = Usage()
    steps = 0
    try:
        while steps < agent.state.settings.max_steps:
            steps += 1
            yield from agent.pager.before_call()
            parts: list[str] = []
            calls: list[ToolCall] = []
            overflows = 0
            while True:
                request = agent.build_request()
                try:
                    for event in agent.provider.stream(request):
                        if isinstance(event, StreamText):
                            parts.append(event.text)
                            yield TextDelta(text=event.text)
                        elif isinstance(event, StreamToolCall):
                            calls.append(event.call)
                        elif isinstance(event, StreamUsage):
                            total = total + event.usage
                            agent.last_usage = event.usage
                            agent.pager.observe(request, event.usage)
                            yield UsageReported(usage=event.usage)
                    break
                except ContextOverflowError as exc:
                    overflows += 1
                    if parts or calls or overflows > agent.state.settings.pager.overflow_retries:
                        yield _failure(exc, steps)
                        return
                    yield Notice(text=f"the model rejected the request as too long; compacting and retrying "
                                 f"({overflows}/{agent.state.settings.pager.overflow_retries})")
                    yield from agent.pager.compact("overflow", attempt=overflows)
                except Exception as exc:  # noqa: BLE001 - a provider failure ends the turn, not the agent
                    yield _failure(exc, steps)
                    return
            reply = Message.assistant("".join(parts), calls)
            agent.append(reply)
            for call in calls:
                yield ToolCallStarted(call_id=call.id, name=call.name, arguments=call.arguments)
                outcome = agent.tools.execute(call, ToolContext(agent=agent, call_id=call.id))
                agent.append(Message.tool_result(call, outcome.text, is_error=outcome.is_error))
                for edit in agent.take_edit_reports():
                    yield MemoryEdited(
                        label=edit.label, old_value=edit.old_value, new_value=edit.new_value, tool_call_id=call.id
                    )
                yield ToolCallFinished(call_id=call.id, name=call.name, result=outcome.text, is_error=outcome.is_error)
            try:
                agent.save()
            except AgentOSError as exc:
                yield _failure(exc, steps)
                return
            if not calls:
                yield TurnFinished(reply=reply, steps=steps, usage=total)
                return
        yield TurnFailed(
            error=f"stopped after {steps} steps without a final reply (max_steps={agent.state.settings.max_steps}).",
            kind="MaxStepsExceeded",
            steps=steps,
        )
    finally:
        for result in unanswered_calls(agent.context):
            agent.append(result)
        if agent.has_pending:
            try:
                agent.save()
            except AgentOSError:
                pass  # still pending in memory; the next save writes it
