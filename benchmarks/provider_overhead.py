"""What a model call costs agentos, through the real providers over HTTP to a local server that answers at once.

A local server speaks both the OpenAI Chat Completions and the Anthropic Messages streaming APIs
(server-sent events) and answers instantly, so everything measured is agentos, the SDK and HTTP.
Real agents go through the real providers: a plain reply, and a reply after one core memory tool
call (two model calls), with 0, 300, 1,000 and 3,000 messages in context in a 128k window (the
pager leaves them in; each measured turn adds its own 2-4). For each case: the median and p95 of a turn, and where its time went:
inside the provider (the SDK, HTTP, translation), in the step's commits, and the rest (agentos's
loop, prompt and pager, whose own time per call is printed too). Then agent create, the first
reply in a fresh process (`agentos chat` with piped input), and this process's peak RSS.

    python benchmarks/provider_overhead.py [--turns 40] [--sizes 0 300 1000 3000] [--providers openai anthropic]
                                           [--before PATH]

`--before PATH` first runs the same cases on the agentos source tree at PATH (a checkout of an earlier
commit: `git worktree add /tmp/before <commit>`), so both tables come from one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from before_tree import measure_before_first  # noqa: E402

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.messages import Message, utc_now  # noqa: E402

WINDOW = 128_000
MEMORY = "(memory)"  # a user message carrying this asks for a core memory edit


def _answer(last: dict[str, Any], system: str) -> tuple[str, tuple[str, str] | None]:
    """The reply text, or a tool call (name, JSON arguments), for the request's last message."""
    if last.get("role") == "tool" or (isinstance(last.get("content"), list)
                                      and any(b.get("type") == "tool_result" for b in last["content"])):
        return "Saved.", None
    text = last["content"] if isinstance(last.get("content"), str) else " ".join(
        b.get("text", "") for b in last.get("content", []) if isinstance(b, dict))
    if MEMORY not in text:
        return "Sure, noted.", None
    old, new = ("mood: calm", "mood: busy") if "mood: calm" in system else ("mood: busy", "mood: calm")
    return "", ("core_memory_replace", json.dumps({"label": "human", "old_content": old, "new_content": new}))


def _openai_events(body: dict[str, Any], size: int) -> list[bytes]:
    text, call = _answer(body["messages"][-1], body["messages"][0]["content"])
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'choices': [choice], **extra})}\n\n".encode()

    events = [chunk({"role": "assistant", "content": ""})]
    if call:
        events.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                             "function": {"name": call[0], "arguments": call[1]}}]}))
    else:
        events.append(chunk({"content": text}))
    events.append(chunk({}, "tool_calls" if call else "stop"))
    usage = {"prompt_tokens": size // 4, "completion_tokens": 5, "total_tokens": size // 4 + 5}
    events.append(f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n".encode())
    events.append(b"data: [DONE]\n\n")
    return events


def _anthropic_events(body: dict[str, Any], size: int) -> list[bytes]:
    system = " ".join(b["text"] for b in body.get("system", []))
    text, call = _answer(body["messages"][-1], system)

    def event(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    start = {"type": "message_start", "message": {
        "id": "m1", "type": "message", "role": "assistant", "model": body["model"], "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": size // 4, "output_tokens": 1}}}
    if call:
        block = {"type": "tool_use", "id": "toolu_1", "name": call[0], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": call[1]}
    else:
        block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": text}
    return [event(start),
            event({"type": "content_block_start", "index": 0, "content_block": block}),
            event({"type": "content_block_delta", "index": 0, "delta": delta}),
            event({"type": "content_block_stop", "index": 0}),
            event({"type": "message_delta", "delta": {"stop_reason": "tool_use" if call else "end_turn",
                                                      "stop_sequence": None}, "usage": {"output_tokens": 5}}),
            event({"type": "message_stop"})]


class InstantModel(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions and /v1/messages at once, streaming."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # or every small write waits for a delayed ACK (~40 ms)

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.loads(raw)
        events = _anthropic_events(body, len(raw)) if self.path.endswith("/messages") else _openai_events(body, len(raw))
        payload = b"".join(events)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve() -> None:
    """Run the instant server in this process (the benchmark starts it in its own, so that its work is not
    counted as agentos's): print the port, then serve until stdin closes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), InstantModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()


def start_server() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def spec(provider: str, port: int) -> str:
    if provider == "openai":
        return f"openai-compatible/bench@http://127.0.0.1:{port}/v1"
    return f"anthropic/claude-bench@http://127.0.0.1:{port}"


class Timings:
    """Time spent inside the provider's stream (building the body, the SDK, HTTP, translating events) and in the
    step commits, summed per turn."""

    def __init__(self, agent: Agent) -> None:
        self.provider = self.storage = 0.0
        provider, store = agent.provider, agent.store
        real_stream, real_write = provider.stream, store.write_step

        def stream(request: Any) -> Any:
            events = real_stream(request)  # only the time inside the provider counts, not the loop's between events
            try:
                while True:
                    started = time.perf_counter()
                    try:
                        event = next(events)
                    except StopIteration:
                        return
                    finally:
                        self.provider += time.perf_counter() - started
                    yield event
            finally:
                events.close()

        def write_step(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return real_write(*args, **kwargs)
            finally:
                self.storage += time.perf_counter() - started

        provider.stream = stream  # type: ignore[method-assign]
        store.write_step = write_step  # type: ignore[method-assign]


def seed(agent: Agent, count: int) -> None:
    start = utc_now() - timedelta(days=30)
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=f"earlier message {i}: " + "word " * 12,
                        created_at=start + timedelta(minutes=i)) for i in range(count)]
    if messages:
        agent.add_history(messages, in_context=count)


def measure(provider: str, port: int, case: str, size: int, turns: int) -> dict[str, float]:
    name = f"{provider}-{case.split()[0]}-{size}"
    agent = Agent.create(name, model=spec(provider, port), human="Name: Ada\nmood: calm",
                         settings=AgentSettings(context_window=WINDOW))
    seed(agent, size)
    timings = Timings(agent)
    suffix = f" {MEMORY}" if case == "memory tool call" else ""
    for i in range(5):  # warm up
        list(agent.turn(f"warm-up {i}{suffix}"))
    totals, in_provider, in_storage, pager = [], [], [], []
    for i in range(turns):
        timings.provider = timings.storage = 0.0
        pager_before = agent.pager.seconds
        started = time.perf_counter()
        events = list(agent.turn(f"message {i}{suffix}"))
        totals.append((time.perf_counter() - started) * 1000)
        assert events[-1].type == "turn_finished", events[-1]
        in_provider.append(timings.provider * 1000)
        in_storage.append(timings.storage * 1000)
        pager.append((agent.pager.seconds - pager_before) * 1000 / (2 if suffix else 1))
    agent.close()
    totals.sort()
    median = statistics.median(totals)
    return {"median": median, "p95": totals[max(0, int(0.95 * len(totals)) - 1)],
            "provider": statistics.median(in_provider), "storage": statistics.median(in_storage),
            "pager": statistics.median(pager)}


def create_time(port: int) -> float:
    times = []
    for i in range(20):
        started = time.perf_counter()
        Agent.create(f"created-{i}", model=spec("openai", port)).close()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def first_reply(port: int, home: str) -> float:
    Agent.create("fresh", model=spec("openai", port)).close()
    times = []
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "agentos.cli", "chat", "fresh"], input="hello\n", text=True,
                              capture_output=True, env={**os.environ, "AGENTOS_HOME": home}, timeout=120)
        times.append(time.perf_counter() - started)
        assert "Sure, noted." in done.stdout, done.stderr
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 300, 1000, 3000])
    parser.add_argument("--providers", nargs="+", default=["openai", "anthropic"])
    parser.add_argument("--before", help="an earlier agentos source tree to measure first, in the same run")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    measure_before_first(args.before)
    home = tempfile.mkdtemp(prefix="agentos-provider-bench-")
    os.environ["AGENTOS_HOME"] = home
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-local-bench")
    server, port = start_server()
    print(f"provider overhead, instant local server, {args.turns} turns per case, {os.cpu_count()} CPUs")
    print(f"{'provider':<10}{'case':<18}{'in context':>11}{'median ms':>11}{'p95 ms':>9}"
          f"{'provider':>10}{'commits':>9}{'rest':>7}{'pager/call':>12}")
    for provider in args.providers:
        for case in ("plain reply", "memory tool call"):
            for size in args.sizes:
                r = measure(provider, port, case, size, args.turns)
                rest = r["median"] - r["provider"] - r["storage"]
                print(f"{provider:<10}{case:<18}{size:>11,}{r['median']:>11.1f}{r['p95']:>9.1f}"
                      f"{r['provider']:>10.1f}{r['storage']:>9.1f}{rest:>7.1f}{r['pager']:>12.2f}", flush=True)
    print(f"agent create: median {create_time(port):.1f} ms")
    print(f"first reply in a fresh process (agentos chat, piped input): median {first_reply(port, home):.2f} s")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    server.communicate("")


if __name__ == "__main__":
    main()
