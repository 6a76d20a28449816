"""The TUI's dialogs: a block's edit history, editing a block, searching memory, listing facts, picking or creating
an agent, choosing a restore point, and help. Each returns its answer through `dismiss`; none touches the agent itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from agentos.blocks import MemoryEdit
from agentos.formatting import who_made
from agentos.memory.facts.rows import Fact
from agentos.tui.diff import diff_text


class Dialog(ModalScreen[Any]):
    """A modal dialog that Escape closes with no answer."""

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]
    AUTO_FOCUS = "*"  # the first widget that takes focus (the app's own is its input): a list or text scrolls by key
    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > .dialog { width: 90%; max-width: 100; height: auto; max-height: 90%; border: round $accent;
                       background: $surface; padding: 0 1; }
    Dialog .hint { color: $text-muted; }
    Dialog .dialog-error { color: $error; }
    Dialog .buttons { height: auto; align-horizontal: right; }
    Dialog .edit-diff { margin-bottom: 1; }
    """

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class BlockHistoryScreen(Dialog):
    """Every edit of one block, newest first, each as a diff with who made it and when."""

    def __init__(self, label: str, edits: Sequence[MemoryEdit]) -> None:
        super().__init__()
        self.label, self.edits = label, [e for e in edits if e.label == label][::-1]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = escape(f"history of [{self.label}] · {len(self.edits)} edit(s) · Esc closes")
            with VerticalScroll(id="edits"):
                if not self.edits:
                    yield Static("No edits yet.", classes="hint")
                for edit in self.edits:
                    head = Text.assemble((f"{edit.at.astimezone():%Y-%m-%d %H:%M:%S}", "bold"),
                                         f"  by {who_made(edit)}  ",
                                         (f"{len(edit.old_value):,} → {len(edit.new_value):,} chars", "dim"))
                    yield Static(head, classes="edit-head")  # one edit: when, who, sizes; then its diff
                    yield Static(diff_text(edit.old_value, edit.new_value, context=60), classes="edit-diff")


class EditBlockScreen(Dialog):
    """Edit a block's value by hand. Ctrl-S hands the text to `save`, which says why it was refused (the dialog stays
    open, with the text) or None (the dialog closes, answering the text); Escape closes it with None."""

    BINDINGS = [Binding("ctrl+s", "save", "Save"), Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, label: str, value: str, limit: int, save: Callable[[str], str | None]) -> None:
        super().__init__()
        self.label, self.value, self.limit, self.save = label, value, limit, save

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = escape(f"edit [{self.label}] (limit {self.limit:,} chars)")
            yield TextArea(self.value, id="editor", soft_wrap=True)
            yield Static("Ctrl-S saves (logged as your edit) · Esc cancels", classes="hint")
            yield Static("", id="edit-error", classes="dialog-error", markup=False)

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        text = self.query_one(TextArea).text.rstrip("\n")
        refused = self.save(text)
        if refused:
            self.show_error(refused)
        else:
            self.dismiss(text)

    def show_error(self, text: str) -> None:
        self.query_one("#edit-error", Static).update(text)


@dataclass
class SearchResult:
    """One hit for the results list: what to show, and the message or passage it points to."""

    id: str
    line: str


class SearchScreen(Dialog):
    """Search one memory tier: type a query, Enter searches, pick a result to jump to it."""

    def __init__(self, title: str, search: Callable[[str], tuple[str, list[SearchResult]]], query: str = "") -> None:
        super().__init__()
        self.title_text, self.search, self.query_text = title, search, query
        self.results: list[SearchResult] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = escape(f"{self.title_text} · Enter searches · Esc closes")
            yield Input(self.query_text, placeholder="search for…", id="query")
            yield Static("", id="summary", classes="hint", markup=False)
            yield OptionList(id="results")

    def on_mount(self) -> None:
        self.query_one("#query", Input).focus()
        if self.query_text:
            self.run_search(self.query_text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.run_search(event.value)

    def run_search(self, query: str) -> None:
        summary, self.results = self.search(query)
        self.query_one("#summary", Static).update(summary)
        results = self.query_one("#results", OptionList)
        results.clear_options()
        results.add_options([Option(Text(r.line), id=r.id) for r in self.results])
        if self.results:
            results.highlighted = 0
            results.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


def fact_line(fact: Fact) -> str:
    """A fact in the list: since when it is believed, and its text on one line."""
    return f"{fact.valid_from.astimezone():%Y-%m-%d}  {' '.join(fact.text.split())}"


def matches(fact: Fact, words: Sequence[str]) -> bool:
    """Whether every word typed is in the fact's text, subject or category (case aside)."""
    haystack = f"{fact.text} {fact.subject} {fact.category}".casefold()
    return all(word in haystack for word in words)


class FactsScreen(Dialog):
    """The current facts, newest first; typing filters them, and Enter on one answers its id."""

    def __init__(self, facts: Sequence[Fact]) -> None:
        super().__init__()
        self.facts = list(facts)
        self.shown: list[Fact] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = f"facts · {len(self.facts):,} current · type to filter · Esc closes"
            yield Input(placeholder="filter: words in the fact…", id="filter")
            yield Static("", id="summary", classes="hint", markup=False)
            yield OptionList(id="facts-list")

    def on_mount(self) -> None:
        self.query_one("#filter", Input).focus()
        self.show_matching("")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.show_matching(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.shown:
            self.query_one("#facts-list", OptionList).focus()

    def show_matching(self, typed: str) -> None:
        """List the facts that have every word of `typed`."""
        words = typed.casefold().split()
        self.shown = [f for f in self.facts if matches(f, words)]
        if not self.facts:
            summary = "No facts yet: they are made from the conversation, in the background."
        elif words:
            summary = f"{len(self.shown):,} of {len(self.facts):,} match"
        else:
            summary = "Newest first; Enter on one shows it whole."
        self.query_one("#summary", Static).update(summary)
        listed = self.query_one("#facts-list", OptionList)
        listed.clear_options()
        listed.add_options([Option(Text(fact_line(f)), id=f.id) for f in self.shown])
        if self.shown:
            listed.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


def fact_detail(fact: Fact) -> str:
    """One fact in full, for its own dialog."""
    return (f"{fact.text}\n\nsince {fact.valid_from.astimezone():%Y-%m-%d %H:%M}  ·  about {fact.subject}  ·  "
            f"{fact.category}  ·  confidence {fact.confidence:.2f}\n"
            f"recorded {fact.recorded_at.astimezone():%Y-%m-%d %H:%M}  ·  {len(fact.source_ids)} source message(s)"
            f"  ·  id {fact.id}")


class PickerScreen(Dialog):
    """Choose one of several options (agents, restore points); answers the option's id."""

    def __init__(self, title: str, options: Sequence[tuple[str, str]], hint: str = "") -> None:
        super().__init__()
        self.title_text, self.options, self.hint = title, list(options), hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = escape(f"{self.title_text} · Enter chooses · Esc closes")
            if self.hint:
                yield Static(self.hint, classes="hint")
            yield OptionList(*(Option(Text(text), id=key) for key, text in self.options), id="options")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


@dataclass
class NewAgent:
    """What the new-agent dialog asks for."""

    name: str
    model: str
    persona: str
    human: str


class NewAgentScreen(Dialog):
    """Ask for a new agent's name, model, persona and human block; answers a NewAgent."""

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = "new agent · Enter in the last field creates · Esc cancels"
            yield Label("Name")
            yield Input(placeholder="e.g. sam", id="name")
            yield Label("Model (openai/…, anthropic/…, ollama/…, scripted/demo)")
            yield Input(self.model, id="model")
            yield Label("Persona (empty: the default)")
            yield Input(id="persona")
            yield Label("What it knows about you (empty: nothing yet)")
            yield Input(id="human")
            yield Static("", id="new-error", classes="dialog-error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Create", id="create", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "human":
            self.create()
        else:
            self.focus_next()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.create()

    def create(self) -> None:
        values = {i.id: i.value.strip() for i in self.query(Input) if i.id}
        if not values["name"]:
            self.show_error("Give the agent a name.")
            return
        self.dismiss(NewAgent(name=values["name"], model=values["model"], persona=values["persona"],
                              human=values["human"]))

    def show_error(self, text: str) -> None:
        self.query_one("#new-error", Static).update(text)


class AskScreen(Dialog):
    """Ask one line (a file to export to, a confirmation); answers the text, or None."""

    def __init__(self, title: str, value: str = "", hint: str = "") -> None:
        super().__init__()
        self.title_text, self.value, self.hint = title, value, hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = escape(f"{self.title_text} · Enter confirms · Esc cancels")
            if self.hint:
                yield Static(self.hint, classes="hint")
            yield Input(self.value, id="answer")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)


class TextScreen(Dialog):
    """Read-only text: help, or a message found by a search."""

    def __init__(self, title: str, text: str | Text) -> None:
        super().__init__()
        self.title_text, self.text = title, text

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog") as box:
            box.border_title = escape(f"{self.title_text} · Esc closes")
            yield Static(self.text, markup=False, classes="help")
