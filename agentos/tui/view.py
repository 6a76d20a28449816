"""How the TUI shows events: the presenter's view for the app, writing into the conversation, the memory pane, the
status line and notifications."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from textual.notifications import SeverityLevel

from agentos.agent.agent import Agent
from agentos.events import FactsNotice, MemoryEdited, Retrying, ToolCallFinished, ToolCallStarted, TurnFailed
from agentos.presenter import Kind, describe_fact_changes
from agentos.tui.conversation import Conversation, Reply, ToolCallView
from agentos.tui.status import StatusBar


class Screen(Protocol):
    """What the view writes into: the app's conversation, status line and notifications."""

    agent: Agent
    busy: bool

    @property
    def conversation(self) -> Conversation: ...

    @property
    def status_line(self) -> StatusBar: ...

    def show_edit(self, label: str, old: str, new: str, who: str) -> None: ...

    def end_session(self, why: str) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None,
               markup: bool = True) -> None: ...

THINKING = "thinking… (Esc cancels)"


class ConversationView:
    """The app's side of the presenter: what each kind of event does on screen (the reply streaming, tool calls by
    id, a retry's countdown)."""

    def __init__(self, app: Screen) -> None:
        self.app = app
        self.reply: Reply | None = None
        self.tools: dict[str, ToolCallView] = {}
        self.retry_line: Any = None

    def new_turn(self) -> None:
        """A turn begins: no reply or tool call of it yet."""
        self.reply = None
        self.tools.clear()
        self.retry_line = None

    def reply_text(self, text: str) -> Awaitable[None]:
        if self.reply is None:
            self.reply = self.app.conversation.start_reply(self.app.agent.name)
            if self.retry_line is not None:  # the retry worked: the reply is streaming
                self.retry_line = None
                self.app.status_line.set(activity=THINKING)
        return self.reply.add(text)

    def reply_end(self) -> Awaitable[None] | None:
        if self.reply is None:
            return None
        reply, self.reply = self.reply, None
        return reply.finish()

    def retry_over(self) -> None:
        if self.retry_line is not None:
            self.retry_line = None
            self.app.status_line.set(activity=THINKING if self.app.busy else "")

    def tool_started(self, event: ToolCallStarted) -> None:
        self.tools[event.call_id] = self.app.conversation.add_tool_call(event.call_id, event.name, event.arguments)

    def tool_finished(self, event: ToolCallFinished) -> None:
        view = self.tools.get(event.call_id)
        if view is not None:
            view.finish(event.result, event.is_error)

    def memory_edited(self, event: MemoryEdited) -> None:
        self.app.show_edit(event.label, event.old_value, event.new_value, "the model")

    def retrying(self, event: Retrying, text: str) -> None:
        """A retry's wait: one notice per attempt, and a countdown on the status line."""
        if self.retry_line is None or event.remaining >= event.wait:
            self.retry_line = self.app.conversation.add(f"! {text}", classes="notice")
        self.app.status_line.set(activity=f"{text} (Esc cancels)")

    def line(self, text: str, kind: Kind) -> None:
        self.app.conversation.add(text, classes=kind)

    def failed(self, event: TurnFailed, text: str, ends_session: bool) -> None:
        self.app.conversation.add(text, classes="error")
        self.app.notify(text, severity="error", timeout=8)
        if ends_session:
            self.app.end_session(event.error)

    def facts_changed(self, lines: list[str]) -> None:
        self.app.notify(describe_fact_changes(lines), title="fact memory", timeout=8)

    def facts_notice(self, event: FactsNotice) -> None:
        self.app.notify(event.text, title="fact memory", severity=event.level, timeout=10)
