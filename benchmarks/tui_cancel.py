"""How fast the TUI lets go: Escape during a provider's retry back-off or while the server says nothing, and Ctrl-C
during a streaming reply.

A local server answers a model call with HTTP 429 and `retry-after: 20` (so the real OpenAI provider waits 20 s
before retrying), or with seconds of silence, or streams a long reply slowly. The TUI runs headless (Textual's
pilot) on a real agent whose model is that server, and the time from the key press to the turn's end or the
screen being free (Escape) or the app's exit (Ctrl-C) is measured over several runs.

    python benchmarks/tui_cancel.py [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")
os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-tui-cancel-")

from agentos import Agent  # noqa: E402
from agentos.tui.app import AgentApp  # noqa: E402

RETRY_AFTER = "20"
SILENCE = 4.0  # seconds; each run then waits this long at its end for the call to return


class Server(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: 429 for a message that says "limit"; silence first for one that says
    "silent" (SILENCE seconds); then a slow stream of many small chunks."""

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "limit" in json.dumps(body["messages"][-1]):
            payload = json.dumps({"error": {"message": "Rate limit reached", "type": "requests"}}).encode()
            self.send_response(429)
            self.send_header("content-type", "application/json")
            self.send_header("retry-after", RETRY_AFTER)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if "silent" in json.dumps(body["messages"][-1]):
            time.sleep(SILENCE)  # a server that sends nothing for a while (a slow first token, a hung connection)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            for i in range(400):  # about 20 s of reply
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "bench",
                         "choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client hung up: what a cancel does

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def time_key(port: int, name: str, message: str, ready: Callable[[AgentApp], bool], key: str,
                   done: Callable[[AgentApp], Awaitable[None]]) -> float:
    """Send `message`, wait until `ready`, then time `key` until `done` returns."""
    agent = Agent.create(name, model=f"openai-compatible/bench@http://127.0.0.1:{port}/v1")
    app = AgentApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one("#prompt").value = message
        await pilot.press("enter")
        while not ready(app):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # well inside the wait, or mid-reply
        start = time.perf_counter()
        await pilot.press(key)
        await done(app)
        took = time.perf_counter() - start
    if not app.closed:
        agent.close()
    return took


async def exited(app: AgentApp) -> None:
    while app.is_running and app.return_code is None:
        await asyncio.sleep(0.005)


async def escape_during_back_off(port: int, name: str) -> float:
    return await time_key(port, name, "please hit the rate limit",
                          lambda app: any(t.startswith("! ") and "retrying" in t for t in app.conversation.texts()),
                          "escape", lambda app: app.workers.wait_for_complete())


async def escape_before_any_answer(port: int, name: str) -> float:
    async def let_go(app: AgentApp) -> None:
        while app.busy:
            await asyncio.sleep(0.005)

    return await time_key(port, name, "a silent server", lambda app: app.busy, "escape", let_go)


async def ctrl_c_during_reply(port: int, name: str) -> float:
    return await time_key(port, name, "tell me a long story", lambda app: bool(app.conversation.query("Reply")),
                          "ctrl+c", exited)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    for label, case in (("Escape during a 20 s retry back-off -> turn ended", escape_during_back_off),
                        ("Escape while the server sends nothing -> screen free", escape_before_any_answer),
                        ("Ctrl-C during a streaming reply -> app exited", ctrl_c_during_reply)):
        times = [asyncio.run(case(port, f"bench-{case.__name__[:20].replace('_', '-')}-{i}")) for i in range(args.runs)]
        ms = sorted(1000 * t for t in times)
        print(f"{label}: median {statistics.median(ms):.0f} ms, max {ms[-1]:.0f} ms ({args.runs} runs)")
    server.shutdown()


if __name__ == "__main__":
    main()
