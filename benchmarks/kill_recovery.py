"""SIGKILL an agent mid-turn over and over; after each restart check that nothing it reported durable is lost.

A worker process opens the agent (repairing whatever the last kill cut short), waits for a "go",
then takes turns as fast as it can: memory edits, archival inserts, two-step turns, compactions in
a small window. It prints the ids of every step it saved. The driver kills it at a random moment,
starts the next worker, and, before letting it go on, checks the database read-only:

- the agent loads, and its state names only messages that exist;
- every message a worker reported durable is there, once; none is there twice;
- recall holds exactly the messages the state counts (seq 0..n-1), and no user message twice;
- the newest logged edit of each block is the block's value.

    python benchmarks/kill_recovery.py [--kills 300] [--chains 2] [--seed 1]

Chains run side by side, each on its own agent and data home. The test suite runs it with 30 kills.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME = "crashy"
WINDOW = 3000  # small, so the pager compacts now and then


def script(request: Any) -> Any:
    """The worker's model: a counter block replaced, archival inserts, plain replies; summaries when asked."""
    from agentos.providers import Step

    if request.system_static.startswith("You maintain the running summary"):
        return Step("The user sent numbered messages; the counter went up.")
    last = request.messages[-1]
    if last.role == "tool":
        return Step("Done.")
    number = int(re.search(r"turn (\d+)", last.content).group(1))  # type: ignore[union-attr]
    if number % 3 == 0:
        count = int(re.search(r"count: (\d+)", request.system_dynamic).group(1))  # type: ignore[union-attr]
        return Step(tool_calls=[("core_memory_replace", {"label": "counter", "old_content": f"count: {count}",
                                                         "new_content": f"count: {count + 1}"})])
    if number % 7 == 1:
        return Step(tool_calls=[("archival_insert", {"content": f"fact from {last.content}"})])
    return Step(f"Reply to {last.content}.")


def worker(home: str, tag: str) -> None:
    """Open (or create) the agent, say ready, wait for "go", then turn until killed (or stdin ends)."""
    os.environ["AGENTOS_HOME"] = home
    from agentos import Agent
    from agentos.agent.state import AgentSettings
    from agentos.blocks import Block
    from agentos.errors import AgentNotFoundError
    from agentos.providers import ScriptedProvider

    provider = ScriptedProvider(script, context_window=WINDOW)
    try:
        agent = Agent.load(NAME, provider=provider)
    except AgentNotFoundError:
        agent = Agent.create(NAME, provider=provider, blocks=[Block(label="counter", value="count: 0")],
                             settings=AgentSettings(context_window=WINDOW))
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        agent.close()
        return
    for number in range(1_000_000):
        for event in agent.turn(f"{tag} turn {number}"):
            if event.type == "step_saved":
                print(json.dumps({"saved": event.message_ids}), flush=True)
            elif event.type == "turn_failed":
                print(json.dumps({"failed": event.error}), flush=True)


@dataclass
class Chain:
    """One agent killed again and again, and what its workers reported."""

    home: Path
    durable: set[str] = field(default_factory=set)
    kills: int = 0
    steps: int = 0
    problems: list[str] = field(default_factory=list)
    restart_s: list[float] = field(default_factory=list)


def start(chain: Chain, tag: str) -> subprocess.Popen[str]:
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import kill_recovery as k; " \
           f"k.worker({str(chain.home)!r}, {tag!r})"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def read_until_ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"the worker did not start: {line!r} {process.stderr.read() if process.stderr else ''}")


def check(chain: Chain) -> list[str]:
    """The invariants, read from the database by a fresh read-only store."""
    from agentos.agent.state import AgentState
    from agentos.storage import Store
    from agentos.storage.filters import quote

    problems: list[str] = []
    store = Store(chain.home / "db")
    row = store.agent_row(NAME)
    if row is None:
        return ["the agent is gone"]
    state = AgentState.model_validate_json(row.state)
    rows = store.db.table("messages").search().where(f"agent_id = {quote(state.id)}").select(
        ["id", "seq", "role", "content"]).limit(None).to_arrow().to_pylist()
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)):
        problems.append(f"{len(ids) - len(set(ids))} message ids stored twice")
    if sorted(r["seq"] for r in rows) != list(range(state.message_count)):
        problems.append(f"recall holds {len(rows)} messages, the state counts {state.message_count}")
    users = [r["content"] for r in rows if r["role"] == "user" and " turn " in r["content"]]
    if len(users) != len(set(users)):
        problems.append("a user message is stored twice")
    missing_context = set(state.in_context_ids) - set(ids)
    if missing_context:
        problems.append(f"{len(missing_context)} in-context ids do not exist")
    lost = chain.durable - set(ids)
    if lost:
        problems.append(f"{len(lost)} messages reported durable are lost")
    logged = store.memory_edits(state.id)
    if any((e.rev or 0) > state.rev for e in logged):
        problems.append("the edit log has edits of a step that was never saved")
    newest: dict[str, str] = {}
    for edit in sorted(logged, key=lambda e: e.at):
        newest[edit.label] = edit.new_value
    for block in state.blocks:
        if block.label in newest and newest[block.label] != block.value:
            problems.append(f"block {block.label!r} is {block.value!r}, its newest logged edit {newest[block.label]!r}")
    return problems


def run_chain(chain: Chain, kills: int, rng: random.Random) -> None:
    for k in range(kills + 1):
        started = time.perf_counter()
        process = start(chain, f"w{k}")
        read_until_ready(process)
        chain.restart_s.append(time.perf_counter() - started)
        chain.problems += [f"after kill {k}: {p}" for p in check(chain)] if k else []
        assert process.stdin is not None and process.stdout is not None
        if k == kills:
            process.stdin.close()
            process.wait(60)
            return
        process.stdin.write("go\n")
        process.stdin.flush()
        time.sleep(rng.uniform(0.05, 1.0))
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        chain.kills += 1
        for line in process.stdout.read().splitlines():
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line the kill cut
            if "saved" in report:
                chain.durable.update(report["saved"])
                chain.steps += 1


def run(kills: int, chains: int = 2, seed: int = 1, root: Path | None = None) -> list[Chain]:
    """Run `kills` kills spread over `chains` agents side by side; return what each chain saw."""
    root = root or Path(tempfile.mkdtemp(prefix="agentos-kills-"))
    made = [Chain(home=root / f"chain{i}") for i in range(chains)]
    shares = [kills // chains + (i < kills % chains) for i in range(chains)]
    threads = [threading.Thread(target=run_chain, args=(c, n, random.Random(seed * 100 + i)))
               for i, (c, n) in enumerate(zip(made, shares))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for chain in made:  # the last worker repaired what the last kill left; check once more
        chain.problems += [f"at the end: {p}" for p in check(chain)]
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("LANCEDB_LOG", "error")
    started = time.perf_counter()
    chains = run(args.kills, args.chains, args.seed)
    problems = [p for c in chains for p in c.problems]
    restarts = sorted(s for c in chains for s in c.restart_s)
    print(f"{sum(c.kills for c in chains)} SIGKILLs over {len(chains)} agents in {time.perf_counter() - started:.0f} s; "
          f"{sum(c.steps for c in chains):,} steps reported durable, {sum(len(c.durable) for c in chains):,} messages")
    print(f"restart until the agent is open (repair included): median {restarts[len(restarts) // 2]:.2f} s, "
          f"max {restarts[-1]:.2f} s")
    print(f"checks after every restart: {len(problems)} problems" + "".join(f"\n  {p}" for p in problems[:20]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
