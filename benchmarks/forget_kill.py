"""Forget under SIGKILL: an agent that holds a distinctive string in every tier (messages, archival, facts, a block,
the summary, restore points) and a rewind copy; `forget --text` run in a process of its own and killed at a random
moment while it works, then every agent opened again for writing (which finishes a forget cut short). Counted per
run: whether the string is anywhere under the data home afterwards (any file's bytes, any row of any table version),
and whether what the agent knew besides is still there (a block line, a fact, a search hit).

    python benchmarks/forget_kill.py [--runs 50] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos.agent.agent import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.commands.forgetting import forget_everywhere  # noqa: E402
from agentos.commands.rewinding import rewind_keeping_copy  # noqa: E402
from agentos.memory.facts.settings import FactSettings  # noqa: E402
from agentos.memory.facts.tier import FactTier  # noqa: E402
from agentos.memory.forget_request import ForgetRequest  # noqa: E402
from agentos.providers.scripted import ScriptedProvider, Step  # noqa: E402
from agentos.storage.forget_rows import pending  # noqa: E402
from agentos.storage.traces import traces  # noqa: E402

SECRET = "Marmalade-Pangolin-4417"
KEPT = "oolong tea"
COPY = "kim.before-rewind-1"
KILL_WINDOW = 0.7  # kills fall in the first 70% of an uninterrupted forget's time (runs vary: some finish sooner)


def build(home: Path) -> None:
    """Agent "kim": SECRET in a question, a reply, a block line, a passage, a fact, the summary and restore points;
    KEPT in a second turn, a block line and a fact; then a rewind that keeps a copy holding both turns."""
    facts = Step(tool_calls=[("record_facts", {"facts": [
        {"text": f"Kim's door code is {SECRET}", "confidence": 0.9, "sources": [1]},
        {"text": f"Kim drinks {KEPT}", "confidence": 0.9, "sources": [3]}]})])
    script = [
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Door code: {SECRET}"})]),
        Step(tool_calls=[("archival_insert", {"content": f"The door code is {SECRET}."})]),
        f"Saved your door code {SECRET}.",
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Drinks: {KEPT}"})]),
        f"Noted: {KEPT}.",
        f"The user's door code is {SECRET}. The user drinks {KEPT}.",
    ]
    agent = Agent.create("kim", home=home, provider=ScriptedProvider(script),
                         settings=AgentSettings(embedder="hash:64", facts=FactSettings(enabled=True)))
    agent.roles.use("facts", ScriptedProvider([facts]))
    list(agent.turn(f"My door code is {SECRET}."))
    list(agent.turn(f"I drink {KEPT} every morning."))
    agent.consolidate()
    agent.compact()
    agent.close()
    again = Agent.load("kim", home=home, provider=ScriptedProvider([]))
    rewind_keeping_copy(again, 1, COPY)
    again.close()


def child(home: Path) -> None:
    """Forget SECRET in kim and its copy, saying when it starts (after the imports and the opening)."""
    agent = Agent.load("kim", home=home, with_model=False)
    print("start", flush=True)
    forget_everywhere(agent, ForgetRequest(text=SECRET))
    agent.close()
    print("done", flush=True)


def run_child(home: Path, kill_after: float | None) -> tuple[str, float]:
    """Run `child` in a process of its own, killed `kill_after` seconds after it starts forgetting (None: never);
    how it ended ("done", "killed") and how long it forgot."""
    process = subprocess.Popen([sys.executable, __file__, "--child", str(home)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if line != "start":
        process.wait()
        raise SystemExit(f"the forgetting process did not start: {line!r}")
    started = time.perf_counter()
    if kill_after is None:
        ended = process.stdout.readline().strip()
        process.wait()
        return ended or f"exit {process.returncode}", time.perf_counter() - started
    try:
        process.wait(kill_after)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.wait()
        return "killed", kill_after
    return "done", time.perf_counter() - started


def check(home: Path) -> dict[str, bool]:
    """Open every agent for writing (finishing a forget cut short), then: no trace of SECRET, KEPT still known."""
    waiting = []
    for name in ("kim", COPY):
        reader = Agent.load(name, home=home, read_only=True)
        waiting.append(pending(reader.store.db, reader.id) is not None)  # a forget the kill cut short
        reader.close()
        Agent.load(name, home=home, with_model=False).close()
    # kim's request is saved last, after its copy's: killed before that, kim had not begun (the copy, if marked, was
    # finished by its opening): the command never said it was done, and a person runs it again
    again = not waiting[0] and bool(traces(home, SECRET))
    if again:
        agent = Agent.load("kim", home=home, with_model=False)
        forget_everywhere(agent, ForgetRequest(text=SECRET))
        agent.close()
    copy = Agent.load(COPY, home=home, read_only=True)
    kept = (f"Drinks: {KEPT}" in copy.block("human").value
            and any(KEPT in f.text for f in copy.tier(FactTier).listing())
            and KEPT in "".join(m.content for m in copy.context))
    copy.close()
    return {"clean": not traces(home, SECRET), "kept": kept, "left waiting": any(waiting),
            "run again": again}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child))
        return 0
    work = Path(tempfile.mkdtemp(prefix="agentos-forget-kill-"))
    template = work / "template"
    build(template)
    assert traces(template, SECRET), "the store holds the string before forgetting"
    whole = work / "whole"
    shutil.copytree(template, whole)
    outcome, duration = run_child(whole, None)
    result = check(whole)
    print(f"one forget, not killed: {outcome} in {duration:.2f} s; no trace: {result['clean']}, the rest kept: "
          f"{result['kept']}")
    rng = random.Random(args.seed)
    tally: Counter[str] = Counter()
    failures = []
    for run in range(args.runs):
        home = work / f"run-{run}"
        shutil.copytree(template, home)
        outcome, _ = run_child(home, rng.uniform(0.0, duration * KILL_WINDOW))
        result = check(home)
        tally[outcome] += 1
        tally["finished on reopening"] += result["left waiting"]
        tally["run again"] += result["run again"]
        if not (result["clean"] and result["kept"]):
            failures.append((run, result, traces(home, SECRET)))
            continue  # kept for a look
        shutil.rmtree(home, ignore_errors=True)
    print(f"{args.runs} runs killed at a random moment of the forget (0 to {duration * KILL_WINDOW:.2f} s): "
          f"{tally['killed']} killed mid-way, {tally['done']} finished first; "
          f"{tally['finished on reopening']} forgets finished by reopening the agents, {tally['run again']} killed before "
          f"kim's own request was saved (kim untouched) and run again")
    print(f"string found anywhere afterwards: {sum(1 for _, r, _ in failures if not r['clean'])} of {args.runs}; "
          f"the rest of what the agent knew lost: {sum(1 for _, r, _ in failures if not r['kept'])} of {args.runs}")
    for run, result, places in failures[:5]:
        print(f"  run {run}: {result}; {places[:4]}")
    if failures:
        print(f"(the failed runs' data homes are kept under {work})")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
