"""Agents as stored: the `agents` directory (id and name), and each agent's `state_<id>` table, whose
one row holds its state, its revision and its writer's lease.

Every change of a state row is a compare-and-set: an update whose filter names the revision and
lease token it expects. LanceDB re-checks the filter when a concurrent commit got in first, so two
writers can never both move an agent from revision N: the second updates no row, and is told why.
A table per agent keeps that update cheap and lets agents commit side by side: in one shared table
of 50 agents each update wrote a deletion file into a fragment holding other agents' rows and
scanned every fragment, 9-20 ms against 4.5 ms for a row alone in its table.
"""

from __future__ import annotations

import time
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
from agentos.storage.db import Database, quote, storage_errors
from agentos.storage.lease import Holder, Lease
from agentos.storage.schemas import STATE, state_table_name

_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class AgentRow:
    """One agent's row as stored."""

    agent_id: str
    name: str
    rev: int
    updated_at: datetime
    state: str
    lease_token: str | None
    holder: Holder | None
    lease_expires_at: datetime | None

    @classmethod
    def of(cls, name: str, raw: dict[str, Any]) -> AgentRow:
        return cls(agent_id=raw["agent_id"], name=name, rev=int(raw["rev"]), updated_at=raw["updated_at"],
                   state=raw["state"], lease_token=raw.get("lease_token"),
                   holder=Holder.from_json(raw.get("lease_holder")), lease_expires_at=raw.get("lease_expires_at"))

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


def _retrying(action: str, run: Any) -> Any:
    """Run a commit, again when LanceDB reports a commit conflict it could not resolve by itself."""
    for attempt in range(_CONFLICT_RETRIES):
        try:
            with storage_errors(action):
                return run()
        except Exception as exc:  # noqa: BLE001 - only commit conflicts are retried
            if "commit conflict" not in str(exc).lower() or attempt == _CONFLICT_RETRIES - 1:
                raise
    return None  # pragma: no cover - the loop always returns or raises


class AgentRows:
    """Reads and compare-and-set writes of agents: the directory, and each agent's state row."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def _directory(self, where: str | None) -> dict[str, str]:
        """Agent ids and names in the directory, by id (of two agents with one name, a create race, the one
        with the smaller id is the agent)."""
        with storage_errors("read the agents table"):
            table = self.db.table("agents")
            table.checkout_latest()  # what other processes committed
            query = table.search().select(["agent_id", "name"]).limit(None)
            raw = (query.where(where) if where else query).to_arrow().to_pylist()
        names: dict[str, str] = {}
        for r in sorted(raw, key=lambda r: r["agent_id"]):
            if r["name"] not in names.values():
                names[r["agent_id"]] = r["name"]
        return names

    def _state_table(self, agent_id: str) -> Any:
        return self.db.table(state_table_name(agent_id), STATE, {})

    def _state(self, agent_id: str, name: str) -> AgentRow | None:
        if self.db.count_rows(state_table_name(agent_id)) is None:
            return None  # a create cut short before its directory row, or a delete before its tables went
        with storage_errors(f"read the state of agent {name!r}"):
            table = self._state_table(agent_id)
            table.checkout_latest()
            rows = table.search().limit(None).to_arrow().to_pylist()
        return AgentRow.of(name, rows[0]) if rows else None

    def all(self) -> dict[str, AgentRow]:
        """Every agent's row, by name."""
        rows = (self._state(agent_id, name) for agent_id, name in self._directory(None).items())
        return {row.name: row for row in rows if row is not None}

    def get(self, name: str) -> AgentRow | None:
        found = self._directory(f"name = {quote(name)}")
        return next((self._state(agent_id, name) for agent_id in found), None)

    def by_id(self, agent_id: str) -> AgentRow | None:
        found = self._directory(f"agent_id = {quote(agent_id)}")
        return self._state(agent_id, found[agent_id]) if agent_id in found else None

    def _update(self, agent_id: str, where: str, values: dict[str, Any], action: str) -> int:
        """Rows the compare-and-set changed (0 when its filter no longer holds, or the agent was deleted)."""
        try:
            table = self._state_table(agent_id)
            result = _retrying(action, lambda: table.update(where=where, values=values))
        except StorageError:
            if self.by_id(agent_id) is None:  # deleted meanwhile: its table is gone
                self.db.forget(state_table_name(agent_id))
                return 0
            raise
        return int(result.rows_updated)

    # -- creating ------------------------------------------------------------------------------

    def insert(self, name: str, agent_id: str, state_json: str, lease: Lease, created_at: datetime) -> None:
        """Add a new agent held by `lease`; refuse a name that is taken, even by a create racing this one.
        The state table is made first: the directory row makes the agent exist."""
        if self.get(name) is not None:
            raise AgentExistsError(f'an agent named "{name}" already exists. Pick another name or delete it first.')
        lease.agent_id, lease.name = agent_id, name
        lease.held_until(lease.extended())
        self.db.create(state_table_name(agent_id), STATE, [{
            "agent_id": agent_id, "rev": 0, "updated_at": utc_now(), "state": state_json,
            "lease_token": lease.token, "lease_holder": lease.holder.to_json(), "lease_expires_at": lease.expires_at,
        }])
        self.db.add("agents", [{"agent_id": agent_id, "name": name, "created_at": created_at}])
        if self._directory(f"name = {quote(name)}").get(agent_id) != name:
            self.delete(agent_id, None)
            raise AgentExistsError(f'an agent named "{name}" was just created by another process. Pick another name.')

    # -- the lease -----------------------------------------------------------------------------

    def acquire(self, name: str, lease: Lease, *, force: bool = False, action: str = "it cannot be opened",
                hint: str = "Finish that session first.") -> AgentRow:
        """Take the agent for `lease` and return its row. A live holder elsewhere is refused (unless `force`);
        a stale one (expired, or a process on this host that has ended) is taken over."""
        for _ in range(_CONFLICT_RETRIES):
            row = self.get(name)
            if row is None:
                raise KeyError(name)
            if row.held_elsewhere() and not force:
                raise AgentBusyError(busy_message(name, row, action, hint))
            held = f"lease_token = {quote(row.lease_token)}" if row.lease_token else "lease_token IS NULL"
            lease.agent_id, lease.name, expires = row.agent_id, row.name, lease.extended()
            where = f"rev = {row.rev} AND {held}"
            values = {"lease_token": lease.token, "lease_holder": lease.holder.to_json(), "lease_expires_at": expires}
            if self._update(row.agent_id, where, values, f"open agent {name!r}") == 1:
                lease.held_until(expires)
                return row
        raise AgentBusyError(f'agent "{name}" is being opened by other processes at this moment; try again.')

    def confirm(self, lease: Lease) -> None:
        """Check, by reading the row, that `lease` still holds its agent; raise why not when it does not."""
        row = self.by_id(lease.agent_id)
        if row is None or row.lease_token != lease.token:
            raise self._lost(lease)
        lease.confirmed = time.monotonic()

    def renew(self, lease: Lease) -> None:
        """Extend the lease; mark it lost, with the reason, when the agent was deleted or taken over."""
        expires = lease.extended()
        where = f"lease_token = {quote(lease.token)}"
        if self._update(lease.agent_id, where, {"lease_expires_at": expires},
                        f"renew the hold on agent {lease.name!r}") == 1:
            lease.held_until(expires)
            return
        self._lost(lease)

    def release(self, lease: Lease) -> None:
        """Give the agent back, so another process may open it at once."""
        if lease.released or lease.lost:
            return
        self._update(lease.agent_id, f"lease_token = {quote(lease.token)}",
                     {"lease_token": None, "lease_holder": None, "lease_expires_at": None}, f"release agent {lease.name!r}")
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

    def write_state(self, lease: Lease, base_rev: int, rev: int, state_json: str) -> None:
        """Move the agent from revision `base_rev` to `rev`; refuse loudly if it is not at `base_rev`
        under this lease any more."""
        if lease.lost:
            raise lease.lost
        expires = lease.extended()
        where = f"rev = {int(base_rev)} AND lease_token = {quote(lease.token)}"
        values = {"rev": rev, "state": state_json, "updated_at": utc_now(), "lease_expires_at": expires}
        if self._update(lease.agent_id, where, values, f"save agent {lease.name!r}") == 1:
            lease.held_until(expires)
            return
        row = self.by_id(lease.agent_id)
        if row is not None and row.lease_token == lease.token and row.rev == rev and row.state == state_json:
            return  # an earlier attempt landed although it reported an error
        raise self._lost(lease)

    # -- deleting ------------------------------------------------------------------------------

    def delete(self, agent_id: str, lease: Lease | None) -> bool:
        """Remove the agent (only while `lease` holds it, when one is given): its directory row, then its
        state table. True if it was there."""
        if lease is not None:
            row = self.by_id(agent_id)
            if row is None or row.lease_token != lease.token:
                raise self._lost(lease)
        table = self.db.table("agents")
        result = _retrying("delete the agent", lambda: table.delete(f"agent_id = {quote(agent_id)}"))
        self.db.drop(state_table_name(agent_id))
        if lease is not None:
            lease.lost = lease.lost or AgentDeletedError(f'agent "{lease.name}" was deleted.')
        return int(result.num_deleted_rows) > 0
