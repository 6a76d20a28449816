"""The agent directory of a data home: its store, listing, creating, opening, deleting and renaming agents.

Opening reads an agent's saved state (taking its lease for a writer) and says what damage it found; the session
built on it is the agent's from then on.
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentos.agent.prompts import PromptRenderer
from agentos.agent.roles import resolve_spec
from agentos.agent.state import AgentSettings, AgentState, validate_name
from agentos.blocks import Block, CoreMemory
from agentos.config import database_uri, default_model_and_source, storage_options
from agentos.errors import AgentNotFoundError, AgentOSError, AuthenticationError, ConfigError
from agentos.memory.tiers import delete_tiers
from agentos.messages import Message
from agentos.providers.base import Provider
from agentos.storage import Store
from agentos.storage.lease import Lease

PERSONA_DESCRIPTION = "Who you are: your personality, your role and how you speak."
HUMAN_DESCRIPTION = "What you know about the user: name, preferences, circumstances. Keep it current."

_stores: dict[str, Store] = {}


def open_store(home: str | Path | None = None) -> Store:
    """The store of a data home (default: the configured one), shared within the process."""
    where = Path(home) if home is not None else None
    uri = database_uri(where)
    if uri not in _stores:
        _stores[uri] = Store(uri, storage_options(where))
        _at_exit(_close_at_exit, _stores[uri])
    return _stores[uri]


def is_empty(store: Store) -> bool:
    """Whether the store's database does not exist yet (a local data home before its first agent): then no agent
    exists, and reading must not create it. A remote database is taken to exist."""
    return "://" not in store.uri and not Path(store.uri).exists()


def store_of(store: Store | None, home: str | Path | None) -> Store:
    """The store given, else the data home's."""
    return store if store is not None else open_store(home)


def _at_exit(function: Any, *args: Any) -> None:
    """Run `function` when the process ends, while thread pools still accept work.

    Plain `atexit` runs after concurrent.futures has shut its executors down, and LanceDB
    needs them to finish a write; threading's own exit hook runs before that.
    """
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - every supported Python has it
        atexit.register(function, *args)
    else:
        register(function, *args)


def _close_at_exit(store: Store) -> None:
    """Give back this process's leases when it ends, so another process can open its agents at once."""
    try:
        store.close()
    except AgentOSError as exc:
        print(f"agentos: could not release the agents this process held: {exc}", file=sys.stderr)


NAMES_SHOWN = 20  # an unknown name's error lists at most this many agents


def not_found(name: str, store: Store) -> AgentNotFoundError:
    """The error for an agent the directory does not name, listing the ones it does."""
    names = [] if is_empty(store) else sorted(store.agents.directory.names())  # names only: no state is read
    shown = names[:NAMES_SHOWN] + ([f"and {len(names) - NAMES_SHOWN} more (agentos list)"]
                                   if len(names) > NAMES_SHOWN else [])
    existing = ", ".join(shown) if names else "none yet"
    lost = 0 if is_empty(store) else store.lost_versions("agents")
    if lost:
        return AgentNotFoundError(
            f'no agent named "{name}" in the agent directory as it reads now, but its newest {lost} version(s) are '
            f"missing and may name it. Existing agents: {existing}. Run `agentos doctor --repair` to restore them.")
    return AgentNotFoundError(
        f'no agent named "{name}". Existing agents: {existing}. Create one with: agentos new {name}'
    )


def list_agents(home: str | Path | None = None, store: Store | None = None) -> list[AgentState]:
    """Every saved agent's state, most recently active first (read-only: works while agents are in use)."""
    store = store_of(store, home)
    if is_empty(store):
        return []
    states = [AgentState.model_validate_json(r.state).model_copy(update={"name": name})
              for name, r in store.agent_rows().items()]  # the directory names an agent (a rename changes only it)
    return sorted(states, key=lambda s: s.last_active_at, reverse=True)


def new_state(name: str, model: str | None, provider: Provider | None, persona: str | None, human: str | None,
              blocks: Iterable[Block], settings: AgentSettings | None,
              home: str | Path | None, *, with_model: bool = True) -> tuple[AgentState, Provider | None]:
    """A new agent's state and its model: the spec given, else the configured default (resolved by the roles' rule),
    unless `provider` stands in; default persona and human blocks unless given. Without `with_model` a model
    whose API key is missing is no error (the spec is still checked): the key is needed only to talk."""
    validate_name(name)
    settings = settings or AgentSettings()
    prompts = PromptRenderer(settings.prompt_dir)
    if provider is None:
        source = None
        if not model:
            model, source = default_model_and_source(Path(home) if home else None)
        try:
            provider = resolve_spec(model, settings, main=True)
        except AuthenticationError:
            if with_model:
                raise
        except ConfigError as exc:
            if source is None:
                raise
            raise ConfigError(f"the model spec from {source} is not valid: {exc}") from exc
    all_blocks = [
        Block(label="persona", value=persona if persona is not None else prompts.default_block("persona"),
              description=PERSONA_DESCRIPTION),
        Block(label="human", value=human if human is not None else prompts.default_block("human"),
              description=HUMAN_DESCRIPTION),
        *blocks,
    ]
    CoreMemory(all_blocks)  # rejects duplicate labels before anything is saved
    spec = model or (f"{provider.name}/{provider.model}" if provider is not None else "")
    state = AgentState(name=name, model=spec, blocks=all_blocks, settings=settings)
    return state, provider


@dataclass
class Opened:
    """A saved agent as opening read it: its state, the in-context messages found, and the lease taken."""

    state: AgentState
    messages: list[Message]
    lease: Lease | None


def open_saved(name: str, store: Store, *, read_only: bool) -> Opened:
    """Read a saved agent, taking its lease unless `read_only` (AgentBusyError names the process that holds it).
    The caller releases the lease if it cannot go on."""
    validate_name(name)
    if is_empty(store):
        raise not_found(name, store)
    lease = None if read_only else Lease(agent_id="", name=name)
    try:
        row = store.agent_row(name) if lease is None else store.open_agent(
            name, lease, action="it cannot be opened for writing",
            hint="Finish that session first (read-only commands such as agentos show keep working).")
    except KeyError:
        row = None
    if row is None:
        raise not_found(name, store)
    try:
        state = AgentState.model_validate_json(row.state)
        state.rev, state.name = row.rev, name  # the directory names an agent (a rename changes only it)
        store.damage.clear()  # what this load's reads find, not what earlier ones did
        messages = store.get_messages(state.id, state.in_context_ids)
        if state.message_count:  # recall memory is counted from what is stored (see `AgentState.recall_count`)
            stored = store.count_messages(state.id, below=state.message_count)
            forgotten = state.forgotten_below(state.message_count)
            state.unreadable_messages = max(0, state.message_count - state.lost_messages - forgotten - stored)
        return Opened(state, messages, lease)
    except BaseException:
        if lease is not None:
            store.release(lease)
        raise


def damage(store: Store, state: AgentState, missing_in_context: int, *, writer: bool,
           tables: dict[str, str] | None = None) -> list[str]:
    """What opening found damaged: tables that could only be read in part, those of `tables` ({name: what it holds},
    the tables of the agent's tiers and its restore points) and the memory edit log whose files a look finds damaged
    (their rows are not read), and saved messages that are gone."""
    store.check_tables({**(tables or {}), "memory_edits": "the memory edit log"})
    found = list(store.damage.values())
    count, name = state.message_count, state.name
    if not writer and store.uncommitted(state.id, count):  # a writer would discard them: see `Session.repair`
        newer = store.lost_state(state.id, state.rev)
        if newer is not None:
            found.append(f'agent "{name}": its newest saved state (revision {newer}) is missing from its '
                         f"table; this is revision {state.rev}. Run `agentos doctor {name} --repair` "
                         f"to restore it.")
    missing = state.unreadable_messages  # counted on opening
    if missing > 0 or missing_in_context > 0:
        where = f", {missing_in_context} of them in its context" if missing_in_context > 0 else ""
        found.append(f'agent "{name}": {max(missing, missing_in_context)} of its {count} saved messages are '
                     f"missing from storage{where}. Run `agentos doctor {name}` to see what can be recovered, "
                     f"and `agentos doctor {name} --repair` to recover it.")
    return found


def delete_agent(name: str, store: Store, *, force: bool = False) -> None:
    """Delete an agent and everything it remembers (see `Agent.delete`)."""
    validate_name(name)
    row = None if is_empty(store) else store.agent_row(name)
    if row is None:
        raise not_found(name, store)
    lease = None
    if not force:
        lease = Lease(agent_id=row.agent_id, name=name)
        row = store.open_agent(name, lease, action="it cannot be deleted",
                               hint=f"Finish that session first, or delete it anyway with: agentos delete {name} --force.")
    store.delete_agent(row.agent_id, name, lease)
    delete_tiers(store.db, row.agent_id)


def rename_agents(names: dict[str, str], store: Store) -> None:
    """Rename several agents at once, {old: new}, so two can swap names; each must be free to open."""
    leases: list[Lease] = []
    try:
        moves = {}
        for old, new in names.items():
            validate_name(old)
            validate_name(new)
            if is_empty(store) or store.agent_row(old) is None:
                raise not_found(old, store)
            lease = Lease(agent_id="", name=old)
            row = store.open_agent(old, lease, action="it cannot be renamed", hint="Finish that session first.")
            leases.append(lease)
            moves[row.agent_id] = (old, new)
        store.rename_agents(moves)
    finally:
        for lease in leases:
            store.release(lease)
