"""Asking a model for facts and for decisions about them, with validated, repaired structured output.

Each question offers the model one tool whose JSON schema is the answer's (tool calling is how every
provider here takes a schema); an answer written as JSON text is read too. Every answer is validated
against a pydantic model and against what was asked (which candidates, which fact ids). An answer that
fails is sent back with the reason, at most `max_repairs` times; then the batch is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import json_repair
from pydantic import BaseModel, Field, ValidationError, field_validator

from agentos.memory.facts.rows import Fact
from agentos.messages import Message, ToolCall, Usage
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.text import valid_values
from agentos.tools.decorator import Tool

MAX_OUTPUT_TOKENS = 2000
LINE_LIMIT = 1500  # characters of one message shown to the extractor
SUBJECT_ALIASES = {"user": "user", "the user": "user", "i": "user", "me": "user", "agent": "agent",
                   "the agent": "agent", "assistant": "agent", "the assistant": "agent"}


class Prompts(Protocol):
    """The agent's prompt templates (a user's prompt directory overrides the built-in ones)."""

    def render(self, name: str, **values: object) -> str: ...


class CandidateFact(BaseModel):
    """One fact the extractor found."""

    text: str = Field(min_length=3, max_length=500, description="One short, self-contained sentence, with names "
                                                                 "and dates spelled out.")
    subject: str = Field("user", min_length=1, max_length=80,
                         description='Who or what it is about: "user", "agent", or a name.')
    category: str = Field("other", min_length=1, max_length=40,
                          description="preference, biographical, plan, relationship, event, opinion or other.")
    confidence: float = Field(0.8, ge=0, le=1, description="How sure you are that it is true and meant, 0 to 1.")
    sources: list[int] = Field(default_factory=list, description="The numbers of the messages it comes from.")

    @field_validator("text", "subject", "category", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return " ".join(value.split()) if isinstance(value, str) else value

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str) -> str:
        return SUBJECT_ALIASES.get(value.lower(), value)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return value.lower()


class Extraction(BaseModel):
    facts: list[CandidateFact] = Field(max_length=50)


class Decision(BaseModel):
    """What to do with one candidate."""

    candidate: int = Field(description="The candidate's number.")
    action: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    fact: str | None = Field(None, description="For UPDATE and DELETE: the id (F1, F2, ...) of the fact it replaces "
                                               "or shows to be no longer true.")
    reason: str = Field("", max_length=300)

    @field_validator("action", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class Decisions(BaseModel):
    decisions: list[Decision]


class AnswerError(ValueError):
    """A model's answer that cannot be used; the message says why, for the model to fix."""


class BatchSkipped(Exception):
    """No usable answer after every repair: the batch is skipped (and noted in the change log)."""


def record_facts(facts: list[CandidateFact]) -> str:
    """Record the facts found in the conversation (an empty list when there are none).

    Args:
        facts: Each fact, as one short self-contained sentence with its subject, category, confidence and sources.
    """
    return ""


def decide(decisions: list[Decision]) -> str:
    """Record one decision for every candidate fact.

    Args:
        decisions: For each candidate, by number: ADD, UPDATE (with the fact it replaces), DELETE (with the fact it
            shows to be no longer true) or NONE.
    """
    return ""


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each `$ref` to its `$defs` written out in place (small local models and some servers
    do not follow references)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/") and ref[8:] in defs:
                return walk(defs[ref[8:]])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    walked: dict[str, Any] = walk(schema)
    return walked


def answer_tool(function: Any) -> Tool:
    """A tool whose arguments are an answer's schema, with references written out."""
    made = Tool(function)
    made.parameters = inline_refs(made.parameters)
    return made


EXTRACT_TOOL = answer_tool(record_facts)
DECIDE_TOOL = answer_tool(decide)


@dataclass
class Asked:
    """A validated answer and what asking cost."""

    value: Any
    usage: Usage
    calls: int


def read_json(response_text: str, calls: Sequence[ToolCall], tool: str) -> Any:
    """The answer's JSON: the tool call's arguments, else a JSON object or list in the text (code fences allowed)."""
    for call in calls:
        if call.name == tool:
            try:
                return _loads_or_repaired(call.arguments or "{}")
            except json.JSONDecodeError as exc:
                raise AnswerError(f"the arguments of {tool} are not valid JSON ({exc.msg} at character {exc.pos}).") from None
    if calls:
        raise AnswerError(f"you called {calls[0].name!r}; the only tool here is {tool}.")
    text = (response_text or "").strip()
    if not text:
        raise AnswerError(f"the answer was empty; call {tool}.")
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    text = fenced.group(1).strip() if fenced else text
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise AnswerError(f"the answer holds no JSON; call {tool}.")
    start = min(starts)
    end = max(text.rfind("}"), text.rfind("]"))
    try:
        return _loads_or_repaired(text[start : end + 1] if end > start else text[start:])
    except json.JSONDecodeError as exc:
        raise AnswerError(f"the answer is not valid JSON ({exc.msg}); call {tool} with valid arguments.") from None


def _loads_or_repaired(text: str) -> Any:
    """JSON, or JSON with a small model's usual slips repaired (a trailing comma, a missing quote or closing
    bracket, a cut-off end) when the repair keeps the object or list the text opened; else the parse error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        repaired = json_repair.repair_json(text, return_objects=True, skip_json_loads=True)
        opened = dict if text.lstrip().startswith("{") else list
        if isinstance(repaired, opened) and repaired:
            return repaired
        raise


def _validated(model: type[BaseModel], data: Any, key: str) -> Any:
    if isinstance(data, list):
        data = {key: data}
    try:
        data = valid_values(data)  # lone surrogates from a JSON escape become U+FFFD: every fact can be stored
    except ValueError as exc:
        raise AnswerError(f"the answer is {exc}.") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise AnswerError(f"{where}: {first['msg']} ({len(exc.errors())} problem(s) in all).") from None


class FactModel:
    """The model consolidation asks: extraction, then decisions, each validated and repaired."""

    def __init__(self, provider: Provider, prompts: Prompts, max_repairs: int = 2) -> None:
        self.provider = provider
        self.prompts = prompts
        self.max_repairs = max_repairs

    @property
    def spec(self) -> str:
        """The model as a skipped batch records it: a different one reads the batch again by itself."""
        return f"{self.provider.name}/{self.provider.model}"

    def _ask(self, system: str, question: str, tool: Tool, check: Any) -> Asked:
        messages = [Message(role="user", content=question)]
        usage = Usage()
        reasons: list[str] = []
        for attempt in range(self.max_repairs + 1):
            request = ModelRequest(system_static=system, system_dynamic="", messages=list(messages), tools=[tool],
                                   max_output_tokens=MAX_OUTPUT_TOKENS)
            response = complete(self.provider, request)
            usage = usage + response.usage
            try:
                return Asked(check(read_json(response.text, response.tool_calls, tool.name)), usage, attempt + 1)
            except AnswerError as exc:
                reasons.append(str(exc))
                messages.append(Message(role="assistant", content=_shown(response.text, response.tool_calls)))
                messages.append(Message(role="user", content=self.prompts.render("fact_repair.j2", error=str(exc),
                                                                                 tool=tool.name)))
        raise BatchSkipped(f"no usable answer after {self.max_repairs + 1} tries: {reasons[-1]}")

    def extract(self, lines: Sequence[str]) -> tuple[list[CandidateFact], Usage, int]:
        """Candidate facts in the numbered message lines."""
        asked = self._ask(self.prompts.render("fact_extract.j2"), "\n".join(lines), EXTRACT_TOOL,
                          lambda data: _validated(Extraction, data, "facts").facts)
        return asked.value, asked.usage, asked.calls

    def decide(self, candidates: Sequence[CandidateFact], similar: Sequence[Sequence[tuple[str, Fact]]],
               ) -> tuple[dict[int, Decision], Usage, int]:
        """One decision per candidate (numbered from 1), against the aliased current facts shown with it."""
        question = self.prompts.render("fact_decide_question.j2", items=[
            {"number": i + 1, "candidate": c, "similar": [{"alias": a, "fact": f} for a, f in similar[i]]}
            for i, c in enumerate(candidates)])

        def check(data: Any) -> dict[int, Decision]:
            decisions = _validated(Decisions, data, "decisions").decisions
            by_number: dict[int, Decision] = {}
            for d in decisions:
                if not 1 <= d.candidate <= len(candidates):
                    raise AnswerError(f"candidate {d.candidate} does not exist; they are numbered 1 to {len(candidates)}.")
                if d.candidate in by_number:
                    raise AnswerError(f"candidate {d.candidate} has two decisions; give exactly one each.")
                shown = {a.upper() for a, _ in similar[d.candidate - 1]}
                if d.action in ("UPDATE", "DELETE"):
                    if not d.fact or d.fact.strip().upper() not in shown:
                        offer = ", ".join(sorted(shown)) or "none"
                        raise AnswerError(f"candidate {d.candidate}: {d.action} needs the id of one of the facts shown "
                                          f"with it ({offer}), not {d.fact!r}.")
                by_number[d.candidate] = d
            missing = [str(n) for n in range(1, len(candidates) + 1) if n not in by_number]
            if missing:
                raise AnswerError(f"no decision for candidate(s) {', '.join(missing)}; give one for every candidate.")
            return by_number

        asked = self._ask(self.prompts.render("fact_decide.j2"), question, DECIDE_TOOL, check)
        return asked.value, asked.usage, asked.calls


def _shown(text: str, calls: Sequence[ToolCall]) -> str:
    """A failed answer as the model will see it again in the repair request."""
    parts = [text.strip()] if text.strip() else []
    parts += [f"{c.name}({c.arguments[:4000]})" for c in calls]
    return "\n".join(parts) or "(empty)"


def message_line(number: int, message: Message) -> str:
    """One numbered message for the extractor: its time, speaker and text."""
    who = message.name or ("the user" if message.role == "user" else "the agent")
    content = message.content if len(message.content) <= LINE_LIMIT else message.content[:LINE_LIMIT] + " [...]"
    return f"[{number}] {message.created_at:%Y-%m-%d %H:%M} {who} ({message.role}): {content}"


def sources_of(candidate: CandidateFact, messages: list[Message]) -> list[Message]:
    """The messages a candidate names as its sources; all of the batch's when it names none that exist."""
    named = [messages[n - 1] for n in dict.fromkeys(candidate.sources) if 1 <= n <= len(messages)]
    return named or messages


def fact_of(candidate: CandidateFact, sources: list[Message]) -> Fact:
    """The fact a candidate becomes, valid from its first source."""
    return Fact(text=candidate.text, subject=candidate.subject, category=candidate.category,
                confidence=candidate.confidence, valid_from=min(m.created_at for m in sources),
                source_ids=tuple(m.id for m in sources))
