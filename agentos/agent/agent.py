"""The Agent: create, open, take turns, and save after every step.

A facade over three owners: the `Session` (storage, lease, state, tiers, tools, history), the `Turn` (one turn's
loop) and the `ModelRoles` (which model plays which role). An Agent opened for writing holds its agent's lease: no
other process can write it meanwhile, and each save is a compare-and-set on the revision it started from. Opened
read-only it never writes, needs no model, and works while another process holds the agent.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from agentos.agent.context import repair_context
from agentos.agent.directory import (
    damage,
    delete_agent,
    list_agents,
    new_state,
    open_saved,
    open_store,
    rename_agents,
    store_of,
)
from agentos.agent.forgetting import ForgetPlan
from agentos.agent.history import RestorePoint, Rewound
from agentos.agent.paging import Pager
from agentos.agent.prompts import PromptRenderer
from agentos.agent.requests import (
    RequestBuilder,
    output_cap,
    pager_view,
    reads_text_calls,
    window_hint,
    window_source,
)
from agentos.agent.roles import ModelRoles, context_window, resolve_spec
from agentos.agent.session import Session
from agentos.agent.state import AgentSettings
from agentos.agent.turn import Turn, TurnMemory
from agentos.agent.turn_state import TurnState
from agentos.blocks import Block, Editor, MemoryEdit
from agentos.errors import DamageWarning, WindowWarning
from agentos.events import Event, Notice, StepSaved
from agentos.memory.facts.reports import ConsolidationReport
from agentos.memory.facts.tier import FactTier
from agentos.memory.forget_request import ForgetRequest
from agentos.memory.tier import Progress, Tier
from agentos.memory.tiers import Tiers
from agentos.messages import Message, Usage
from agentos.providers.base import ModelRequest, Provider
from agentos.storage import Store
from agentos.storage.audit import read
from agentos.storage.lease import Lease
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool
from agentos.tools.registry import ToolRegistry

__all__ = ["Agent", "list_agents", "open_store"]

T = TypeVar("T")


class Agent:
    """A persistent agent: core memory, in-context messages, memory tiers, tools and a model."""

    def __init__(self, state: TurnState, store: Store, provider: Provider | None, tools: Iterable[Tool] = (),
                 lease: Lease | None = None) -> None:
        self.roles = ModelRoles(state.model, lambda: state.settings, provider)
        self.prompts = PromptRenderer(state.settings.prompt_dir, system_prompt=state.settings.system_prompt,
                                      prompt_set=state.settings.prompts)
        self.session = Session(state, store, lease, tools, models=self.roles.provider, prompts=self.prompts)
        self.warnings: list[str] = []  # damage found when it was loaded (also issued as DamageWarning)
        self._last: Turn | None = None
        self._configure()

    def _configure(self) -> None:
        """The window and pager from the settings and the main model (again after either changes)."""
        settings, main = self.settings, self.roles.given("main")
        self.window = context_window(settings, self.model, main)
        self.pager = Pager(self.model, settings.pager, self.prompts, self.window,
                           summarizer=lambda: self.roles.provider("summary"))

    # -- life cycle --------------------------------------------------------------------------

    @classmethod
    def create(cls, name: str, *, model: str | None = None, provider: Provider | None = None,
               persona: str | None = None, human: str | None = None, blocks: Iterable[Block] = (),
               tools: Iterable[Tool] = (), settings: AgentSettings | None = None, home: str | Path | None = None,
               store: Store | None = None, with_model: bool = True) -> Agent:
        """Create and save a new agent, held for writing by the returned object.

        `provider` overrides the model spec (tests, demos). With `with_model=False` a model whose API key is missing
        is no error, as creating calls no model: the agent is made without it (it cannot take turns until loaded
        again, which needs the key)."""
        store = store_of(store, home)
        state, provider = new_state(name, model, provider, persona, human, blocks, settings, home,
                                    with_model=with_model)
        lease = Lease(agent_id=state.id, name=name)
        agent = cls(TurnState(state, []), store, provider, tools, lease)
        agent.state.screen_blocks()  # the blocks it starts with are stored without secrets too
        store.create_agent(name, state.id, agent.state.snapshot().model_dump_json(), lease)
        agent.add_restore_point("(created)")
        agent._warn_about_window()
        return agent

    @classmethod
    def load(cls, name: str, *, provider: Provider | None = None, tools: Iterable[Tool] = (),
             home: str | Path | None = None, store: Store | None = None, read_only: bool = False,
             with_model: bool = True) -> Agent:
        """Open a saved agent with exactly the context it had.

        For writing (the default) it takes the agent's lease: AgentBusyError names the process that
        holds it. `read_only=True` takes no lease. Without `provider`, the agent's model is set up,
        unless it is read-only or `with_model=False` (to change its memory without calling a model)."""
        store = store_of(store, home)
        opened = open_saved(name, store, read_only=read_only)
        state, lease = opened.state, opened.lease
        try:
            if provider is None and with_model and not read_only:
                provider = resolve_spec(state.model, state.settings, main=True)
            agent = cls(TurnState(state, repair_context(opened.messages)), store, provider, tools, lease)
            tables = {**agent.tiers.stored_tables(), **agent.session.history.stored_tables()}  # each looked at
            agent.warnings = damage(store, state, len(state.in_context_ids) - len(opened.messages),
                                    writer=lease is not None, tables=tables)
            if lease is not None:
                agent.session.repair(state.message_count, state.unlogged_edits)
                if provider is not None:  # opened to talk, not to edit: background work may start
                    agent.session.opened()
        except BaseException:
            if lease is not None:  # not left holding an agent this process could not open
                store.release(lease)
            raise
        for text in agent.warnings:
            warnings.warn(DamageWarning(text), stacklevel=2)
        agent._warn_about_window()
        return agent

    def _warn_about_window(self) -> None:
        main = self.roles.given("main")
        note = getattr(main, "window_warning", "") or getattr(main, "window_advice", "")
        if note:
            warnings.warn(WindowWarning(note), stacklevel=3)

    @staticmethod
    def delete(name: str, home: str | Path | None = None, store: Store | None = None, *, force: bool = False) -> None:
        """Delete an agent and everything it remembers. An agent another process holds is refused unless `force`;
        that process then stops saving, and never writes the agent back."""
        delete_agent(name, store_of(store, home), force=force)

    @staticmethod
    def rename(old: str, new: str, home: str | Path | None = None, store: Store | None = None) -> None:
        """Give agent `old` the name `new` (refused while another process has it open, or when `new` is taken)."""
        rename_agents({old: new}, store_of(store, home))

    @staticmethod
    def rename_many(names: dict[str, str], home: str | Path | None = None, store: Store | None = None) -> None:
        """Rename several agents at once, {old: new}, so two can swap names; each must be free to open."""
        rename_agents(names, store_of(store, home))

    def close(self) -> None:
        """Save anything unsaved, give the agent back so other processes can open it, and let maintenance finish."""
        self.session.close()

    # -- properties --------------------------------------------------------------------------

    @property
    def state(self) -> TurnState:
        """The agent's state (its one owner): context, summary, blocks, counters. Read it; turns change it."""
        return self.session.state

    @property
    def store(self) -> Store:
        return self.session.store

    @property
    def tiers(self) -> Tiers:
        return self.session.tiers

    @property
    def tools(self) -> ToolRegistry:
        return self.session.tools

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def model(self) -> str:
        return self.state.model

    @property
    def settings(self) -> AgentSettings:
        return self.state.settings

    @property
    def context(self) -> tuple[Message, ...]:
        return self.state.context

    @property
    def blocks(self) -> list[Block]:
        """Copies of the core memory blocks, in display order."""
        return self.state.blocks()

    def block(self, label: str) -> Block:
        return self.state.block(label)

    @property
    def read_only(self) -> bool:
        return self.session.read_only

    @property
    def provider(self) -> Provider:
        """The main model (another one from the next call on: `roles.use("main", ...)`; the window stays)."""
        return self.roles.provider("main")

    @property
    def last_usage(self) -> Usage | None:
        """What the provider last reported for this agent's last turn."""
        return self._last.last_usage if self._last else None

    @property
    def window_source(self) -> str:
        """Where the context window figure comes from (see `requests.window_source`)."""
        return window_source(self.settings, self.model, self.roles.given("main"))

    def tier(self, kind: type[T]) -> T:
        """The agent's memory tier of this kind, for example `tier(ArchivalTier)`."""
        return self.tiers.get(kind)

    def update_settings(self, **changes: Any) -> AgentSettings:
        """Change settings (validated; saved with the next step), e.g. `update_settings(context_window=32_000)`."""
        settings = self.state.update_settings(**changes)
        if {"prompt_dir", "system_prompt", "prompts"} & changes.keys():
            self.prompts = PromptRenderer(settings.prompt_dir, system_prompt=settings.system_prompt,
                                          prompt_set=settings.prompts)
            self.session.set_links(prompts=self.prompts)
        if {"facts", "tiers", "prompt_dir", "system_prompt", "mcp_servers"} & changes.keys():
            self.session.open_tiers()  # a tier's tools and background work follow its settings
        self.tools.output_limit = settings.tool_output_limit
        self._configure()
        return settings

    def tier_settings(self, kind: type[Tier]) -> BaseModel:
        """A tier's settings now (its `settings_model`, defaults where the agent has set none)."""
        return self.session.tier_settings(kind)

    def update_tier_settings(self, kind: type[Tier], **changes: Any) -> BaseModel:
        """Change a tier's settings (validated by its model; saved with the next step)."""
        return self.session.update_tier_settings(kind, **changes)

    # -- the turn ----------------------------------------------------------------------------

    def _turn(self) -> Turn:
        provider = self.roles.given("main")
        return Turn(self.state, provider, self.pager, self._requests(), self.tools, self.tiers.get,
                    self.session.save, self.session.check_writable, reads_text_calls(self.settings, provider),
                    window_hint(self.name, self.window, self.window_source))

    def turn(self, text: str) -> Generator[Event, None, None]:
        """Take one user message and yield events until the reply (or a failure), then the tiers' end-of-turn
        events. Close the generator to cancel: the agent is left consistent and saved. The agent's MCP servers
        start before its first turn (a notice for each that cannot, or for a tool it cannot offer)."""
        return self._then_tiers(self._offered_then_run(text))

    def _offered_then_run(self, text: str) -> Generator[Event, None, None]:
        yield from self.session.offer_mcp_tools()
        self._last = self._turn()
        yield from self._last.run(text)

    def _then_tiers(self, events: Generator[Event, None, None]) -> Generator[Event, None, None]:
        ended = False
        try:
            yield from events
            ended = True
            yield from self.session.turn_ended()
        finally:
            if not ended:
                self.session.turn_ended()

    def idle(self, wait: float = 0.0) -> Iterator[Event]:
        """Background news between turns (what fact consolidation did), oldest first: the same events a turn
        yields, from work done after it; waits up to `wait` seconds for the first when there is none yet."""
        return iter(self.session.idle(wait))

    def _requests(self) -> RequestBuilder:
        tools = [t.compact() for t in self.tools] if self.settings.prompts == "compact" else list(self.tools)
        return RequestBuilder(self.prompts, self.tiers.metadata, tools, self.output_cap())

    def build_request(self, pending: Sequence[Message] = ()) -> ModelRequest:
        """The request the next model call would send (`pending` messages as if they had joined the context)."""
        return self._requests().build(self.state, pending)

    def output_cap(self) -> int | None:
        """The most tokens one model call may write (see `requests.output_cap`)."""
        return output_cap(self.settings, self.roles.given("main"), self.window)

    def tool_context(self, call_id: str | None, by: Editor = "agent") -> ToolContext:
        """What a tool call of this agent runs with outside a turn: its memory, edits recorded under the call's id
        as made `by` the model (or an MCP client)."""
        return ToolContext(memory=TurnMemory(self._turn(), call_id, by), call_id=call_id)

    def context_breakdown(self) -> dict[str, Any]:
        """Tokens per part of the next request (system, memory, tools, summary, messages) and the window."""
        usage = self.last_usage
        return self.pager.breakdown(pager_view(self.state, self.build_request()),
                                    usage.input_tokens if usage else None)

    def system_prompt(self) -> str:
        """The full system prompt the model would see now."""
        return self.build_request().system

    # -- memory --------------------------------------------------------------------------------

    def set_block(self, label: str, value: str) -> MemoryEdit:
        """Set a block's whole value by hand, logged as the user's edit, and save (limits and window still hold)."""
        self.session.check_writable()
        requests = self._requests()
        self.state.edit(lambda blocks: blocks.set(label, value), lambda blocks: self.pager.fixed_over_share(
            requests.build(self.state, blocks=blocks), self.state.calibration))
        edit = self.state.take_edit_reports()[-1]
        self.save()
        return edit

    def compact(self) -> list[Event]:
        """Summarize and evict every message the pager may evict now, and save."""
        self.session.check_writable()
        result = self.pager.compact(pager_view(self.state, self.build_request()), "manual")
        if isinstance(result, Notice):
            return [result]
        self.state.apply(result)
        saved = self.save()
        return [result.event, *([saved] if saved else [])]

    def consolidate(self, progress: Callable[[int, int], None] | None = None,
                    retry_skipped: bool = False) -> ConsolidationReport:
        """Consolidate every saved message not yet consolidated into facts, now (the background thread waits); with
        `retry_skipped`, batches skipped before are read again too (those a different model skipped always are)."""
        self.session.check_writable()
        self.save()
        return self.tier(FactTier).consolidate(progress, retry_skipped=retry_skipped)

    def memory_edits(self) -> list[MemoryEdit]:
        """The core memory edit log, oldest first: every saved edit (the log is written a step behind the state)."""
        return self.session.memory_edits()

    def note_read(self, what: str, count: int, target: str = "", detail: str = "") -> None:
        """Audit a read of this agent's memory made for whoever acts now: an API key, an MCP client (`Session.note`)."""
        self.session.note(read(what, count, target, detail))

    # -- storage -------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise unless this object may write the agent now: opened for writing, and its lease still held."""
        self.session.check_writable()

    def save(self, restore_point: str | None = None) -> StepSaved | None:
        """Commit what changed since the last save, as one step; None when nothing did (see `Session.save`)."""
        return self.session.save(restore_point)

    def add_history(self, messages: Iterable[Message], in_context: int = 0) -> StepSaved | None:
        """Save messages to recall in one step; the last `in_context` of them also join the context
        (imports, evaluations, benchmarks)."""
        return self.session.add_history(messages, in_context)

    def restore_points(self) -> list[RestorePoint]:
        """The points this agent can be rewound to, oldest first: 0 is its creation, then the end of each turn."""
        return self.session.restore_points()

    def add_restore_point(self, label: str) -> None:
        """Save, and keep the saved state as a point to rewind to (turns add theirs as they end)."""
        self.session.add_restore_point(label)

    def forget(self, request: ForgetRequest, *, dry_run: bool = False) -> ForgetPlan:
        """Forget what `request` names in every tier, or (`dry_run`) only say what that would take out."""
        return self.session.plan_forget(request) if dry_run else self.session.forget(request)

    def rewind(self, turn: int) -> Rewound:
        """Go back to restore point `turn`: blocks, context, summary and counters as they were then.

        The messages and archival passages stored since are removed (passages deleted since do not come back); keep
        a copy first if any of it may be wanted again (`agentos rewind` does, and its `--undo` swaps the copy back).
        Cut short, it leaves an agent that opens: the points after `turn` go first, then the state is saved, and the
        next writer to open the agent discards any later messages still there."""
        return self.session.rewind(turn)

    def reindex(self, spec: str, progress: Progress | None = None) -> dict[str, int]:
        """Re-embed every tier with embedder `spec` and make it the agent's embedder; counts by tier."""
        return self.session.reindex(spec, progress)
