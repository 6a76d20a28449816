"""The TUI's widgets: the conversation, the memory panel and the status line."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from agentos.blocks import Block

HIGHLIGHT_SECONDS = 1.5


class Line(Static):
    """One plain-text entry in the conversation (no markup, so user text shows as typed)."""

    def __init__(self, text: str, *, classes: str = "") -> None:
        super().__init__(text, markup=False, classes=classes)
        self.text = text

    def set_text(self, text: str) -> None:
        """Replace the entry's text."""
        self.text = text
        self.update(text)


class Reply(Line):
    """The assistant's reply, growing as text deltas arrive."""

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix, classes="reply")
        self.prefix = prefix
        self.body = ""

    def append(self, text: str) -> None:
        """Add streamed text."""
        self.body += text
        self.set_text(self.prefix + self.body)


class Conversation(VerticalScroll):
    """The scrolling transcript; stays anchored to the bottom while replies stream."""

    def on_mount(self) -> None:
        self.anchor()

    def add(self, text: str, classes: str = "") -> Line:
        """Append one entry and return it."""
        line = Line(text, classes=classes)
        self.mount(line)
        return line

    def start_reply(self, prefix: str) -> Reply:
        """Append an empty reply entry to stream into."""
        reply = Reply(prefix)
        self.mount(reply)
        return reply

    def texts(self) -> list[str]:
        """Every entry's text, in order (for tests and copying)."""
        return [child.text for child in self.children if isinstance(child, Line)]


def block_text(block: Block) -> str:
    """A block as the panel shows it: header line, then the value."""
    flag = ", read-only" if block.read_only else ""
    return f"[{block.label}] {len(block.value)}/{block.limit} chars{flag}\n{block.value or '(empty)'}"


def _styled(block: Block) -> Text:
    """The block's text with a bold header line (a Text, so values are never read as markup)."""
    header, _, value = block_text(block).partition("\n")
    return Text.assemble((header, "bold"), "\n", (value, "dim" if not block.value else ""))


class BlockView(Static):
    """One core memory block; highlighted briefly after it changes."""

    def __init__(self, block: Block) -> None:
        super().__init__(_styled(block), id=f"block-{block.label}", classes="block")
        self.block_label = block.label
        self.text = block_text(block)

    def show(self, block: Block, highlight: bool = False) -> None:
        """Show the block's current value."""
        self.text = block_text(block)
        self.update(_styled(block))
        if highlight:
            self.add_class("changed")
            self.set_timer(HIGHLIGHT_SECONDS, lambda: self.remove_class("changed"))


class MemoryPanel(VerticalScroll):
    """Every core memory block, kept current by MemoryEdited events."""

    def __init__(self, blocks: list[Block], **kwargs: object) -> None:
        super().__init__(*(BlockView(b) for b in blocks), **kwargs)  # type: ignore[arg-type]
        self.border_title = "core memory"

    def view(self, label: str) -> BlockView | None:
        """The view of a block, if it is shown."""
        for child in self.query(BlockView):
            if child.block_label == label:
                return child
        return None

    def show(self, blocks: list[Block], changed: str | None = None) -> None:
        """Refresh every block (adding views for new ones); highlight `changed`."""
        for block in blocks:
            view = self.view(block.label)
            if view is None:
                self.mount(BlockView(block))
            else:
                view.show(block, highlight=block.label == changed)


class StatusLine(Static):
    """Model, context usage and counts; never docked, so the Footer cannot cover it."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", markup=False, **kwargs)  # type: ignore[arg-type]
        self.text = ""

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(text)
