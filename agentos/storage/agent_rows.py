"""Agents as stored: the directory (names to ids), and each agent's `state_<id>` table, whose one row
holds its state, its revision and its writer's lease.

Every change of a state row is a compare-and-set: an update whose filter names the revision and
lease token it expects. LanceDB re-checks the filter when a concurrent commit got in first, so two
writers can never both move an agent from revision N: the second updates no row, and is told why.
A table per agent keeps that update cheap and lets agents commit side by side: in one shared table
of 50 agents each update wrote a deletion file into a fragment holding other agents' rows and
scanned every fragment, 9-20 ms against 4.5 ms for a row alone in its table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentos.errors import (
    AgentBusyError,
    AgentDeletedError,
    AgentExistsError,
    LeaseLostError,
    StorageError,
)
from agentos.messages import utc_now
from agentos.storage.db import Database
from agentos.storage.directory import Directory
from agentos.storage.failures import CONFLICT_RETRIES, retry_conflicts, storage_errors
from agentos.storage.filters import quote
from agentos.storage.lease import Holder, Lease
from agentos.storage.schemas import STATE, state_table_name


@dataclass(frozen=True)
class AgentRow:
    """One agent's state row as stored, with its name."""

    agent_id: str
    name: str
    rev: int
    updated_at: datetime
    state: str
    lease_token: str | None
    holder: Holder | None
    lease_expires_at: datetime | None
    step_id: str | None = None

    @classmethod
    def of(cls, name: str, raw: dict[str, Any]) -> AgentRow:
        return cls(agent_id=raw["agent_id"], name=name, rev=int(raw["rev"]), updated_at=raw["updated_at"],
                   state=raw["state"], lease_token=raw.get("lease_token"),
                   holder=Holder.from_json(raw.get("lease_holder")), lease_expires_at=raw.get("lease_expires_at"),
                   step_id=raw.get("step_id"))

    def held_elsewhere(self) -> bool:
        """Whether a live writer other than this process holds the agent."""
        if not self.lease_token:
            return False
        if self.lease_expires_at is not None and self.lease_expires_at < utc_now():
            return False
        return not (self.holder is not None and (self.holder.is_gone() or self.holder.is_this_process()))


def busy_message(name: str, row: AgentRow, action: str, hint: str) -> str:
    """Why `action` cannot happen now, naming the holder and how long its hold runs, and what to do."""
    who = row.holder.describe() if row.holder else "another process"
    until = f" at {row.lease_expires_at:%H:%M:%S} UTC" if row.lease_expires_at else ""
    return (f'agent "{name}" is in use by {who}, so {action}. {hint} If that process is gone, its hold '
            f"runs out by itself{until}.")


class AgentRows:
    """Reads and compare-and-set writes of agents: the directory, and each agent's state row."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.directory = Directory(db)

    def _state_table(self, agent_id: str) -> Any:
        return self.db.table(state_table_name(agent_id), STATE, {})

    def _state(self, agent_id: str, name: str) -> AgentRow | None:
        if not self.db.exists(state_table_name(agent_id)):
            return None  # a delete whose tables are still going
        with storage_errors(f"read the state of agent {name!r}"):
            table = self._state_table(agent_id)
            table.checkout_latest()
            rows = table.search().limit(None).to_arrow().to_pylist()
        return AgentRow.of(name, rows[0]) if rows else None

    def all(self) -> dict[str, AgentRow]:
        """Every agent's row, by name."""
        rows = (self._state(agent_id, name) for name, agent_id in self.directory.names().items())
        return {row.name: row for row in rows if row is not None}

    def get(self, name: str) -> AgentRow | None:
        agent_id = self.directory.names().get(name)
        return None if agent_id is None else self._state(agent_id, name)

    def by_id(self, agent_id: str) -> AgentRow | None:
        name = next((n for n, i in self.directory.names().items() if i == agent_id), None)
        return None if name is None else self._state(agent_id, name)

    def _update(self, agent_id: str, where: str, values: dict[str, Any], action: str) -> int:
        """Rows the compare-and-set changed (0 when its filter no longer holds, or the agent was deleted)."""
        try:
            table = self._state_table(agent_id)
            self.db.check_writable(state_table_name(agent_id))
            result = retry_conflicts(action, lambda: table.update(where=where, values=values))
        except StorageError:
            if self.by_id(agent_id) is None:  # deleted meanwhile: its table is gone
                self.db.forget(state_table_name(agent_id))
                return 0
            raise
        return int(result.rows_updated)

    # -- creating ------------------------------------------------------------------------------

    def insert(self, name: str, agent_id: str, state_json: str, lease: Lease, *, rev: int = 0) -> None:
        """Add a new agent held by `lease`, its state at revision `rev` (an import keeps its own). Its state table
        is made first; claiming the name in the directory makes the agent exist, and refuses a name that is taken,
        even by a create racing this one."""
        if name in self.directory.names():
            raise AgentExistsError(f'an agent named "{name}" already exists. Pick another name or delete it first.')
        lease.agent_id, lease.name = agent_id, name
        lease.held_until(lease.extended())
        self.db.create(state_table_name(agent_id), STATE, [{
            "agent_id": agent_id, "rev": rev, "updated_at": utc_now(), "state": state_json,
            "lease_token": lease.token, "lease_holder": lease.holder.to_json(), "lease_expires_at": lease.expires_at,
            "step_id": None,
        }])
        if not self.directory.claim(name, agent_id):
            self.db.drop(state_table_name(agent_id))
            raise AgentExistsError(f'an agent named "{name}" was just created by another process. Pick another name.')

    # -- the lease -----------------------------------------------------------------------------

    def acquire(self, name: str, lease: Lease, *, agent_id: str | None = None, action: str = "it cannot be opened",
                hint: str = "Finish that session first.", check: Callable[[AgentRow], None] | None = None) -> AgentRow:
        """Take the agent for `lease` and return its row. A live holder elsewhere is refused; a stale one
        (expired, or a process on this host that has ended) is taken over. With `agent_id`, only that agent:
        a different agent that has the name by now counts as the agent being deleted."""
        for _ in range(CONFLICT_RETRIES):
            row = self.get(name)
            if row is None:
                raise KeyError(name)
            if agent_id is not None and row.agent_id != agent_id:
                raise AgentDeletedError(f'agent "{name}" was deleted (another agent has its name now).')
            if row.held_elsewhere():
                raise AgentBusyError(busy_message(name, row, action, hint))
            if check is not None:
                check(row)  # raises to refuse before anything is written
            held = f"lease_token = {quote(row.lease_token)}" if row.lease_token else "lease_token IS NULL"
            lease.agent_id, lease.name, expires = row.agent_id, row.name, lease.extended()
            where = f"rev = {row.rev} AND {held}"
            values = {"lease_token": lease.token, "lease_holder": lease.holder.to_json(), "lease_expires_at": expires}
            with lease.lock:
                if self._update(row.agent_id, where, values, f"open agent {name!r}") == 1:
                    lease.held_until(expires)
                    return row
        raise AgentBusyError(f'agent "{name}" is being opened by other processes at this moment; try again.')

    def confirm(self, lease: Lease) -> None:
        """Check, by reading the row, that `lease` still holds its agent; raise why not when it does not."""
        row = self.by_id(lease.agent_id)
        if row is None or row.lease_token != lease.token:
            raise self._lost(lease)
        lease.confirmed = time.time()

    def renew(self, lease: Lease) -> None:
        """Extend the lease; mark it lost, with the reason, when the agent was deleted or taken over."""
        with lease.lock:
            if lease.released or lease.lost:
                return  # closed (or lost) since the keeper looked
            expires = lease.extended()
            where = f"lease_token = {quote(lease.token)}"
            if self._update(lease.agent_id, where, {"lease_expires_at": expires},
                            f"renew the hold on agent {lease.name!r}") == 1:
                lease.held_until(expires)
                return
            self._lost(lease)

    def release(self, lease: Lease) -> None:
        """Give the agent back, so another process may open it at once."""
        with lease.lock:
            if lease.released or lease.lost:
                return
            self._update(lease.agent_id, f"lease_token = {quote(lease.token)}",
                         {"lease_token": None, "lease_holder": None, "lease_expires_at": None},
                         f"release agent {lease.name!r}")
            lease.released = True

    def _lost(self, lease: Lease) -> LeaseLostError:
        """Why `lease` no longer holds its agent; recorded on the lease and returned as the error to raise."""
        row = self.by_id(lease.agent_id)
        if row is None:
            error: LeaseLostError = AgentDeletedError(
                f'agent "{lease.name}" was deleted by another process while this session had it open; '
                f"nothing more of this session is saved.")
        elif row.lease_token != lease.token:
            by = row.holder.describe() if row.holder else "another process"
            error = LeaseLostError(
                f'agent "{lease.name}" was taken over by {by}; this session can no longer save it. '
                f"Its last unsaved step was not written.")
        else:
            error = LeaseLostError(
                f'agent "{lease.name}" changed under this session (stored revision {row.rev}); refusing to '
                f"overwrite it. Open it again to continue from what was saved.")
        lease.lost = error
        return error

    # -- the state -----------------------------------------------------------------------------

    def write_state(self, lease: Lease, base_rev: int, rev: int, state_json: str, step_id: str) -> int:
        """Move the agent from revision `base_rev` to `rev`; refuse loudly if it is not at `base_rev` under
        this lease any more. Returns the revision the state now has: `rev`, or `rev + 1` when an earlier
        attempt of this step write landed at `rev` although it reported an error, and this one carries more."""
        with lease.lock:
            if lease.lost:
                raise lease.lost
            expires = lease.extended()
            where = f"rev = {int(base_rev)} AND lease_token = {quote(lease.token)}"
            values = {"rev": rev, "state": state_json, "updated_at": utc_now(), "lease_expires_at": expires,
                      "step_id": step_id}
            if self._update(lease.agent_id, where, values, f"save agent {lease.name!r}") == 1:
                lease.held_until(expires)
                return rev
            row = self.by_id(lease.agent_id)
            if row is None or row.lease_token != lease.token or row.rev != rev or row.step_id != step_id:
                raise self._lost(lease)
            if row.state == state_json:
                return rev  # the earlier attempt wrote just this
            where = f"rev = {int(rev)} AND lease_token = {quote(lease.token)}"
            if self._update(lease.agent_id, where, {**values, "rev": rev + 1}, f"save agent {lease.name!r}") == 1:
                lease.held_until(expires)
                return rev + 1
            raise self._lost(lease)

    # -- deleting ------------------------------------------------------------------------------

    def delete(self, agent_id: str, lease: Lease | None) -> bool:
        """Remove the agent (only while `lease` holds it, when one is given): its name in the directory, then
        its state table. True if it was there."""
        if lease is not None:
            row = self.by_id(agent_id)
            if row is None or row.lease_token != lease.token:
                raise self._lost(lease)
        removed = self.directory.remove(agent_id)
        self.db.drop(state_table_name(agent_id))
        if lease is not None:
            lease.lost = lease.lost or AgentDeletedError(f'agent "{lease.name}" was deleted.')
        return removed
