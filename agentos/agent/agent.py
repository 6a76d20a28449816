"""The Agent: create, load, take turns, and persist after every step."""

from __future__ import annotations

import atexit
import sys
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

from agentos.agent.paging import Pager
from agentos.agent.prompts import PromptRenderer
from agentos.agent.state import AgentSettings, AgentState, validate_name
from agentos.errors import AgentExistsError, AgentNotFoundError, AgentOSError
from agentos.events import Event
from agentos.memory.blocks import Block, CoreMemory, MemoryEdit
from agentos.memory.tiers import MemoryTiers
from agentos.messages import Message, Usage, utc_now
from agentos.providers.base import ModelRequest, Provider
from agentos.storage import Store
from agentos.tools.decorator import Tool
from agentos.tools.memory_tools import core_memory_tools
from agentos.tools.search_tools import search_tools
from agentos.tools.registry import ToolRegistry

PERSONA_DESCRIPTION = "Who you are: your personality, your role and how you speak."
HUMAN_DESCRIPTION = "What you know about the user: name, preferences, circumstances. Keep it current."

_stores: dict[str, Store] = {}


def open_store(home: str | Path | None = None) -> Store:
    """The store of a data home (default: the configured one), shared within the process."""
    from agentos.config import database_uri

    uri = database_uri(Path(home) if home is not None else None)
    if uri not in _stores:
        _stores[uri] = Store(uri)
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
    """Write what is still queued when the process ends; say so clearly if that fails."""
    try:
        store.close()
    except AgentOSError as exc:
        print(f"agentos: the last steps could not be saved: {exc}", file=sys.stderr)


def _store(store: Store | None, home: str | Path | None) -> Store:
    return store if store is not None else open_store(home)


def _not_found(name: str, store: Store) -> AgentNotFoundError:
    names = sorted(store.latest_states())
    existing = ", ".join(names) if names else "none yet"
    return AgentNotFoundError(
        f'no agent named "{name}". Existing agents: {existing}. Create one with: agentos new {name}'
    )


class Agent:
    """A persistent agent: core memory, in-context messages, tools and a model."""

    def __init__(
        self,
        state: AgentState,
        store: Store,
        provider: Provider,
        tools: Iterable[Tool] = (),
        context: list[Message] | None = None,
    ) -> None:
        self.state = state
        self.store = store
        self.provider = provider
        self.memory = CoreMemory(state.blocks)
        self.context: list[Message] = context or []
        self.prompts = PromptRenderer(state.settings.prompt_dir)
        self.tools = ToolRegistry(core_memory_tools(), output_limit=state.settings.tool_output_limit)
        self.tiers = MemoryTiers(self)  # recall + archival search (issue 3)
        for t in search_tools():
            self.tools.add(t)
        for t in tools:
            self.tools.add(t)
        self.state.tool_names = [t.name for t in self.tools]
        self._pending: list[tuple[int, Message]] = []
        self._pending_edits: list[MemoryEdit] = []
        self._unreported_edits: list[MemoryEdit] = []
        self.last_usage: Usage | None = None
        self.context_changed = False  # set by the pager when it evicts or truncates
        self.pager = Pager(self)

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
    ) -> "Agent":
        """Create and save a new agent. `provider` overrides the model spec (tests, demos)."""
        from agentos.providers.registry import resolve_model

        validate_name(name)
        store = _store(store, home)
        if store.load_state(name) is not None:
            raise AgentExistsError(f'an agent named "{name}" already exists. Pick another name or delete it first.')
        settings = settings or AgentSettings()
        prompts = PromptRenderer(settings.prompt_dir)
        if provider is None:
            from agentos.config import default_model

            model = model or default_model(Path(home) if home else None)
            provider = resolve_model(model, context_window=settings.context_window)
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
        agent = cls(state, store, provider, tools)
        agent._commit()
        store.flush()
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
    ) -> "Agent":
        """Load a saved agent with exactly the context it had."""
        from agentos.agent.context import repair_context
        from agentos.providers.registry import resolve_model

        validate_name(name)
        store = _store(store, home)
        row = store.load_state(name)
        if row is None:
            raise _not_found(name, store)
        state = AgentState.model_validate_json(row["state"])
        messages = store.get_messages(state.id, state.in_context_ids)
        context = repair_context(messages)
        stored = store.count_messages(state.id)
        state.message_count = max(state.message_count, stored)
        if provider is None:
            provider = resolve_model(state.model, context_window=state.settings.context_window)
        return cls(state, store, provider, tools, context)

    @staticmethod
    def list(home: str | Path | None = None, store: Store | None = None) -> list[AgentState]:
        """Every saved agent's state, most recently active first."""
        store = _store(store, home)
        states = [AgentState.model_validate_json(r["state"]) for r in store.latest_states().values()]
        return sorted(states, key=lambda s: s.last_active_at, reverse=True)

    @staticmethod
    def delete(name: str, home: str | Path | None = None, store: Store | None = None) -> None:
        """Delete an agent and everything it remembers."""
        validate_name(name)
        store = _store(store, home)
        row = store.load_state(name)
        if row is None:
            raise _not_found(name, store)
        store.delete_agent(name, row["agent_id"])

    # -- properties --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def blocks(self) -> dict[str, Block]:
        return self.memory.blocks

    # -- the turn ----------------------------------------------------------------------------

    def turn(self, text: str) -> Iterator[Event]:
        """Take one user message and yield events until the reply (or a failure)."""
        from agentos.agent.loop import run_turn

        return run_turn(self, text)

    def build_request(self) -> ModelRequest:
        """The request for the next model call: system prompt, in-context messages, tools."""
        dynamic = self.prompts.dynamic(
            self.memory,
            now=utc_now(),
            last_edit=self.state.last_memory_edit_at,
            recall_count=self.state.message_count,
            archival_count=self.state.archival_count,
            hidden_count=max(0, self.state.message_count - len(self.context)),
        )
        summary = self.pager.summary_message()
        return ModelRequest(
            system_static=self.prompts.static(),
            system_dynamic=dynamic,
            messages=([summary] if summary else []) + list(self.context),
            tools=list(self.tools),
        )

    def compact(self) -> list[Event]:
        """Summarize and evict every message the pager may evict now, and save."""
        events = list(self.pager.compact("manual"))
        self.save()
        return events

    def context_breakdown(self) -> dict[str, Any]:
        """Tokens per part of the next request (system, memory, tools, summary, messages) and the window."""
        return self.pager.breakdown()

    def system_prompt(self) -> str:
        """The full system prompt the model would see now."""
        return self.build_request().system

    # -- changes made during a step ----------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add a message to the context; it is written to recall at the end of the step."""
        self._pending.append((self.state.message_count, message))
        self.state.message_count += 1
        self.context.append(message)

    def record_memory_edit(self, edit: MemoryEdit) -> None:
        """Called by memory tools after a block changed."""
        self.state.last_memory_edit_at = edit.at
        self._pending_edits.append(edit)
        self._unreported_edits.append(edit)

    def take_edit_reports(self) -> list[MemoryEdit]:
        edits, self._unreported_edits = self._unreported_edits, []
        return edits

    @property
    def has_pending(self) -> bool:
        """Whether anything changed since the last save (messages, edits, or the context itself)."""
        return bool(self._pending or self._pending_edits or self.context_changed)

    def _commit(self) -> None:
        """Hand the step to the store's writer: new messages, memory edits and state.

        The writer owns the rows from here on (it retries failures), so pending is cleared
        even when the store reports an earlier failed write.
        """
        self.state.in_context_ids = [m.id for m in self.context]
        self.state.blocks = list(self.memory)
        self.state.last_active_at = utc_now()
        self.state.rev += 1
        messages, edits = self._pending, self._pending_edits
        self._pending, self._pending_edits, self.context_changed = [], [], False
        self.store.commit_step(
            name=self.state.name,
            agent_id=self.state.id,
            rev=self.state.rev,
            state_json=self.state.model_dump_json(),
            messages=messages,
            edits=edits,
            extra=self.tiers.commit_extra(messages),
        )

    def save(self) -> None:
        """Persist now (the loop does this after every step)."""
        self._commit()

    def flush(self) -> None:
        """Wait until everything this agent did is on disk."""
        if self.has_pending:
            self._commit()
        self.store.flush()

    def close(self) -> None:
        """Save anything unsaved and let background maintenance finish."""
        self.flush()
        self.store.wait_for_maintenance()
