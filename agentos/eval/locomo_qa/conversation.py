"""One conversation evaluated: an agent loaded with it (and consolidated, with facts), then every chosen question
asked under each condition, scored with LoCoMo's F1 and, with a judge, graded; a progress line on stderr per
question."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.eval.conversations import agent_name, turn_messages
from agentos.eval.locomo_qa.conditions import Asker
from agentos.eval.locomo_qa.judge import judge_answer
from agentos.eval.locomo_qa.options import Models, Options
from agentos.eval.locomo_qa.prompts import SEARCH_TOOLS
from agentos.eval.locomo_qa.results import Conversation, Row
from agentos.eval.locomo_qa.sampling import ADVERSARIAL, Pick, eligible, gold_answer
from agentos.eval.locomo_qa.scoring import locomo_f1
from agentos.memory.facts.tier import FactTier
from agentos.storage import Store


def load_agent(store: Store, sample: dict[str, Any], models: Models, options: Options) -> Agent:
    """An agent answering with the model, its recall holding the conversation, fact memory on unless --no-facts,
    its context window --window when given."""
    agent = Agent.create(agent_name("locomo-qa", sample), model=options.model, provider=models.answer, store=store,
                         settings=AgentSettings(embedder=options.embedder, context_window=options.window,
                                                prompts="compact" if options.prompts == "compact" else "standard"))
    messages = turn_messages(sample)
    for start in range(0, len(messages), 500):
        agent.add_history(messages[start : start + 500])
    if options.facts and models.facts is not None:
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


def evaluate(store: Store, sample: dict[str, Any], models: Models, options: Options,
             picks: Sequence[Pick] | None = None, started: float | None = None) -> Conversation:
    """Load (and consolidate) one conversation and ask its chosen questions (`picks`, by default every eligible
    one, at most --questions) under each condition; `started` is when the run began, for the progress lines."""
    label = str(sample["sample_id"])
    began = time.perf_counter()
    started = began if started is None else started
    agent = load_agent(store, sample, models, options)
    try:
        loaded = agent.state.message_count
        load_s = time.perf_counter() - began
        status(f"{label}: {loaded} messages loaded in {load_s:.1f} s", done=True)
        summary, seconds, tokens = (consolidate(agent, label) if options.facts
                                    else ("not consolidated (--no-facts)", 0.0, 0))
        point = before_questions(agent)
        done = Conversation(label, loaded, loaded, agent.tier(FactTier).count_current(), seconds, tokens, summary,
                            load_s)
        offered = {tool.name for tool in agent.tools}
        asker = Asker(agent, point, sample, models.answer, agent.output_cap(),
                      [t for t in SEARCH_TOOLS if t in offered] or list(SEARCH_TOOLS[:1]),
                      not_said=ADVERSARIAL in options.categories, full="full" in options.conditions)
        chosen = list(picks) if picks is not None else eligible(sample, options.categories)[: options.questions]
        for number, pick in enumerate(chosen, 1):
            row = answer_one(asker, pick, sample["qa"][pick.index], models, options)
            done.rows.append(row)
            done.messages_after = agent.state.message_count
            status(progress(label, number, len(chosen), row, time.perf_counter() - started), done=True)
        return done
    finally:
        agent.close()


def answer_one(asker: Asker, pick: Pick, qa: dict[str, Any], models: Models, options: Options) -> Row:
    """Ask one question under each condition; score each answer (and grade it, with a judge)."""
    gold = gold_answer(qa) or ""
    evidence = [i.removeprefix(asker.prefix) for i in asker.evidence(qa)]
    row = Row(pick.conversation, pick.index, qa["question"], pick.category, gold, evidence)
    for condition in options.conditions:
        answer = asker.ask(condition, qa)
        row.answers[condition] = answer
        row.f1[condition] = locomo_f1(pick.category, answer.text, gold)
        if models.judge is not None:
            row.grades[condition] = judge_answer(models.judge, row.question, gold, answer)
    return row


def progress(label: str, number: int, total: int, row: Row, elapsed: float) -> str:
    """`conv-26 3/8 (#17, cat 2): agent 4.2 s F1 0.50; none 0.8 s F1 0.00 | 61 s elapsed`."""
    parts = [f"{name} {a.seconds:.1f} s F1 {row.f1[name]:.2f}" + (" FAILED" if a.error else "")
             for name, a in row.answers.items()]
    return f"{label} {number}/{total} (#{row.index}, cat {row.category}): {'; '.join(parts)} | {elapsed:.0f} s elapsed"
