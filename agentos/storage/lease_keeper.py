"""Keeps this process's leases alive while their agents sit idle, and gives them back when it exits."""

from __future__ import annotations

import threading
import weakref

from agentos.errors import AgentOSError, LeaseLostError
from agentos.storage.agent_rows import AgentRows
from agentos.storage.lease import Lease

TICK_SECONDS = 2.0


class LeaseKeeper:
    """One thread per store renews every held lease that no write has renewed for RENEW_SECONDS."""

    def __init__(self, rows: AgentRows) -> None:
        self.rows = rows
        self._leases: weakref.WeakSet[Lease] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def keep(self, lease: Lease) -> None:
        """Start keeping `lease`; an older lease of this process on the same agent is lost from now on."""
        with self._lock:
            for other in list(self._leases):
                if other.agent_id == lease.agent_id and other is not lease and not other.lost and not other.released:
                    other.lost = _taken(other)
            self._leases.add(lease)
            if self._thread is None or not self._thread.is_alive():
                self._wake.clear()
                self._thread = threading.Thread(target=self._run, daemon=True, name="agentos-leases")
                self._thread.start()

    def lose(self, agent_id: str, error: LeaseLostError) -> None:
        """Mark every lease of this process on `agent_id` lost (the agent was deleted)."""
        with self._lock:
            for lease in self._leases:
                if lease.agent_id == agent_id and not lease.lost:
                    lease.lost = error

    def held(self) -> list[Lease]:
        with self._lock:
            return [lease for lease in self._leases if not lease.lost and not lease.released]

    def _run(self) -> None:
        while not self._wake.wait(TICK_SECONDS):
            for lease in self.held():
                if lease.due:
                    try:
                        self.rows.renew(lease)
                    except AgentOSError:
                        pass  # the disk or the network is failing: try again next tick; writes re-check

    def release_all(self) -> None:
        """Give back every lease this process holds (at exit, so another process can open the agents at once)."""
        for lease in self.held():
            try:
                self.rows.release(lease)
            except AgentOSError:
                pass  # it runs out by itself
        self._wake.set()


def _taken(lease: Lease) -> LeaseLostError:
    return LeaseLostError(
        f'agent "{lease.name}" was opened again in this process; this Agent object can no longer save it. '
        f"Use the newer one.")
