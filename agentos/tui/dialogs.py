"""The app's dialogs: switching and creating agents, searching memory, exporting, rewinding, the facts list, and a
block's history and edit. AgentApp is one (these need its conversation, panes and workers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.widgets import Input

from agentos.agent.agent import Agent, list_agents
from agentos.commands.rewinding import next_backup_name, rewind_keeping_copy
from agentos.memory.archival import ArchivalTier
from agentos.memory.recall import RecallTier
from agentos.memory.secret_gate import describe, removed_between
from agentos.portable.archive import SUFFIX, export_agent
from agentos.retrieval.recall_paths import MATCHING_PATHS
from agentos.text import plural
from agentos.tui.facts import FactsSection, current_facts, fact_tier
from agentos.tui.screens import (
    AskScreen,
    BlockHistoryScreen,
    EditBlockScreen,
    FactsScreen,
    NewAgent,
    NewAgentScreen,
    PickerScreen,
    SearchResult,
    SearchScreen,
    TextScreen,
    fact_detail,
)

if TYPE_CHECKING:
    from agentos.memory.facts.rows import Fact
    from agentos.tui.conversation import Conversation
    from agentos.tui.memory import MemoryPanel

Opener = Callable[[str], Agent]
Creator = Callable[[NewAgent], Agent]


def open_agent(name: str) -> Agent:
    return Agent.load(name)


def create_agent(spec: NewAgent) -> Agent:
    return Agent.create(spec.name, model=spec.model or None, persona=spec.persona or None, human=spec.human or None)


class AgentDialogs(App[int]):
    """The dialogs of the app, each opened by a key, the palette or a block's key."""
    agent: Agent
    opener: Opener
    creator: Creator
    facts: FactsSection
    tour: list[str]
    _touring: bool
    ended: str | None
    _found: dict[str, Any]

    if TYPE_CHECKING:  # the app's own

        @property
        def conversation(self) -> Conversation: ...

        @property
        def in_use(self) -> bool: ...

        def focus_input(self, *_: Any) -> None: ...

        def refresh_status(self) -> None: ...

        def show_edit(self, label: str, old: str, new: str, who: str) -> None: ...

        def run_job(self, activity: str, job: Callable[[], Any], then: Callable[[Any], Any]) -> None: ...

        @property
        def memory_panel(self) -> MemoryPanel: ...

        def show_agent(self) -> None: ...

    # -- core memory blocks ------------------------------------------------------------------

    def focus_back(self) -> Callable[..., None]:
        """A dialog's callback that puts the focus back where it was when the dialog opened (a block of the memory
        pane, so that its keys work on), or in the input if that is gone."""
        was = self.focused

        def back(*_: Any) -> None:
            if was is not None and was.is_attached and was.focusable:
                was.screen.set_focus(was)
            else:
                self.focus_input()

        return back

    def action_block_history(self, label: str) -> None:
        self.push_screen(BlockHistoryScreen(label, self.agent.memory_edits()), self.focus_back())

    def action_edit_block(self, label: str) -> None:
        if self.in_use:
            self.notify("Wait for the reply (or cancel it with Escape) before editing memory.", severity="warning")
            return
        block = self.agent.block(label)

        def save(value: str) -> str | None:
            """Save the edit; the reason it was refused (the dialog stays open with the text), or None."""
            if value == block.value:
                return None
            try:
                edit = self.agent.set_block(label, value)
            except Exception as exc:  # noqa: BLE001 - shown in the dialog, which keeps what was typed
                return f"not saved: {exc}"
            self.show_edit(label, edit.old_value, edit.new_value, "you (by hand)")
            removed = removed_between(value, edit.new_value)
            if removed:
                self.notify(f"The secret gate stored {describe(removed)} as a placeholder.", severity="warning")
            self.refresh_status()
            return None

        self.push_screen(EditBlockScreen(label, block.value, block.limit, save), self.focus_back())

    # -- agents ------------------------------------------------------------------------------

    def action_pick_agent(self) -> None:
        options = [("+new", "+ New agent…")]
        for s in list_agents(store=self.agent.store):
            mark = "● " if s.name == self.agent.name else "  "
            options.append((s.name, f"{mark}{s.name}  ·  {s.model}  ·  {plural(s.recall_count, 'message')}  ·  "
                                    f"last active {s.last_active_at.astimezone():%Y-%m-%d %H:%M}"))

        def chosen(name: str | None) -> None:
            self.focus_input()
            if name == "+new":
                self.action_new_agent()
            elif name and name != self.agent.name:
                self.call_later(self.switch_to, lambda: self.opener(name))

        self.push_screen(PickerScreen("agents", options), chosen)

    def action_new_agent(self) -> None:
        def chosen(spec: NewAgent | None) -> None:
            self.focus_input()
            if spec is not None:
                self.call_later(self.switch_to, lambda: self.creator(spec), "create")

        self.push_screen(NewAgentScreen(self.agent.model), chosen)

    # -- searching memory --------------------------------------------------------------------

    def _search(self, tier: str) -> Callable[[str], tuple[str, list[SearchResult]]]:
        def search(query: str) -> tuple[str, list[SearchResult]]:
            if not query.strip():
                return "Type what to look for, then Enter.", []
            try:
                if tier == "archival":
                    page = self.agent.tier(ArchivalTier).search(query, page_size=20)
                else:  # what matches what was typed, not the model's neighbouring turns
                    page = self.agent.tier(RecallTier).search(query, page_size=20, paths=MATCHING_PATHS)
            except Exception as exc:  # noqa: BLE001 - shown in the dialog
                return f"search failed: {exc}", []
            self._found = {hit.id: hit for hit in page.hits}
            results = [SearchResult(hit.id, f"{hit.created_at.astimezone():%Y-%m-%d %H:%M}  "
                                            f"{hit.role or 'passage'}: {' '.join(hit.text.split())[:200]}")
                       for hit in page.hits]
            more = "+" if page.capped else ""
            return f"{page.total}{more} found" + (f"; the first {len(results)} shown" if page.total > len(results)
                                                  else ""), results

        return search

    def action_search_archival(self) -> None:
        def chosen(key: str | None) -> None:
            self.focus_input()
            hit = self._found.get(key or "")
            if hit is not None:
                self.push_screen(TextScreen(f"passage {hit.id}", f"{hit.created_at.astimezone():%Y-%m-%d %H:%M}"
                                            f"  tags: {', '.join(hit.tags) or '-'}\n\n{hit.text}"), self.focus_input)

        self.push_screen(SearchScreen("search archival memory", self._search("archival")), chosen)

    def action_search_recall(self) -> None:
        def chosen(key: str | None) -> None:
            self.focus_input()
            if key is not None:
                self.jump_to(key)

        self.push_screen(SearchScreen("search recall memory", self._search("recall")), chosen)

    def jump_to(self, message_id: str) -> None:
        """Scroll to a message in the conversation; one out of context is shown in a dialog instead."""
        for widget in self.conversation.query(".found"):
            widget.remove_class("found")
        hit = self._found.get(message_id)
        entry = self.conversation.find(message_id, hit.text if hit else "")
        if entry is not None:
            entry.add_class("found")
            self.conversation.scroll_to_widget(entry, animate=False, top=True)
            return
        if hit is not None:
            self.push_screen(TextScreen("a message out of context (from recall memory)",
                                        f"{hit.created_at.astimezone():%Y-%m-%d %H:%M}  {hit.role}\n\n{hit.text}"),
                             self.focus_input)

    # -- the facts list ----------------------------------------------------------------------

    def action_facts(self) -> None:
        """The Facts dialog: every current fact (read on a worker first), filtered as one types."""
        if not self.facts.shown:
            self.notify("This agent's fact memory is not in use.", severity="warning")
            return
        agent = self.agent
        self.facts.read(agent, lambda: current_facts(fact_tier(agent)), self.show_fact_list, "facts-list")

    def show_fact_list(self, facts: list[Fact]) -> None:
        """Open the Facts dialog on `facts`; the one chosen is shown whole."""
        by_id = {f.id: f for f in facts}

        def chosen(fact_id: str | None) -> None:
            self.focus_input()
            fact = by_id.get(fact_id or "")
            if fact is not None:
                self.push_screen(TextScreen(f"fact {fact.id}", fact_detail(fact)), self.focus_input)

        self.push_screen(FactsScreen(facts), chosen)

    # -- exporting and rewinding -------------------------------------------------------------

    def action_export(self) -> None:
        if self.in_use:
            self.notify("Wait for the reply before exporting.", severity="warning")
            return

        def chosen(path: str | None) -> None:
            self.focus_input()
            if path:
                self.export_to(Path(path).expanduser())

        self.push_screen(AskScreen("export agent to", str(Path.cwd() / f"{self.agent.name}{SUFFIX}"),
                                   "Everything the agent has, in one file (import it with: agentos import FILE)"),
                         chosen)

    def export_to(self, path: Path) -> None:
        if path.exists():
            self.notify(f"{path} already exists; choose another file.", severity="error")
            return

        def exported(report: Any) -> None:
            rows = ", ".join(f"{n:,} {what}" for what, n in report.rows.items())
            self.conversation.add(f"Exported to {path}: {rows}", classes="info")

        self.run_job("exporting…", lambda: export_agent(self.agent.store, self.agent.name, path, held=self.agent),
                     exported)

    def action_rewind(self) -> None:
        if self.in_use:
            self.notify("Wait for the reply before rewinding.", severity="warning")
            return
        points = self.agent.restore_points()
        options = [(str(p.turn), f"{p.turn:>4}  {p.at.astimezone():%Y-%m-%d %H:%M}  {p.message_count:>6,} msgs  "
                                 f"{p.label[:60]}") for p in reversed(points[:-1])]
        if not options:
            self.notify("Nothing to rewind: this agent has no earlier restore point.", severity="warning")
            return

        def chosen(turn: str | None) -> None:
            self.focus_input()
            if turn is not None:
                self.rewind_to(int(turn))

        self.push_screen(PickerScreen("rewind to", options, "Everything after the point is taken back; the agent "
                                                            "as it is now is kept as a copy first."), chosen)

    def rewind_to(self, turn: int) -> None:
        backup = next_backup_name(self.agent)
        name = self.agent.name

        async def rewound(done: Any) -> None:
            await self.reshow()
            self.conversation.add(f"Rewound to point {turn}: {done.messages:,} message(s) and {done.edits} block "
                                  f'change(s) taken back. The agent as it was is kept as "{backup}" '
                                  f"(agentos rewind {name} --undo puts it back).", classes="info")

        self.run_job("rewinding… (keeping a copy first)", lambda: rewind_keeping_copy(self.agent, turn, backup),
                     rewound)

    # -- switching agents --------------------------------------------------------------------

    async def switch_to(self, open_: Callable[[], Agent], verb: str = "open") -> bool:
        """Open another agent (by `open_`) and show it; the current one is saved and closed only once it opened."""
        if self.in_use:
            self.notify("Wait for the reply (or cancel it with Escape) before switching agents.", severity="warning")
            return False
        try:
            new = open_()
        except Exception as exc:  # noqa: BLE001 - a clear notice; the current agent stays
            self.notify(f"could not {verb} that agent: {exc}", severity="error", timeout=10)
            return False
        old, self.agent = self.agent, new
        try:
            old.close()
        except Exception as exc:  # noqa: BLE001
            self.notify(f'could not save "{old.name}": {exc}', severity="error", timeout=10)
        self.tour = []
        self._touring = False
        self.ended = None
        prompt = self.query_one("#prompt", Input)
        prompt.disabled = False
        await self.reshow()
        self.focus_input()
        return True

    async def reshow(self) -> None:
        """Show the agent afresh (another agent, or this one after a rewind)."""
        await self.conversation.remove_children()
        await self.memory_panel.replace(self.agent.blocks)
        self.show_agent()
