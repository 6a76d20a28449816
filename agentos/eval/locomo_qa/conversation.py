"""One conversation evaluated: an agent loaded with it and consolidated, then every chosen question asked of the
agent (rewound after each) and of the full-context baseline, and both answers graded."""

from __future__ import annotations

import sys
import time
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.errors import AgentOSError
from agentos.eval.conversations import agent_name, category, turn_messages
from agentos.eval.locomo_qa.judge import judge_answer
from agentos.eval.locomo_qa.options import Models, Options
from agentos.eval.locomo_qa.prompts import BASELINE_SYSTEM, question_prompt, questions, transcript
from agentos.eval.locomo_qa.results import Answer, Conversation, Row
from agentos.events import TurnFailed, TurnFinished, UsageReported
from agentos.memory.facts.tier import FactTier
from agentos.messages import Message, Usage
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.storage import Store


def load_agent(store: Store, sample: dict[str, Any], models: Models, options: Options) -> Agent:
    """An agent answering with the model, its recall holding the conversation, fact memory on."""
    agent = Agent.create(agent_name("locomo-qa", sample), model=options.model, provider=models.answer, store=store,
                         settings=AgentSettings(embedder=options.embedder))
    messages = turn_messages(sample)
    for start in range(0, len(messages), 500):
        agent.add_history(messages[start : start + 500])
    agent.roles.use("facts", models.facts)
    agent.update_settings(facts=agent.settings.facts.model_copy(update={"mode": "batch"}))
    return agent


def status(text: str, *, done: bool = False) -> None:
    """A progress line on stderr, written over the last one; `done` ends it."""
    print(f"\r{text:<72}", end="\n" if done else "", file=sys.stderr, flush=True)


def consolidate(agent: Agent, label: str) -> tuple[str, float, int]:
    """Consolidate the whole conversation into facts now, with a progress line on stderr."""
    started = time.perf_counter()
    report = agent.consolidate(lambda done, total: status(f"{label}: consolidating {done}/{total} messages"))
    seconds = time.perf_counter() - started
    status(f"{label}: consolidated in {seconds:.1f} s: {report.summary()}", done=True)
    tokens = sum(b.usage.input_tokens + b.usage.output_tokens for b in report.batches)
    return report.summary(), seconds, tokens


def before_questions(agent: Agent) -> int:
    """Background consolidation off, and the restore point every question is rewound to (its turn number)."""
    agent.update_settings(facts=agent.settings.facts.model_copy(update={"mode": "off"}))
    agent.add_restore_point("locomo-qa: before the questions")
    return agent.restore_points()[-1].turn


def ask_agent(agent: Agent, prompt: str) -> Answer:
    """One turn of the agent: its reply, the tokens of every model call in it, and its wall time."""
    usage, reply, error = Usage(), "", None
    started = time.perf_counter()
    for event in agent.turn(prompt):
        if isinstance(event, UsageReported):
            usage = usage + event.usage
        elif isinstance(event, TurnFinished):
            reply = event.reply.content
        elif isinstance(event, TurnFailed):
            error = f"{event.kind}: {event.error}"
    return Answer(reply.strip(), usage.input_tokens, usage.output_tokens, time.perf_counter() - started, error)


def ask_baseline(provider: Provider, prompt: str, cap: int | None) -> Answer:
    """One model call with the whole transcript in the prompt."""
    request = ModelRequest(system_static=BASELINE_SYSTEM, system_dynamic="", messages=[Message.user(prompt)],
                           max_output_tokens=cap)
    started = time.perf_counter()
    try:
        response = complete(provider, request)
    except AgentOSError as exc:
        return Answer("", seconds=time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    usage = response.usage
    return Answer(response.text.strip(), usage.input_tokens, usage.output_tokens, time.perf_counter() - started)


def evaluate(store: Store, sample: dict[str, Any], models: Models, options: Options) -> Conversation:
    """Load, consolidate and ask every chosen question of one conversation (and the baseline's)."""
    label = str(sample["sample_id"])
    agent = load_agent(store, sample, models, options)
    try:
        loaded = agent.state.message_count
        summary, seconds, tokens = consolidate(agent, label)
        point = before_questions(agent)
        done = Conversation(label, loaded, loaded, agent.tier(FactTier).count_current(), seconds, tokens, summary)
        text = transcript(sample) if options.baseline else ""
        chosen = questions(sample, options.categories, options.questions)
        for number, qa in enumerate(chosen, 1):
            status(f"{label}: question {number}/{len(chosen)}")
            done.rows.append(answer_one(agent, point, sample, qa, models, options, text))
            done.messages_after = agent.state.message_count
        status(f"{label}: {len(chosen)} questions answered", done=True)
        return done
    finally:
        agent.close()


def answer_one(agent: Agent, point: int, sample: dict[str, Any], qa: dict[str, Any], models: Models,
               options: Options, text: str) -> Row:
    """Ask one question of the agent (then rewind it) and of the baseline; grade both."""
    question, gold = qa["question"], str(qa["answer"])
    try:
        answer = ask_agent(agent, question_prompt(sample, question, memory=True))
    finally:
        agent.rewind(point)
    row = Row(str(sample["sample_id"]), question, category(qa) or 0, gold, answer,
              judge_answer(models.judge, question, gold, answer))
    if options.baseline:
        prompt = question_prompt(sample, question, memory=False, text=text)
        row.baseline = ask_baseline(models.answer, prompt, agent.output_cap())
        row.baseline_grade = judge_answer(models.judge, question, gold, row.baseline)
    return row
