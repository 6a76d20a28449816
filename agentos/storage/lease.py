"""Who holds an agent for writing: the holder's identity, whether it is still alive, and the lease it holds.

The lease itself lives in the agent's row of the `agents` table and is taken, renewed and given
back by compare-and-set updates of that row (see `agent_rows`). LanceDB commits a new table
version only if no other writer committed a conflicting one first (conditional PUT on object
storage, an exclusive rename on local disk), and an update whose filter no longer matches after
a conflict changes nothing. So a lease is valid wherever LanceDB is, with no lock files.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from agentos.errors import LeaseLostError
from agentos.messages import utc_now
from agentos.times import iso_moment

LEASE_SECONDS = 60.0  # how long a lease lasts without renewal; a holder on this host that died is seen at once
RENEW_SECONDS = 20.0  # a held lease not renewed by a write for this long is renewed by the keeper


def _process_start(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, from /proc), to tell it from a later one with its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _machine() -> str | None:
    """This boot of this machine and this process's pid namespace: pids compare only where both match
    (containers can share a hostname while each has its own pids)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return None


COMMAND_WORDS = 3  # the arguments a holder's command keeps: names, never what was typed after them
_NAME_LIKE = re.compile(r"[\w.@:/-]{1,64}")


def _command() -> str:
    """This process's command, as a user would recognise it (`agentos chat sam`, `python -m pytest`): the program and
    at most its first few arguments that look like names, up to the first option. It is stored with the agent's state
    for anyone to read, so no text an argument gives (`forget --text ...`, `memory set ... TEXT`) is kept."""
    argv = list(sys.argv) or [""]
    first = Path(argv[0]) if argv[0] not in ("", "-c") else None
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if first is None:
        program = "python -c ..." if argv[0] == "-c" else "python"
    elif spec is not None and spec.name:  # python -m MODULE
        program = f"python -m {spec.name.removesuffix('.__main__')}"
    elif first.suffix == ".py":
        program = f"python {argv[0]}"
    else:
        program = first.name
    words: list[str] = []
    for arg in argv[1:]:
        if arg.startswith("-") or not _NAME_LIKE.fullmatch(arg) or len(words) == COMMAND_WORDS:
            break
        words.append(arg)
    return " ".join([program, *words])[:200]


@dataclass(frozen=True)
class Holder:
    """A process that holds (or held) an agent for writing."""

    command: str
    pid: int
    host: str
    since: datetime
    process_start: str | None = None
    machine: str | None = None  # boot id and pid namespace, where the system says (see `_machine`)

    @classmethod
    def this_process(cls) -> Holder:
        pid = os.getpid()
        return cls(command=_command(), pid=pid, host=socket.gethostname(), since=utc_now(),
                   process_start=_process_start(pid), machine=_machine())

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "since": self.since.isoformat()})

    @classmethod
    def from_json(cls, text: str | None) -> Holder | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(command=str(data["command"]), pid=int(data["pid"]), host=str(data["host"]),
                       since=iso_moment(data["since"]), process_start=data.get("process_start"),
                       machine=data.get("machine"))
        except (ValueError, OverflowError, KeyError, TypeError):
            return None

    def _here(self) -> bool:
        """Whether this holder's pid means a process we can see: same host, same boot, same pid namespace."""
        return self.host == socket.gethostname() and self.machine == _machine()

    def is_this_process(self) -> bool:
        return self._here() and self.pid == os.getpid()

    def is_gone(self) -> bool:
        """True when this holder ran here (see `_here`) and that process has ended (or its pid was reused)."""
        if not self._here() or self.pid == os.getpid():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # alive, and someone else's
        started = _process_start(self.pid)
        return bool(self.process_start and started and started != self.process_start)

    def describe(self) -> str:
        """`agentos chat sam` (pid 4242 on laptop, since 2026-12-01 11:30:05 UTC)."""
        return f"`{self.command}` (pid {self.pid} on {self.host}, since {self.since:%Y-%m-%d %H:%M:%S} UTC)"


@dataclass(eq=False)  # compared by identity: each one is a distinct hold
class Lease:
    """This process's hold on one agent: the token every write must present, and when it runs out."""

    agent_id: str
    name: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    holder: Holder = field(default_factory=Holder.this_process)
    expires_at: datetime = field(default_factory=utc_now)
    lost: LeaseLostError | None = None  # why this lease is no longer held: the error every write raises
    released: bool = False
    confirmed: float = field(default_factory=time.time)  # when a write last showed it still held (wall clock:
    # a monotonic clock stops while the machine sleeps, and another machine may take the lease meanwhile)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)  # one change of its row at a time

    def extended(self) -> datetime:
        """The expiry a write or renewal made now sets."""
        return utc_now() + timedelta(seconds=LEASE_SECONDS)

    def held_until(self, expires: datetime) -> None:
        """A write or renewal that named this lease just landed."""
        self.expires_at, self.confirmed, self.released = expires, time.time(), False

    @property
    def due(self) -> bool:
        """Whether the keeper should renew it now."""
        return not self.lost and not self.released and (
            self.expires_at - utc_now()).total_seconds() < LEASE_SECONDS - RENEW_SECONDS
