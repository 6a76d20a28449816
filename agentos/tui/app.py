"""The agentos TUI: the conversation, the memory pane, the status bar and the input; dialogs for the rest."""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Collapsible, Footer, Input

from agentos.agent.agent import Agent
from agentos.commands.console import Outcome
from agentos.commands.slash import run_command, runs_long
from agentos.events import Event
from agentos.presenter import is_fact_news, present
from agentos.tui.conversation import Conversation
from agentos.tui.dialogs import Creator, Opener, create_agent, open_agent
from agentos.tui.diff import changed_chars
from agentos.tui.facts import FactsSection
from agentos.tui.keys import HELP, KEYS, ConversationKeys
from agentos.tui.memory import BlockView, MemoryPanel
from agentos.tui.messages import AgentEvent, FactsRead, NewsArrived
from agentos.tui.news import NewsThread
from agentos.tui.opening import SENT_WHEN_OPEN, Loader, Opening
from agentos.tui.palette import palette_entries
from agentos.tui.screens import TextScreen
from agentos.tui.status import StatusBar, StatusInfo, take_status
from agentos.tui.view import ConversationView

QUIT_WAIT_SECONDS = 10.0
TOUR_HINT = ("Guided tour: press Enter to send each suggested message and watch the memory pane, or type your own "
             "at any time. ({left} steps)")


class AgentApp(Opening, ConversationKeys):
    """Chat with an agent; each turn runs in a thread worker that posts its events here, and a news thread posts
    what happens between turns; the presenter shows both. Given a loader instead of an agent, the app paints first
    and loads the agent behind the frame."""

    TITLE = "agentos"
    AUTO_FOCUS = "#prompt"  # keys that arrive while the app starts go to the input, not to the first block
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
    .marker CollapsibleTitle { color: $secondary; text-style: italic; padding: 0; width: 1fr; }
    .-chosen > CollapsibleTitle { background: $accent 40%; color: $text; }
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
        Binding("f4", "browse", "Expand"),
    ]

    def __init__(self, agent: Agent | Loader, *, opener: Opener = open_agent, creator: Creator = create_agent,
                 tour: Sequence[str] = ()) -> None:
        super().__init__()
        self.take(agent)
        self.opener, self.creator = opener, creator
        self.tour = list(tour)
        self.busy = False
        self.closed = False
        self.quitting = False
        self.ended: str | None = None
        self.view = ConversationView(self)
        self.facts = FactsSection(self, lambda: self.memory_panel)
        self.news: NewsThread | None = None
        self._cancel = threading.Event()
        self._spinner: Any = None
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
            yield MemoryPanel([] if self.load else self.agent.blocks, id="memory")
        yield StatusBar(id="status")
        yield Input(placeholder="Message, or /help · F1 help · Ctrl-P commands", id="prompt",
                    select_on_focus=False)  # back from a dialog or the conversation, typing adds to the draft
        yield Footer()

    PROMPT_BLINKS = True  # tests and screenshots turn the cursor's blinking off

    def on_mount(self) -> None:
        self.query_one("#prompt", Input).cursor_blink = self.PROMPT_BLINKS
        self.open_or_show()
        self.focus_input()

    def show_agent(self, info: StatusInfo | None = None) -> None:
        """Show the current agent: its name, its in-context history, its blocks and its numbers (`info`, when they
        were read already)."""
        agent = self.agent
        self.sub_title = agent.name
        self.conversation.add(f'Chatting with "{agent.name}" ({agent.model}). F1 for help, Ctrl-P for commands.',
                              classes="info")
        state = agent.state
        self.conversation.show_history(agent.name, agent.context, state.hidden_count, state.summary)
        if self.tour:
            self.conversation.add(TOUR_HINT.format(left=len(self.tour)), classes="info")
            self.offer_tour()  # unless something was typed already
        self.refresh_status(info)
        self.follow_news()
        self.facts.check(agent, refresh=True)

    def follow_news(self) -> None:
        """Take the shown agent's background news on a thread of its own (the last agent's thread stops)."""
        if self.news is not None:
            self.news.stop()
        self.news = NewsThread(self, self.agent).start()

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
        """Focus the input now (not once the keys already typed are handled: they are for the input)."""
        prompt = self.query_one("#prompt", Input)
        if not prompt.disabled:
            prompt.screen.set_focus(prompt)

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
        if text:
            self.send(text)

    def send(self, text: str) -> None:
        """Send a message, or run a slash command; a message that cannot go now stays in the input."""
        prompt = self.query_one("#prompt", Input)
        if self.opening:  # sent once the agent is shown
            prompt.value = text
            if not self.send_when_open:
                self.send_when_open = True
                self.conversation.add(SENT_WHEN_OPEN, classes="info")
        elif text.startswith("/"):
            self.advance_tour(text)
            self.command(text)
        elif self.busy:  # kept in the input, to send once the reply is done
            prompt.value = text
            self.conversation.add("(a reply is in progress; Escape cancels it)", classes="info")
        elif self.in_use:  # a cancelled model call has not returned yet: keep what was typed
            prompt.value = text
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
        if runs_long(line) and not self.in_use:
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

    # -- showing events ----------------------------------------------------------------------

    async def on_agent_event(self, message: AgentEvent) -> None:
        if self.quitting or self._abandoned:
            return
        await self.present(message.event)

    async def on_news_arrived(self, message: NewsArrived) -> None:
        """Background news of the agent shown: shown as a turn's events are; fact news rereads the facts section."""
        if self.quitting or message.agent is not self.agent:
            return
        await self.present(message.event)
        if is_fact_news(message.event):
            self.facts.check(self.agent, refresh=True)

    async def present(self, event: Event) -> None:
        """Show one event through the presenter, awaiting what the view returned (a reply's streaming), in order."""
        for step in present(event, self.view):
            if inspect.isawaitable(step):
                await step

    def on_facts_read(self, message: FactsRead) -> None:
        """A read of fact memory is done: show it, or say why it failed."""
        if self.quitting or message.agent is not self.agent:  # read for an agent no longer shown
            return
        if message.error is not None:
            self.notify(f"could not read fact memory: {message.error}", severity="error", timeout=8)
            return
        message.then(message.result)

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

    def on_collapsible_expanded(self, message: Collapsible.Toggled) -> None:
        """A tool call or the summary marker opened (or closed, below): typing goes on in the input, or, while F4 has
        the focus on the lines, on the line opened."""
        if self.conversation.browsing:
            self.conversation.choose(message.collapsible)
        else:
            self.call_after_refresh(self.focus_input)

    def on_collapsible_collapsed(self, message: Collapsible.Toggled) -> None:
        self.on_collapsible_expanded(message)

    # -- the memory pane ---------------------------------------------------------------------

    def action_toggle_memory(self) -> None:
        self.memory_panel.toggle_class("hidden")
        self.focus_input()

    def on_block_view_action(self, message: BlockView.Action) -> None:
        if message.action == "history":
            self.action_block_history(message.label)
        else:
            self.action_edit_block(message.label)

    # -- the palette, help and switching agents ---------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not self.opening:
            yield from palette_entries(self, self.facts.shown)

    def action_pick_agent(self) -> None:
        if self.opening:
            self.notify("The agent is still opening.", severity="warning")
            return
        super().action_pick_agent()

    def action_help(self) -> None:
        self.push_screen(TextScreen("help", HELP), self.focus_input)

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
            if self.news is not None:
                self.news.stop()
            agent: Agent | None = getattr(self, "agent", None)  # None: it never opened
            if agent is None:
                return
            try:
                agent.close()
            except Exception as exc:  # noqa: BLE001 - run_tui prints it once the screen is the terminal's again
                self.close_error = f"could not save {agent.name!r}: {exc}"


def run_tui(agent: Agent | Loader, tour: Sequence[str] = ()) -> int:
    """Run the app until the user leaves; return the exit code (1 when the agent could not be saved). Given a loader
    (`lambda: Agent.load(name)`), the frame paints and takes typing while it loads; an error opening it is raised
    here, once the screen is the terminal's again."""
    app = AgentApp(agent, tour=tour)
    code = app.run()
    if app.open_error is not None:
        raise app.open_error
    if app._idle.is_set():
        app.close_agent()
    if app.close_error:
        print(f"error: {app.close_error}", file=sys.stderr)
        return 1
    return code or 0
