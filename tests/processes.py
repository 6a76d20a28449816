"""Real `agentos` processes for tests: one-shot commands, and a chat kept open while others run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def env_for(home: Path) -> dict[str, str]:
    return {**os.environ, "AGENTOS_HOME": str(home), "PYTHONUNBUFFERED": "1"}


def agentos(home: Path, *args: str, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `agentos ARGS` to the end."""
    return subprocess.run([sys.executable, "-m", "agentos.cli", *args], input=stdin, capture_output=True, text=True,
                          cwd=REPO, env=env_for(home), timeout=timeout)


class Chat:
    """`agentos chat NAME` running in its own process, fed one line at a time."""

    def __init__(self, home: Path, name: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentos.cli", "chat", name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env_for(home))
        self.output = ""
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for chunk in iter(lambda: self.process.stdout.read(1), ""):  # type: ignore[union-attr]
            with self._lock:
                self.output += chunk

    def wait_for(self, text: str, timeout: float = 60) -> str:
        """Wait until `text` has been printed (after what was already waited for); return all output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if text in self.output:
                    return self.output
            if self.process.poll() is not None:
                time.sleep(0.2)
                with self._lock:
                    if text in self.output:
                        return self.output
                raise AssertionError(f"the chat ended (code {self.process.returncode}) without {text!r}:\n{self.output}")
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} within {timeout} s:\n{self.output}")

    def say(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def close(self, timeout: float = 60) -> int:
        """End the input (like Ctrl-D) and wait for the process to exit."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[Any], timeout: float = 60) -> None:
    """Wait until something accepts connections on loopback `port` (or `process` has ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port} after {timeout:g} s (process ended: {process.poll()})")
