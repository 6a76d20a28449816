"""The Agent: create, open, take turns, and save after every step.

An Agent opened for writing holds its agent's lease: no other process can write it meanwhile,
and each save is a compare-and-set on the revision it started from. Opened read-only it never
writes, needs no model, and works while another process holds the agent.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agentos.agent.history import RestorePoint, RestorePoints, Rewound, point_row
from agentos.agent.memory_access import AgentMemory
from agentos.agent.paging import Pager, PagerView
from agentos.agent.prompts import PromptRenderer
from agentos.agent.state import AgentSettings, AgentState, validate_name
from agentos.agent.turn_state import Compaction, TurnState
from agentos.blocks import Block, CoreMemory, MemoryEdit
from agentos.config import configured_window
from agentos.embedders.resolve import resolve_embedder
from agentos.errors import (
    AgentDeletedError,
    AgentNotFoundError,
    AgentOSError,
    ConfigError,
    DamageWarning,
    LeaseLostError,
    MemoryEditError,
    ReadOnlyAgentError,
    WindowWarning,
)
from agentos.events import Event, MessagesEvicted, Notice, StepSaved
from agentos.memory.tier import MemoryStats, Progress
from agentos.memory.tiers import Tiers, delete_tiers
from agentos.messages import Message, Usage, utc_now
from agentos.providers.base import ModelRequest, Provider
from agentos.providers.models import LOCAL_FAMILIES, context_window_for
from agentos.storage import Store
from agentos.storage.lease import Lease
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool
from agentos.tools.memory_tools import core_memory_tools
from agentos.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from agentos.agent.consolidator import ConsolidationReport, Consolidator

PERSONA_DESCRIPTION = "Who you are: your personality, your role and how you speak."
HUMAN_DESCRIPTION = "What you know about the user: name, preferences, circumstances. Keep it current."
RECHECK_LEASE_SECONDS = 2.0  # a turn starting later than this after the last write first re-reads the lease

T = TypeVar("T")

_stores: dict[str, Store] = {}
MIN_LOCAL_OUTPUT_CAP = 256  # a local model's default output cap never goes below this, however small its window


def open_store(home: str | Path | None = None) -> Store:
    """The store of a data home (default: the configured one), shared within the process."""
    from agentos.config import database_uri, storage_options

    where = Path(home) if home is not None else None
    uri = database_uri(where)
    if uri not in _stores:
        _stores[uri] = Store(uri, storage_options(where))
        _at_exit(_close_at_exit, _stores[uri])
    return _stores[uri]


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


def _store(store: Store | None, home: str | Path | None) -> Store:
    return store if store is not None else open_store(home)


def _not_found(name: str, store: Store) -> AgentNotFoundError:
    names = sorted(store.agent_rows())
    existing = ", ".join(names) if names else "none yet"
    lost = store.lost_versions("agents")
    if lost:
        return AgentNotFoundError(
            f'no agent named "{name}" in the agent directory as it reads now, but its newest {lost} version(s) are '
            f"missing and may name it. Existing agents: {existing}. Run `agentos doctor --repair` to restore them.")
    return AgentNotFoundError(
        f'no agent named "{name}". Existing agents: {existing}. Create one with: agentos new {name}'
    )


def context_window(settings: AgentSettings, model: str, provider: Provider | None) -> int:
    """The agent's context window: its setting, else the config file's for its model, else what its provider
    serves, else the model catalogue's."""
    return (settings.context_window or configured_window(model) or (provider.context_window if provider else 0)
            or context_window_for(model))


def provider_options(settings: AgentSettings) -> dict[str, Any]:
    """What an agent's settings ask of its provider: the timeouts, when set."""
    if settings.read_timeout_s is None and settings.connect_timeout_s is None:
        return {}
    from agentos.providers.sdk_client import default_timeout

    return {"timeout": default_timeout(settings.read_timeout_s, settings.connect_timeout_s)}


def list_agents(home: str | Path | None = None, store: Store | None = None) -> list[AgentState]:
    """Every saved agent's state, most recently active first (read-only: works while agents are in use)."""
    store = _store(store, home)
    states = [AgentState.model_validate_json(r.state).model_copy(update={"name": name})
              for name, r in store.agent_rows().items()]  # the directory names an agent (a rename changes only it)
    return sorted(states, key=lambda s: s.last_active_at, reverse=True)


class Agent:
    """A persistent agent: core memory, in-context messages, memory tiers, tools and a model."""

    def __init__(
        self,
        owner: TurnState,
        store: Store,
        provider: Provider | None,
        tools: Iterable[Tool] = (),
        lease: Lease | None = None,
    ) -> None:
        self._owner = owner
        self.store = store
        self._provider = provider
        self._lease = lease
        self.warnings: list[str] = []  # damage found when it was loaded (also issued as DamageWarning)
        self._extra_tools = list(tools)
        self.prompts = PromptRenderer(owner.settings.prompt_dir, system_prompt=owner.settings.system_prompt)
        self.window = context_window(owner.settings, owner.model, provider)
        self.pager = Pager(owner.model, owner.settings.pager, self.prompts, self.window, provider)
        self.last_usage: Usage | None = None
        self.history = RestorePoints(store.db, owner.id)
        self.fact_provider: Provider | None = None  # the model consolidation asks (default: see `consolidator`)
        self.search_provider: Provider | None = None  # the model search's rewrite and rerank ask (see search_model)
        self._resolved_search: tuple[str, Provider] | None = None  # (spec, provider) when search_provider is unset
        self._consolidator: Consolidator | None = None
        self._saved_messages = owner.message_count  # messages committed: all that consolidation may read
        self._open_tiers()

    def _open_tiers(self) -> None:
        """(Re)build the tiers and the tool list; a consolidator of the old tiers is replaced by one of the new."""
        self.tiers = Tiers(self.store.db, self.id, self._owner.settings.embedder, writable=not self.read_only,
                           check_writable=self.check_writable, on_write=self.store.touched,
                           settings=lambda: self._owner.settings, model=self.search_model)
        self.tools = ToolRegistry([*core_memory_tools(), *self.tiers.tools(), *self._extra_tools],
                                  output_limit=self._owner.settings.tool_output_limit)
        self._owner.set_tool_names([t.name for t in self.tools])
        old, self._consolidator = getattr(self, "_consolidator", None), None
        if old is not None:  # whoever listened goes on listening, and hears what it has not yet taken
            old.stop()
            self.consolidator.adopt(old)

    # -- life cycle --------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        name: str,
        *,
        model: str | None = None,
        provider: Provider | None = None,
        persona: str | None = None,
        human: str | None = None,
        blocks: Iterable[Block] = (),
        tools: Iterable[Tool] = (),
        settings: AgentSettings | None = None,
        home: str | Path | None = None,
        store: Store | None = None,
    ) -> Agent:
        """Create and save a new agent, held for writing by the returned object.

        `provider` overrides the model spec (tests, demos)."""
        from agentos.providers.registry import resolve_model

        validate_name(name)
        store = _store(store, home)
        settings = settings or AgentSettings()
        prompts = PromptRenderer(settings.prompt_dir)
        if provider is None:
            from agentos.config import default_model_and_source

            source = None
            if not model:
                model, source = default_model_and_source(Path(home) if home else None)
            try:
                provider = resolve_model(model, context_window=settings.context_window or configured_window(model),
                                         **provider_options(settings))
            except ConfigError as exc:
                if source is None:
                    raise
                raise ConfigError(f"the model spec from {source} is not valid: {exc}") from exc
        model = model or f"{provider.name}/{provider.model}"
        all_blocks = [
            Block(label="persona", value=persona if persona is not None else prompts.default_block("persona"),
                  description=PERSONA_DESCRIPTION),
            Block(label="human", value=human if human is not None else prompts.default_block("human"),
                  description=HUMAN_DESCRIPTION),
            *blocks,
        ]
        CoreMemory(all_blocks)  # rejects duplicate labels before anything is saved
        state = AgentState(name=name, model=model, blocks=all_blocks, settings=settings)
        lease = Lease(agent_id=state.id, name=name)
        agent = cls(TurnState(state, []), store, provider, tools, lease)
        store.create_agent(name, state.id, agent._owner.snapshot().model_dump_json(), lease)
        agent.add_restore_point("(created)")
        agent._warn_about_window()
        return agent

    @classmethod
    def load(
        cls,
        name: str,
        *,
        provider: Provider | None = None,
        tools: Iterable[Tool] = (),
        home: str | Path | None = None,
        store: Store | None = None,
        read_only: bool = False,
        with_model: bool = True,
    ) -> Agent:
        """Open a saved agent with exactly the context it had.

        For writing (the default) it takes the agent's lease: AgentBusyError names the process that
        holds it. `read_only=True` takes no lease. Without `provider`, the agent's model is set up,
        unless it is read-only or `with_model=False` (to change its memory without calling a model)."""
        from agentos.agent.context import repair_context
        from agentos.providers.registry import resolve_model

        validate_name(name)
        store = _store(store, home)
        lease = None if read_only else Lease(agent_id="", name=name)
        try:
            row = store.agent_row(name) if lease is None else store.open_agent(
                name, lease, action="it cannot be opened for writing",
                hint="Finish that session first (read-only commands such as agentos show keep working).")
        except KeyError:
            row = None
        if row is None:
            raise _not_found(name, store)
        try:
            state = AgentState.model_validate_json(row.state)
            state.rev, state.name = row.rev, name  # the directory names an agent (a rename changes only it)
            store.damage.clear()  # what this load's reads find, not what earlier ones did
            messages = store.get_messages(state.id, state.in_context_ids)
            if provider is None and with_model and not read_only:
                provider = resolve_model(state.model,
                                         context_window=state.settings.context_window or configured_window(state.model),
                                         **provider_options(state.settings))
            agent = cls(TurnState(state, repair_context(messages)), store, provider, tools, lease)
            agent.warnings = agent._damage(len(state.in_context_ids) - len(messages), state.lost_messages)
            if lease is not None:
                agent._repair(state.message_count, state.unlogged_edits)
                agent._saved_messages = agent._owner.message_count
                if agent.settings.facts.mode != "off" and provider is not None:  # opened to talk, not to edit
                    agent.consolidator.opened(agent._saved_messages)
        except BaseException:
            if lease is not None:  # not left holding an agent this process could not open
                store.release(lease)
            raise
        for text in agent.warnings:
            warnings.warn(DamageWarning(text), stacklevel=2)
        agent._warn_about_window()
        return agent

    def _warn_about_window(self) -> None:
        note = getattr(self._provider, "window_warning", "") or getattr(self._provider, "window_advice", "")
        if note:
            warnings.warn(WindowWarning(note), stacklevel=3)

    def _damage(self, missing_in_context: int, lost: int) -> list[str]:
        """What loading found damaged: tables that could only be read in part, and saved messages that are gone."""
        found = list(self.store.damage.values())
        count = self._owner.message_count
        if self._lease is None and self.store.uncommitted(self.id, count):  # a writer would refuse: see `_repair`
            newer = self.store.lost_state(self.id, self._owner.rev)
            if newer is not None:
                found.append(f'agent "{self.name}": its newest saved state (revision {newer}) is missing from its '
                             f"table; this is revision {self._owner.rev}. Run `agentos doctor {self.name} --repair` "
                             f"to restore it.")
        missing = count - lost - self.store.count_messages(self.id)
        if missing > 0 or missing_in_context > 0:
            where = f", {missing_in_context} of them in its context" if missing_in_context > 0 else ""
            found.append(f'agent "{self.name}": {max(missing, missing_in_context)} of its {count} saved messages are '
                         f"missing from storage{where}. Run `agentos doctor {self.name}` to see what can be recovered, "
                         f"and `agentos doctor {self.name} --repair` to recover it.")
        return found

    @staticmethod
    def delete(name: str, home: str | Path | None = None, store: Store | None = None, *, force: bool = False) -> None:
        """Delete an agent and everything it remembers. An agent another process holds is refused unless `force`;
        that process then stops saving, and never writes the agent back."""
        validate_name(name)
        store = _store(store, home)
        row = store.agent_row(name)
        if row is None:
            raise _not_found(name, store)
        lease = None
        if not force:
            lease = Lease(agent_id=row.agent_id, name=name)
            row = store.open_agent(name, lease, action="it cannot be deleted",
                                   hint=f"Finish that session first, or delete it anyway with: agentos delete {name} --force")
        store.delete_agent(row.agent_id, name, lease)
        delete_tiers(store.db, row.agent_id)

    @staticmethod
    def rename(old: str, new: str, home: str | Path | None = None, store: Store | None = None) -> None:
        """Give agent `old` the name `new` (refused while another process has it open, or when `new` is taken)."""
        Agent.rename_many({old: new}, home, store)

    @staticmethod
    def rename_many(names: dict[str, str], home: str | Path | None = None, store: Store | None = None) -> None:
        """Rename several agents at once, {old: new}, so two can swap names; each must be free to open."""
        store = _store(store, home)
        leases: list[Lease] = []
        try:
            moves = {}
            for old, new in names.items():
                validate_name(old)
                validate_name(new)
                if store.agent_row(old) is None:
                    raise _not_found(old, store)
                lease = Lease(agent_id="", name=old)
                row = store.open_agent(old, lease, action="it cannot be renamed", hint="Finish that session first.")
                leases.append(lease)
                moves[row.agent_id] = (old, new)
            store.rename_agents(moves)
        finally:
            for lease in leases:
                store.release(lease)

    # -- properties --------------------------------------------------------------------------

    @property
    def state(self) -> TurnState:
        """The agent's state (its one owner): context, summary, blocks, counters. Read it; turns change it."""
        return self._owner

    @property
    def name(self) -> str:
        return self._owner.name

    @property
    def id(self) -> str:
        return self._owner.id

    @property
    def model(self) -> str:
        return self._owner.model

    @property
    def settings(self) -> AgentSettings:
        return self._owner.settings

    @property
    def context(self) -> tuple[Message, ...]:
        return self._owner.context

    @property
    def blocks(self) -> list[Block]:
        """Copies of the core memory blocks, in display order."""
        return self._owner.blocks()

    def block(self, label: str) -> Block:
        return self._owner.block(label)

    @property
    def read_only(self) -> bool:
        return self._lease is None

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            raise ConfigError(f'agent "{self.name}" was opened without a model, so it cannot take turns.')
        return self._provider

    @provider.setter
    def provider(self, provider: Provider) -> None:
        """Talk to another model from the next call on (the window stays the agent's)."""
        self._provider = provider
        self.pager.provider = provider

    def update_settings(self, **changes: Any) -> AgentSettings:
        """Change settings (validated; saved with the next step), e.g. `update_settings(context_window=32_000)`."""
        if "facts" in changes:
            self._stop_consolidating()
        settings = self._owner.update_settings(**changes)
        if "facts" in changes:
            self._open_tiers()  # fact_search is offered once facts are on; a new consolidator with the new settings
        if {"prompt_dir", "system_prompt"} & changes.keys():
            self.prompts = PromptRenderer(settings.prompt_dir, system_prompt=settings.system_prompt)
        self.window = context_window(settings, self.model, self._provider)
        self.pager = Pager(self.model, settings.pager, self.prompts, self.window, self._provider)
        self.tools.output_limit = settings.tool_output_limit
        return settings

    def tier(self, kind: type[T]) -> T:
        """The agent's memory tier of this kind, for example `tier(ArchivalTier)`."""
        return self.tiers.get(kind)

    def memory_edits(self) -> list[MemoryEdit]:
        """The core memory edit log, oldest first: every saved edit (the log is written a step behind the state)."""
        logged = self.store.memory_edits(self.id)
        seen = {(e.rev, e.label, e.at) for e in logged}
        return logged + [e for e in self._owner.unlogged() if (e.rev, e.label, e.at) not in seen]

    # -- the turn ----------------------------------------------------------------------------

    def turn(self, text: str) -> Generator[Event, None, None]:
        """Take one user message and yield events until the reply (or a failure).

        Close the generator to cancel: the agent is left consistent and saved."""
        from agentos.agent.loop import run_turn

        return self._then_consolidate(run_turn(self, text))

    def _then_consolidate(self, events: Generator[Event, None, None]) -> Generator[Event, None, None]:
        try:
            yield from events
        finally:
            if self._lease is not None and self.settings.facts.mode != "off":
                self.consolidator.turn_ended(self._saved_messages)

    # -- facts -------------------------------------------------------------------------------

    @property
    def consolidator(self) -> Consolidator:
        """What turns this agent's conversation into facts, in the background or (`consolidate`) now."""
        if self._consolidator is None:
            from agentos.agent.consolidator import for_agent

            self._consolidator = for_agent(self)
        return self._consolidator

    def fact_model(self) -> Provider:
        """The model consolidation asks: `fact_provider` if set, the facts' own model spec, or a new connection to
        the agent's model (its own, so that background calls share nothing with the turn's)."""
        from agentos.providers.registry import resolve_model

        if self.fact_provider is None:
            spec = self.settings.facts.model or self.model
            self.fact_provider = resolve_model(spec, context_window=configured_window(spec),
                                               **provider_options(self.settings))
        return self.fact_provider

    def search_model(self) -> Provider:
        """The model the rewrite and rerank search paths ask: `search_provider` if set, the search settings' model
        spec, or a new connection to the agent's model (its own, so that a search shares nothing with the turn)."""
        from agentos.providers.registry import resolve_model

        if self.search_provider is not None:
            return self.search_provider
        spec = self.settings.search.model or self.model
        if self._resolved_search is None or self._resolved_search[0] != spec:  # resolved again when settings change
            self._resolved_search = spec, resolve_model(spec, context_window=configured_window(spec),
                                                        **provider_options(self.settings))
        return self._resolved_search[1]

    def consolidate(self, progress: Callable[[int, int], None] | None = None) -> ConsolidationReport:
        """Consolidate every saved message not yet consolidated, now (the background thread waits)."""
        self.check_writable()
        self.save()
        self._stop_consolidating()
        return self.consolidator.run(self._saved_messages, progress)

    def _stop_consolidating(self) -> None:
        if self._consolidator is not None:
            self._consolidator.stop()

    def build_request(self, pending: Sequence[Message] = ()) -> ModelRequest:
        """The request for the next model call: system prompt, summary, in-context messages, tools; `pending`
        messages are about to join the context and are in the request as if they had."""
        owner = self._owner
        stats = MemoryStats(message_count=owner.message_count + len(pending), hidden_count=owner.hidden_count)
        dynamic = self.prompts.dynamic(owner.blocks_view(), now=utc_now(), last_edit=owner.last_memory_edit_at,
                                       tier_lines=self.tiers.metadata(stats))
        summary = self.prompts.summary_message(owner.summary, owner.hidden_count)
        return ModelRequest(
            system_static=self.prompts.static(),
            system_dynamic=dynamic,
            messages=([summary] if summary else []) + [*owner.context, *pending],
            tools=list(self.tools),
            max_output_tokens=self.output_cap(),
        )

    def output_cap(self) -> int | None:
        """The most tokens one model call may write: the agent's setting; for a local server (where a rambling
        small model otherwise writes until the server's window runs out) a quarter of the window, within the
        model's limit; else None (the provider's own default)."""
        setting = self._owner.settings.max_output_tokens
        if setting or getattr(self._provider, "name", None) not in LOCAL_FAMILIES:
            return setting
        limit = getattr(getattr(self._provider, "info", None), "max_output_tokens", None) or self.window
        return max(MIN_LOCAL_OUTPUT_CAP, min(limit, self.window // 4))

    def pager_view(self, request: ModelRequest | None = None) -> PagerView:
        owner = self._owner
        return PagerView(request=request or self.build_request(), context=owner.context, summary=owner.summary,
                         message_count=owner.message_count, alerted=owner.alerted, calibration=owner.calibration)

    @property
    def window_source(self) -> str:
        """Where the context window figure comes from: the agent's setting, the config file, the server, or the
        model catalogue."""
        if self._owner.settings.context_window:
            return "this agent's setting"
        if configured_window(self.model):
            return "context_windows in the config file"
        return getattr(self._provider, "window_source", None) or "model catalogue"

    def reads_text_calls(self) -> bool:
        """Whether a reply that is a tool call written as text runs as that call (see `AgentSettings.text_tool_calls`)."""
        setting = self._owner.settings.text_tool_calls
        if setting is not None:
            return setting
        return getattr(self._provider, "name", None) in LOCAL_FAMILIES

    def tool_context(self, call_id: str | None) -> ToolContext:
        """What a tool call of this agent runs with: its memory, recording edits under the call's id."""
        return ToolContext(memory=AgentMemory(self._owner, self.tiers, call_id, self._check_fixed_share),
                           call_id=call_id)

    def _check_fixed_share(self) -> None:
        """Refuse (by raising) blocks that would crowd the conversation out of the window: see `fixed_over_share`."""
        why = self.pager.fixed_over_share(self.build_request(), self._owner.calibration)
        if why:
            raise MemoryEditError(f"this edit was not made: {why}. Shorten a memory block, or keep the details in "
                                  f"archival memory instead.")

    def set_block(self, label: str, value: str) -> MemoryEdit:
        """Set a block's whole value by hand, logged as the user's edit, and save (limits and window still hold)."""
        self.check_writable()
        self._owner.set_block(label, value, self._check_fixed_share)
        edit = self._owner.take_edit_reports()[-1]
        self.save()
        return edit

    def compact(self) -> list[Event]:
        """Summarize and evict every message the pager may evict now, and save."""
        self.check_writable()
        result = self.pager.compact(self.pager_view(), "manual")
        if isinstance(result, Notice):
            return [result]
        self._owner.apply(result)
        saved = self.save()
        return [result.event, *([saved] if saved else [])]

    def apply(self, compaction: Compaction) -> MessagesEvicted:
        """Apply a compaction the pager planned (the loop does this before a call)."""
        self._owner.apply(compaction)
        return compaction.event

    def context_breakdown(self) -> dict[str, Any]:
        """Tokens per part of the next request (system, memory, tools, summary, messages) and the window."""
        return self.pager.breakdown(self.pager_view(), self.last_usage.input_tokens if self.last_usage else None)

    def system_prompt(self) -> str:
        """The full system prompt the model would see now."""
        return self.build_request().system

    # -- history and memory ------------------------------------------------------------------

    def add_history(self, messages: Iterable[Message], in_context: int = 0) -> StepSaved | None:
        """Save messages to recall in one step; the last `in_context` of them also join the context
        (imports, evaluations, benchmarks)."""
        self.check_writable()
        self._owner.add_history(list(messages), in_context)
        return self.save()

    def restore_points(self) -> list[RestorePoint]:
        """The points this agent can be rewound to, oldest first: 0 is its creation, then the end of each turn."""
        return self.history.list(self._owner.rev)

    def add_restore_point(self, label: str) -> None:
        """Save, and keep the saved state as a point to rewind to (turns add theirs as they end)."""
        self.save()
        self.check_writable()
        self.history.add(point_row(self._owner.snapshot(), self._owner.rev, utc_now(), label))

    def rewind(self, turn: int) -> Rewound:
        """Go back to restore point `turn`: blocks, context, summary and counters as they were then.

        The messages and archival passages stored since are removed (passages deleted since do not come back); keep
        a copy first if any of it may be wanted again (`agentos rewind` does, and its `--undo` swaps the copy back).
        Cut short, it leaves an agent that opens: the points after `turn` go first, then the state is saved, and the
        next writer to open the agent discards any later messages still there."""
        self.check_writable()
        self.save()
        self._stop_consolidating()
        points = self.restore_points()
        point = next((p for p in points if p.turn == turn), None)
        if point is None:
            raise AgentOSError(f'agent "{self.name}" has no restore point {turn}: its points are 0 to '
                               f"{len(points) - 1}. See them with: agentos history {self.name}")
        state = self.history.state(point, self._owner.rev)
        if state.settings.embedder != self._owner.settings.embedder:
            raise AgentOSError(f"restore point {turn} is from before the agent was re-embedded "
                               f"({state.settings.embedder} -> {self._owner.settings.embedder}); it cannot go back "
                               f"past that. Rewind to a later point, or fork the agent instead.")
        from agentos.agent.context import repair_context

        context = repair_context(self.store.get_messages(self.id, state.in_context_ids))
        self.history.forget_after(point.rev)
        edits = self._owner.restore(state, context)
        self.save()
        later = self.store.uncommitted(self.id, state.message_count)  # the messages after the point
        if later:
            self.tiers.discard(later)
            self.store.discard_messages(self.id, later)
        removed = self.tiers.rewind(point.at)
        return Rewound(point=point, messages=len(later), edits=len(edits), items=removed)

    def reindex(self, spec: str, progress: Progress | None = None) -> dict[str, int]:
        """Re-embed every tier with embedder `spec` and make it the agent's embedder; counts by tier."""
        self.check_writable()
        self.save()  # no rows made with the old embedder may be written after the tables are rebuilt
        embedder = resolve_embedder(spec)
        _ = embedder.dim  # an unreachable service fails here, before anything changes
        self.store.wait_for_maintenance()
        self._stop_consolidating()
        report = progress or (lambda what, done, total: None)
        counts = {tier.name: tier.reindex(embedder, report) for tier in self.tiers if tier.in_use}
        self._owner.update_settings(embedder=spec)
        self._open_tiers()
        self.save()
        return counts

    # -- saving ------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise unless this object may write the agent now: opened for writing, and its lease still held."""
        lease = self._lease
        if lease is None:
            raise ReadOnlyAgentError(f'agent "{self.name}" was opened read-only; open it for writing to change it.')
        if lease.lost:
            raise lease.lost
        if lease.released:
            self._reopen(lease)
        elif time.time() - lease.confirmed > RECHECK_LEASE_SECONDS:
            self.store.agents.confirm(lease)

    def _reopen(self, lease: Lease) -> None:
        """Take the lease again after `close()`, if nothing changed the agent meanwhile (this agent: the same id)."""
        if any(other.agent_id == self.id and other is not lease for other in self.store.leases.held()):
            lease.lost = LeaseLostError(f'agent "{self.name}" was opened again in this process; this closed Agent '
                                        f"object cannot write it any more. Use the newer one.")
            raise lease.lost
        row = self.store.open_agent(self.name, lease, agent_id=self.id, action="this closed Agent cannot write it again")
        if row.rev != self._owner.rev:
            self.store.release(lease)
            lease.lost = LeaseLostError(f'agent "{self.name}" changed since this Agent object was closed; '
                                        f"open it again to continue from what was saved.")
            raise lease.lost
        committed = AgentState.model_validate_json(row.state)
        self._repair(committed.message_count, committed.unlogged_edits)
        self._owner.rewrite_pending()  # whoever held it meanwhile discarded what a failed save had written

    def _repair(self, message_count: int, unlogged: list[MemoryEdit]) -> None:
        """Finish what a cut-short step left, as the agent's writer: discard the rows it wrote after the last saved
        state (the tiers' first, then the messages they were made for), and log the saved edits not yet logged."""
        for table in self.tiers.table_names():
            self.store.db.recover(table)  # a reindex cut short
        self.tiers.recover()
        orphans = self.store.uncommitted(self.id, message_count)
        if orphans:
            self.tiers.discard(orphans)
            self.store.discard_messages(self.id, orphans)
        self.store.log_edits(self.id, unlogged, some_logged=True)
        self._owner.logged(unlogged)  # so that closing does not log them a second time
        self.history.forget_after(self._owner.rev)  # points of steps that never landed

    def save(self, restore_point: str | None = None) -> StepSaved | None:
        """Commit what changed since the last save, as one step; None when nothing did. With `restore_point` (the
        question of the turn this step ends), the state it saves is also kept as a point to rewind to.

        Raises StorageError (nothing is lost: the next save writes it) or LeaseLostError."""
        if not self._owner.has_changes:
            return None
        self.check_writable()
        assert self._lease is not None
        earlier = self._owner.unlogged()  # edits of saved states: logged while this step is written
        step, state_json, ids = self._owner.prepare_save(self.tiers.after_step)
        if restore_point is not None:  # a retried step may carry an earlier turn's point too: the newest one counts
            self.history.open()
            step.add(self.history.table_name,
                     [point_row(self._owner.snapshot(), step.rev, utc_now(), restore_point, step.id)])
        try:
            rev, logged = self.store.write_step(self.id, self._lease, step, state_json, earlier)
        except AgentDeletedError:
            self.store.purge(self.id)  # what this step wrote before it found out
            delete_tiers(self.store.db, self.id)
            raise
        except LeaseLostError:
            self.tiers.discard(ids)  # rows this session wrote for a step it may no longer commit
            self.store.discard_messages(self.id, ids)
            self.history.forget_step(step.id)
            raise
        self._owner.saved(step, rev)
        self.tiers.saved(ids)
        self._saved_messages = self._owner.message_count
        if logged:
            self._owner.logged(earlier)
        return StepSaved(rev=rev, message_ids=ids)

    def _log_edits(self) -> None:
        """Write the saved edits the log does not have yet (a session's last memory edit waits for this)."""
        unlogged = self._owner.unlogged()
        if unlogged:
            self.store.log_edits(self.id, unlogged)
            self._owner.logged(unlogged)

    def close(self) -> None:
        """Save anything unsaved, give the agent back so other processes can open it, and let maintenance finish."""
        lease = self._lease
        if lease is None or lease.lost:
            return
        try:
            self._stop_consolidating()
            self.tiers.flush()
            if self._owner.has_changes:
                self.save()
            self._log_edits()
        finally:
            if not lease.released and not lease.lost:
                self.store.release(lease)
            self.store.wait_for_maintenance()

