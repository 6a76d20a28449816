"""The runtime's own cost per turn, measured with the scripted provider (which answers instantly).

Cases: a plain reply, and a reply after one core memory tool call, with 0, 1,000 and 10,000
messages already in the agent's recall history. Prints median and p95 in milliseconds, twice:

- turn: until the turn's last event. Steps are handed to the store's group-commit writer,
  which writes them to LanceDB in the background (merging steps that queue up);
- durable: the turn plus `agent.flush()`, i.e. until every row of the turn is on disk.

    python benchmarks/turn_overhead.py [--turns 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import timedelta

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.messages import Message, utc_now  # noqa: E402
from agentos.providers import ModelRequest, ScriptedProvider, Step  # noqa: E402

IN_CONTEXT = 40  # the seeded history's newest messages start in context
WINDOW = 8192  # the pager keeps the context under this, summarizing with the same scripted model


def plain(request: ModelRequest) -> Step:
    return Step("Sure, noted.")


def memory_tool(request: ModelRequest) -> Step:
    last = request.messages[-1]
    if last.role == "tool":
        return Step("Saved.")
    old, new = ("mood: calm", "mood: busy") if "mood: calm" in request.system else ("mood: busy", "mood: calm")
    return Step(tool_calls=[("core_memory_replace", {"label": "human", "old_content": old, "new_content": new})])


def seed_history(agent: Agent, count: int) -> None:
    """Put `count` earlier messages into recall in one batch; the newest stay in context."""
    if not count:
        return
    start = utc_now() - timedelta(days=90)
    messages = [
        (i, Message(role="user" if i % 2 == 0 else "assistant", content=f"earlier message number {i} about topic {i % 37}",
                    created_at=start + timedelta(minutes=i)))
        for i in range(count)
    ]
    agent.store.add_messages(agent.id, messages)
    agent.state.message_count = count
    agent.context = [m for _, m in messages[-IN_CONTEXT:]]
    agent.save()


compactions: list[int] = []


def measure(case: str, history: int, turns: int, durable: bool) -> tuple[float, float]:
    script = plain if case == "plain reply" else memory_tool
    name = f"bench-{case.split()[0]}-{history}-{int(durable)}"
    agent = Agent.create(name, provider=ScriptedProvider(script), human="Name: Ada\nmood: calm",
                         settings=AgentSettings(context_window=WINDOW))
    seed_history(agent, history)
    for i in range(10):  # warm up
        list(agent.turn(f"warm-up {i}"))
    times = []
    for i in range(turns):
        start = time.perf_counter()
        events = list(agent.turn(f"message {i}"))
        if durable:
            agent.flush()
        times.append((time.perf_counter() - start) * 1000)
        assert events[-1].type == "turn_finished", events[-1]
    agent.close()
    compactions.append(agent.pager.compactions)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-bench-")
    print(f"turn overhead, scripted provider, {args.turns} turns per case, {os.cpu_count()} CPUs")
    print(f"{'':<31}{'turn':^22}{'durable':^22}")
    print(f"{'case':<22}{'history':>9}{'median ms':>11}{'p95 ms':>11}{'median ms':>11}{'p95 ms':>11}")
    for case in ("plain reply", "memory tool call"):
        for history in (0, 1_000, 10_000):
            turn = measure(case, history, args.turns, durable=False)
            durable = measure(case, history, args.turns, durable=True)
            print(f"{case:<22}{history:>9,}{turn[0]:>11.2f}{turn[1]:>11.2f}{durable[0]:>11.2f}{durable[1]:>11.2f}",
                  flush=True)
    print(f"(window {WINDOW:,} tokens; the pager compacted {sum(compactions)} times over all runs, inside the timings)")


if __name__ == "__main__":
    main()
