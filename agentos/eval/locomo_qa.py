"""LoCoMo question answering end to end: the agent answers from its memory; a judge model grades every answer.

For each conversation an agent is made whose recall holds every turn with its real date (`locomo.turn_messages`),
fact memory is turned on and consolidated in the foreground, and each question is asked as one turn of the agent.
A full-context baseline gets the same question with the whole transcript in one model call.

Each question is answered independently: a restore point is taken after consolidation, before the first question,
and the agent is rewound to it after every question (`Agent.rewind`), which takes back the turn's messages from
context and recall, so no question sees another's turn. Background consolidation is switched off for the questions
(fact_search stays offered, as the agent has a fact table once anything was stored), so no question's turn becomes
a fact either.

The answering models are the agent's (--model) and the baseline's (the same); consolidation asks --fact-model, the
grading asks --judge. The scripted specs scripted/reader, scripted/judge and scripted/facts (agentos.eval.
scripted_models) are resolved here, so the whole run works offline; any other spec goes to the provider registry.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agentos.agent.agent import Agent
from agentos.agent.fact_extraction import AnswerError, read_json
from agentos.agent.state import AgentSettings
from agentos.config import configured_window, database_uri, storage_options
from agentos.errors import AgentExistsError, AgentOSError, ConfigError
from agentos.eval.conversations import DatasetError, agent_name, category, read_samples, session_messages, speakers, turn_messages
from agentos.eval.locomo import CATEGORIES
from agentos.events import TurnFailed, TurnFinished, UsageReported
from agentos.memory.facts import FactTier
from agentos.messages import Message, Usage
from agentos.providers.base import ModelRequest, Provider, complete
from agentos.providers.scripted import ScriptedProvider
from agentos.storage import Store
from agentos.tools.decorator import Tool

DEFAULT_CATEGORIES = (1, 2, 3, 4)
JUDGE_TRIES = 3  # a judge answer that cannot be read is asked again, at most this many times in all
JUDGE_OUTPUT_TOKENS = 400
Z95 = 1.959964

INTRO = "This is about a conversation between {a} and {b}."
MEMORY = ("You remember it: it is in your memory, where {a}'s messages are the user's and {b}'s are yours (the "
          "assistant's). Search your memory (conversation_search, fact_search) for what you need before you answer.")
TRANSCRIPT = "The whole conversation follows, session by session, with the date of each session.\n\n{transcript}"
QUESTION = "Question: {question}"
STYLE = ("Answer in a short phrase (a few words, a name or a date), with no explanation. When the question asks "
         "when, give the date, working out relative times (last week, yesterday) from the date of the message.")
BASELINE_SYSTEM = "You answer questions about a conversation, from its transcript."
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


@dataclass
class Options:
    """What to evaluate, and how."""

    path: str
    model: str
    judge: str | None = None
    fact_model: str | None = None
    limit: int | None = None
    questions: int | None = None
    categories: tuple[int, ...] = DEFAULT_CATEGORIES
    home: str | None = None
    json_path: str | None = None
    baseline: bool = True
    embedder: str = "none"


@dataclass
class Models:
    """The providers of one run: answering (agent and baseline), consolidation, judging."""

    answer: Provider
    facts: Provider
    judge: Provider


@dataclass
class Answer:
    """One answer to one question: its text, what it cost, and why it failed if it did."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


@dataclass
class Grade:
    """The judge's grade: None when it could not be read after every try (or there was no answer to grade)."""

    correct: bool | None
    input_tokens: int = 0
    output_tokens: int = 0
    tries: int = 0
    error: str | None = None


@dataclass
class Row:
    """One question, its gold answer, and each side's answer and grade."""

    conversation: str
    question: str
    category: int
    gold: str
    agent: Answer
    agent_grade: Grade
    baseline: Answer | None = None
    baseline_grade: Grade | None = None


@dataclass
class Conversation:
    """What loading and consolidating one conversation did."""

    sample_id: str
    messages_loaded: int
    messages_after: int
    facts_stored: int
    consolidation_s: float
    consolidation_tokens: int
    consolidation: str
    rows: list[Row] = field(default_factory=list)


# -- models ------------------------------------------------------------------------------------


def scripted_models() -> dict[str, Callable[[], ScriptedProvider]]:
    """The scripted model specs this evaluation knows (the provider registry does not)."""
    from agentos.eval.scripted_models import fact_extractor, judge, reader

    return {"scripted/reader": reader, "scripted/judge": judge, "scripted/facts": fact_extractor}


def resolve(spec: str) -> Provider:
    """A provider for a spec: one of the scripted models above, else through the provider registry."""
    from agentos.providers.registry import resolve_model

    known = scripted_models()
    if spec in known:
        return known[spec]()
    if spec.startswith("scripted/") and spec != "scripted/demo":
        raise ConfigError(f"{spec!r} is not a scripted model this evaluation knows; it knows {', '.join(known)}.")
    return resolve_model(spec, context_window=configured_window(spec))


def check_reachable(spec: str, provider: Provider) -> None:
    """One tiny call to a real model, so a missing key or a server that is not running is said before any work."""
    if isinstance(provider, ScriptedProvider):
        return
    request = ModelRequest(system_static="Reply with the word OK.", system_dynamic="",
                           messages=[Message.user("OK?")], max_output_tokens=16)
    try:
        complete(provider, request)
    except AgentOSError as exc:
        raise ConfigError(f"the model {spec} cannot be used: {exc}") from exc


def open_models(options: Options) -> Models:
    """Resolve and check the three models (a spec used twice is one provider)."""
    specs = {"answer": options.model, "facts": options.fact_model or options.model,
             "judge": options.judge or options.model}
    made: dict[str, Provider] = {}
    for spec in dict.fromkeys(specs.values()):
        try:
            made[spec] = resolve(spec)
        except AgentOSError as exc:
            raise ConfigError(f"the model {spec} cannot be used: {exc}") from exc
        check_reachable(spec, made[spec])
    return Models(answer=made[specs["answer"]], facts=made[specs["facts"]], judge=made[specs["judge"]])


# -- questions and prompts ---------------------------------------------------------------------


def questions(sample: dict[str, Any], categories: Iterable[int], limit: int | None) -> list[dict[str, Any]]:
    """The questions of the chosen categories that have a gold answer, in file order, at most `limit`."""
    wanted = set(categories)
    chosen = [qa for qa in sample["qa"] if isinstance(qa, dict) and category(qa) in wanted
              and isinstance(qa.get("question"), str) and qa["question"].strip()
              and qa.get("answer") not in (None, "")]
    return chosen[:limit]


def transcript(sample: dict[str, Any]) -> str:
    """The whole conversation as text: a dated header per session (its date as the file wrote it), then one
    `Speaker: text` line per turn."""
    return "\n\n".join("\n".join([f"Session {session.number} ({session.date_text or f'{session.start:%d %B %Y}'}):",
                                  *(f"{m.name}: {m.content}" for m in messages)])
                       for session, messages in session_messages(sample) if messages)


def question_prompt(sample: dict[str, Any], question: str, *, memory: bool, text: str = "") -> str:
    """The answering prompt: the same wording for both sides; the agent is told to search its memory, the baseline
    gets the transcript `text`."""
    a, b = speakers(sample)
    source = MEMORY.format(a=a, b=b) if memory else TRANSCRIPT.format(transcript=text)
    return "\n\n".join([INTRO.format(a=a, b=b), source, QUESTION.format(question=question), STYLE])


# -- the agent ---------------------------------------------------------------------------------


def load_agent(store: Store, sample: dict[str, Any], models: Models, options: Options) -> Agent:
    """An agent answering with the model, its recall holding the conversation, fact memory on."""
    agent = Agent.create(agent_name("locomo-qa", sample), model=options.model, provider=models.answer, store=store,
                         settings=AgentSettings(embedder=options.embedder))
    messages = turn_messages(sample)
    for start in range(0, len(messages), 500):
        agent.add_history(messages[start : start + 500])
    agent.fact_provider = models.facts
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


# -- the judge ---------------------------------------------------------------------------------


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


# -- one conversation --------------------------------------------------------------------------


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


# -- the report --------------------------------------------------------------------------------


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) when there is nothing to go on."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if correct == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would miss p
    high = 1.0 if correct == n else min(1.0, centre + half)
    return low, high


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (p in 0-100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def accuracy(grades: Sequence[Grade]) -> dict[str, Any]:
    """Accuracy over the graded answers, with its 95% Wilson interval and the count left ungraded."""
    graded = [g for g in grades if g.correct is not None]
    correct = sum(1 for g in graded if g.correct)
    low, high = wilson(correct, len(graded))
    return {"n": len(graded), "correct": correct, "ungraded": len(grades) - len(graded),
            "accuracy": correct / len(graded) if graded else None, "low": low, "high": high}


def side(pairs: Sequence[tuple[int, Answer, Grade]], categories: Sequence[int]) -> dict[str, Any]:
    """One side's figures: accuracy per category and overall, tokens and latency per question."""
    answers = [a for _, a, _ in pairs]
    grades = [g for _, _, g in pairs]
    n = max(1, len(pairs))
    return {
        "accuracy": {**{str(c): accuracy([g for cat, _, g in pairs if cat == c]) for c in categories},
                     "overall": accuracy(grades)},
        "tokens_per_question": {"answer": sum(a.input_tokens + a.output_tokens for a in answers) / n,
                                "answer_input": sum(a.input_tokens for a in answers) / n,
                                "answer_output": sum(a.output_tokens for a in answers) / n,
                                "judge": sum(g.input_tokens + g.output_tokens for g in grades) / n},
        "latency_s": {"p50": percentile([a.seconds for a in answers], 50),
                      "p95": percentile([a.seconds for a in answers], 95)},
        "failed_answers": sum(1 for a in answers if a.error),
        "ungraded": sum(1 for g in grades if g.correct is None),
        "ungraded_reasons": sorted({g.error or "" for g in grades if g.correct is None}),
    }


def build_report(options: Options, done: Sequence[Conversation]) -> dict[str, Any]:
    """The whole report, as printed and as written with --json."""
    rows = [r for c in done for r in c.rows]
    categories = [c for c in options.categories if any(r.category == c for r in rows)]
    baseline = None
    if options.baseline:
        baseline = side([(r.category, r.baseline, r.baseline_grade) for r in rows
                         if r.baseline is not None and r.baseline_grade is not None], categories)
    return {
        "suite": "locomo-qa",
        "file": options.path,
        "models": {"answer": options.model, "facts": options.fact_model or options.model,
                   "judge": options.judge or options.model},
        "categories": list(options.categories),
        "conversations": len(done),
        "questions": len(rows),
        "agent": side([(r.category, r.agent, r.agent_grade) for r in rows], categories),
        "baseline": baseline,
        "memory": {"messages_loaded": sum(c.messages_loaded for c in done),
                   "facts_stored": sum(c.facts_stored for c in done),
                   "consolidation_s": sum(c.consolidation_s for c in done),
                   "consolidation_tokens": sum(c.consolidation_tokens for c in done),
                   "per_conversation": [{k: v for k, v in asdict(c).items() if k != "rows"} for c in done]},
        "rows": [asdict(r) for r in rows],
    }


CELL = 29  # the width of one side's cell: n, accuracy, [low, high]


def _cell(figures: dict[str, Any] | None) -> str:
    if not figures or figures["accuracy"] is None:
        return f"{'-':>5}".ljust(CELL)
    return f"{figures['n']:>5}  {figures['accuracy']:.3f} [{figures['low']:.3f}, {figures['high']:.3f}]"


def print_report(report: dict[str, Any]) -> None:
    """The report as a table and a few lines."""
    models, memory, agent, baseline = report["models"], report["memory"], report["agent"], report["baseline"]
    print(f"LoCoMo QA: {report['conversations']} conversation(s), {report['questions']} questions (categories "
          f"{','.join(map(str, report['categories']))}); answer {models['answer']}, facts {models['facts']}, "
          f"judge {models['judge']}")
    print(f"memory: {memory['messages_loaded']} messages loaded, {memory['facts_stored']} facts stored; "
          f"consolidation {memory['consolidation_s']:.1f} s, {memory['consolidation_tokens']:,} tokens")
    sides = ["agent (memory)", *(["full-context baseline"] if baseline else [])]
    print(f"{'accuracy, 95% Wilson':<22}" + "    ".join(f"{name:<{CELL}}" for name in sides).rstrip())
    print(f"{'category':<22}" + "    ".join(f"{'n':>5}  {'acc':<5} {'[low, high]':<16}" for _ in sides).rstrip())
    for key in [*(k for k in agent["accuracy"] if k != "overall"), "overall"]:
        label = "overall" if key == "overall" else f"{key} {CATEGORIES.get(int(key), '')}"
        other = _cell(baseline["accuracy"][key]) if baseline else ""
        print(f"{label:<22}{_cell(agent['accuracy'][key])}    {other}".rstrip())
    for name, figures in (("agent", agent), ("baseline", baseline)):
        if figures is None:
            continue
        tokens, latency = figures["tokens_per_question"], figures["latency_s"]
        print(f"{name:<9}tokens/question {tokens['answer']:,.0f} answering ({tokens['answer_input']:,.0f} in, "
              f"{tokens['answer_output']:,.0f} out) + {tokens['judge']:,.0f} judge; latency p50 {latency['p50']:.2f} s, "
              f"p95 {latency['p95']:.2f} s; failed answers {figures['failed_answers']}, ungraded {figures['ungraded']}"
              + (f" ({'; '.join(figures['ungraded_reasons'])})" if figures["ungraded"] else ""))


# -- the command -------------------------------------------------------------------------------


def run(options: Options) -> int:
    """Evaluate, print the report, write it with --json; a model that cannot be used is said, with exit status 2."""
    try:
        data = read_samples(options.path, options.limit)
    except DatasetError as exc:
        print(f"locomo-qa: {exc}", file=sys.stderr)
        return 2
    try:
        models = open_models(options)
    except ConfigError as exc:
        print(f"locomo-qa: {exc}", file=sys.stderr)
        return 2
    root = Path(options.home) if options.home else Path(tempfile.mkdtemp(prefix="agentos-locomo-qa-"))
    store = Store(database_uri(root), storage_options(root))
    try:
        done = [evaluate(store, sample, models, options) for sample in data]
    except AgentExistsError as exc:
        print(f"locomo-qa: {exc} (in --home {options.home}: use another home, or delete the agent there)",
              file=sys.stderr)
        return 2
    except AgentOSError as exc:
        print(f"\nlocomo-qa: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
        if not options.home:
            shutil.rmtree(root, ignore_errors=True)
    report = build_report(options, done)
    print_report(report)
    if options.json_path:
        Path(options.json_path).write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0

