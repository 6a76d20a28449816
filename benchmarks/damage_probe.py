"""Damage probe: every file of every table one agent uses (the shared directory, messages and edit log included), each
truncated, deleted and byte-flipped in its own copy of a store, then `agentos doctor --repair`.

A store of two agents ("ada" and "bo": turns, archival passages, block edits, restore points) is built once. For
each damage, a copy of it is damaged, repaired in this process as `agentos doctor --repair` does, and read back: an
agent passes when it is listed, opens, chats, and `doctor` afterwards finds nothing it could still repair. Rows are
counted per agent before and after (messages readable in recall, archival passages, memory edits, restore points):
recovered = still readable after the repair, lost = the rest.

    python benchmarks/damage_probe.py [--agent-turns 8] [--workers 2] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

DAMAGES = ("truncate", "delete", "flip")
NAMES = ("ada", "bo")


@dataclass
class Outcome:
    """What one damaged copy came to."""

    table: str
    file: str
    damage: str
    listed: list[str] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)  # per kind, summed over agents, after the repair
    still_damaged: bool = False
    error: str = ""


def build(home: Path, turns: int) -> dict[str, str]:
    """The template store; its agents' ids by name."""
    from agentos import Agent
    from agentos.agent.state import AgentSettings
    from agentos.providers import ScriptedProvider, Step

    ids = {}
    for name in NAMES:
        steps: list[Any] = []
        for i in range(turns):
            if i % 3 == 0:
                steps.append(Step(tool_calls=[("archival_insert", {"content": f"{name} fact {i}: the blue box."})]))
            elif i % 3 == 1:
                steps.append(Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Note {i}."})]))
            steps.append(f"reply {i}")
        agent = Agent.create(name, provider=ScriptedProvider(steps), store=_store(home),
                             settings=AgentSettings(embedder="hash:32", max_steps=5))
        for i in range(turns):
            list(agent.turn(f"{name} message {i}"))
        agent.close()
        ids[name] = agent.id
    return ids


def _store(home: Path) -> Any:
    from agentos.storage.store import Store

    return Store(home / "db")


def counts(home: Path) -> tuple[list[str], list[str], dict[str, int]]:
    """Agents listed, agents that open and chat, and the rows readable per kind (summed over agents)."""
    import agentos.agent.directory as directory
    from agentos import Agent
    from agentos.memory.archival import ArchivalTier
    from agentos.providers import ScriptedProvider

    directory._stores.clear()
    store = _store(home)
    listed = sorted(store.agent_rows())
    opened, rows = [], {"messages": 0, "passages": 0, "edits": 0, "restore points": 0}
    for name in listed:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = Agent.load(name, provider=ScriptedProvider(["fine"]), store=store)
            rows["messages"] += agent.state.recall_count
            rows["passages"] += agent.tier(ArchivalTier).count()
            rows["edits"] += len(agent.memory_edits())
            rows["restore points"] += len(agent.restore_points())
            if list(agent.turn("still there?"))[-1].type == "turn_finished":
                opened.append(name)
            agent.close()
    directory._stores.clear()
    return listed, opened, rows


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        flipped = bytearray(data)
        if flipped:
            flipped[len(flipped) // 2] ^= 0xFF
        path.write_bytes(bytes(flipped))


def probe(template: str, table: str, relative: str, how: str, work: str) -> Outcome:
    """Damage one file of a copy of the template, repair, read back."""
    from agentos.storage.doctor import examine, repair

    outcome = Outcome(table, relative, how)
    home = Path(tempfile.mkdtemp(dir=work))
    try:
        shutil.copytree(template, home, dirs_exist_ok=True)
        damage(home / "db" / f"{table}.lance" / relative, how)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = _store(home)
            checkup = examine(store)
            if not checkup.healthy:
                repair(store, checkup, home)
            store.close()
            outcome.listed, outcome.opened, outcome.rows = counts(home)
            after = examine(_store(home))
            outcome.still_damaged = any(f.rows is not None for f in after.findings)
    except Exception as exc:  # noqa: BLE001 - any escape is a failure, recorded
        outcome.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return outcome


def targets(template: Path, ids: dict[str, str]) -> list[tuple[str, str]]:
    """(table, file under its folder) for every table of agent "ada" and every shared table."""
    found = []
    for folder in sorted((template / "db").iterdir()):
        table = folder.name.removesuffix(".lance")
        if ids["bo"] in table:
            continue  # the other agent's own tables: the same kinds as ada's
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            found.append((table, str(path.relative_to(folder))))
    return found


def kind_of(table: str, ids: dict[str, str]) -> str:
    return table.replace(ids["ada"], "<ada>")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent-turns", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="probe only the first N damages (0: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        template = Path(root) / "template"
        started = time.perf_counter()
        ids = build(template, args.agent_turns)
        import agentos.agent.directory as directory

        directory._stores.clear()
        shutil.copytree(template, Path(root) / "base")
        _, _, baseline = counts(Path(root) / "base")  # counting chats: on a copy
        jobs = [(t, f, how) for t, f in targets(template, ids) for how in DAMAGES]
        if args.limit:
            jobs = jobs[: args.limit]
        print(f"template: 2 agents x {args.agent_turns} turns, {len(jobs)} damages to probe "
              f"(built in {time.perf_counter() - started:.1f} s); rows before: {baseline}", flush=True)
        work = Path(root) / "work"
        work.mkdir()
        outcomes = []
        with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(probe, str(template), t, f, how, str(work)) for t, f, how in jobs]
            for i, future in enumerate(futures, 1):
                outcomes.append(future.result())
                if i % 25 == 0:
                    print(f"  {i}/{len(jobs)} probed ({time.perf_counter() - started:.0f} s)", flush=True)
    report(outcomes, baseline, ids)
    return 0 if all(_passed(o) for o in outcomes) else 1


def _passed(o: Outcome) -> bool:
    return not o.error and o.listed == sorted(NAMES) and o.opened == sorted(NAMES) and not o.still_damaged


def report(outcomes: list[Outcome], baseline: dict[str, int], ids: dict[str, str]) -> None:
    failed = [o for o in outcomes if not _passed(o)]
    agents = sum(len(o.opened) for o in outcomes)
    print(f"\ndamages tried: {len(outcomes)}; agents listed and opening after repair: {agents} of "
          f"{len(outcomes) * len(NAMES)}; copies failing: {len(failed)}")
    print(f"{'rows':16} {'before (per copy)':>18} {'recovered (all copies)':>24} {'lost (all copies)':>18}")
    for kind, before in baseline.items():
        kept = sum(o.rows.get(kind, 0) for o in outcomes if not o.error)
        total = before * len([o for o in outcomes if not o.error])
        print(f"{kind:16} {before:>18} {kept:>24} {max(0, total - kept):>18}")
    by_table: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_table.setdefault(kind_of(o.table, ids), []).append(o)
    kinds = list(baseline)
    print(f"\n{'table':32} {'damages':>8} {'failing':>8} " + " ".join(f"{k + ' lost':>20}" for k in kinds))
    for table, group in sorted(by_table.items()):
        bad = [o for o in group if not _passed(o)]
        ok = [o for o in group if not o.error]
        lost = [sum(max(0, baseline[k] - o.rows.get(k, 0)) for o in ok) for k in kinds]
        print(f"{table:32} {len(group):>8} {len(bad):>8} " + " ".join(f"{n:>20}" for n in lost))
    for o in failed[:40]:
        print(f"FAIL {kind_of(o.table, ids)}/{o.file} {o.damage}: listed {o.listed}, opened {o.opened}, "
              f"still damaged {o.still_damaged} {o.error}")


if __name__ == "__main__":
    sys.exit(main())
