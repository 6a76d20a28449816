"""The agentos TUI: conversation, input, live core memory panel and status line."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Input
from textual.worker import get_current_worker

from agentos.commands import Outcome, help_text, run_command
from agentos.events import (
    MemoryEdited,
    MessagesEvicted,
    Notice,
    ReplyIncomplete,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    UsageReported,
)
from agentos.formatting import (
    describe_edit,
    describe_eviction,
    describe_failure,
    describe_incomplete,
    ends_session,
    short,
)
from agentos.tui.messages import AgentEvent, StatusChanged, TurnEnded, TurnError
from agentos.tui.status import StatusInfo, take_status
from agentos.tui.widgets import Conversation, Line, MemoryPanel, Reply, StatusLine

if TYPE_CHECKING:
    from agentos.agent.agent import Agent

KEYS = "Escape cancels a reply in progress; Ctrl-C leaves."
HELP = help_text(KEYS)

QUIT_WAIT_SECONDS = 10.0


class AgentApp(App[int]):
    """Chat with one agent; each turn runs in a thread worker that posts its events here."""

    TITLE = "agentos"
    CSS = """
    #main { height: 1fr; }
    #conversation { width: 1fr; padding: 0 1; }
    #memory { width: 44; border: round $primary; padding: 0 1; }
    #memory:focus-within, #memory:focus { border: round $accent; }
    .block { margin-bottom: 1; }
    .block.changed { background: $success 30%; }
    .user { color: $accent; text-style: bold; margin-top: 1; }
    .reply { color: $text; }
    .tool { color: $text-muted; }
    .memory-edit { color: $success; }
    .info { color: $warning; }
    .error { color: $error; text-style: bold; }
    #status { height: 1; background: $boost; color: $text-muted; padding: 0 1; }
    #prompt { height: 3; }
    """
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel reply"),  # not priority: modal screens keep Escape
        Binding("ctrl+c", "quit", "Quit", priority=True),
    ]

    def __init__(self, agent: Agent) -> None:
        super().__init__()
        self.agent = agent
        self.busy = False
        self.closed = False
        self.ended: str | None = None
        self._cancel = threading.Event()
        self._reply: Reply | None = None
        self._tools: dict[str, Line] = {}
        self._status: StatusInfo | None = None
        self._activity = ""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield Conversation(id="conversation")
            yield MemoryPanel(self.agent.blocks, id="memory")
        yield StatusLine(id="status")
        yield Input(placeholder="Message (/help for commands)", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.agent.name
        self.conversation.add(f'Chatting with "{self.agent.name}" ({self.agent.model}). /help for commands.',
                              classes="info")
        self._set_status(take_status(self.agent))
        self.query_one("#prompt", Input).focus()

    @property
    def conversation(self) -> Conversation:
        return self.query_one("#conversation", Conversation)

    @property
    def memory_panel(self) -> MemoryPanel:
        return self.query_one("#memory", MemoryPanel)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    def _set_status(self, info: StatusInfo | None = None, activity: str | None = None) -> None:
        self._status = info or self._status
        self._activity = self._activity if activity is None else activity
        if self._status is not None:
            self.status_line.set_text(self._status.render(self._activity))

    # -- input -------------------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.clear()
        if not text:
            return
        if text.startswith("/"):
            self.command(text)
        elif self.busy:
            self.conversation.add("(a reply is in progress; Escape cancels it)", classes="info")
        else:
            self.start_turn(text)

    def command(self, line: str) -> None:
        """Run a slash command, as in the line REPL."""
        outcome = run_command(self.agent, line, keys=KEYS, busy=self.busy)
        if outcome.exit:
            self.call_later(self.action_quit)
            return
        if outcome.memory:
            self.memory_panel.show(self.agent.blocks)
            self.memory_panel.focus()
            return
        self.show(outcome)

    def show(self, outcome: Outcome) -> None:
        for text, style in outcome.lines:
            self.conversation.add(text, classes=style)
        self._set_status(take_status(self.agent))

    # -- the turn ----------------------------------------------------------------------------

    def start_turn(self, text: str) -> None:
        """Show the user's message and run the turn in a worker."""
        self.busy = True
        self._cancel.clear()
        self._reply = None
        self._tools.clear()
        self.conversation.add(f"you> {text}", classes="user")
        self._set_status(activity="thinking… (Escape cancels)")
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
            finally:
                self.post_message(TurnEnded(cancelled or self._cancel.is_set()))

    def action_cancel_turn(self) -> None:
        """Escape: ask the running turn to stop at its next event."""
        if self.busy and not self._cancel.is_set():
            self._cancel.set()
            self._set_status(activity="cancelling…")

    def on_agent_event(self, message: AgentEvent) -> None:
        event = message.event
        if isinstance(event, TextDelta):
            if self._reply is None:
                self._reply = self.conversation.start_reply(f"{self.agent.name}> ")
            self._reply.append(event.text)
            return
        self._reply = None
        if isinstance(event, ToolCallStarted):
            self._tools[event.call_id] = self.conversation.add(
                f"→ {event.name}({short(event.arguments, 70)})", classes="tool")
        elif isinstance(event, ToolCallFinished):
            line = self._tools.get(event.call_id)
            if event.is_error:
                text = f"✗ {event.name}: {short(event.result, 100)}"
                if line is None:
                    self.conversation.add(text, classes="error")
                else:
                    line.set_text(text)
                    line.set_classes("error")
        elif isinstance(event, MemoryEdited):
            self.conversation.add(describe_edit(event), classes="memory-edit")
            self.memory_panel.show(self.agent.blocks, changed=event.label)
        elif isinstance(event, MessagesEvicted):
            self.conversation.add(describe_eviction(event), classes="info")
        elif isinstance(event, ReplyIncomplete):
            self.conversation.add(describe_incomplete(event), classes="error")
        elif isinstance(event, Notice):
            self.conversation.add(f"! {event.text}", classes="info")
        elif isinstance(event, TurnFailed):
            self.conversation.add(describe_failure(event), classes="error")
            if ends_session(event):
                self.end_session(event.error)

    def end_session(self, why: str) -> None:
        """This session can no longer save the agent (deleted or taken over): no more turns."""
        self.ended = why
        prompt = self.query_one("#prompt", Input)
        prompt.placeholder = "This session has ended; the agent cannot be saved from here. Ctrl-C leaves."
        prompt.disabled = True

    def on_status_changed(self, message: StatusChanged) -> None:
        self._set_status(message.info)

    def on_turn_error(self, message: TurnError) -> None:
        self.conversation.add(f"error: {message.text}", classes="error")

    def on_turn_ended(self, message: TurnEnded) -> None:
        if message.cancelled:
            self.conversation.add("(cancelled)", classes="info")
        self.busy = False
        self._reply = None
        self._set_status(activity="")

    # -- quitting ----------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Ctrl-C or /exit: stop any turn, save the agent, leave."""
        self._cancel.set()
        try:
            await asyncio.wait_for(self.workers.wait_for_complete(), QUIT_WAIT_SECONDS)
        except TimeoutError:
            pass  # a stuck model call: the loop still saves when it returns; the store flushes at exit
        except Exception:  # noqa: BLE001 - a failed worker already showed its error
            pass
        if not self._turn_running():
            self.close_agent()
        self.exit(0)

    def _turn_running(self) -> bool:
        return any(w.group == "agent" and not w.is_finished for w in self.workers)

    def close_agent(self) -> None:
        """Save anything unsaved (once)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.agent.close()
        except Exception as exc:  # noqa: BLE001 - reported on the terminal after the app exits
            self.notify(f"could not save: {exc}", severity="error")


def run_tui(agent: Agent) -> int:
    """Run the app until the user leaves; return the exit code."""
    app = AgentApp(agent)
    code = app.run()
    if not app.closed and not app._turn_running():
        app.close_agent()
    return code or 0
