"""The conversation pane: user lines, Markdown replies, expandable tool calls, notices and the summary marker; F4
moves onto the expandable lines, to open and close them from the keyboard."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets._markdown import MarkdownStream

from agentos.formatting import short
from agentos.messages import Message

TITLE_ARGS = 60  # characters of a tool call's arguments in its one-line title
DETAIL_CHARS = 20_000  # of a tool call's arguments, and of its result, shown when it is expanded
HISTORY_SHOWN = 200  # in-context messages shown on open (the rest stay in context, and in recall)


class Line(Static):
    """One plain-text entry (no markup, so user text shows as typed)."""

    def __init__(self, text: str, *, classes: str = "", message_id: str | None = None) -> None:
        super().__init__(text, markup=False, classes=classes)
        self.text = text
        self.message_id = message_id

    def set_text(self, text: str) -> None:
        """Replace the entry's text."""
        self.text = text
        self.update(text)


class Reply(Markdown):
    """The assistant's reply as Markdown, growing as text deltas arrive."""

    def __init__(self, speaker: str, body: str = "", message_id: str | None = None) -> None:
        super().__init__(body, classes="reply", open_links=False)  # a link in a reply is not followed on a click
        self.speaker = speaker
        self.body = body
        self.message_id = message_id
        self.border_title = speaker
        self._stream: MarkdownStream | None = None

    @property
    def text(self) -> str:
        """The reply as a line of the transcript: `name> body`."""
        return f"{self.speaker}> {self.body}"

    async def add(self, fragment: str) -> None:
        """Append streamed text (rendering is batched while the stream is fast)."""
        self.body += fragment
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(fragment)

    async def finish(self) -> None:
        """The reply is complete: flush what the stream still holds."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()


def _pretty(arguments: str) -> str:
    try:
        return _capped(json.dumps(json.loads(arguments), indent=2, ensure_ascii=False))
    except (ValueError, TypeError):
        return _capped(arguments)


def _capped(text: str) -> str:
    """At most DETAIL_CHARS of `text` (a huge result would freeze the screen that lays it out)."""
    return text if len(text) <= DETAIL_CHARS else f"{text[:DETAIL_CHARS]}\n… {len(text) - DETAIL_CHARS:,} more characters"


class ToolCallView(Collapsible):
    """A tool call: one line (name and arguments, then how it ended) that expands to its arguments and result."""

    def __init__(self, call_id: str, name: str, arguments: str) -> None:
        self.detail = Static("", markup=False, classes="tool-detail")
        super().__init__(self.detail, title="", collapsed=True, classes="tool")
        self._title.can_focus = False  # Tab goes from the input to the memory pane; F4 or a click opens it
        self.call_id, self.tool_name, self.arguments = call_id, name, arguments
        self.result: str | None = None
        self.is_error = False
        self._show()

    @property
    def text(self) -> str:
        """The title line as plain text."""
        call = f"{self.tool_name}({short(self.arguments, TITLE_ARGS)})"
        if self.result is None:
            return f"→ {call}"
        return f"✗ {self.tool_name}: {short(self.result, 100)}" if self.is_error else f"✓ {call}"

    def finish(self, result: str, is_error: bool) -> None:
        """The call ran: show its result and whether it failed."""
        self.result, self.is_error = result, is_error
        self.set_class(is_error, "error")
        self._show()

    def _show(self) -> None:
        self._title.label = Content(self.text)  # plain text: arguments are never read as markup
        body = Text.assemble(("arguments\n", "bold"), _pretty(self.arguments))
        if self.result is not None:
            body.append("\n\nresult\n", "bold")
            body.append(_capped(self.result), "red" if self.is_error else "")
        self.detail.update(body)


def speaker_label(speaker: str) -> Static:
    """The name above a reply (not an entry of its own in `texts`)."""
    return Static(f"{speaker}>", markup=False, classes="speaker")


class SummaryMarker(Collapsible):
    """Where older messages were summarized: a line (wrapped, never cut) that expands to the summary."""

    def __init__(self, hidden: int, summary: str) -> None:
        super().__init__(Static(summary or "(no summary)", markup=False, classes="summary"),
                         title=escape(f"⋯ {hidden:,} older messages were summarized (they stay in recall memory) — "
                                      f"expand for the summary"), collapsed=True, classes="marker")
        self._title.can_focus = False


class Conversation(VerticalScroll, can_focus=False):
    """The scrolling transcript; stays anchored to the bottom while replies stream. PageUp and the rest scroll it
    (the app's keys); F4 focuses it to choose among its expandable lines (tool calls, the summary marker)."""

    BINDINGS = [
        Binding("up", "choose(-1)", "Previous", key_display="↑"),
        Binding("down", "choose(1)", "Next", key_display="↓"),
        Binding("enter,space", "open_close", "Open/close"),
        Binding("home", "choose_end(0)", "First", show=False),
        Binding("end", "choose_end(-1)", "Last", show=False),
        Binding("escape", "app.back_to_input", "Back"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.browsing = False  # focus is on the expandable lines (only then can the conversation take focus)
        self.chosen: Collapsible | None = None

    def on_mount(self) -> None:
        self.anchor()

    def allow_focus(self) -> bool:
        return self.browsing

    def expandables(self) -> list[Collapsible]:
        """The lines that open: tool calls and the summary marker, top to bottom."""
        return [child for child in self.children if isinstance(child, Collapsible)]

    def browse(self) -> bool:
        """Focus the newest expandable line (False when there is none: focus stays where it is)."""
        lines = self.expandables()
        if not lines:
            return False
        self.browsing = True
        self.choose(self.chosen if self.chosen in lines else lines[-1])
        self.screen.set_focus(self, scroll_visible=False)  # now, not after the keys already typed
        return True

    def choose(self, line: Collapsible | None) -> None:
        """Mark `line` as the chosen one and scroll it into view."""
        if self.chosen is not None:
            self.chosen.remove_class("-chosen")
        self.chosen = line
        if line is not None:
            line.add_class("-chosen")
            self.scroll_to_widget(line, animate=False)

    def action_choose(self, step: int) -> None:
        lines = self.expandables()
        if lines:
            at = lines.index(self.chosen) if self.chosen in lines else len(lines) - 1
            self.choose(lines[max(0, min(len(lines) - 1, at + step))])

    def action_choose_end(self, index: int) -> None:
        lines = self.expandables()
        if lines:
            self.choose(lines[index])

    def action_open_close(self) -> None:
        if self.chosen is not None and self.chosen.parent is self:
            self.chosen.collapsed = not self.chosen.collapsed
            self.call_after_refresh(self.scroll_to_widget, self.chosen, animate=False)

    def on_blur(self) -> None:
        """Focus went elsewhere on this screen (not to a dialog over it): no line is chosen any more."""
        if self.screen.is_current:
            self.browsing = False
            self.choose(None)

    def add(self, text: str, classes: str = "", message_id: str | None = None) -> Line:
        """Append one entry and return it."""
        line = Line(text, classes=classes, message_id=message_id)
        self.mount(line)
        return line

    def start_reply(self, speaker: str) -> Reply:
        """Append an empty reply to stream into, under its speaker's name."""
        reply = Reply(speaker)
        self.mount_all([speaker_label(speaker), reply])
        return reply

    def add_tool_call(self, call_id: str, name: str, arguments: str) -> ToolCallView:
        view = ToolCallView(call_id, name, arguments)
        self.mount(view)
        return view

    def entries(self) -> list[Widget]:
        return [child for child in self.children if isinstance(child, (Line, Reply, ToolCallView))]

    def texts(self) -> list[str]:
        """Every entry's text, in order (for tests and copying)."""
        return [child.text for child in self.entries()]  # type: ignore[attr-defined]

    def find(self, message_id: str, text: str = "") -> Widget | None:
        """The entry showing message `message_id` (or, for entries of this session, which do not know their message's
        id, the last one showing `text`), if it is shown."""
        entries = self.entries()
        by_id = next((e for e in entries if getattr(e, "message_id", None) == message_id), None)
        if by_id is not None or not text:
            return by_id
        shown = {f"you> {text}", text}
        return next((e for e in reversed(entries) if getattr(e, "message_id", None) is None and
                     (getattr(e, "text", None) in shown or getattr(e, "body", None) == text)), None)

    def show_history(self, speaker: str, context: Sequence[Message], hidden: int, summary: str) -> None:
        """The agent's in-context messages, after a marker saying how many older ones were summarized."""
        widgets: list[Widget] = []
        if len(context) > HISTORY_SHOWN:
            widgets.append(Line(f"⋯ {len(context) - HISTORY_SHOWN:,} earlier messages in context are not shown here "
                                f"(Ctrl-P, Search recall memory finds any of them)", classes="info"))
            context = context[-HISTORY_SHOWN:]
        if hidden:
            widgets.append(SummaryMarker(hidden, summary))
        calls: dict[str, ToolCallView] = {}
        for message in context:
            widgets.extend(self._history_entry(speaker, message, calls))
        if widgets:
            self.mount_all(widgets)

    @staticmethod
    def _history_entry(speaker: str, message: Message, calls: dict[str, ToolCallView]) -> list[Widget]:
        if message.role == "user" and message.name:  # the pager's memory-pressure alert, not the person
            return [Line(f"! {short(message.content, 200)}", classes="notice", message_id=message.id)]
        if message.role == "user":
            return [Line(f"you> {message.content}", classes="user", message_id=message.id)]
        if message.role == "assistant":
            out: list[Widget] = []
            if message.content.strip():
                out += [speaker_label(speaker), Reply(speaker, message.content, message_id=message.id)]
            for call in message.tool_calls:
                calls[call.id] = ToolCallView(call.id, call.name, call.arguments)
                out.append(calls[call.id])
            return out
        if message.role == "tool" and message.tool_call_id in calls:
            calls[message.tool_call_id].finish(message.content, message.is_error)
            return []
        if message.role == "system":
            return [Line(f"(system) {short(message.content, 200)}", classes="info", message_id=message.id)]
        return []

