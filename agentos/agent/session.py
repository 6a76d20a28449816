"""A session: one agent's storage life in this process, from opening it to giving it back.

It holds the agent's lease and its state's one `TurnState`, and it is the only caller of the state's
prepare/saved/restore: every save is a compare-and-set step write on the revision it started from. It owns the
tiers (and their lifecycle: opened, turn ended, idle, close), the tool list, the restore points, rewind and
reindex. It never calls a model; what the tiers need of the models reaches them through `links`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from agentos.agent.context import repair_context
from agentos.agent.forgetting import ForgetPlan, carry_out, plan_forget, resume_forget
from agentos.agent.history import RestorePoint, RestorePoints, Rewound, point_row
from agentos.agent.shared_link import SharedLink
from agentos.agent.state import AgentSettings, AgentState
from agentos.agent.turn_state import TurnState
from agentos.blocks import MemoryEdit
from agentos.config import data_home
from agentos.embedders.resolve import resolve_embedder
from agentos.errors import AgentDeletedError, AgentOSError, ConfigError, LeaseLostError, ReadOnlyAgentError
from agentos.events import Event, Notice, StepSaved
from agentos.memory.forget_request import ForgetRequest
from agentos.memory.news import News
from agentos.memory.tier import Progress, Tier
from agentos.memory.tiers import Tiers, delete_tiers
from agentos.messages import Message, utc_now
from agentos.storage import Store
from agentos.storage.audit import AuditEntry, change
from agentos.storage.lease import Lease
from agentos.tools.decorator import Tool
from agentos.tools.mcp.toolbox import McpToolbox
from agentos.tools.memory_tools import core_memory_tools
from agentos.tools.registry import ToolRegistry

RECHECK_LEASE_SECONDS = 2.0  # a turn starting later than this after the last write first re-reads the lease


class Session:
    """One agent opened in this process: for writing (holding `lease`) or read-only (`lease` None)."""

    def __init__(self, state: TurnState, store: Store, lease: Lease | None, tools: Iterable[Tool] = (),
                 **links: Any) -> None:
        """`links` are what the tiers reach beyond storage (settings, models, prompts: see `TierContext`)."""
        self.state = state
        self.store = store
        self.lease = lease
        self.history = RestorePoints(store.db, state.id)
        self.news = News()
        self.saved_messages = state.message_count  # messages committed: all that background work may read
        self._links = links
        self._extra_tools = list(tools)
        self.mcp: McpToolbox | None = None
        state.link_shared(SharedLink(store.shared))
        if lease is None:
            state.refresh_shared()  # shown as they are now (a writer takes them in once it is repaired)
        self.open_tiers()

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def read_only(self) -> bool:
        return self.lease is None

    def set_links(self, **links: Any) -> None:
        """Change what the tiers reach beyond storage (takes effect when they are next opened)."""
        self._links.update(links)

    def open_tiers(self) -> None:
        """(Re)build the tiers and the tool list (on opening, and after the embedder or the tier settings change)."""
        previous = getattr(self, "tiers", None)
        if previous is not None:
            previous.close()
        self.tiers = Tiers(self.store.db, self.id, self.state.settings.embedder, writable=not self.read_only,
                           guard=self.check_writable, on_write=self.store.touched, settings=lambda: self.state.settings,
                           read_messages=lambda first, end: self.store.messages_between(self.id, first, end),
                           announce=self.news.tell, committed=lambda: self.saved_messages, audit=self.note,
                           **self._links)
        self._open_mcp()
        offered = self.mcp.tools if self.mcp is not None else []
        self.tools = ToolRegistry([*core_memory_tools(), *self.tiers.tools(), *self._extra_tools, *offered],
                                  output_limit=self.state.settings.tool_output_limit)
        self.state.set_tool_names([t.name for t in self.tools])

    def _open_mcp(self) -> None:
        """Keep the MCP servers when their settings did not change; else stop them (they start again when a turn
        needs their tools). A read-only agent takes no turns and starts none."""
        specs = [] if self.read_only else self.state.settings.mcp_servers
        if self.mcp is not None and self.mcp.specs == specs:
            return
        if self.mcp is not None:
            self.mcp.close()
        self.mcp = McpToolbox(specs, data_home() / "logs", f"agentos agent {self.name}") if specs else None

    def offer_mcp_tools(self) -> list[Event]:
        """Start the MCP servers whose tools are not offered yet and add their tools (before a turn); a notice for
        each server that could not start and each tool that cannot be offered."""
        if self.mcp is None or not self.mcp.pending():
            return []
        tools, notices = self.mcp.offer({t.name for t in self.tools})
        for t in tools:
            self.tools.add(t)
        if tools:
            self.state.set_tool_names([t.name for t in self.tools])
        return [Notice(text=text) for text in notices]

    def tier_settings(self, kind: type[Tier]) -> BaseModel:
        """A tier's settings now (its `settings_model`, defaults where the agent has set none)."""
        settings = self.tiers.get(kind).settings
        if settings is None:
            raise ConfigError(f"the {kind.name} tier has no settings.")
        return settings

    def update_tier_settings(self, kind: type[Tier], **changes: Any) -> BaseModel:
        """Change a tier's settings (validated by its model; saved with the next step); the tiers reopen with them."""
        self.check_writable()
        merged = self.tier_settings(kind).model_validate({**self.tier_settings(kind).model_dump(), **changes})
        if kind.name in AgentSettings.model_fields:  # a built-in tier's settings have a field of their own
            self.state.update_settings(**{kind.name: merged})
        else:
            self.state.update_settings(tiers={**self.state.settings.tiers, kind.name: merged.model_dump(mode="json")})
        self.open_tiers()
        return merged

    # -- the tiers' lifecycle ------------------------------------------------------------------

    def opened(self) -> None:
        """The agent was opened to talk: background work of the tiers may start."""
        self.tiers.opened(self.saved_messages)

    def turn_ended(self) -> list[Event]:
        """A turn ended: the tiers hear how many messages are saved, and give the events to end it with."""
        if self.read_only:
            return []
        return self.tiers.turn_ended(self.saved_messages)

    def idle(self, wait: float = 0.0) -> list[Event]:
        """News between turns, oldest first: the tiers' own, then what their background work handed over (waiting
        up to `wait` seconds for some when there is none)."""
        events = self.tiers.idle()
        return events + self.news.take(0.0 if events else wait)

    def stop_background(self) -> None:
        """Stop the tiers' background work (before the agent's storage changes under them); the next turn's end
        starts it again."""
        self.tiers.close()

    # -- writing -------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise unless this session may write the agent now: opened for writing, and its lease still held."""
        lease = self.lease
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
        if row.rev != self.state.rev:
            self.store.release(lease)
            lease.lost = LeaseLostError(f'agent "{self.name}" changed since this Agent object was closed; '
                                        f"open it again to continue from what was saved.")
            raise lease.lost
        committed = AgentState.model_validate_json(row.state)
        self.repair(committed.message_count, committed.unlogged_edits)
        self.state.rewrite_pending()  # whoever held it meanwhile discarded what a failed save had written

    def repair(self, message_count: int, unlogged: list[MemoryEdit]) -> None:
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
        self.state.logged(unlogged)  # so that closing does not log them a second time
        self.history.forget_unlanded(self.state.rev)  # points of steps that never landed
        self.saved_messages = self.state.message_count
        cut_short = resume_forget(self)
        if cut_short is not None:  # a forget a crash cut short: carried out to its end now
            self.forget(cut_short)
        self.state.refresh_shared()  # what other agents changed in the blocks it shares with them

    def save(self, restore_point: str | None = None) -> StepSaved | None:
        """Commit what changed since the last save, as one step; None when nothing did. With `restore_point` (the
        question of the turn this step ends), the state it saves is also kept as a point to rewind to.

        Raises StorageError (nothing is lost: the next save writes it) or LeaseLostError."""
        state = self.state
        if not state.has_changes:
            return None
        self.check_writable()
        assert self.lease is not None
        earlier = state.unlogged()  # edits of saved states: logged while this step is written
        step, snapshot, ids = state.prepare_save(self.tiers.after_step)
        audit = state.take_audit()
        state_json = snapshot.model_dump_json()  # once per save: the point below reuses it when it can
        if restore_point is not None:  # a retried step may carry an earlier turn's point too: the newest one counts
            self.history.open()
            step.add(self.history.table_name, [point_row(snapshot, step.rev, utc_now(), restore_point, step.id,
                                                         state_json=state_json)])
        try:
            rev, logged = self.store.write_step(self.id, self.lease, step, state_json, earlier, audit)
        except AgentDeletedError:
            self.store.purge(self.id)  # what this step wrote before it found out
            delete_tiers(self.store.db, self.id)
            raise
        except LeaseLostError:
            self.tiers.discard(ids)  # rows this session wrote for a step it may no longer commit
            self.store.discard_messages(self.id, ids)
            self.history.forget_step(step.id)
            raise
        state.saved(step, rev)
        self.tiers.saved(ids)
        self.saved_messages = state.message_count
        if logged:
            state.logged(earlier)
        return StepSaved(rev=rev, message_ids=ids)

    def log_edits(self) -> None:
        """Write the saved edits the log does not have yet (a session's last memory edit waits for this)."""
        unlogged = self.state.unlogged()
        if unlogged:
            self.store.log_edits(self.id, unlogged)
            self.state.logged(unlogged)

    def close(self) -> None:
        """Stop background work, save anything unsaved, give the agent back, and let maintenance finish."""
        lease = self.lease
        self.news.wake()
        if self.mcp is not None:
            self.mcp.close()
        if lease is None or lease.lost:
            return
        try:
            self.stop_background()
            self.tiers.flush()
            if self.state.has_changes:
                self.save()
            self.log_edits()
        finally:
            if not lease.released and not lease.lost:
                self.store.release(lease)
            self.store.wait_for_maintenance()

    # -- history -------------------------------------------------------------------------------

    def add_history(self, messages: Iterable[Message], in_context: int = 0) -> StepSaved | None:
        """Save messages to recall in one step; the last `in_context` of them also join the context."""
        self.check_writable()
        self.state.add_history(list(messages), in_context)
        return self.save()

    def note(self, entry: AuditEntry) -> None:
        """Keep an audit entry: a read while a save is pending (the model's, mid-turn) goes with that save, anything
        else is written now. Reads by the local user (a command, the TUI, a program) are not kept; they may be many,
        and a read-only command writes nothing."""
        if entry.action == "read" and entry.by.kind == "user":
            return
        if entry.action == "read" and not self.read_only and self.state.has_changes:
            self.state.note(entry)
        else:
            self.store.audit.record(self.id, [entry])

    def memory_edits(self) -> list[MemoryEdit]:
        """The core memory edit log, oldest first: every saved edit (the log is written a step behind the state)."""
        logged = self.store.memory_edits(self.id)
        seen = {(e.rev, e.label, e.at) for e in logged}
        return logged + [e for e in self.state.unlogged() if (e.rev, e.label, e.at) not in seen]

    def restore_points(self) -> list[RestorePoint]:
        """The points this agent can be rewound to, oldest first: 0 is its creation, then the end of each turn."""
        return self.history.list(self.state.rev)

    def add_restore_point(self, label: str) -> None:
        """Save, and keep the saved state as a point to rewind to."""
        self.save()
        self.check_writable()
        self.history.add(point_row(self.state.snapshot(), self.state.rev, utc_now(), label))

    def plan_forget(self, request: ForgetRequest) -> ForgetPlan:
        """What `request` would take out of every tier (nothing changes; a read-only session may ask)."""
        return plan_forget(self, request)

    def forget(self, request: ForgetRequest) -> ForgetPlan:
        """Take what `request` reaches out of every tier, the state, the restore points and the tables' older
        versions (see `agent.forgetting`); what went. A crash part-way is finished by the next open."""
        self.check_writable()
        self.save()
        self.stop_background()  # nothing may write what is being taken out meanwhile
        plan = plan_forget(self, request)
        carry_out(self, plan)
        self.open_tiers()  # the tiers' tables were written anew under them
        self.note(change("forget", plan.rows, target=request.kind, detail=f"forgotten: {plan.rows} rows"))
        return plan

    def rewind(self, turn: int) -> Rewound:
        """Go back to restore point `turn` (see `Agent.rewind`)."""
        self.check_writable()
        self.save()
        self.stop_background()
        points = self.restore_points()
        point = next((p for p in points if p.turn == turn), None)
        if point is None:
            raise AgentOSError(f'agent "{self.name}" has no restore point {turn}: its points are 0 to '
                               f"{len(points) - 1}. See them with: agentos history {self.name}")
        earlier = self.history.state(point, self.state.rev)
        if earlier.settings.embedder != self.state.settings.embedder:
            raise AgentOSError(f"restore point {turn} is from before the agent was re-embedded "
                               f"({earlier.settings.embedder} -> {self.state.settings.embedder}); it cannot go back "
                               f"past that. Rewind to a later point, or fork the agent instead.")
        context = repair_context(self.store.get_messages(self.id, earlier.in_context_ids))
        self.history.forget_after(point.rev)
        edits = self.state.restore(earlier, context)
        self.save()
        later = self.store.uncommitted(self.id, earlier.message_count)  # the messages after the point
        if later:
            self.tiers.discard(later)
            self.store.discard_messages(self.id, later)
        removed = self.tiers.rewind(point.at)
        self.note(change("rewind", len(later), target=f"point {turn}",
                         detail=f"{len(edits)} block change(s), {sum(removed.values())} item(s) taken back"))
        return Rewound(point=point, messages=len(later), edits=len(edits), items=removed)

    def reindex(self, spec: str, progress: Progress | None = None) -> dict[str, int]:
        """Re-embed every tier with embedder `spec` and make it the agent's embedder; counts by tier."""
        self.check_writable()
        self.save()  # no rows made with the old embedder may be written after the tables are rebuilt
        embedder = resolve_embedder(spec)
        _ = embedder.dim  # an unreachable service fails here, before anything changes
        self.store.wait_for_maintenance()
        self.stop_background()
        report = progress or (lambda what, done, total: None)
        counts = {tier.name: tier.reindex(embedder, report) for tier in self.tiers if tier.in_use}
        self.state.update_settings(embedder=spec)
        self.open_tiers()
        self.save()
        return counts

