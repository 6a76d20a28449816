"""What fact consolidation costs: in the foreground, in the background of real turns, and in the prompt.

    .venv/bin/python benchmarks/consolidation.py [--path /work/shared/data/locomo10.json] [--conversation 0]
                                                 [--turns N] [--extract-latency 0.2] [--rounds 3]

1. Foreground. One LoCoMo conversation (its turns as messages with their real timestamps and speakers) is
   loaded into an agent with `add_history`, then `agent.consolidate()` turns it into facts, with the scripted
   extraction model (`fact_extractor()`, which answers at once). Printed: the total time, ms per message read
   and per batch (BatchReport.seconds, median and p95), the model calls, the facts stored, and where the time
   went: the scripted model, and agentos's own parts (reading messages, the similar-fact searches, the
   duplicate check, the writes, embedding, the rest). Once with no embedder (`none`) and once with
   `hash:384` (an offline embedder, so what vectors cost shows), in `--rounds` rounds, interleaved.
2. Background. The conversation's user turns are sent as real turns (`agent.turn(text)`) to agents whose model
   answers at once over HTTP (the real OpenAI provider, to a local server in its own process, the one
   provider_overhead.py uses): one agent with facts mode "turn", the consolidator in the background asking
   `fact_extractor()` slowed down by `--extract-latency` seconds a call (a stand-in for a real extraction model),
   and one with facts off, turn by turn in alternation. Printed: turn latency (median, p95) on and off; the time
   per turn the background thread spent (BatchReport.seconds), split into the model's and agentos's; how far
   behind consolidation was when the turns ended, and how long it took to catch up.
3. Prompt. What offering facts in the system prompt costs every model call: the dynamic part of the system
   prompt (`agent.build_request().system_dynamic`) in tokens, with FactSettings.prompt_tokens 0, 200 and 500,
   for the agents of parts 1 and 2 after consolidation, and what building the request takes.
4. The facts table as consolidation leaves it (fragments, rows its FTS index covers) and after `optimize()`:
   a similar-fact search and building a request (prompt_tokens 500), median ms.

Every agent lives in a throw-away data home (real LanceDB). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other benchmarks' helpers

from provider_overhead import spec, start_server  # noqa: E402

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.eval.conversations import turn_messages  # noqa: E402
from agentos.eval.scripted_models import fact_extractor  # noqa: E402
from agentos.memory.facts.consolidator import Consolidator  # noqa: E402
from agentos.memory.facts.reports import BatchReport  # noqa: E402
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tier import FactTier  # noqa: E402
from agentos.messages import Message  # noqa: E402
from agentos.providers import ModelRequest, ScriptedProvider  # noqa: E402
from agentos.providers.base import ProviderEvent  # noqa: E402
from agentos.tokens import EstimateCounter  # noqa: E402

DEFAULT_PATH = "/work/shared/data/locomo10.json"
WINDOW = 128_000  # the real-turn agents keep the whole conversation in context (no compaction in the timings)
EMBEDDERS = ("none", "hash:384")
BUDGETS = (0, 200, 500)
SECTIONS = ("model", "read messages", "similar search", "duplicate check", "write", "embedding")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(share * len(ordered)) - 1)] if ordered else 0.0


class Sections:
    """Time by section, exclusive: a section timed inside another is taken out of the outer one. Per thread."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.items: Counter[str] = Counter()  # e.g. texts embedded
        self._local = threading.local()
        self._lock = threading.Lock()

    @contextmanager
    def timed(self, name: str, items: int = 0) -> Iterator[None]:
        stack: list[float] = self._local.__dict__.setdefault("stack", [])
        stack.append(0.0)
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            inner = stack.pop()
            if stack:
                stack[-1] += elapsed
            with self._lock:
                self.seconds[name] += elapsed - inner
                self.calls[name] += 1
                self.items[name] += items

    def wrap(self, owner: Any, attribute: str, name: str, items: Callable[..., int] | None = None) -> None:
        """Replace `owner.attribute` (a method, on the instance) with one that times itself as `name`."""
        real = getattr(owner, attribute)

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.timed(name, items(*args, **kwargs) if items else 0):
                return real(*args, **kwargs)

        setattr(owner, attribute, timed)

    def reset(self) -> None:
        with self._lock:
            self.seconds.clear()
            self.calls.clear()
            self.items.clear()


class TimedModel:
    """A provider around a scripted one: waits `latency` seconds a call (a real model's time), timed as 'model'."""

    name = "scripted"

    def __init__(self, inner: ScriptedProvider, sections: Sections, latency: float = 0.0) -> None:
        self.inner, self.sections, self.latency = inner, sections, latency
        self.model, self.context_window = inner.model, inner.context_window

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        with self.sections.timed("model"):
            if self.latency:
                time.sleep(self.latency)
            events = list(self.inner.stream(request))
        yield from events


def instrument(agent: Agent, sections: Sections, latency: float = 0.0) -> list[BatchReport]:
    """Time the consolidator's parts; the list fills with each batch's report as it is written."""
    agent.roles.use("facts", TimedModel(fact_extractor(), sections, latency))
    consolidator: Consolidator = agent.tier(FactTier).consolidator
    facts = agent.tier(FactTier)
    sections.wrap(consolidator, "read_messages", "read messages")
    sections.wrap(facts, "similar", "similar search")
    sections.wrap(facts, "current_hashes", "duplicate check")
    sections.wrap(facts, "commit", "write")
    sections.wrap(agent.tiers.embedder(), "embed", "embedding", items=lambda texts: len(texts))
    reports: list[BatchReport] = []
    run_batch = consolidator.run_batch

    def recorded(*args: Any, **kwargs: Any) -> BatchReport | None:
        report = run_batch(*args, **kwargs)
        if report is not None:
            reports.append(report)
        return report

    consolidator.run_batch = recorded  # type: ignore[method-assign]
    return reports


# -- 1. the foreground -----------------------------------------------------------------------------


def foreground(messages: list[Message], embedder: str, label: str) -> dict[str, Any]:
    agent = Agent.create(label, provider=ScriptedProvider([]), settings=AgentSettings(embedder=embedder))
    started = time.perf_counter()
    agent.add_history(messages)
    loaded = time.perf_counter() - started
    sections = Sections()
    reports = instrument(agent, sections)
    started = time.perf_counter()
    report = agent.consolidate()
    total = time.perf_counter() - started
    assert len(report.batches) == len(reports), "every batch was recorded"
    read = sum(b.messages for b in report.batches)
    return {"agent": agent, "total": total, "loaded": loaded, "read": read, "batches": [b.seconds for b in reports],
            "calls": sum(b.calls for b in reports), "facts": agent.tier(FactTier).count_current(),
            "adds": report.count("add"), "updates": report.count("update"),
            "skipped": sum(1 for b in reports if b.skipped), "seconds": dict(sections.seconds),
            "embedded": sections.items["embedding"], "embed_calls": sections.calls["embedding"],
            "searches": sections.calls["similar search"]}


def part_foreground(messages: list[Message], rounds: int) -> Agent:
    print(f"\n1. foreground: agent.consolidate() over {len(messages)} messages loaded with add_history, scripted "
          f"extraction (instant), {rounds} round(s) per embedder, interleaved")
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in EMBEDDERS}
    for r in range(rounds):
        for embedder in EMBEDDERS if r % 2 == 0 else EMBEDDERS[::-1]:
            runs[embedder].append(foreground(messages, embedder, f"fg-{embedder.replace(':', '')}-{r}"))
    print(f"{'embedder':<10}{'total s':>9}{'ms/msg':>8}{'batches':>9}{'batch p50 ms':>14}{'batch p95 ms':>14}"
          f"{'calls':>7}{'facts':>7}{'add':>6}{'update':>8}{'skipped':>9}")
    for embedder, done in runs.items():
        total = statistics.median(d["total"] for d in done)
        batches = [s * 1000 for d in done for s in d["batches"]]
        last = done[-1]
        print(f"{embedder:<10}{total:>9.2f}{total * 1000 / last['read']:>8.2f}{len(last['batches']):>9}"
              f"{statistics.median(batches):>14.1f}{percentile(batches, 0.95):>14.1f}{last['calls']:>7}"
              f"{last['facts']:>7}{last['adds']:>6}{last['updates']:>8}{last['skipped']:>9}")
    print("where the time went, ms per batch (median of rounds); 'other agentos' is the rest of consolidate():")
    print("prompts, validating the answers, building the changes, the agent's save")
    names = [*SECTIONS, "other agentos"]
    print(f"{'embedder':<10}" + "".join(f"{n:>16}" for n in names))
    for embedder, done in runs.items():
        per_batch = []
        for d in done:
            parts = {n: d["seconds"].get(n, 0.0) for n in SECTIONS}
            parts["other agentos"] = d["total"] - sum(parts.values())
            per_batch.append({n: v * 1000 / len(d["batches"]) for n, v in parts.items()})
        medians = {n: statistics.median(p[n] for p in per_batch) for n in names}
        share = sum(medians.values())
        print(f"{embedder:<10}" + "".join(f"{medians[n]:>9.2f} ({medians[n] / share:>3.0%})" for n in names))
    for embedder, done in runs.items():
        last = done[-1]
        first, tail = last["batches"][:5], last["batches"][-5:]
        print(f"{embedder}: add_history {statistics.median(d['loaded'] for d in done):.2f} s (not in the totals); "
              f"{last['searches']} similar-fact search rounds (one per batch, its candidates at once); "
              f"{last['embed_calls']} embed calls for {last['embedded']} "
              f"texts; first 5 batches {statistics.mean(first) * 1000:.0f} ms, last 5 "
              f"{statistics.mean(tail) * 1000:.0f} ms each")
    kept = runs["none"][-1]["agent"]
    for d in (d for done in runs.values() for d in done if d["agent"] is not kept):
        d["agent"].close()
    return kept


# -- 2. the background, behind real turns ------------------------------------------------------------


def timed_turn(agent: Agent, text: str) -> float:
    started = time.perf_counter()
    events = list(agent.turn(text))
    elapsed = time.perf_counter() - started
    assert events[-1].type == "turn_finished", events[-1]
    return elapsed * 1000


def part_background(texts: list[str], port: int, latency: float) -> Agent:
    on = Agent.create("turns-facts-on", model=spec("openai", port),
                      settings=AgentSettings(context_window=WINDOW, facts=FactSettings(mode="turn")))
    off = Agent.create("turns-facts-off", model=spec("openai", port), settings=AgentSettings(context_window=WINDOW))
    sections = Sections()
    reports = instrument(on, sections, latency)
    consolidator = on.consolidator
    for i in range(5):  # warm up both (too short to hold a fact), and let the first batches pass
        timed_turn(on, f"warm-up {i}")
        timed_turn(off, f"warm-up {i}")
    consolidator.wait_idle(60)
    reports.clear()
    sections.reset()
    print(f"\n2. background: {len(texts)} user turns of the conversation as agent.turn(text), the model answering "
          f"at once over HTTP ({spec('openai', port).split('@')[0]}, local server); facts mode 'turn' vs off, "
          f"alternating turn by turn; extraction model: fact_extractor() + {latency:g} s a call")
    times: dict[str, list[float]] = {"on": [], "off": []}
    behind: list[int] = []
    started = time.perf_counter()
    for i, text in enumerate(texts):
        pair = (("on", on), ("off", off)) if i % 2 == 0 else (("off", off), ("on", on))
        for key, agent in pair:
            times[key].append(timed_turn(agent, text))
        behind.append(consolidator.pending(on.state.message_count))
    turns_s = time.perf_counter() - started
    pending = consolidator.pending(on.state.message_count)
    started = time.perf_counter()
    assert consolidator.wait_idle(600), "consolidation caught up"
    catch_up = time.perf_counter() - started
    assert consolidator.pending(on.state.message_count) == 0, consolidator.last_error
    print(f"{'facts':<7}{'turns':>7}{'median ms':>11}{'p95 ms':>9}{'mean ms':>9}")
    for key in ("on", "off"):
        values = times[key]
        print(f"{key:<7}{len(values):>7}{statistics.median(values):>11.1f}{percentile(values, 0.95):>9.1f}"
              f"{statistics.mean(values):>9.1f}")
    difference = [a - b for a, b in zip(times["on"], times["off"])]
    print(f"on - off, paired turn by turn: median {statistics.median(difference):+.1f} ms, "
          f"mean {statistics.mean(difference):+.1f} ms")
    batch_s = sum(r.seconds for r in reports)
    model_s = sections.seconds["model"]
    turns = len(texts)
    seconds = [r.seconds * 1000 for r in reports]
    sizes = [r.messages for r in reports]
    print(f"background thread: {len(reports)} batches, {statistics.median(sizes):.0f} messages each (median), "
          f"{sum(r.calls for r in reports)} model calls; batch p50 {statistics.median(seconds):.0f} ms, "
          f"p95 {percentile(seconds, 0.95):.0f} ms")
    print(f"  per turn: {batch_s * 1000 / turns:.1f} ms in batches = {model_s * 1000 / turns:.1f} ms waiting for the "
          f"model + {(batch_s - model_s) * 1000 / turns:.1f} ms agentos (work that shares the CPUs with the turns)")
    parts = ", ".join(f"{n} {sections.seconds.get(n, 0.0) * 1000 / turns:.1f}" for n in SECTIONS[1:])
    print(f"  agentos's part per turn, ms: {parts}")
    print(f"  behind: at most {max(behind)} messages waiting after a turn (median {statistics.median(behind):.0f}); "
          f"{pending} waiting when the turns ended ({turns_s:.1f} s of turns), caught up {catch_up:.1f} s later; "
          f"{on.tier(FactTier).count_current()} facts")
    off.close()
    return on


# -- 3. the prompt ----------------------------------------------------------------------------------


def part_prompt(agents: list[tuple[str, Agent]]) -> None:
    print("\n3. facts in the prompt: system_dynamic of the next request, by FactSettings.prompt_tokens "
          "(tokens: EstimateCounter, which the budget is fitted with; 'agent' = the agent's own calibrated counter)")
    print(f"{'agent':<30}{'user facts':>11}{'budget':>8}{'tokens':>8}{'added':>7}{'agent':>7}{'added':>7}"
          f"{'shown':>7}{'build ms':>10}")
    estimate = EstimateCounter()
    for label, agent in agents:
        own = agent.pager.counter(agent.state.calibration)
        users = len(agent.tier(FactTier).listing(subject="user"))
        base: tuple[int, int] | None = None
        for budget in BUDGETS:
            agent.update_settings(facts=agent.settings.facts.model_copy(update={"prompt_tokens": budget}))
            builds = []
            for _ in range(20):
                started = time.perf_counter()
                request = agent.build_request()
                builds.append((time.perf_counter() - started) * 1000)
            counts = (estimate.count(request.system_dynamic), own.count(request.system_dynamic))
            base = base or counts
            shown = max(0, len(agent.tier(FactTier).prompt_lines(budget)) - 1) if budget else 0
            print(f"{label:<30}{users:>11}{budget:>8}{counts[0]:>8}{counts[0] - base[0]:>+7}{counts[1]:>7}"
                  f"{counts[1] - base[1]:>+7}{shown:>7}{statistics.median(builds):>10.2f}")


# -- 4. the table consolidation leaves ----------------------------------------------------------------


def table_figures(agent: Agent, queries: list[str]) -> tuple[int, int, float, float]:
    """The facts table's fragments and FTS-indexed rows, a similar-fact search's median ms, a request's median ms."""
    facts = agent.tier(FactTier)
    stats = facts.table.stats()
    indexed = facts.table.index_stats("text_idx")
    searches = []
    for query in queries:
        started = time.perf_counter()
        facts.similar([query], agent.settings.facts.similar)
        searches.append((time.perf_counter() - started) * 1000)
    builds = []
    for _ in range(20):
        started = time.perf_counter()
        agent.build_request()
        builds.append((time.perf_counter() - started) * 1000)
    return (int(stats["fragment_stats"]["num_fragments"]), int(indexed.num_indexed_rows if indexed else 0),
            statistics.median(searches), statistics.median(builds))


def part_table(agents: list[tuple[str, Agent]]) -> None:
    print(f"\n4. the facts table as consolidation leaves it, and after optimize() (what maintenance does every "
          f"100 commits): similar-fact search and build_request (prompt_tokens {BUDGETS[-1]}), median ms")
    print(f"{'agent':<30}{'rows':>6}{'':>3}{'fragments':>10}{'FTS-indexed':>12}{'similar ms':>11}{'build ms':>10}")
    for label, agent in agents:
        facts = agent.tier(FactTier)
        queries = [f.text for f in facts.listing()[:20]]
        rows = facts.table.count_rows()
        before = table_figures(agent, queries)
        agent.store.db.optimize(facts.table_name)
        after = table_figures(agent, queries)
        for when, figures in (("as left", before), ("optimized", after)):
            print(f"{label if when == 'as left' else '':<30}{rows if when == 'as left' else '':>6}{'':>3}"
                  f"{figures[0]:>10}{figures[1]:>12}{figures[2]:>11.1f}{figures[3]:>10.2f}  {when}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", default=DEFAULT_PATH, help="LoCoMo JSON (default: %(default)s)")
    parser.add_argument("--conversation", type=int, default=0, help="which conversation of the file")
    parser.add_argument("--turns", type=int, default=None, help="at most this many real turns in part 2 (default: all)")
    parser.add_argument("--extract-latency", type=float, default=0.2, help="seconds the extraction model takes a call")
    parser.add_argument("--rounds", type=int, default=3, help="foreground runs per embedder in part 1")
    args = parser.parse_args()
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-consolidation-bench-")
    sample = json.loads(Path(args.path).read_text(encoding="utf-8"))[args.conversation]
    messages = turn_messages(sample)
    texts = [m.content for m in messages if m.role == "user"][: args.turns]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"$ {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {cores} cores usable ({os.cpu_count()} CPUs), Python {sys.version.split()[0]}; "
          f"LoCoMo {sample['sample_id']} ({args.path}): {len(messages)} messages, "
          f"{sum(1 for m in messages if m.role == 'user')} from the user")
    server, port = start_server()
    try:
        last_foreground = part_foreground(messages, args.rounds)
        on = part_background(texts, port, args.extract_latency)
        agents = [("1: add_history, embedder none", last_foreground), ("2: real turns, facts 'turn'", on)]
        part_prompt(agents)
        part_table(agents)
        on.close()
        last_foreground.close()
    finally:
        server.communicate("")


if __name__ == "__main__":
    main()
