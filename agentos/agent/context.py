"""Rules for a valid message context: every tool call has its result, every result its call."""

from __future__ import annotations

from agentos.messages import Message

CANCELLED_RESULT = "Error: this tool call was cancelled before it finished."


def repair_context(messages: list[Message]) -> list[Message]:
    """Drop tool results whose call is missing, and close calls whose results are missing.

    Used when loading an agent whose last step was cut short, so the next request is valid.
    """
    repaired: list[Message] = []
    open_calls: dict[str, Message] = {}
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                continue
            open_calls.pop(message.tool_call_id)
        elif open_calls:
            repaired.extend(_cancelled_results(open_calls))
            open_calls = {}
        repaired.append(message)
        if message.role == "assistant":
            open_calls = {c.id: message for c in message.tool_calls}
    repaired.extend(_cancelled_results(open_calls))
    return repaired


def _cancelled_results(open_calls: dict[str, Message]) -> list[Message]:
    results = []
    for call_id, assistant in open_calls.items():
        call = next(c for c in assistant.tool_calls if c.id == call_id)
        results.append(Message.tool_result(call, CANCELLED_RESULT, is_error=True))
    return results


def unanswered_calls(messages: list[Message]) -> list[Message]:
    """Error results for the tool calls of the last assistant message that have no result yet."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return _cancelled_results({c.id: message for c in message.tool_calls if c.id not in answered})
        if message.role != "tool":
            return []
    return []
