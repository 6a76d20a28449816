"""The memory tier interface: what a tier owns, what it shows the model, and how it is kept.

A tier (recall, archival, later facts or an entity graph) declares its tables, its tools and
its lines in the prompt's metadata, reacts to each step's new messages, and says how it is
deleted and reindexed. Compaction needs nothing from it: background maintenance compacts every
table that was written, by name. The agent, `agentos delete`, `agentos reindex` and the metadata
template only ever go through this interface, so a new tier touches none of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel

from agentos.embedders.base import Embedder
from agentos.errors import ReadOnlyAgentError
from agentos.events import Event
from agentos.messages import Message
from agentos.storage.audit import AuditEntry
from agentos.storage.db import Database
from agentos.storage.rewrites import SWAP_SUFFIX
from agentos.storage.store import Rows
from agentos.tools.decorator import Tool

Progress = Callable[[str, int, int], None]  # (what, done, total)


def tier_settings(settings: Any, name: str, model: type[BaseModel]) -> Any:
    """A tier's settings within the agent's: its own field when the agent's settings have one (facts), else its
    entry in `settings.tiers`, validated by the tier's model (defaults when there is none)."""
    own = getattr(settings, name, None)
    if isinstance(own, model):
        return own
    return model.model_validate(getattr(settings, "tiers", {}).get(name, {}))


@dataclass(frozen=True)
class MemoryStats:
    """What the agent knows that a tier may show in the prompt's metadata."""

    message_count: int  # messages ever saved
    hidden_count: int  # of those, how many are out of the context


@dataclass
class TierContext:
    """What a tier of one agent is built from: the database, the agent, its embedder and whether it may write.

    A read-only tier creates nothing: it opens only tables that exist, and a missing one reads as empty."""

    db: Database
    agent_id: str
    embedder: Callable[[], Embedder]  # resolved on first use, once per agent
    writable: bool = True
    guard: Callable[[], None] | None = None  # raises unless the agent may be written now (its lease is held)
    on_write: Callable[[str], None] | None = None  # told the table name after a write outside a step
    settings: Callable[[], Any] | None = None  # the agent's settings now (AgentSettings), for tiers with their own
    rankers: Callable[[], list[Any]] | None = None  # the agent's tiers that rank messages for recall search
    models: Callable[[str], Any] | None = None  # the provider of a model role ("facts", "search"...), see agent.roles
    prompts: Any = None  # the agent's prompt renderer (`render(name, **values)`), for tiers that ask a model
    read_messages: Callable[[int, int], list[tuple[int, Message]]] | None = None  # saved (seq, message), by seq range
    announce: Callable[[Event], None] | None = None  # hand over news from background work (see `Agent.idle`)
    committed: Callable[[], int] | None = None  # how many of the agent's messages are saved now
    audit: Callable[[AuditEntry], None] | None = None  # keeps an audit entry of a read or change (`Session.note`)

    def check_writable(self, what: str) -> None:
        if not self.writable:
            raise ReadOnlyAgentError(f"cannot {what}: the agent was opened read-only.")
        if self.guard is not None:
            self.guard()

    def wrote(self, table: str) -> None:
        if self.on_write is not None:
            self.on_write(table)

    def note(self, entry: AuditEntry) -> None:
        """Audit a read or change of this agent's memory (see `agentos.memory.audited`)."""
        if self.audit is not None:
            self.audit(entry)

    def tell(self, event: Event) -> None:
        """Hand over an event from background work; the front end shows it between turns."""
        if self.announce is not None:
            self.announce(event)


class Tier(ABC):
    """One kind of memory of one agent.

    Its life: built when the agent is opened; `opened` once the agent is opened to talk; `after_step` and `saved`
    with each step; `turn_ended` after each turn; `idle` when the front end asks for news between turns; `close`
    when the agent closes or its storage is about to change under the tier (a rewind, a reindex, new settings).
    Background work hands its news to `ctx.tell`. A tier with settings names their model in `settings_model`;
    they are read and written through `Agent.tier_settings` / `Agent.update_tier_settings`."""

    name: ClassVar[str]
    label: ClassVar[str] = ""  # what it holds, for people ("archival memory"); "<name> memory" when empty
    settings_model: ClassVar[type[BaseModel] | None] = None

    def __init__(self, ctx: TierContext) -> None:
        self.ctx = ctx

    @classmethod
    @abstractmethod
    def table_names(cls, agent_id: str) -> list[str]:
        """Every table this tier may hold for the agent (they need not exist yet)."""

    def stored_tables(self) -> dict[str, str]:
        """This agent's tables of the tier, each with what it holds for people: opening the agent looks at each for
        damage (one that does not exist yet is passed over)."""
        return dict.fromkeys(self.table_names(self.ctx.agent_id), self.label or f"{self.name} memory")

    @property
    def in_use(self) -> bool:
        """Whether this agent uses the tier (an optional tier that is off and holds nothing is left out of reports)."""
        return True

    def tools(self) -> list[Tool]:
        """The tools the model uses to reach this tier."""
        return []

    def metadata(self, stats: MemoryStats) -> list[str]:
        """Lines this tier adds to the prompt's memory metadata (counts shown to the model are never stale)."""
        return []

    @property
    def settings(self) -> Any:
        """This tier's settings now (an instance of `settings_model`), or None when it has none."""
        if self.settings_model is None or self.ctx.settings is None:
            return None
        return tier_settings(self.ctx.settings(), self.name, self.settings_model)

    def opened(self, committed: int) -> None:  # noqa: B027 - optional: most tiers do nothing on opening
        """The agent was opened to talk, with `committed` messages saved (background work may start)."""

    def turn_ended(self, committed: int) -> list[Event]:
        """A turn ended with `committed` messages saved; events to yield at the end of the turn."""
        return []

    def idle(self) -> list[Event]:
        """The front end asks for news between turns: events this tier has that were not handed to `ctx.tell`."""
        return []

    def close(self) -> None:  # noqa: B027 - optional: most tiers have no background work
        """Stop background work (the next `turn_ended` or `opened` may start it again) and write what is kept."""

    def after_step(self, messages: Sequence[Message]) -> dict[str, Rows]:
        """Rows to write, by table, with a step's new messages (before the agent's state)."""
        return {}

    def saved(self, message_ids: Sequence[str]) -> None:  # noqa: B027 - optional: most tiers need not know
        """The step that saved these messages is committed (after_step ran for them, perhaps for an earlier try)."""

    def recover(self) -> None:  # noqa: B027 - optional: most tiers write only with steps
        """Finish what a crash left half-written outside a step (run when the agent is opened for writing)."""

    def flush(self) -> None:  # noqa: B027 - optional: most tiers keep nothing unwritten
        """Write what the tier keeps in memory between steps (e.g. usage counts), before the agent is closed."""

    def discard(self, message_ids: Sequence[str]) -> None:  # noqa: B027 - optional: most tiers write no step rows
        """Forget rows made for messages whose step never landed (a crash before the state was written)."""

    def rewind(self, to: datetime) -> int:
        """Take back what this tier stored after `to` that no message holds (rows made for messages go with
        `discard`); return how many items were removed."""
        return 0

    def ranked_messages(self, query: str, limit: int) -> list[str] | None:
        """Message ids this tier ranks for a recall search, best first (None: it ranks none). The entity graph does;
        recall fuses the list under the tier's name."""
        return None

    def reindex(self, embedder: Embedder, progress: Progress) -> int:
        """Rebuild what depends on the embedder with `embedder`; return how many items were re-embedded."""
        return 0

    @classmethod
    def delete_all(cls, db: Database, agent_id: str) -> None:
        """Remove everything this tier holds for an agent (no embedder needed)."""
        for name in cls.table_names(agent_id):
            db.drop(name)
            db.drop(name + SWAP_SUFFIX)
