"""Each condition's way of answering one question (see `options`): the agent's turn (rewound after), or one model
call with the condition's part of the conversation in the prompt."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentos.agent.agent import Agent
from agentos.errors import AgentOSError
from agentos.eval.conversations import evidence_ids
from agentos.eval.locomo_qa.prompts import (
    NOTHING,
    SYSTEM,
    lines_source,
    memory_source,
    question_prompt,
    transcript,
    transcript_source,
    turn_index,
    turn_lines,
)
from agentos.eval.locomo_qa.results import Answer
from agentos.events import TurnFailed, TurnFinished, UsageReported
from agentos.memory.recall import RecallTier
from agentos.messages import Message, Usage
from agentos.providers.base import ModelRequest, Provider, complete

SEARCH_K = 10  # the turns the search condition gives


def ask_agent(agent: Agent, prompt: str) -> Answer:
    """One turn of the agent: its reply, the tokens of every model call in it, and its wall time."""
    usage, reply, error = Usage(), "", None
    started = time.perf_counter()
    try:
        for event in agent.turn(prompt):
            if isinstance(event, UsageReported):
                usage = usage + event.usage
            elif isinstance(event, TurnFinished):
                reply = event.reply.content
            elif isinstance(event, TurnFailed):
                error = f"{event.kind}: {event.error}"
    except AgentOSError as exc:  # a failed answer, not a failed run (the caller rewinds the agent)
        reply, error = "", f"{type(exc).__name__}: {exc}"
    return Answer(reply.strip(), usage.input_tokens, usage.output_tokens, time.perf_counter() - started, error)


def ask_model(provider: Provider, prompt: str, cap: int | None) -> Answer:
    """One model call with the prompt (and SYSTEM), its output capped as the agent's are."""
    request = ModelRequest(system_static=SYSTEM, system_dynamic="", messages=[Message.user(prompt)],
                           max_output_tokens=cap)
    started = time.perf_counter()
    try:
        response = complete(provider, request)
    except AgentOSError as exc:
        return Answer("", seconds=time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    usage = response.usage
    return Answer(response.text.strip(), usage.input_tokens, usage.output_tokens, time.perf_counter() - started)


def search_ids(agent: Agent, question: str, now: datetime | None) -> list[str]:
    """The ids of the turns agentos's recall search finds for the question: the agent's default paths, the best
    SEARCH_K, best first; `now` is when the question is asked (after the conversation's last turn)."""
    return [hit.id for hit in agent.tier(RecallTier).search(question, page_size=SEARCH_K, now=now).hits]


@dataclass
class Asker:
    """One conversation's questions asked under each condition: the agent and its restore point, the answering
    model and its output cap, what the prompts need (turns by id, the transcript, the agent's search tools)."""

    agent: Agent
    point: int
    sample: dict[str, Any]
    provider: Provider
    cap: int | None
    tools: list[str]
    not_said: bool
    full: bool

    def __post_init__(self) -> None:
        self.index = turn_index(self.sample)
        self.text = transcript(self.sample) if self.full else ""
        times = [m.created_at for _, m in self.index.values()]
        self.now = max(times) if times else None
        self.prefix = f"{self.sample['sample_id']}|"

    def evidence(self, qa: dict[str, Any]) -> list[str]:
        """The question's evidence turns, as message ids, in the conversation's order."""
        cited = evidence_ids(qa, {i.removeprefix(self.prefix) for i in self.index})
        return [i for i in self.index if i.removeprefix(self.prefix) in cited]

    def prompt(self, question: str, source: str) -> str:
        return question_prompt(self.sample, question, source=source, not_said=self.not_said)

    def ask(self, condition: str, qa: dict[str, Any]) -> Answer:
        """The condition's answer to one question."""
        question = qa["question"]
        if condition == "agent":
            try:
                return ask_agent(self.agent, self.prompt(question, memory_source(self.sample, self.tools)))
            finally:
                self.agent.rewind(self.point)
        if condition == "none":
            return ask_model(self.provider, self.prompt(question, NOTHING), self.cap)
        if condition == "full":
            return ask_model(self.provider, self.prompt(question, transcript_source(self.text)), self.cap)
        started = time.perf_counter()
        if condition == "search":
            ids = search_ids(self.agent, question, self.now)
        elif condition == "gold":
            ids = self.evidence(qa)
        else:
            raise ValueError(f"unknown condition {condition!r}")
        source = lines_source(turn_lines(self.index, ids), found=condition == "search")
        answer = ask_model(self.provider, self.prompt(question, source), self.cap)
        answer.seconds = time.perf_counter() - started  # the search's time too
        answer.context = [i.removeprefix(self.prefix) for i in ids if i in self.index]
        return answer
