"""The parts of the serve load test (`serve_load.py`) that are not runs: an instant OpenAI-compatible model server in a
process of its own, `agentos serve` as a real process with users and keys, clients that send turns (streaming or
not) and record what they were told, the server's RSS and CPU, and py-spy's profile of it.

    python benchmarks/serve_harness.py   (the mock model alone: prints its port, serves until stdin closes)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WINDOW = 8192  # small enough that the pager compacts now and then (the summary is asked of the mock too)
TEXT = "the weather today is fine and my cat sleeps a lot"

# -- the instant model server (its own process) ---------------------------------------------------------------------


def _reply_for(body: dict[str, Any]) -> str:
    """`ack <tag>` for the last user message `<tag>: ...`; a summary request gets a summary."""
    messages = body.get("messages") or []
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = last.get("content") if isinstance(last, dict) else ""
    if isinstance(text, list):
        text = " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    tag = str(text or "").split(":", 1)[0]
    return f"ack {tag}" if " #" in tag else "Summary: the user talked about the weather and a cat."


def _completion(body: dict[str, Any], size: int) -> tuple[bytes, str]:
    text = _reply_for(body)
    usage = {"prompt_tokens": size // 4, "completion_tokens": 4, "total_tokens": size // 4 + 4}
    base = {"id": "c1", "created": 1, "model": body.get("model", "mock")}
    if not body.get("stream"):
        message = {"role": "assistant", "content": text}
        payload = {**base, "object": "chat.completion", "usage": usage,
                   "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        return json.dumps(payload).encode(), "application/json"

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', 'choices': [choice], **extra})}\n\n"

    events = [chunk({"role": "assistant", "content": ""}), chunk({"content": text}), chunk({}, "stop"),
              f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', 'choices': [], 'usage': usage})}\n\n",
              "data: [DONE]\n\n"]
    return "".join(events).encode(), "text/event-stream"


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == "POST" and path.endswith("/chat/completions"):
                payload, kind = _completion(json.loads(raw), len(raw))
                status = "200 OK"
            elif method == "GET" and path.endswith("/models"):
                payload, kind = json.dumps({"object": "list", "data": [
                    {"id": "mock", "object": "model", "owned_by": "bench", "max_model_len": 32768}]}).encode(), \
                    "application/json"
                status = "200 OK"
            else:
                payload, kind, status = b'{"error": {"message": "not here"}}', "application/json", "404 Not Found"
            writer.write(f"HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {len(payload)}\r\n\r\n".encode()
                         + payload)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def serve_mock() -> None:
    """Run the instant model server: print its port, serve until stdin closes."""
    async def main() -> None:
        server = await asyncio.start_server(_handle, "127.0.0.1", 0, backlog=2048)
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        server.close()

    asyncio.run(main())


# -- the server under test ------------------------------------------------------------------------------------------


def tree_of(pid: int) -> list[int]:
    """`pid` and its descendants (workers)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
    return found


def rss_mib(pid: int, kind: str = "VmRSS") -> float:
    """Resident memory of the server (its workers included), MiB: all of it (`VmRSS`), or its heap alone (`RssAnon`:
    the shared libraries' pages, ~140 MiB that never grow, left out)."""
    total = 0
    for each in tree_of(pid):
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith(f"{kind}:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def cpu_s(pid: int) -> float:
    """CPU seconds the server (and its workers) used so far, workers that ended and were waited for included."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for each in tree_of(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])  # utime, stime, and those of children waited for
        except (OSError, IndexError):
            pass
    return total / tick


def cpu_split(pid: int) -> dict[str, float]:
    """CPU seconds of the server's live threads so far: LanceDB's own (its Rust worker threads) and Python's (the event
    loop, the agents' threads, compaction), which share one interpreter lock."""
    tick = os.sysconf("SC_CLK_TCK")
    split = {"lance": 0.0, "python": 0.0}
    for each in tree_of(pid):
        for task in Path(f"/proc/{each}/task").glob("*"):
            try:
                name, fields = (task / "stat").read_text().split("(", 1)[1].rsplit(")", 1)
                used = (int(fields.split()[11]) + int(fields.split()[12])) / tick
            except (OSError, IndexError, ValueError):
                continue
            split["lance" if name.startswith(("lancedb", "lance")) else "python"] += used
    return split


class Server:
    """`agentos serve` in its own process over a temporary data home, with users and their keys."""

    def __init__(self, users: int, workers: int, queue: int, release_after: float | None,
                 recycle_mib: int | None = None) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="agentos-load-"))
        self.env = {**os.environ, "AGENTOS_HOME": str(self.home), "LANCEDB_LOG": "error"}
        self.keys: dict[str, str] = {}
        for number in range(users):
            out = subprocess.run([sys.executable, "-m", "agentos", "users", "add", f"user{number}"], env=self.env,
                                 capture_output=True, text=True, check=True)
            key = re.search(r"aos_[A-Za-z0-9_-]+", out.stdout + out.stderr)
            assert key, f"no key in: {out.stdout} {out.stderr}"
            self.keys[f"user{number}"] = key.group(0)
        if not self.keys:
            self.keys["local"] = ""
        command = [sys.executable, "-m", "agentos", "serve", "--port", "0", "--queue", str(queue)]
        if workers > 1:
            command += ["--workers", str(workers)]
        if release_after is not None:
            command += ["--release-after", f"{release_after:g}"]
        if recycle_mib:
            command += ["--recycle-mib", str(recycle_mib)]
        self.process = subprocess.Popen(command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = re.search(r"http://[^ ]+:(\d+)", line)
        if not found:
            raise SystemExit(f"agentos serve did not start: {line}{self.process.stderr.read()}")
        self.url = f"http://127.0.0.1:{found.group(1)}"
        self.errors: list[str] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line.rstrip())

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> int:
        self.process.terminate()
        try:
            code = self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = -9
        shutil.rmtree(self.home, ignore_errors=True)
        return code


# -- clients --------------------------------------------------------------------------------------------------------


@dataclass
class Sent:
    """One message a client sent, and what it was told."""

    agent: str
    text: str
    sent_at: float
    accepted_at: float | None = None  # when the server took it (response headers)
    reply: str | None = None
    outcome: str = ""  # finished, refused (429 retried: a new Sent), error
    error: str = ""
    latency: float = 0.0


@dataclass
class Run:
    sent: list[Sent] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    said: dict[str, str] = field(default_factory=dict)  # an error kind -> the first message of that kind
    refused: int = 0


def headers(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key else {}


async def create_agent(client: Any, key: str, name: str, model: str) -> None:
    response = await client.post("/api/agents", headers=headers(key), json={
        "name": name, "model": model, "human": "Name: Ada", "settings": {"context_window": WINDOW}})
    if response.status_code != 201:
        raise SystemExit(f"creating {name} failed: {response.status_code} {response.text}")


async def send(client: Any, key: str, agent: str, text: str, stream: bool, run: Run) -> Sent:
    """One turn; a 429 is retried after the time the server asks for (each try is its own `Sent`)."""
    while True:
        sent = Sent(agent, text, time.perf_counter())
        run.sent.append(sent)
        try:
            if stream:
                await _stream(client, key, sent)
            else:
                response = await client.post(f"/api/agents/{agent}/messages", headers=headers(key), json={"text": text})
                sent.accepted_at = None
                body = response.json()
                if response.status_code == 200 and body.get("outcome") == "finished":
                    sent.outcome, sent.reply = "finished", body["reply"]
                else:
                    sent.outcome = f"{response.status_code}"
                    sent.error = str(body.get("error") or body)
        except Exception as exc:  # noqa: BLE001 - counted, the run goes on
            sent.outcome, sent.error = type(exc).__name__, str(exc)
        sent.latency = time.perf_counter() - sent.sent_at
        if sent.outcome == "429":
            run.refused += 1
            await asyncio.sleep(0.2)
            continue
        if sent.outcome != "finished":
            run.errors[sent.outcome] += 1
            run.said.setdefault(sent.outcome, sent.error[:300])
        return sent


async def _stream(client: Any, key: str, sent: Sent) -> None:
    async with client.stream("POST", f"/api/agents/{sent.agent}/messages/stream", headers=headers(key),
                              json={"text": sent.text}) as response:
        if response.status_code != 200:
            sent.outcome, sent.error = f"{response.status_code}", (await response.aread()).decode(errors="replace")
            return
        sent.accepted_at = time.perf_counter()
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind in ("turn_finished", "turn_failed"):
                data = json.loads(line[6:])
                if kind == "turn_finished":
                    sent.outcome, sent.reply = "finished", data["reply"]["content"]
                else:
                    sent.outcome, sent.error = data.get("kind") or "turn_failed", data.get("error", "")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


class Sampler:
    """The server's RSS, sampled every half second while a run goes on."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_mib(self.pid))
            await asyncio.sleep(0.5)

    def __enter__(self) -> Sampler:
        self._task = asyncio.get_running_loop().create_task(self._sample())
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._task is not None
        self._task.cancel()
        self.peak = max(self.peak, rss_mib(self.pid))


# -- profile --------------------------------------------------------------------------------------------------------


def start_profile(pid: int) -> tuple[subprocess.Popen[bytes], Path] | None:
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy is None:
        print("(--profile needs py-spy: pip install py-spy)")
        return None
    out = Path(tempfile.mkdtemp(prefix="agentos-spy-")) / "stacks.txt"
    process = subprocess.Popen([spy, "record", "--pid", str(pid), "--subprocesses", "--idle", "--threads",
                                "--nonblocking", "--format", "raw", "--rate", "200", "--output", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the clients start
    return process, out


CATEGORIES = [  # first match from the leaf: (what, a frame that names it)
    ("compaction (background)", "maintenance.py"),
    ("commit: state compare-and-set", "write_state (agentos/storage/agent_rows.py"),
    ("commit: appends (messages, recall, restore points)", "agentos/storage/group_commit.py"),
    ("commit: appends (messages, recall, restore points)", "add (agentos/storage/db.py"),
    ("step write (other)", "write_step (agentos/storage/store.py"),
    ("model call (provider, SDK, HTTP)", "agentos/providers/"),
    ("pager and summary", "agentos/agent/paging.py"),
    ("agent loop, context, prompt", "agentos/agent/"),
    ("waiting for a job", "_work (agentos/server/host.py"),
    ("SSE and JSON of events", "agentos/server/turns.py"),
    ("routes and scope", "agentos/server/"),
    ("HTTP (uvicorn, starlette, fastapi)", "uvicorn/"),
    ("HTTP (uvicorn, starlette, fastapi)", "starlette/"),
    ("HTTP (uvicorn, starlette, fastapi)", "fastapi/"),
    ("event loop idle", "asyncio/"),
]


def category(stack: str) -> str:
    frames = stack.split(";")
    for frame in reversed(frames):
        for what, mark in CATEGORIES:
            if mark in frame:
                return what
    return "other"


def report_profile(process: subprocess.Popen[bytes], out: Path) -> None:
    process.send_signal(2)  # py-spy writes its file on SIGINT
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
    if not out.exists():
        print("(py-spy wrote nothing: it may need ptrace permission)")
        return
    workers: Counter[str] = Counter()
    loop: Counter[str] = Counter()
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        if "_work (agentos/server/host.py" in stack:
            workers[category(stack)] += int(count)
        elif "uvicorn" in stack or "asyncio/base_events" in stack:
            loop[category(stack)] += int(count)
    for title, counts in (("agents' worker threads (wall time of turns, waiting included)", workers),
                          ("event loop thread", loop)):
        total = sum(counts.values()) or 1
        print(f"\nwhere the time goes: {title}, {total:,} samples")
        for what, n in counts.most_common():
            print(f"  {100 * n / total:5.1f}%  {what}")
    print(f"(stacks: {out})")


def start_mock() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


if __name__ == "__main__":
    serve_mock()
