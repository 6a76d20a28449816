"""The agentos TUI: the conversation, the memory pane, the status bar and the input; dialogs for the rest."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Footer, Input
from textual.worker import get_current_worker

from agentos.commands import Outcome, help_text, run_command
from agentos.events import (
    MemoryEdited,
    MessagesEvicted,
    Notice,
    ReplyIncomplete,
    Retrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    UsageReported,
)
from agentos.formatting import (
    describe_eviction,
    describe_failure,
    describe_incomplete,
    describe_retry,
    ends_session,
)
from agentos.tui.conversation import Conversation, Reply, ToolCallView
from agentos.tui.diff import changed_chars
from agentos.tui.fact_news import FactNews
from agentos.tui.memory import BlockView, MemoryPanel
from agentos.tui.messages import AgentEvent, JobEnded, StatusChanged, TurnEnded, TurnError
from agentos.tui.screens import (
    AskScreen,
    BlockHistoryScreen,
    EditBlockScreen,
    NewAgent,
    NewAgentScreen,
    PickerScreen,
    SearchResult,
    SearchScreen,
    TextScreen,
)
from agentos.tui.status import StatusBar, StatusInfo, take_status

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

KEYS = """Keys:
  Enter       send the message (or run the /command)
  Escape      cancel the reply in progress (also during a retry's wait)
  Ctrl-P      command palette: switch agent, search memory, export, rewind, edit a block…
  F1          this help
  F2          switch agent, or create one
  F3          show or hide the memory pane
  Tab         move into the memory pane: on a block, h shows its history and e edits it
  Ctrl-C      quit (the agent is saved after every step)"""
HELP = help_text(KEYS)

QUIT_WAIT_SECONDS = 10.0
THINKING = "thinking… (Esc cancels)"
CANCEL_SECONDS = 0.4  # after Escape, how long a model call has to reach its next event before the screen lets go
SLOW_COMMANDS = {"/summarize"}  # commands that call the model: run in a worker, so the screen never freezes
SPIN_SECONDS = 0.1
TOUR_HINT = ("Guided tour: press Enter to send each suggested message and watch the memory pane, or type your own "
             "at any time. ({left} steps)")

Opener = Callable[[str], "Agent"]
Creator = Callable[[NewAgent], "Agent"]


def open_agent(name: str) -> Agent:
    from agentos.agent.agent import Agent

    return Agent.load(name)


def create_agent(spec: NewAgent) -> Agent:
    from agentos.agent.agent import Agent

    return Agent.create(spec.name, model=spec.model or None, persona=spec.persona or None, human=spec.human or None)


class AgentApp(FactNews):
    """Chat with an agent; each turn runs in a thread worker that posts its events here."""

    TITLE = "agentos"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    CSS = """
    #main { height: 1fr; }
    #conversation { width: 1fr; padding: 0 1; }
    #memory { width: 44; border: round $primary; padding: 0 1; }
    #memory:focus-within { border: round $accent; }
    .-narrow #main { layout: vertical; }
    .-narrow #memory { width: 1fr; height: 8; }
    #memory.hidden { display: none; }
    .block { height: auto; margin-bottom: 1; }
    .block:focus { background: $boost; }
    .block.changed .block-value { background: $success 10%; }
    .user { color: $accent; text-style: bold; margin-top: 1; }
    .speaker { color: $primary; text-style: bold; margin-top: 1; }
    Reply { margin: 0; padding: 0 0 0 1; border-left: wide $primary; background: transparent; }
    Reply > MarkdownBlock { margin: 0; }
    .tool { border: none; padding: 0; margin: 0; background: transparent; color: $text-muted; }
    .tool CollapsibleTitle { color: $text-muted; padding: 0; }
    .tool Contents { padding: 0 0 0 3; }
    .tool.error CollapsibleTitle { color: $error; }
    .marker { border: none; padding: 0; margin: 0 0 1 0; background: transparent; }
    .marker CollapsibleTitle { color: $secondary; text-style: italic; padding: 0; }
    .memory-edit { color: $success; }
    .info { color: $secondary; }
    .help { color: $text-muted; }
    .notice { color: $warning; }
    .error { color: $error; text-style: bold; }
    .found { background: $accent 30%; }
    #status { background: $boost; padding: 0 1; }
    #prompt { height: 3; }
    """
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel"),  # not priority: dialogs keep Escape
        Binding("ctrl+c", "quit", "Quit", priority=True),
        Binding("f1", "help", "Help"),
        Binding("f2", "pick_agent", "Agents"),
        Binding("f3", "toggle_memory", "Memory"),
    ]

    def __init__(self, agent: Agent, *, opener: Opener = open_agent, creator: Creator = create_agent,
                 tour: Sequence[str] = ()) -> None:
        super().__init__()
        self.agent = agent
        self.opener, self.creator = opener, creator
        self.tour = list(tour)
        self.busy = False
        self.closed = False
        self.quitting = False
        self.ended: str | None = None
        self._cancel = threading.Event()
        self._reply: Reply | None = None
        self._tools: dict[str, ToolCallView] = {}
        self._spinner: Any = None
        self._retry_line: Any = None
        self._touring = bool(self.tour)  # a guided tour is running (it says when it is over)
        self._found: dict[str, Any] = {}  # the last search's hits by id
        self._idle = threading.Event()  # no worker has the agent
        self._idle.set()
        self._abandoned = False  # Escape let go of a turn whose model call has not returned yet
        self._close_when_idle = False  # the app quit while a worker had the agent: the worker closes it
        self._close_lock = threading.Lock()
        self.close_error: str | None = None

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield Conversation(id="conversation")
            yield MemoryPanel(self.agent.blocks, id="memory")
        yield StatusBar(id="status")
        yield Input(placeholder="Message, or /help · F1 help · Ctrl-P commands", id="prompt")
        yield Footer()

    PROMPT_BLINKS = True  # tests and screenshots turn the cursor's blinking off

    def on_mount(self) -> None:
        self.query_one("#prompt", Input).cursor_blink = self.PROMPT_BLINKS
        self.show_agent()
        self.focus_input()

    def show_agent(self) -> None:
        """Show the current agent: its name, its in-context history, its blocks and its numbers."""
        agent = self.agent
        self.sub_title = agent.name
        self.conversation.add(f'Chatting with "{agent.name}" ({agent.model}). F1 for help, Ctrl-P for commands.',
                              classes="info")
        state = agent.state
        self.conversation.show_history(agent.name, agent.context, state.hidden_count, state.summary)
        if self.tour:
            self.conversation.add(TOUR_HINT.format(left=len(self.tour)), classes="info")
            self.query_one("#prompt", Input).value = self.tour[0]
        self.refresh_status()
        self.watch_facts(refresh=True)

    @property
    def conversation(self) -> Conversation:
        return self.query_one("#conversation", Conversation)

    @property
    def memory_panel(self) -> MemoryPanel:
        return self.query_one("#memory", MemoryPanel)

    @property
    def status_line(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = False) -> None:
        """A notification whose text is shown as it is: error text from a provider or a path is never markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def focus_input(self, *_: Any) -> None:
        prompt = self.query_one("#prompt", Input)
        if not prompt.disabled:
            prompt.focus()

    def refresh_status(self, info: StatusInfo | None = None, activity: str | None = None) -> None:
        try:
            info = info or (None if self.in_use else take_status(self.agent))
        except Exception as exc:  # noqa: BLE001 - the numbers are a nicety; never crash for them
            self.notify(f"could not read the agent's numbers: {exc}", severity="warning")
        self.status_line.set(info, activity)

    # -- input -------------------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "prompt":
            return
        text = event.value.strip()
        event.input.clear()
        if not text:
            return
        if text.startswith("/"):
            self.advance_tour(text)
            self.command(text)
        elif self.busy:  # kept in the input, to send once the reply is done
            event.input.value = text
            self.conversation.add("(a reply is in progress; Escape cancels it)", classes="info")
        elif self.in_use:  # a cancelled model call has not returned yet: keep what was typed
            event.input.value = text
            self.notify("The cancelled model call has not returned yet; send again in a moment.", severity="warning")
        else:
            self.advance_tour(text)
            self.start_turn(text)

    def advance_tour(self, sent: str) -> None:
        """Drop the tour's suggestion once sent; the next is offered when this turn ends."""
        if self.tour and sent == self.tour[0]:
            self.tour.pop(0)

    def offer_tour(self) -> None:
        prompt = self.query_one("#prompt", Input)
        if self.tour and not prompt.value:
            prompt.value = self.tour[0]
        elif not self.tour and self._touring:
            self._touring = False
            self.conversation.add("That was the tour: every memory tier at work. Keep talking, or press F1.",
                                  classes="info")

    def command(self, line: str) -> None:
        """Run a slash command, as in the line REPL (one that may call the model runs in a worker)."""
        if line.split()[0].lower() in SLOW_COMMANDS and not self.in_use:
            self.run_job("summarizing… (the model writes the summary)",
                         lambda: run_command(self.agent, line, keys=KEYS), self.after_command)
            return
        self.after_command(run_command(self.agent, line, keys=KEYS, busy=self.in_use))

    def after_command(self, outcome: Outcome) -> None:
        if outcome.exit:
            self.call_later(self.action_quit)
            return
        if outcome.memory:
            self.memory_panel.remove_class("hidden")
            self.memory_panel.show(self.agent.blocks)
            self.conversation.add("Core memory is in the memory pane (F3 shows or hides it; Tab moves into it, "
                                  "then h shows a block's history and e edits it).", classes="info")
            return
        self.show(outcome)
        self.offer_tour()

    def show(self, outcome: Outcome) -> None:
        for text, style in outcome.lines:
            self.conversation.add(text, classes="help" if text.startswith("Commands:") else style)
        if any(style == "error" for _, style in outcome.lines):
            self.notify(outcome.lines[-1][0].split(". ")[0], severity="error")
        self.refresh_status()

    # -- the turn ----------------------------------------------------------------------------

    def begin_busy(self, activity: str) -> None:
        """The agent is in a worker's hands (a turn or a job): the spinner runs until `end_busy`."""
        self.busy = True
        self._idle.clear()
        self.status_line.set(activity=activity)
        self._spinner = self.set_interval(SPIN_SECONDS, lambda: self.status_line.spin(self.busy))

    def end_busy(self) -> None:
        self.busy = False
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        self.status_line.spin(False)
        self.status_line.set(activity="")

    def worker_done(self) -> None:
        """Called on the worker's thread as it lets go of the agent; closes it if the app quit without waiting."""
        self._idle.set()
        if self.quitting and self._close_when_idle:
            self.close_agent()

    def start_turn(self, text: str) -> None:
        """Show the user's message and run the turn in a worker."""
        self._cancel.clear()
        self._reply = None
        self._tools.clear()
        self.memory_panel.settle(self.agent.blocks)
        self.conversation.add(f"you> {text}", classes="user")
        self.conversation.anchor()  # back to following the end (a search's jump may have scrolled away)
        self.begin_busy(THINKING)
        self.run_turn(text)

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False)
    def run_turn(self, text: str) -> None:
        """Iterate the turn on this thread, posting each event; close the generator to cancel."""
        worker = get_current_worker()
        cancelled = False
        events = self.agent.turn(text)
        try:
            for event in events:
                self.post_message(AgentEvent(event))
                if isinstance(event, (UsageReported, MessagesEvicted)):
                    self.post_message(StatusChanged(take_status(self.agent)))
                if self._cancel.is_set() or worker.is_cancelled:
                    cancelled = True
                    break
        except Exception as exc:  # noqa: BLE001 - one clear line, never a crash
            self.post_message(TurnError(f"{type(exc).__name__}: {exc}"))
        finally:
            try:
                events.close()  # the loop's cleanup: pairs tool calls with results and saves
            except Exception as exc:  # noqa: BLE001
                self.post_message(TurnError(f"{type(exc).__name__}: {exc}"))
            try:
                self.post_message(StatusChanged(take_status(self.agent)))
            except Exception:  # noqa: BLE001 - the numbers are a nicety
                pass
            finally:
                self.worker_done()
                self.post_message(TurnEnded(cancelled or self._cancel.is_set()))

    @property
    def in_use(self) -> bool:
        """A worker has the agent: a turn or job, or a cancelled turn whose model call has not returned yet."""
        return self.busy or not self._idle.is_set()

    def action_cancel_turn(self) -> None:
        """Escape: ask the running turn to stop at its next event (a retry's wait yields every quarter second). A
        model call that sends nothing within CANCEL_SECONDS is let go of: the screen is free at once, nothing of
        that call is shown, and its worker saves the agent when the call returns."""
        if self.busy and not self._cancel.is_set():
            self._cancel.set()
            self.status_line.set(activity="cancelling…")
            self.set_timer(CANCEL_SECONDS, self._let_go)

    def _let_go(self) -> None:
        if self.busy and self._cancel.is_set() and not self.quitting:
            self._abandoned = True
            self.end_busy()
            self.conversation.add("(cancelled; the model call still under way is dropped when it returns)",
                                  classes="info")
            self.refresh_status()

    async def on_agent_event(self, message: AgentEvent) -> None:
        if self.quitting or self._abandoned:
            return
        event = message.event
        if isinstance(event, TextDelta):
            if self._reply is None:
                self._reply = self.conversation.start_reply(self.agent.name)
                if self._retry_line is not None:  # the retry worked: the reply is streaming
                    self._retry_line = None
                    self.status_line.set(activity=THINKING)
            await self._reply.add(event.text)
            return
        await self.end_reply()
        if isinstance(event, Retrying):
            self.show_retry(event)
            return
        if self._retry_line is not None:
            self._retry_line = None
            self.status_line.set(activity=THINKING if self.busy else "")
        if isinstance(event, ToolCallStarted):
            self._tools[event.call_id] = self.conversation.add_tool_call(event.call_id, event.name, event.arguments)
        elif isinstance(event, ToolCallFinished):
            view = self._tools.get(event.call_id)
            if view is not None:
                view.finish(event.result, event.is_error)
        elif isinstance(event, MemoryEdited):
            self.show_edit(event.label, event.old_value, event.new_value, "the model")
        elif isinstance(event, MessagesEvicted):
            self.conversation.add(describe_eviction(event), classes="info")
        elif isinstance(event, ReplyIncomplete):
            self.conversation.add(describe_incomplete(event), classes="notice")
        elif isinstance(event, Notice):
            self.conversation.add(f"! {event.text}", classes="notice")
        elif isinstance(event, TurnFailed):
            text = describe_failure(event)
            self.conversation.add(text, classes="error")
            self.notify(text, severity="error", timeout=8)
            if ends_session(event):
                self.end_session(event.error)

    async def end_reply(self) -> None:
        if self._reply is not None:
            reply, self._reply = self._reply, None
            await reply.finish()

    def show_retry(self, event: Retrying) -> None:
        """A retry's wait: one notice per attempt, and a countdown on the status line."""
        text = describe_retry(event)
        if self._retry_line is None or event.remaining >= event.wait:
            self._retry_line = self.conversation.add(f"! {text}", classes="notice")
        self.status_line.set(activity=f"{text} (Esc cancels)")

    def show_edit(self, label: str, old: str, new: str, who: str) -> None:
        """An edit as a line in the conversation and a diff in its block (from the edit's own values: the worker may
        already be changing the agent further)."""
        added, removed = changed_chars(old, new)
        self.conversation.add(f"✎ memory [{label}] +{added}/−{removed} chars by {who}", classes="memory-edit")
        self.memory_panel.show_edit(self.agent.blocks, label, old, new, who)
        view = self.memory_panel.view(label)
        if view is not None:  # once the new value is laid out
            self.call_after_refresh(self.memory_panel.scroll_to_widget, view, animate=False)

    def end_session(self, why: str) -> None:
        """This session can no longer save the agent (deleted or taken over): no more turns."""
        self.ended = why
        prompt = self.query_one("#prompt", Input)
        prompt.placeholder = "This session has ended; the agent cannot be saved from here. Ctrl-C leaves."
        prompt.disabled = True

    def on_status_changed(self, message: StatusChanged) -> None:
        if not self.quitting:
            self.status_line.set(message.info)

    def on_turn_error(self, message: TurnError) -> None:
        if not self.quitting:
            self.conversation.add(f"error: {message.text}", classes="error")
            self.notify(message.text, severity="error", timeout=8)

    async def on_turn_ended(self, message: TurnEnded) -> None:
        self.busy = False
        if self.quitting:
            return
        self.end_busy()
        await self.end_reply()
        if self._abandoned:  # already said
            self._abandoned = False
        elif message.cancelled:
            self.conversation.add("(cancelled)", classes="info")
        self.refresh_status()
        self._retry_line = None
        self.offer_tour()
        self.watch_facts()

    def run_job(self, activity: str, job: Callable[[], Any], then: Callable[[Any], Any]) -> None:
        """Run `job` (a summary, an export, a rewind: work that may call the model or take seconds) in a worker,
        with the spinner; `then(result)` runs here afterwards, and a failure is a notice."""
        if self.in_use:
            self.notify("Wait for the reply (or cancel it with Escape) first.", severity="warning")
            return
        self.begin_busy(activity)
        self._run_job(job, then)

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False)
    def _run_job(self, job: Callable[[], Any], then: Callable[[Any], Any]) -> None:
        result: Any = None
        error: Exception | None = None
        try:
            result = job()
        except Exception as exc:  # noqa: BLE001 - a notice; the app goes on
            error = exc
        finally:
            self.worker_done()  # before the app hears of it, so that it finds the agent free
        self.post_message(JobEnded(then, result=result, error=error))

    async def on_job_ended(self, message: JobEnded) -> None:
        if self.quitting:
            return
        self.end_busy()
        if message.error is not None:
            self.notify(f"{message.error}", severity="error", timeout=10)
        else:
            outcome = message.then(message.result)
            if asyncio.iscoroutine(outcome):
                await outcome
        self.refresh_status()
        self.watch_facts()

    def on_collapsible_expanded(self) -> None:
        """A tool call or the summary marker opened (or closed, below): typing goes on in the input."""
        self.call_after_refresh(self.focus_input)

    def on_collapsible_collapsed(self) -> None:
        self.call_after_refresh(self.focus_input)

    # -- the memory pane ---------------------------------------------------------------------

    def action_toggle_memory(self) -> None:
        self.memory_panel.toggle_class("hidden")
        self.focus_input()

    def on_block_view_action(self, message: BlockView.Action) -> None:
        if message.action == "history":
            self.action_block_history(message.label)
        else:
            self.action_edit_block(message.label)

    def action_block_history(self, label: str) -> None:
        self.push_screen(BlockHistoryScreen(label, self.agent.memory_edits()), self.focus_input)

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
            self.refresh_status()
            return None

        self.push_screen(EditBlockScreen(label, block.value, block.limit, save), self.focus_input)

    # -- commands: agents, search, export, rewind --------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Switch agent", "Open another agent, or create one", self.action_pick_agent)
        yield SystemCommand("New agent", "Create an agent and switch to it", self.action_new_agent)
        yield SystemCommand("Search archival memory", "The passages the agent stored", self.action_search_archival)
        yield SystemCommand("Search recall memory", "Every message, in context or not; jump to one",
                            self.action_search_recall)
        yield SystemCommand("Summarize now", "Summarize and evict old messages (they stay in recall)",
                            lambda: self.command("/summarize"))
        yield SystemCommand("Export agent", "Write everything to one .agentos file", self.action_export)
        yield SystemCommand("Rewind", "Go back to a restore point (a copy of the agent is kept)", self.action_rewind)
        if self._watched is not None:
            yield SystemCommand("Facts", "The current facts from fact memory, newest first; type to filter",
                                self.action_facts)
        for block in self.agent.blocks:
            label = block.label
            yield SystemCommand(f"Edit block: {label}", escape(f"Edit [{label}] by hand (logged as your edit)"),
                                lambda label=label: self.action_edit_block(label))
            yield SystemCommand(f"Block history: {label}", escape(f"Every edit of [{label}] as a diff"),
                                lambda label=label: self.action_block_history(label))

    def action_help(self) -> None:
        self.push_screen(TextScreen("help", HELP), self.focus_input)

    def action_pick_agent(self) -> None:
        from agentos.agent.agent import list_agents

        options = [("+new", "+ New agent…")]
        for s in list_agents(store=self.agent.store):
            mark = "● " if s.name == self.agent.name else "  "
            options.append((s.name, f"{mark}{s.name}  ·  {s.model}  ·  {s.message_count:,} messages  ·  "
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

    def _search(self, tier: str) -> Callable[[str], tuple[str, list[SearchResult]]]:
        from agentos.memory.archival import ArchivalTier
        from agentos.memory.recall import RecallTier
        from agentos.retrieval.recall_paths import MATCHING_PATHS

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

    def action_export(self) -> None:
        if self.in_use:
            self.notify("Wait for the reply before exporting.", severity="warning")
            return
        from agentos.portable.archive import SUFFIX

        def chosen(path: str | None) -> None:
            self.focus_input()
            if path:
                self.export_to(Path(path).expanduser())

        self.push_screen(AskScreen("export agent to", str(Path.cwd() / f"{self.agent.name}{SUFFIX}"),
                                   "Everything the agent has, in one file (import it with: agentos import FILE)"),
                         chosen)

    def export_to(self, path: Path) -> None:
        from agentos.portable.archive import export_agent

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
        from agentos.cli_history import next_backup_name, rewind_keeping_copy

        backup = next_backup_name(self.agent)
        name = self.agent.name

        async def rewound(done: Any) -> None:
            await self.reshow()
            self.conversation.add(f"Rewound to point {turn}: {done.messages:,} message(s) and {done.edits} block "
                              f'change(s) taken back. The agent as it was is kept as "{backup}" '
                              f"(agentos rewind {name} --undo puts it back).", classes="info")

        self.run_job("rewinding… (keeping a copy first)", lambda: rewind_keeping_copy(self.agent, turn, backup),
                     rewound)

    async def reshow(self) -> None:
        """Show the agent afresh (another agent, or this one after a rewind)."""
        await self.conversation.remove_children()
        await self.memory_panel.replace(self.agent.blocks)
        self.show_agent()

    # -- quitting ----------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Ctrl-C or /exit: stop any turn, save the agent, leave. A model call that does not return within
        QUIT_WAIT_SECONDS is left to finish: its worker saves and closes the agent when it does."""
        if self.quitting:
            return
        self.quitting = True
        self._cancel.set()
        if not self._idle.is_set():
            self.status_line.set(activity="quitting: waiting for the model call to end…")
        idle = await asyncio.to_thread(self._idle.wait, QUIT_WAIT_SECONDS)
        if idle:
            self.close_agent()
        else:
            self._close_when_idle = True
            if self._idle.is_set():  # it ended just now, before it could see the flag
                self.close_agent()
        self.exit(1 if self.close_error else 0)

    def close_agent(self) -> None:
        """Save anything unsaved and let go of the agent (once; from the app or a worker's thread)."""
        with self._close_lock:
            if self.closed:
                return
            self.closed = True
            self._unwatch()
            try:
                self.agent.close()
            except Exception as exc:  # noqa: BLE001 - run_tui prints it once the screen is the terminal's again
                self.close_error = f"could not save {self.agent.name!r}: {exc}"


def run_tui(agent: Agent, tour: Sequence[str] = ()) -> int:
    """Run the app until the user leaves; return the exit code (1 when the agent could not be saved)."""
    app = AgentApp(agent, tour=tour)
    code = app.run()
    if app._idle.is_set():
        app.close_agent()
    if app.close_error:
        print(f"error: {app.close_error}", file=sys.stderr)
        return 1
    return code or 0
