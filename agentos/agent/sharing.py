"""Blocks shared by several agents of one database: share one, detach one, and which agents use each.

A shared block is a row of `shared_blocks` (see `storage.shared_blocks`); an agent uses it through a copy of it in its
own blocks that names the row (`Block.shared_id`). Only agents of one database can share a block: in `agentos serve`
each user's agents live in a database of their own, so a name of another user's agent is never found here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agentos.agent.agent import Agent
from agentos.agent.directory import not_found
from agentos.blocks import Block, MemoryEdit
from agentos.errors import AgentOSError
from agentos.storage.audit import change
from agentos.storage.shared_blocks import SharedRow, new_shared_id
from agentos.storage.store import Store


@dataclass(frozen=True)
class SharedUse:
    """A shared block and the agents that use it: (agent name, its label there)."""

    row: SharedRow
    agents: list[tuple[str, str]]


def _check_has(agent: Agent, label: str) -> None:
    labels = [b.label for b in agent.blocks]
    if label not in labels:
        raise AgentOSError(f'agent "{agent.name}" has no block "{label}"; its blocks are {", ".join(labels)}.')


def share_block(store: Store, label: str, source: str, target: str, *, replace: bool = False) -> SharedRow:
    """Share block `label` of agent `source` with agent `target`, which gets it (refused when it has a block of that
    label, unless `replace`). From then on an edit by either is seen by the other at its next step. Both agents are
    held while this runs (refused while another process has one open)."""
    if source == target:
        raise AgentOSError(f'give two different agents: "{source}" cannot share a block with itself.')
    giver = Agent.load(source, store=store, with_model=False)
    try:
        taker = Agent.load(target, store=store, with_model=False)
        try:
            _check_has(giver, label)
            block = giver.block(label)
            has = next((b for b in taker.blocks if b.label == label), None)
            if has is not None and block.shared_id is not None and has.shared_id == block.shared_id:
                return store.shared.get([block.shared_id])[block.shared_id]  # shared already
            if has is not None and not replace:
                raise AgentOSError(f'agent "{target}" has a block "{label}" of its own already; pass --replace to put '
                                   f"the shared one in its place (its value is kept in its edit log).")
            row = store.shared.get([block.shared_id]).get(block.shared_id) if block.shared_id else None
            if row is None:  # not shared yet (or its shared block is gone): the row starts from this agent's copy
                row = store.shared.create(SharedRow(id=new_shared_id(), label=label, value=block.value,
                                                    limit=block.limit, description=block.description,
                                                    updated_by=giver.id, updated_by_name=giver.name))
                giver.state.put_block(block.model_copy(update={"shared_id": row.id, "shared_rev": row.rev}))
                giver.state.note(change("core memory", target=label, detail=f"shared with agent {target}"))
                giver.save()
            taker.state.put_block(block.model_copy(update={"value": row.value, "limit": row.limit,
                                                          "description": row.description, "shared_id": row.id,
                                                          "shared_rev": row.rev}))
            taker.state.note(change("core memory", target=label, detail=f"shared by agent {source}"))
            taker.save()
            return row
        finally:
            taker.close()
    finally:
        giver.close()


def detach_block(store: Store, label: str, name: str) -> bool:
    """Stop agent `name` using shared block `label`: it keeps a copy of its own, as it is now. True when no agent uses
    the shared block any more, which is then deleted."""
    agent = Agent.load(name, store=store, with_model=False)
    try:
        _check_has(agent, label)
        block = agent.block(label)
        if block.shared_id is None:
            raise AgentOSError(f'block "{label}" of agent "{name}" is not shared; nothing to detach.')
        agent.state.put_block(block.model_copy(update={"shared_id": None, "shared_rev": 0}))
        agent.state.note(change("core memory", target=label, detail="detached from its shared block"))
        agent.save()
    finally:
        agent.close()
    if any(use.row.id == block.shared_id and use.agents for use in shared_uses(store)):
        return False
    store.shared.remove(block.shared_id)
    return True


def shared_uses(store: Store, name: str | None = None) -> list[SharedUse]:
    """Every shared block of the database and the agents that use it (read from their saved states); with `name`,
    only those that agent uses."""
    if name is not None and store.agent_row(name) is None:
        raise not_found(name, store)
    users: dict[str, list[tuple[str, str]]] = {}
    for agent_name, row in store.agent_rows().items():
        for block in json.loads(row.state).get("blocks", []):
            if block.get("shared_id"):
                users.setdefault(block["shared_id"], []).append((agent_name, block["label"]))
    uses = [SharedUse(row, sorted(users.get(row.id, []))) for row in store.shared.all()]
    return [u for u in uses if name is None or any(n == name for n, _ in u.agents)]


def take_in_shared(agent: Agent) -> list[MemoryEdit]:
    """Take in now what other agents changed in the blocks `agent` shares with them (a turn does this before each
    model call), and save; the edits it saw."""
    seen = agent.state.refresh_shared()
    agent.save()
    return seen


def link_imported(store: Store, blocks: list[Block]) -> tuple[list[Block], list[str], list[str]]:
    """Imported blocks with their shared ones linked up in this database: a block whose shared block is here (the
    agents it was shared with came too) is linked to it again and shows its value; one whose shared block is not here
    makes it, with its own id and value, so the agents imported after it are linked to it. Returns the blocks, notes
    on what was done, and the ids of the shared blocks made (to remove if the import fails)."""
    ids = [b.shared_id for b in blocks if b.shared_id is not None]
    rows = store.shared.get(ids) if ids else {}
    linked, notes, made = [], [], []
    for block in blocks:
        if block.shared_id is None:
            linked.append(block)
            continue
        row = rows.get(block.shared_id)
        if row is None:
            row = store.shared.create(SharedRow(id=block.shared_id, label=block.label, value=block.value,
                                                limit=block.limit, description=block.description, rev=block.shared_rev))
            made.append(row.id)
            notes.append(f'block "{block.label}" is shared ({row.id}); agents imported later that share it are linked '
                         f"to it")
        else:
            notes.append(f'block "{block.label}" is linked again to the shared block {row.id} already here')
        linked.append(block.model_copy(update={"value": row.value, "limit": row.limit, "description": row.description,
                                               "shared_rev": row.rev}))
    return linked, notes, made
