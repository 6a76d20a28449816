"""The runtime's own cost per turn, measured with the scripted provider (which answers instantly).

Cases: a plain reply, and a reply after one core memory tool call, with 0, 1,000 and 10,000
messages already in the agent's recall history. Prints the median and p95 in milliseconds of a
turn until its last event. Every step is committed before the next begins, so when the turn
ends it is durable: its messages, memory edits and the agent's state are on disk.

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
        Message(role="user" if i % 2 == 0 else "assistant", content=f"earlier message number {i} about topic {i % 37}",
                created_at=start + timedelta(minutes=i))
        for i in range(count)
    ]
    agent.add_history(messages, in_context=IN_CONTEXT)


compactions: list[int] = []


def measure(case: str, history: int, turns: int) -> tuple[float, float]:
    script = plain if case == "plain reply" else memory_tool
    name = f"bench-{case.split()[0]}-{history}"
    agent = Agent.create(name, provider=ScriptedProvider(script), human="Name: Ada\nmood: calm",
                         settings=AgentSettings(context_window=WINDOW))
    seed_history(agent, history)
    for i in range(10):  # warm up
        list(agent.turn(f"warm-up {i}"))
    times = []
    for i in range(turns):
        start = time.perf_counter()
        events = list(agent.turn(f"message {i}"))
        times.append((time.perf_counter() - start) * 1000)
        assert events[-1].type == "turn_finished", events[-1]
    agent.close()
    compactions.append(agent.state.compactions)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-bench-")
    print(f"turn overhead, scripted provider, {args.turns} turns per case, {os.cpu_count()} CPUs")
    print("a turn ends when it is durable: every step is committed before the next one starts")
    print(f"{'case':<22}{'history':>9}{'median ms':>11}{'p95 ms':>11}")
    for case in ("plain reply", "memory tool call"):
        for history in (0, 1_000, 10_000):
            turn = measure(case, history, args.turns)
            print(f"{case:<22}{history:>9,}{turn[0]:>11.2f}{turn[1]:>11.2f}", flush=True)
    print(f"(window {WINDOW:,} tokens; the pager compacted {sum(compactions)} times over all runs, inside the timings)")


if __name__ == "__main__":
    main()
