"""`agentos doctor`: check every table of the store, and with `repair` rebuild the damaged ones from what can still be
read, listing what was recovered and what was lost.

A table is read at its newest readable version, fragment by fragment (see `salvage`). Rows that only
data files no version refers to still hold (a commit whose manifest was lost) are taken back when the
agents' saved states show they were committed: a state of a higher revision, a message below the
agent's message count, a passage or edit that is not there. A rebuilt table replaces the old one
crash-safely, after a copy of the old one is put in `doctor-backups/` beside the database.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from agentos.errors import AgentBusyError, AgentOSError, StorageError
from agentos.messages import utc_now
from agentos.storage.checkup import Checkup, Finding, MissingMessages
from agentos.storage.lease import Lease
from agentos.storage.migrations import ROW_ID
from agentos.storage.rebuild import rebuild_state, relist
from agentos.storage.rewrites import SWAP_SUFFIX, replace_table
from agentos.storage.salvage import TableScan, earlier_rows, scan
from agentos.storage.schemas import AGENTS, STATE, state_table_name
from agentos.storage.store import Store

STATE_PREFIX = "state_"
POINTS_PREFIX = "restore_points_"


def _kind(name: str) -> int:
    """The order tables are judged in: what the others are checked against comes first."""
    return 0 if name == "agents" else 1 if name.startswith(STATE_PREFIX) else 2 if name == "messages" else 3


def _rows(scan_: TableScan) -> list[dict[str, Any]]:
    return scan_.good.to_pylist() if scan_.good is not None else []


def _orphans(scan_: TableScan) -> list[dict[str, Any]]:
    return scan_.orphans.to_pylist() if scan_.orphans is not None else []


def _newest(scan_: TableScan, what: str, recovered: list[str], lost: list[str],
            earlier: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    """A one-row table (the directory, an agent's state): the row of the highest revision any data file has (or,
    when its newest version's data is lost, `earlier`: the row an older version holds); the readable row when rival
    rows share that revision (writers that raced: which one committed is unknown)."""
    rows = _rows(scan_)
    candidates = [*earlier, *rows, *_orphans(scan_)]  # orphans oldest first: of equal rows, the last written wins
    top = max((int(r["rev"]) for r in candidates), default=None)
    if top is None:
        return []
    best = [r for r in candidates if int(r["rev"]) == top][-1]
    content = "state" if "state" in best else "names"  # a lease taken or given back leaves the content alike
    rivals = {r[content] for r in candidates if int(r["rev"]) == top}
    if len(rivals) > 1 and rows and int(best["rev"]) > int(rows[0]["rev"]):
        lost.append(f"{what} at revision {best['rev']}: {len(rivals)} different rows claim it, so the readable "
                    f"revision {rows[0]['rev']} is kept")
        best = rows[0]
    if any(best is r for r in earlier):
        recovered.append(f"{what} at revision {best['rev']}, from an older version of the table (the newest "
                         f"version's data is lost)")
    elif not rows or int(best["rev"]) > int(rows[0]["rev"]):
        recovered.append(f"{what} at revision {best['rev']} (the table's newest version showed "
                         f"{rows[0]['rev'] if rows else 'none'})")
    if "lease_token" in best:
        best = {**best, "lease_token": None, "lease_holder": None, "lease_expires_at": None}
    return [best]


def _keyed(scan_: TableScan, key: Callable[[dict[str, Any]], Any], keep: Callable[[dict[str, Any]], bool],
           what: str, recovered: list[str]) -> list[dict[str, Any]]:
    """An append-only table: its readable rows, and rows only unreferenced files hold that `keep` accepts."""
    rows = _rows(scan_)
    seen = {key(r) for r in rows}
    taken = []
    for row in _orphans(scan_):
        if key(row) not in seen and keep(row):
            seen.add(key(row))
            taken.append(row)
    if taken:
        recovered.append(f"{len(taken)} {what} that no readable version of the table refers to")
    return rows + taken


def _committed_messages(states: dict[str, dict[str, Any]],
                        taken: set[tuple[str, int]]) -> Callable[[dict[str, Any]], bool]:
    """Whether an unreferenced message row was committed: below its agent's message count, and no other row has
    its place (seq) in that agent's conversation."""
    def committed(row: dict[str, Any]) -> bool:
        state, place = states.get(row["agent_id"]), (row["agent_id"], int(row["seq"]))
        if state is None or place in taken or int(row["seq"]) >= int(state.get("message_count", 0)):
            return False
        taken.add(place)
        return True
    return committed


def _earlier(db: Any, scan_: TableScan) -> list[dict[str, Any]]:
    """For a one-row table whose newest version lost its row: the row an older version holds (local tables)."""
    if scan_.version is None or (_rows(scan_) and not scan_.bad) or "://" in db.uri:
        return []
    return earlier_rows(scan_.path, scan_.version, db.storage_options)[0]


def examine(store: Store, agent: str | None = None) -> Checkup:
    """Read every table (or those of agent `agent` and the shared ones) and judge what a repair would do."""
    db = store.db
    names = [n for n in db.connection.list_tables().tables if not n.endswith(SWAP_SUFFIX)]
    directory = scan(db.uri, "agents", db.storage_options) if "agents" in names else None
    newest = _newest(directory, "the agent directory", [], [], _earlier(db, directory)) if directory else []
    agent_ids = json.loads(newest[0]["names"]) if newest else {}
    scope = set(names)
    if agent is not None:
        if agent not in agent_ids:
            raise StorageError(f'no agent named "{agent}" in {db.uri}; `agentos doctor` without a name checks '
                               f"everything.")
        scope = {n for n in names if n in ("agents", "messages", "memory_edits", "audit_log") or agent_ids[agent] in n}
    findings, states, messages = [], {}, None
    seen = _Seen()
    for name in sorted(names, key=lambda n: (_kind(n), n)):
        if name not in scope and not name.startswith(STATE_PREFIX):
            continue  # every agent's state is read: shared tables are judged against all of them
        scan_ = directory if name == "agents" and directory else scan(db.uri, name, db.storage_options)
        finding = Finding(name, [])
        if scan_.error:
            finding.damage.append(f"it cannot be opened ({scan_.error})")
            finding.lost.append("everything in it, unless you have a backup of the database folder")
            findings.append(finding)
            if name.startswith(STATE_PREFIX):
                seen.unread_states[name[len(STATE_PREFIX):]] = (finding, None)
            continue
        if scan_.lost_versions:
            finding.damage.append(f"its newest {scan_.lost_versions} version(s) are missing (their manifests are "
                                  f"gone); version {scan_.version} is the newest left")
        if scan_.skipped_manifests:
            finding.damage.append(f"its newest {len(scan_.skipped_manifests)} version(s) cannot be read "
                                  f"({', '.join(Path(p).name for p in scan_.skipped_manifests)}); version "
                                  f"{scan_.version} is the newest that can")
        for bad in scan_.bad:
            finding.damage.append(f"data file {bad.files[0] if bad.files else '?'} cannot be read ({bad.error})")
            finding.lost.append(f"{bad.rows} row(s) of fragment {bad.fragment_id}")
        recovered = finding.recovered
        if name == "agents":
            rows = _newest(scan_, "the agent directory", recovered, finding.lost, _earlier(db, scan_))
            seen.directory = finding
        elif name.startswith(STATE_PREFIX):
            rows = _newest(scan_, "the agent's state", recovered, finding.lost)
            if rows:
                states[rows[0]["agent_id"]] = json.loads(rows[0]["state"])
            elif finding.damage:  # lost with the newest version's data: rebuilt below, from all it can be
                earlier = _earlier(db, scan_)
                found = max(earlier, key=lambda r: int(r["rev"])) if earlier else None
                seen.unread_states[name[len(STATE_PREFIX):]] = (finding, found)
        elif name == "messages":
            committed = _committed_messages(states, {(r["agent_id"], int(r["seq"])) for r in _rows(scan_)})
            rows = _keyed(scan_, lambda r: (r["agent_id"], r["id"]), committed, "saved message(s)", recovered)
            messages = rows
        elif name == "memory_edits":
            rows = _keyed(scan_, lambda r: (r["agent_id"], r["rev"], r["label"], r["at"]),
                          lambda r: r["agent_id"] in states or r["agent_id"] in seen.unread_states,
                          "memory edit(s)", recovered)
            seen.edits = rows
        elif "id" in (scan_.good.schema.names if scan_.good is not None else []):
            rows = _keyed(scan_, lambda r: r["id"], lambda r: True, "row(s)", recovered)
        else:
            rows = _rows(scan_)
        if name.startswith(POINTS_PREFIX):
            seen.points[name[len(POINTS_PREFIX):]] = rows
        if name not in scope:
            continue
        if finding.damage or recovered:
            assert scan_.good is not None
            finding.rows = pa.Table.from_pylist(rows, schema=scan_.good.schema)
            findings.append(finding)
    for agent_id in agent_ids.values():  # named in the directory, its state table gone
        if state_table_name(agent_id) not in names and (agent is None or agent_ids[agent] == agent_id):
            seen.unread_states[agent_id] = (Finding(state_table_name(agent_id), ["it is missing"]), None)
            findings.append(seen.unread_states[agent_id][0])
    _rebuild_states(seen, states, messages or [])
    fresh = directory is None or (not agent_ids and (not newest or int(newest[0]["rev"]) == 0))  # lost, or made anew
    agent_ids = _relist_directory(seen, fresh, newest, agent_ids, states, findings)
    return Checkup(findings, _missing(agent_ids, states, messages, agent))


@dataclass
class _Seen:
    """What `examine` read that rebuilding needs: the directory's finding, restore points and edits by agent, and
    the states whose row is lost (with the row an older version held, if any)."""

    directory: Finding | None = None
    points: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    edits: list[dict[str, Any]] = field(default_factory=list)
    unread_states: dict[str, tuple[Finding, dict[str, Any] | None]] = field(default_factory=dict)


def _rebuild_states(seen: _Seen, states: dict[str, dict[str, Any]], messages: list[dict[str, Any]]) -> None:
    """Give every state whose row is lost a row rebuilt from what is left (see `rebuild.rebuild_state`)."""
    for agent_id, (finding, earlier) in seen.unread_states.items():
        rebuilt = rebuild_state(agent_id, earlier, "an older version of its state table",
                                seen.points.get(agent_id, []), messages, seen.edits)
        if rebuilt is None:
            finding.rows = None  # nothing to rebuild it from: the table is left as it is
            finding.lost.append("the agent's state: no version of its table and no restore point holds it")
            continue
        finding.rows = pa.Table.from_pylist([rebuilt.row], schema=STATE)
        finding.recovered.append("the agent's state, rebuilt from " + ", then ".join(rebuilt.sources))
        states[agent_id] = json.loads(rebuilt.row["state"])


def _relist_directory(seen: _Seen, fresh: bool, newest: list[dict[str, Any]], agent_ids: dict[str, str],
                      states: dict[str, dict[str, Any]], findings: list[Finding]) -> dict[str, str]:
    """When the directory is damaged, gone or made anew (by a command run after it was lost), name again every agent
    whose state is known but has no name there. (A healthy directory that lacks an agent is right: it was deleted.)"""
    damaged = seen.directory is not None and bool(seen.directory.damage or seen.directory.recovered)
    if not (damaged or (fresh and states)):
        return agent_ids
    names, lines = relist(agent_ids, states)
    if not lines:
        return agent_ids
    finding = seen.directory or Finding("agents", [])
    if not finding.damage:
        finding.damage.append("it names none of the agents whose state tables are here (it was lost, or made anew "
                              "after it was lost)")
    if finding not in findings:
        findings.insert(0, finding)
    rev = int(newest[0]["rev"]) + 1 if newest else 0
    finding.rows = pa.Table.from_pylist([{"id": ROW_ID, "rev": rev, "names": json.dumps(names)}], schema=AGENTS)
    finding.recovered.extend(lines)
    return names


def _missing(agent_ids: dict[str, str], states: dict[str, dict[str, Any]],
             messages: list[dict[str, Any]] | None, only: str | None) -> list[MissingMessages]:
    """Per agent: saved messages that are nowhere to be found (beyond those a repair already recorded as lost)."""
    if messages is None:
        return []
    seqs: dict[str, set[int]] = {}
    for row in messages:
        seqs.setdefault(row["agent_id"], set()).add(int(row["seq"]))
    notes = []
    for name, agent_id in sorted(agent_ids.items()):
        state = states.get(agent_id)
        if state is None or (only is not None and name != only):
            continue
        count = int(state.get("message_count", 0))
        forgotten = [range(int(r[0]), int(r[1])) for r in state.get("forgotten") or []]  # on request, not lost
        stored = seqs.get(agent_id, set())
        missing = tuple(s for s in range(count) if s not in stored and not any(s in r for r in forgotten))
        recorded = int(state.get("lost_messages", 0))
        if len(missing) > recorded:
            notes.append(MissingMessages(name, missing, count, recorded))
    return notes


def repair(store: Store, checkup: Checkup, home: Path) -> Checkup:
    """Rebuild every damaged table that can be rebuilt (a copy of it goes to `home/doctor-backups/` first), and
    record in each agent's state the messages that are lost, so loading stops warning about them."""
    db = store.db
    if "://" in db.uri:
        raise StorageError("doctor --repair works on a local database folder; copy the store to a local folder, "
                           "repair it there and copy it back.")
    try:
        rows = store.agent_rows()
    except StorageError:
        rows = {}  # a state that cannot be read is held by nobody: no process could open that agent
    for name, row in rows.items():
        if row.held_elsewhere():
            raise AgentBusyError(f'agent "{name}" is open in another process ({row.holder.describe() if row.holder else "?"}); '
                                 f"close it before repairing.")
    backup = home / "doctor-backups" / utc_now().strftime("%Y%m%dT%H%M%SZ")
    for finding in checkup.findings:
        if finding.rows is None:
            continue
        source = Path(db.uri) / f"{finding.table}.lance"
        backup.mkdir(parents=True, exist_ok=True)
        if source.exists():  # a table rebuilt where none was (a lost state or directory) has nothing to keep
            shutil.copytree(source, backup / source.name, dirs_exist_ok=True)
        db.forget(finding.table)
        _drop_folder_if_unopenable(db, finding.table, source)
        replace_table(db, finding.table, finding.rows.schema, finding.rows)
        db.forget(finding.table)
    _record_losses(store, checkup)
    checkup.repaired, checkup.backup = True, backup
    return checkup


def _drop_folder_if_unopenable(db: Any, name: str, folder: Path) -> None:
    """A table whose newest manifest cannot be read cannot be dropped through LanceDB: remove its folder (a copy
    is in the backup)."""
    try:
        db.connection.open_table(name).count_rows()
    except Exception:  # noqa: BLE001 - any failure: it is being rebuilt from what was read
        shutil.rmtree(folder, ignore_errors=True)


def _record_losses(store: Store, checkup: Checkup) -> None:
    """Write each agent's count of lost messages into its state (as a new revision), so a load warns only of new
    losses."""
    for gone in examine(store).missing:
        lease = Lease(agent_id="", name=gone.name)
        try:
            row = store.open_agent(gone.name, lease, action="doctor cannot record its lost messages")
        except AgentOSError as exc:
            checkup.notes.append(f'could not record the lost messages of agent "{gone.name}": {exc}')
            continue
        try:
            state = json.loads(row.state)
            state["lost_messages"] = len(gone.missing)
            present = set(store.existing_message_ids(row.agent_id, state.get("in_context_ids", [])))
            state["in_context_ids"] = [i for i in state.get("in_context_ids", []) if i in present]
            store.agents.write_state(lease, row.rev, row.rev + 1, json.dumps(state), f"doctor-{row.rev + 1}")
            checkup.notes.append(f'agent "{gone.name}": {len(gone.missing)} lost message(s) recorded; recall memory '
                                 f"holds {gone.remaining} of its {gone.count} saved messages.")
        except AgentOSError as exc:
            checkup.notes.append(f'could not record the lost messages of agent "{gone.name}": {exc}')
        finally:
            store.release(lease)
