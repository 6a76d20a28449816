"""The audit log: who read or changed an agent's memory, when, what part of it and how much, in the shared table
`audit_log` (rows carry `agent_id`, like the memory edit log).

An entry names its actor (the model and its tool call, the user and their command, an MCP client, an API key's user:
see `agentos.actors`), its action ("read" or "change"), what it reached ("core memory", "archival", "recall",
"facts", "rewind", "import", "forget"...), a target (a block's label, a passage's or fact's id), a count (rows
changed or returned) and a short detail: sizes and kinds, never what the memory says (no block text, no query, no
passage). Writing entries never fails the work they describe: a failed write is warned about once, and dropped.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentos.actors import Actor, current_actor
from agentos.errors import AgentOSWarning
from agentos.messages import new_id, utc_now
from agentos.storage.db import Database
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.times import as_utc

AUDIT_TABLE = "audit_log"
TEXT_LIMIT = 200  # the most characters an actor, target or detail keeps

log = logging.getLogger("agentos.audit")


class AuditWarning(AgentOSWarning):
    """The audit log could not be written; the work it describes was done all the same."""


@dataclass(frozen=True)
class AuditEntry:
    """One read or change of an agent's memory, by the actor of the moment it was made (unless one is given)."""

    action: str
    what: str
    target: str = ""
    count: int = 0
    detail: str = ""
    by: Actor = field(default_factory=current_actor)
    at: datetime = field(default_factory=utc_now)
    id: str = field(default_factory=lambda: new_id("aud"))

    def row(self, agent_id: str) -> dict[str, Any]:
        return {"id": self.id, "agent_id": agent_id, "at": self.at, "actor_kind": self.by.kind,
                "actor": self.by.name[:TEXT_LIMIT], "action": self.action, "what": self.what,
                "target": self.target[:TEXT_LIMIT], "count": int(self.count), "detail": self.detail[:TEXT_LIMIT]}

    def json(self) -> dict[str, Any]:
        """The entry as JSON values (for `agentos audit --json` and the HTTP API)."""
        return {"at": self.at.isoformat(), "actor_kind": self.by.kind, "actor": self.by.name, "action": self.action,
                "what": self.what, "target": self.target, "count": self.count, "detail": self.detail, "id": self.id}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AuditEntry:
        return cls(action=row["action"], what=row["what"], target=row["target"] or "", count=int(row["count"]),
                   detail=row["detail"] or "", by=Actor(row["actor_kind"], row["actor"]), at=as_utc(row["at"]),
                   id=row["id"])


def read(what: str, count: int = 0, target: str = "", detail: str = "") -> AuditEntry:
    """A read of `what` by whoever acts now (`count`: the rows it returned)."""
    return AuditEntry("read", what, target, count, detail)


def change(what: str, count: int = 1, target: str = "", detail: str = "", by: Actor | None = None) -> AuditEntry:
    """A change of `what` by whoever acts now, or by `by` (`count`: the rows it changed)."""
    return AuditEntry("change", what, target, count, detail, by or current_actor())


def shown_ids(ids: Sequence[str], most: int = 3) -> str:
    """A target naming a few ids, and how many more."""
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


_warned = False


def _warn_once(exc: BaseException) -> None:
    global _warned
    log.warning("could not write the audit log: %s", exc)
    if not _warned:
        _warned = True
        warnings.warn(AuditWarning(f"the audit log could not be written ({exc}); what it would have recorded was "
                                   f"done all the same. Run `agentos doctor` if this goes on."), stacklevel=3)


class AuditLog:
    """Every agent's audit log in one database: `record` appends, `entries` reads, `remove` deletes."""

    def __init__(self, db: Database, committed: Callable[[list[str]], None] | None = None) -> None:
        self.db = db
        self.committed = committed  # told after each write (background compaction counts commits)

    def record(self, agent_id: str, entries: Sequence[AuditEntry]) -> bool:
        """Append entries in one commit; False (warned about once, nothing raised) when that fails."""
        if not entries:
            return True
        try:
            self.db.add(AUDIT_TABLE, [e.row(agent_id) for e in entries])
        except Exception as exc:  # noqa: BLE001 - the log never fails the work it describes
            _warn_once(exc)
            return False
        if self.committed is not None:
            self.committed([AUDIT_TABLE])
        return True

    def entries(self, agent_id: str, since: datetime | None = None, limit: int | None = None) -> list[AuditEntry]:
        """The agent's entries, oldest first: those at or after `since`, the last `limit` of them."""
        table = self.db.existing(AUDIT_TABLE)
        if table is None:
            return []
        where = f"agent_id = {quote(agent_id)}"
        if since is not None:
            utc = as_utc(since)
            where += f" AND at >= timestamp '{utc.year:04d}-{utc.strftime('%m-%d %H:%M:%S.%f')}'"
        with storage_errors("read the audit log"):
            table.checkout_latest()
            rows = table.search().where(where).limit(None).to_arrow().to_pylist()
        found = sorted((AuditEntry.from_row(r) for r in rows), key=lambda e: e.at)
        return found[-limit:] if limit else found

    def remove(self, agent_id: str, where: str | None = None) -> int:
        """Delete the agent's entries (those matching filter `where` too, if given); how many went."""
        table = self.db.existing(AUDIT_TABLE)
        if table is None:
            return 0
        clause = f"agent_id = {quote(agent_id)}" + (f" AND ({where})" if where else "")
        with storage_errors("remove audit log entries"):
            self.db.check_writable(AUDIT_TABLE)
            table.checkout_latest()
            gone = int(table.count_rows(clause))
            if gone:
                table.delete(clause)
        if gone and self.committed is not None:
            self.committed([AUDIT_TABLE])
        return gone
