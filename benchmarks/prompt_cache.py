"""How much of each request a server's prefix cache can reuse: the share of the prompt that is byte-identical to
the previous request's start, as llama.cpp, vLLM and OpenAI's automatic prompt caching see it.

A local OpenAI-compatible server answers at once and reports `usage.prompt_tokens_details.cached_tokens` the
way a prefix cache does: it lays the request out as chat templates do (system prompt, tool schemas, then the
messages in order), keeps the previous layout, and counts the common prefix (tokens = bytes / 4). An agent
talks to it through the real OpenAI provider (family llamacpp): ordinary turns, one turn with a memory edit,
then ordinary turns again. The clock advances 40 s per model call, as turns on a CPU-served model take
about that long. Printed: the reused share of every turn's first call, and the median of the ordinary turns.

    python benchmarks/prompt_cache.py [--turns 12] [--before PATH]

`--before PATH` first runs the same turns on the agentos source tree at PATH (an earlier commit), so both
come from one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from before_tree import measure_before_first  # noqa: E402


def layout(body: dict[str, Any]) -> bytes:
    """The prompt as a chat template would lay it out: system first, then the tools, then every message."""
    messages = body.get("messages", [])
    system = [m for m in messages[:1] if m.get("role") == "system"]
    rest = messages[len(system):]
    parts = [json.dumps(system), json.dumps(body.get("tools", [])), *(json.dumps(m) for m in rest)]
    return "\n".join(parts).encode()


class PrefixCacheServer(BaseHTTPRequestHandler):
    """Chat Completions with a one-slot prefix cache; a tool call on request (a user message saying 'remember')."""

    previous = b""
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        self.send_response(404)
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = layout(body)
        with self.lock:
            common = len(os.path.commonprefix([prompt, PrefixCacheServer.previous]))
            PrefixCacheServer.previous = prompt
        last = body["messages"][-1]
        remember = last.get("role") == "user" and "remember" in str(last.get("content"))
        delta: dict[str, Any] = {"role": "assistant", "content": "Noted."}
        finish = "stop"
        if remember:
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
                "name": "core_memory_append", "arguments": json.dumps({"label": "human", "content": "Likes tea."})}}]}
            finish = "tool_calls"
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 3, "total_tokens": len(prompt) // 4 + 3,
                 "prompt_tokens_details": {"cached_tokens": common // 4}}
        chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                  {"choices": [], "usage": usage}]
        data = b"".join(b"data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0,
                                                "model": "bench", **c}).encode() + b"\n\n" for c in chunks)
        data += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def run(turns: int) -> None:
    import agentos.agent.agent as agent_module
    from agentos import Agent

    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    calls = iter(range(10_000))
    agent_module.utc_now = lambda: start + timedelta(seconds=40 * next(calls))  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), PrefixCacheServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-cache-")
    agent = Agent.create("bench", model=f"llamacpp/bench@http://127.0.0.1:{server.server_port}/v1")
    shares: list[float] = []
    edit_turn = turns // 2
    for n in range(turns):
        text = "please remember that I like tea" if n == edit_turn else f"ordinary message {n} about the weather"
        events = list(agent.turn(text))
        usage = next(e.usage for e in events if e.type == "usage")
        share = usage.cache_read_tokens / usage.input_tokens if usage.input_tokens else 0.0
        kind = "memory edit" if n == edit_turn else ("after edit" if n == edit_turn + 1 else "ordinary")
        print(f"turn {n + 1:>2} ({kind:<11}): {usage.cache_read_tokens:>5} of {usage.input_tokens:>5} prompt tokens "
              f"reused ({100 * share:.0f}%)")
        if kind == "ordinary" and n > 0:
            shares.append(share)
    print(f"median reuse on ordinary turns: {100 * statistics.median(shares):.1f}%")
    agent.close()
    server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--before", help="an earlier agentos source tree to measure first")
    args = parser.parse_args()
    measure_before_first(args.before)
    run(args.turns)


if __name__ == "__main__":
    main()
