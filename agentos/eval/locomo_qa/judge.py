"""The judge: a model that grades each answer against the gold one, through a grade tool or JSON, asked again when
its grade cannot be read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agentos.errors import AgentOSError
from agentos.eval.locomo_qa.results import Answer, Grade
from agentos.memory.facts.extraction import AnswerError, read_json
from agentos.messages import Message, Usage
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.tools.decorator import Tool

JUDGE_TRIES = 3  # a judge answer that cannot be read is asked again, at most this many times in all
JUDGE_OUTPUT_TOKENS = 400

JUDGE_SYSTEM = (
    "You grade answers to questions about a long conversation. You get the question, the gold (correct) answer and "
    "the answer to grade. The answer is correct when it says what the gold answer says: it may be shorter or longer, "
    "worded differently, or give a date in another format, as long as it names the same thing, person, event, date "
    "or time period. It is wrong when it contradicts the gold answer, misses its point, or does not answer. "
    'Call grade, or reply with only {"correct": true} or {"correct": false}.'
)
JUDGE_QUESTION = "Question: {question}\nGold answer: {gold}\nAnswer to grade: {answer}"
JUDGE_REPAIR = 'Your grade could not be read: {error} Reply with only {{"correct": true}} or {{"correct": false}}.'


def grade(correct: bool, reason: str = "") -> str:
    """Record whether the answer is correct.

    Args:
        correct: True when the answer says what the gold answer says, else false.
        reason: A few words on why (optional).
    """
    return ""


GRADE_TOOL = Tool(grade)


class Verdict(BaseModel):
    """The judge's answer."""

    correct: bool
    reason: str = ""


def read_verdict(text: str, calls: Sequence[Any]) -> bool:
    """The judge's grade from its answer (the grade tool's arguments, or JSON in the text), validated."""
    data = read_json(text, calls, GRADE_TOOL.name)
    try:
        return Verdict.model_validate(data).correct
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AnswerError(f"{'.'.join(str(p) for p in first['loc']) or 'the answer'}: {first['msg']}.") from None


def judge_answer(judge: Provider, question: str, gold: str, answer: Answer) -> Grade:
    """Grade one answer; an unreadable grade is asked again, at most JUDGE_TRIES times in all, then left ungraded."""
    if not answer.text:
        return Grade(correct=False, error="no answer" if answer.error is None else answer.error)
    messages = [Message.user(JUDGE_QUESTION.format(question=question, gold=gold, answer=answer.text))]
    usage, error = Usage(), ""
    for tries in range(1, JUDGE_TRIES + 1):
        request = ModelRequest(system_static=JUDGE_SYSTEM, system_dynamic="", messages=list(messages),
                               tools=[GRADE_TOOL], max_output_tokens=JUDGE_OUTPUT_TOKENS)
        try:
            response = complete(judge, request)
        except AgentOSError as exc:
            return Grade(None, usage.input_tokens, usage.output_tokens, tries, f"{type(exc).__name__}: {exc}")
        usage = usage + response.usage
        try:
            return Grade(read_verdict(response.text, response.tool_calls), usage.input_tokens, usage.output_tokens,
                         tries)
        except AnswerError as exc:
            error = str(exc)
            shown = response.text.strip() or "; ".join(f"{c.name}({c.arguments})" for c in response.tool_calls)
            messages += [Message.assistant(shown or "(empty)"), Message.user(JUDGE_REPAIR.format(error=error))]
    return Grade(None, usage.input_tokens, usage.output_tokens, JUDGE_TRIES, error)
