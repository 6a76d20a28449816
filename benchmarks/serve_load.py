"""Load test of `agentos serve`: many clients over loopback, against an instant mock model server in its own process.

The mock speaks OpenAI chat completions (streaming and not) and answers at once, so what is measured is the server:
HTTP, the agent loop, the step commits and compaction. `agentos serve` runs as a real process with a temporary
AGENTOS_HOME and users with API keys; every agent's model is `openai-compatible/mock@<the mock>`.

Runs, in order:
  load       N concurrent clients (each `--clients` value), each on its own agent, `--turns` turns each: turns/s,
             latency p50/p95/p99, errors, server RSS and CPU per turn (half the clients stream SSE, half wait for the
             finished turn);
  contention 20 clients sending to one agent at once (429s are retried): every accepted message stored exactly once,
             in the order the server accepted it (a message accepted before another was sent comes first);
  read-back  every agent's history compared with what its clients were told: lost, duplicated, stored though
             refused, replies that differ, and reads across users (each user's agents asked for with the other
             users' keys must be 404).
  soak       (--soak) `--soak-agents` clients on their own agents, `--soak-turns` turns in all: time per turn and
             server RSS per block of turns, which must stay flat after warm-up.

    python benchmarks/serve_load.py [--clients 50 200] [--turns 20] [--users 2] [--profile] [--workers N]
    python benchmarks/serve_load.py --soak [--soak-agents 50] [--soak-turns 10000] [--every 1000]
    python benchmarks/serve_load.py --before PATH ...   (the same runs on an earlier source tree first)

`--profile` samples the server with py-spy (`pip install py-spy`) during the first load run and prints where the
agents' worker threads and the event loop spend their time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from before_tree import measure_before_first  # noqa: E402
from serve_harness import (  # noqa: E402
    TEXT,
    Run,
    Sampler,
    Sent,
    Server,
    cpu_s,
    cpu_split,
    create_agent,
    headers,
    percentile,
    report_profile,
    rss_mib,
    send,
    start_mock,
    start_profile,
)

# -- the runs -------------------------------------------------------------------------------------------------------


@dataclass
class Agents:
    """The agents made so far: name -> the user (key name) that owns it."""

    owner: dict[str, str] = field(default_factory=dict)


async def make_agents(client: Any, server: Server, agents: Agents, prefix: str, count: int, model: str) -> list[str]:
    users = list(server.keys)
    names = [f"{prefix}{n:03d}" for n in range(count)]
    semaphore = asyncio.Semaphore(16)

    async def one(number: int, name: str) -> None:
        user = users[number % len(users)]
        async with semaphore:
            await create_agent(client, server.keys[user], name, model)
        agents.owner[name] = user

    await asyncio.gather(*(one(n, name) for n, name in enumerate(names)))
    return names


async def warm_up(client: Any, server: Server, agents: Agents, names: list[str]) -> None:
    """One turn on each agent, 16 at a time, so that each is open (its lease taken, its worker thread started)
    before the timing starts."""
    semaphore = asyncio.Semaphore(16)

    async def one(name: str) -> None:
        async with semaphore:
            await send(client, server.keys[agents.owner[name]], name, f"{name} #0: hello", False, Run())

    start = time.perf_counter()
    await asyncio.gather(*(one(name) for name in names))
    print(f"  ({len(names)} agents opened, each with a first turn, in {time.perf_counter() - start:.1f} s)", flush=True)


async def load_run(client: Any, server: Server, agents: Agents, clients: int, turns: int, model: str,
                   profile: bool) -> tuple[Run, dict[str, Any]]:
    names = await make_agents(client, server, agents, f"c{clients}-", clients, model)
    run = Run()
    await warm_up(client, server, agents, names)

    async def client_loop(number: int, name: str) -> None:
        key = server.keys[agents.owner[name]]
        for turn in range(1, turns + 1):
            await send(client, key, name, f"{name} #{turn}: {TEXT}", number % 2 == 0, run)

    spy = start_profile(server.pid) if profile else None
    cpu0, split0, mine0, start = cpu_s(server.pid), cpu_split(server.pid), time.process_time(), time.perf_counter()
    with Sampler(server.pid) as sampler:
        await asyncio.gather(*(client_loop(n, name) for n, name in enumerate(names)))
    wall, cpu = time.perf_counter() - start, cpu_s(server.pid) - cpu0
    split = {k: v - split0[k] for k, v in cpu_split(server.pid).items()}
    mine = time.process_time() - mine0
    if spy is not None:
        report_profile(*spy)
    done = [s for s in run.sent if s.outcome == "finished"]
    latencies = [s.latency * 1000 for s in done]
    return run, {"names": names, "clients": clients, "turns": len(done), "wall_s": wall, "turns_s": len(done) / wall,
                 "p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95),
                 "p99": percentile(latencies, 0.99), "errors": sum(run.errors.values()), "refused": run.refused,
                 "rss_peak": sampler.peak, "cpu_ms_turn": 1000 * cpu / max(1, len(done)),
                 "lance_ms_turn": 1000 * split["lance"] / max(1, len(done)),
                 "python_ms_turn": 1000 * split["python"] / max(1, len(done)),
                 "client_ms_turn": 1000 * mine / max(1, len(done))}


async def paced_run(client: Any, server: Server, agents: Agents, names: list[str], rate: float,
                    seconds: float) -> tuple[Run, dict[str, float]]:
    """The agents of a load run again, sent to at `rate` turns a second in all (each agent on a steady beat of its
    own, its phase random), for `seconds`: latency below saturation. A turn still running when its agent's next is
    due delays that one (a client sends one at a time)."""
    run = Run()
    interval = len(names) / rate
    start = time.perf_counter() + 0.5

    async def client_loop(number: int, name: str) -> None:
        key = server.keys[agents.owner[name]]
        due = start + random.Random(number).uniform(0, interval)
        turn = 1000
        while due < start + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            turn += 1
            await send(client, key, name, f"{name} #{turn}: {TEXT}", number % 2 == 0, run)
            due += interval

    cpu0 = cpu_s(server.pid)
    await asyncio.gather(*(client_loop(n, name) for n, name in enumerate(names)))
    wall, cpu = time.perf_counter() - start, cpu_s(server.pid) - cpu0
    done = [s for s in run.sent if s.outcome == "finished"]
    latencies = [s.latency * 1000 for s in done]
    return run, {"agents": len(names), "rate": rate, "turns": len(done), "turns_s": len(done) / wall,
                 "p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95),
                 "p99": percentile(latencies, 0.99), "errors": sum(run.errors.values()),
                 "cpu_ms_turn": 1000 * cpu / max(1, len(done))}


async def contention_run(client: Any, server: Server, agents: Agents, clients: int, each: int,
                         model: str) -> tuple[Run, dict[str, Any]]:
    """`clients` clients sending `each` messages to one agent at once (streaming, so acceptance is seen)."""
    (name,) = await make_agents(client, server, agents, "shared-", 1, model)
    key = server.keys[agents.owner[name]]
    run = Run()

    async def client_loop(number: int) -> None:
        for turn in range(1, each + 1):
            await send(client, key, name, f"{name} #{number}.{turn}: {TEXT}", True, run)

    start = time.perf_counter()
    await asyncio.gather(*(client_loop(n) for n in range(clients)))
    wall = time.perf_counter() - start
    history = await read_history(client, key, name)
    users = [m["content"] for m in history if m["role"] == "user"]
    accepted = [s for s in run.sent if s.accepted_at is not None]
    position = {text: i for i, text in enumerate(users)}
    counts = Counter(users)
    twice = sum(1 for s in accepted if counts[s.text] > 1)
    missing = sum(1 for s in accepted if counts[s.text] == 0)
    refused_stored = sum(1 for s in run.sent if s.accepted_at is None and counts[s.text] and
                         not any(a.text == s.text for a in accepted))
    # a message accepted before another was even sent must come first
    ordered = sorted(accepted, key=lambda s: s.accepted_at or 0.0)
    out_of_order = 0
    for a in ordered:
        for b in accepted:
            if (a.accepted_at or 0.0) < b.sent_at and position.get(a.text, -1) > position.get(b.text, 1 << 30):
                out_of_order += 1
    return run, {"clients": clients, "messages": len(accepted), "refused_429": run.refused, "wall_s": wall,
                 "stored": len(users), "twice": twice, "missing": missing, "refused_but_stored": refused_stored,
                 "out_of_order": out_of_order, "errors": sum(run.errors.values())}


async def read_history(client: Any, key: str, name: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    offset = 0
    while True:
        response = await client.get(f"/api/agents/{name}/messages", headers=headers(key),
                                    params={"offset": offset, "limit": 500})
        response.raise_for_status()
        page = response.json()
        messages += page["messages"]
        if page["next_offset"] is None:
            return messages
        offset = page["next_offset"]


async def read_back(client: Any, server: Server, agents: Agents, runs: list[Run]) -> dict[str, int]:
    """Every agent's history against what its clients were told."""
    told: dict[str, list[Sent]] = {}
    for run in runs:
        for sent in run.sent:
            told.setdefault(sent.agent, []).append(sent)
    result = Counter({"agents": 0, "acknowledged": 0, "lost": 0, "duplicated": 0, "unacknowledged_stored": 0,
                      "reply_differs": 0, "foreign_rows": 0, "cross_user_reads": 0, "cross_user_checks": 0})
    semaphore = asyncio.Semaphore(16)

    async def check(name: str) -> None:
        owner = agents.owner[name]
        async with semaphore:
            history = await read_history(client, server.keys[owner], name)
            for other, key in server.keys.items():
                if other != owner and key:
                    response = await client.get(f"/api/agents/{name}/messages", headers=headers(key))
                    result["cross_user_checks"] += 1
                    result["cross_user_reads"] += response.status_code != 404
        result["agents"] += 1
        users = [m["content"] for m in history if m["role"] == "user"]
        counts = Counter(users)
        replies = {}
        for i, message in enumerate(history):
            if message["role"] == "user":
                after = next((m for m in history[i + 1:] if m["role"] == "assistant" and m.get("content")), None)
                replies[message["content"]] = after["content"] if after else None
        result["foreign_rows"] += sum(1 for text in users if not text.startswith(f"{name} #"))
        acknowledged = [s for s in told.get(name, []) if s.outcome == "finished"]
        result["acknowledged"] += len(acknowledged)
        result["lost"] += sum(1 for s in acknowledged if counts[s.text] == 0)
        result["duplicated"] += sum(count - 1 for count in counts.values() if count > 1)
        result["reply_differs"] += sum(1 for s in acknowledged if counts[s.text] and replies.get(s.text) != s.reply)
        texts = {s.text for s in acknowledged}
        result["unacknowledged_stored"] += sum(1 for text in counts if text not in texts and "#0:" not in text)

    await asyncio.gather(*(check(name) for name in agents.owner))
    return dict(result)


async def soak_run(client: Any, server: Server, agents: Agents, count: int, total: int, every: int,
                   model: str) -> None:
    names = await make_agents(client, server, agents, "soak-", count, model)
    await warm_up(client, server, agents, names)
    print(f"\nsoak: {count} agents, {total:,} turns in all ({count} clients at once)")
    print(f"{'turns':>7} {'turns/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'server CPU ms/turn':>19} {'RSS MiB':>8} "
          f"{'heap MiB':>8} {'errors':>6}")
    run = Run()
    started = [0]
    block: list[float] = []
    marks = {"t": time.perf_counter(), "cpu": cpu_s(server.pid), "errors": 0}

    async def client_loop(name: str) -> None:
        key = server.keys[agents.owner[name]]
        while started[0] < total:
            started[0] += 1
            number = started[0]
            sent = await send(client, key, name, f"{name} #{number}: {TEXT}", number % 2 == 0, run)
            if sent.outcome == "finished":
                block.append(sent.latency * 1000)
            done = sum(1 for s in run.sent if s.outcome == "finished") if len(block) >= every else 0
            if len(block) >= every:
                now, cpu = time.perf_counter(), cpu_s(server.pid)
                errors = sum(run.errors.values())
                print(f"{done:>7} {len(block) / (now - marks['t']):>8.1f} {percentile(block, 0.5):>7.1f} "
                      f"{percentile(block, 0.95):>7.1f} {1000 * (cpu - marks['cpu']) / len(block):>19.1f} "
                      f"{rss_mib(server.pid):>8.0f} {rss_mib(server.pid, 'RssAnon'):>8.0f} "
                      f"{errors - marks['errors']:>6}", flush=True)
                block.clear()
                marks.update(t=now, cpu=cpu, errors=errors)

    await asyncio.gather(*(client_loop(name) for name in names))
    for kind, times in run.errors.items():
        print(f"  errors: {times} x {kind}: {run.said.get(kind, '')}", flush=True)
    result = await read_back(client, server, Agents({n: agents.owner[n] for n in names}), [run])
    print(f"read-back: {result['acknowledged']:,} acknowledged, lost {result['lost']}, duplicated "
          f"{result['duplicated']}, replies that differ {result['reply_differs']}")


# -- main -----------------------------------------------------------------------------------------------------------


async def main_async(args: argparse.Namespace) -> int:
    mock, port = start_mock()
    model = f"openai-compatible/mock@http://127.0.0.1:{port}/v1"
    server = Server(args.users, args.workers, args.queue, args.release_after, args.recycle_mib)
    failed = 0
    try:
        # idle connections are dropped before uvicorn's 5 s keep-alive ends: reusing one it is closing fails the request
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=2.0)
        async with httpx.AsyncClient(base_url=server.url, timeout=300, limits=limits) as client:
            agents = Agents()
            print(f"agentos serve (pid {server.pid}, {args.workers} worker(s), {len(server.keys)} user(s), release "
                  f"after {args.release_after}); mock model on port {port}; {os.cpu_count()} cores, load "
                  f"{os.getloadavg()[0]:.1f}")
            print(f"server RSS at start: {rss_mib(server.pid):.0f} MiB")
            if args.soak:
                await soak_run(client, server, agents, args.soak_agents, args.soak_turns, args.every, model)
                return 0
            runs: list[Run] = []
            rows = []
            paced: dict[str, Any] = {}
            print(f"\nload: each client on its own agent, {args.turns} turns each (half streaming)")
            print(f"{'clients':>7} {'turns':>6} {'turns/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'errors':>6} "
                  f"{'429s':>5} {'server CPU ms/turn':>19} {'peak RSS MiB':>13}", flush=True)
            for number, clients in enumerate(args.clients):
                run, row = await load_run(client, server, agents, clients, args.turns, model,
                                          args.profile and number == 0)
                runs.append(run)
                rows.append(row)
                print(f"{row['clients']:>7} {row['turns']:>6} {row['turns_s']:>8.1f} {row['p50']:>7.1f} "
                      f"{row['p95']:>7.1f} {row['p99']:>7.1f} {row['errors']:>6} {row['refused']:>5} "
                      f"{row['cpu_ms_turn']:>19.1f} {row['rss_peak']:>13.0f}", flush=True)
                print(f"{'':>7} server CPU per turn: LanceDB's threads {row['lance_ms_turn']:.1f} ms, Python's "
                      f"{row['python_ms_turn']:.1f} ms; these clients {row['client_ms_turn']:.1f} ms", flush=True)
                for kind, count in run.errors.items():
                    print(f"  errors at {clients} clients: {count} x {kind}: {run.said.get(kind, '')}", flush=True)
                if number == 0 and args.paced_seconds > 0:  # while its agents are open, before the next run
                    rate = args.rate or round(row["turns_s"] / 2, 1)
                    run, paced = await paced_run(client, server, agents, row["names"], rate, args.paced_seconds)
                    runs.append(run)
            if paced:
                print(f"\npaced: the {rows[0]['clients']} agents of the first run again, right after it, "
                      f"{paced['rate']:g} turns/s in all (half that run's rate unless --rate), for {args.paced_seconds:g} s")
                print(f"{'agents':>7} {'turns':>6} {'turns/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'errors':>6} "
                      f"{'server CPU ms/turn':>19}")
                print(f"{paced['agents']:>7} {paced['turns']:>6} {paced['turns_s']:>8.1f} {paced['p50']:>7.1f} "
                      f"{paced['p95']:>7.1f} {paced['p99']:>7.1f} {paced['errors']:>6} {paced['cpu_ms_turn']:>19.1f}")
            run, row = await contention_run(client, server, agents, args.contention, args.contention_turns, model)
            runs.append(run)
            print(f"\ncontention: {row['clients']} clients on one agent, {args.contention_turns} messages each")
            print(f"  accepted {row['messages']}, refused with 429 and retried {row['refused_429']}, stored "
                  f"{row['stored']} user messages in {row['wall_s']:.1f} s; stored twice {row['twice']}, missing "
                  f"{row['missing']}, refused but stored {row['refused_but_stored']}, out of acceptance order "
                  f"{row['out_of_order']}, errors {row['errors']}")
            failed += row["twice"] + row["missing"] + row["refused_but_stored"] + row["out_of_order"]
            result = await read_back(client, server, agents, runs)
            print(f"\nread-back of {result['agents']} agents: {result['acknowledged']:,} acknowledged turns; lost "
                  f"{result['lost']}, duplicated {result['duplicated']}, stored though not acknowledged "
                  f"{result['unacknowledged_stored']}, replies that differ {result['reply_differs']}, rows of "
                  f"another agent {result['foreign_rows']}, read across users {result['cross_user_reads']} of "
                  f"{result['cross_user_checks']} tries")
            failed += sum(result[k] for k in ("lost", "duplicated", "reply_differs", "foreign_rows",
                                              "cross_user_reads"))
            print(f"server RSS at the end: {rss_mib(server.pid):.0f} MiB")
    finally:
        code = server.stop()
        if mock.stdin is not None:
            mock.stdin.close()
        mock.wait(10)
        tail = [line for line in server.errors if "Traceback" in line or "Error" in line]
        if tail:
            print("server errors:\n  " + "\n  ".join(tail[-10:]))
        print(f"server exit code {code}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--turns", type=int, default=20, help="turns per client in the load runs")
    parser.add_argument("--contention", type=int, default=20, help="clients sending to one agent at once")
    parser.add_argument("--contention-turns", type=int, default=5)
    parser.add_argument("--users", type=int, default=2, help="users (API keys); agents are spread over them")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--queue", type=int, default=8)
    parser.add_argument("--release-after", type=float, default=60.0,
                        help="the server's --release-after: agents stay held through the runs (its default gives an "
                             "agent back after 2 idle seconds, and opening 200 agents takes longer than that)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="turns/s of the paced run over the first load run's agents (default: half what it made)")
    parser.add_argument("--paced-seconds", type=float, default=20.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--soak", action="store_true")
    parser.add_argument("--recycle-mib", type=int, help="agentos serve --recycle-mib: replace a worker over this heap")
    parser.add_argument("--soak-agents", type=int, default=50)
    parser.add_argument("--soak-turns", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--before", help="run the same on the agentos source tree at this path first")
    args = parser.parse_args(argv)
    measure_before_first(args.before)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
