"""Two agents sharing a block, editing it from two processes at once: no edit lost, both edit logs complete.

    python benchmarks/shared_block_race.py --edits 100

Agents "a" and "b" share block "team"; each appends `--edits` distinct lines from a process of its own, through the
tool the model calls (core_memory_append), saving after each edit; told that the block changed meanwhile, it makes
the same edit again, as a model would. Then: the block must hold every line once, and each agent's edit log must lead
from the block's first value to its last with no gap (its own edits and those of the other it saw).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentos import Agent
from agentos.agent.directory import open_store
from agentos.agent.sharing import share_block, take_in_shared
from agentos.blocks import Block
from agentos.messages import ToolCall

REPO = Path(__file__).resolve().parent.parent
FIRST = "Team notes."


def racer(name: str, count: int, go: Path) -> None:
    """One process: `count` appends by agent `name`, each made again until it lands; prints its figures as JSON."""
    agent = Agent.load(name, with_model=False)
    (go.parent / f"{name}.ready").touch()
    while not go.exists():
        time.sleep(0.005)
    conflicts, started = 0, time.perf_counter()
    for i in range(count):
        call = ToolCall(id=f"{name}-{i}", name="core_memory_append",
                        arguments=json.dumps({"label": "team", "content": f"{name} line {i}"}))
        while True:
            outcome = agent.tools.execute(call, agent.tool_context(call.id))
            if not outcome.is_error:
                break
            if "changed meanwhile" not in outcome.text:
                raise SystemExit(outcome.text)
            conflicts += 1
        agent.save()
    seconds = time.perf_counter() - started
    agent.close()
    print(json.dumps({"conflicts": conflicts, "seconds": seconds}))


def run(edits: int) -> dict[str, object]:
    home = Path(tempfile.mkdtemp(prefix="agentos-race-"))
    os.environ["AGENTOS_HOME"] = str(home)
    store = open_store()
    Agent.create("a", model="scripted/demo", store=store,
                 blocks=[Block(label="team", value=FIRST, limit=1_000_000)]).close()
    Agent.create("b", model="scripted/demo", store=store).close()
    share_block(store, "team", "a", "b")
    go = home / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = {n: subprocess.Popen([sys.executable, __file__, "--racer", n, str(edits), str(go)], env=env,
                                 stdout=subprocess.PIPE, text=True) for n in "ab"}
    while not all((home / f"{n}.ready").exists() for n in "ab"):
        time.sleep(0.01)
    started = time.perf_counter()
    go.touch()
    figures = {n: json.loads(p.communicate()[0].strip().splitlines()[-1]) for n, p in procs.items()}
    wall = time.perf_counter() - started
    final = store.shared.all()[0].value
    lines = final.split("\n")[1:]
    wanted = {f"{n} line {i}" for n in "ab" for i in range(edits)}
    complete = {}
    for name in "ab":
        agent = Agent.load(name, store=store, with_model=False)
        take_in_shared(agent)
        agent.close()
        log = [e for e in Agent.load(name, store=store, read_only=True).memory_edits() if e.label == "team"]
        log = log[1:] if name == "b" else log  # b's starts with the share that gave it the block
        value, gaps = FIRST, 0
        for edit in log:
            gaps += edit.old_value != value
            value = edit.new_value
        own = sum(e.by == "agent" for e in log)
        complete[name] = {"own_edits": own, "seen_edits": sum(e.by == "shared" for e in log), "gaps": gaps,
                          "ends_at_final": value == final}
    return {"edits": 2 * edits, "lines_kept": len(lines), "all_lines_once": sorted(lines) == sorted(wanted),
            "conflicts_retried": {n: f["conflicts"] for n, f in figures.items()},
            "seconds": {n: round(f["seconds"], 2) for n, f in figures.items()}, "wall_s": round(wall, 2),
            "ms_per_edit": round(1000 * wall / (2 * edits), 1), "logs": complete}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=100, help="edits per agent (default 100: 200 in all)")
    parser.add_argument("--racer", nargs=3, metavar=("NAME", "COUNT", "GO"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.racer:
        racer(args.racer[0], int(args.racer[1]), Path(args.racer[2]))
        return
    result = run(args.edits)
    print(json.dumps(result, indent=1))
    logs = result["logs"]
    assert isinstance(logs, dict)
    ok = result["all_lines_once"] and all(v["gaps"] == 0 and v["ends_at_final"] and v["own_edits"] == args.edits
                                          for v in logs.values())
    print("no edit lost, both edit logs complete" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
