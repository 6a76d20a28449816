"""The memory pane: one panel per core memory block, with a size bar and the last edit shown as a diff; under them,
when fact memory is in use, how many facts are current and the newest few."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from agentos.blocks import Block
from agentos.memory.facts.rows import Fact
from agentos.tui.diff import diff_text

BAR_WIDTH = 20
FACTS_SHOWN = 5  # the newest facts the pane lists


def size_bar(used: int, limit: int, width: int = BAR_WIDTH) -> Text:
    """`used` of `limit` as a bar: green, then yellow past 75%, red past 90%."""
    share = min(1.0, used / limit) if limit else 1.0
    filled = round(share * width)
    style = "red" if share > 0.9 else "yellow" if share > 0.75 else "green"
    return Text.assemble(("█" * filled, style), ("░" * (width - filled), "dim"), f" {used:,}/{limit:,}")


def block_header(block: Block) -> Text:
    flag = " (read-only)" if block.read_only else ""
    return Text.assemble((block.label, "bold"), flag, "  ", size_bar(len(block.value), block.limit))


class BlockView(Vertical, can_focus=True):
    """One core memory block: header with its size bar, then its value, or the diff of its last edit."""

    BINDINGS = [
        Binding("h", "history", "History"),
        Binding("e", "edit", "Edit"),
        Binding("enter", "history", "History", show=False),
    ]

    class Action(Message):
        """The user asked to see a block's history or to edit it."""

        def __init__(self, label: str, action: str) -> None:
            super().__init__()
            self.label, self.action = label, action

    def __init__(self, block: Block) -> None:
        self.header = Static(block_header(block), classes="block-header")
        self.shown = self._value(block)  # what the value part shows now: the value, or the last edit's diff
        self.body = Static(self.shown, classes="block-value")
        super().__init__(self.header, self.body, id=f"block-{block.label}", classes="block")
        self.block_label = block.label
        self.text = block.value
        self.diff: tuple[str, str, str] | None = None  # (old, new, who) while the last edit is shown

    @staticmethod
    def _value(block: Block) -> Text:
        return Text(block.value) if block.value else Text("(empty)", "dim")

    def show(self, block: Block, old: str | None = None, who: str = "") -> None:
        """Show the block's current value; with `old`, show the edit from `old` as a diff until `settle`."""
        self.text = block.value
        self.header.update(block_header(block))
        if old is None:
            self.diff = None
            self.shown = self._value(block)
            self.body.update(self.shown)
            self.remove_class("changed")
            return
        self.diff = (old, block.value, who)
        label = Text(f"edited by {who}\n", "italic dim") if who else Text()
        self.shown = label + diff_text(old, block.value)
        self.body.update(self.shown)
        self.add_class("changed")

    def settle(self, block: Block) -> None:
        """Stop showing the last edit's diff (a new turn began)."""
        if self.diff is not None:
            self.show(block)

    def action_history(self) -> None:
        self.post_message(self.Action(self.block_label, "history"))

    def action_edit(self) -> None:
        self.post_message(self.Action(self.block_label, "edit"))


def facts_header(count: int) -> Text:
    """The facts section's title: how many facts are current."""
    return Text.assemble(("Facts", "bold"), "  ", (f"{count:,} current", "dim"))


def facts_lines(facts: list[Fact]) -> Text:
    """The newest facts, one line each (the pane's CSS cuts a long one at its width)."""
    if not facts:
        return Text("(none yet)", "dim")
    return Text("\n").join(Text(f"· {' '.join(f.text.split())}") for f in facts)


class FactsView(Vertical):
    """The facts section under the blocks: how many facts are current, and the newest few."""

    DEFAULT_CSS = """
    FactsView { height: auto; margin-bottom: 1; }
    FactsView .facts-newest { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, count: int, newest: list[Fact]) -> None:
        self.header = Static(facts_header(count), classes="facts-header")
        self.body = Static(facts_lines(newest), classes="facts-newest")
        super().__init__(self.header, self.body, id="facts")
        self.count, self.newest = count, newest

    def show(self, count: int, newest: list[Fact]) -> None:
        """Show `count` current facts and the `newest`."""
        self.count, self.newest = count, newest
        self.header.update(facts_header(count))
        self.body.update(facts_lines(newest))


class MemoryPanel(VerticalScroll, can_focus=False):
    """Every core memory block, kept current by MemoryEdited events (Tab moves through the blocks themselves)."""

    def __init__(self, blocks: list[Block], **kwargs: object) -> None:
        super().__init__(*(BlockView(b) for b in blocks), **kwargs)  # type: ignore[arg-type]
        self.border_title = "core memory"
        self.border_subtitle = "h history · e edit"

    def view(self, label: str) -> BlockView | None:
        """The view of a block, if it is shown."""
        for child in self.query(BlockView):
            if child.block_label == label:
                return child
        return None

    def show(self, blocks: list[Block]) -> None:
        """Refresh every block (adding views for new ones, removing gone ones); a shown diff stays while it is current."""
        labels = {b.label for b in blocks}
        for view in list(self.query(BlockView)):
            if view.block_label not in labels:
                view.remove()
        for block in blocks:
            view = self.view(block.label) or self._add(block)
            if view.diff is None or view.diff[1] != block.value:
                view.show(block)

    def _add(self, block: Block) -> BlockView:
        view = BlockView(block)
        self.mount(view, before=self.facts)  # the blocks stay above the facts section
        return view

    @property
    def facts(self) -> FactsView | None:
        """The facts section, if it is shown."""
        found = self.query(FactsView)
        return found.first() if found else None

    def show_facts(self, count: int, newest: list[Fact]) -> None:
        """Show `count` current facts and the newest of them, under the blocks."""
        facts = self.facts
        if facts is None:
            self.mount(FactsView(count, newest[:FACTS_SHOWN]))
        else:
            facts.show(count, newest[:FACTS_SHOWN])

    def hide_facts(self) -> None:
        """No facts section (fact memory is not in use)."""
        facts = self.facts
        if facts is not None:
            facts.remove()

    def show_edit(self, blocks: list[Block], label: str, old: str, new: str, who: str) -> None:
        """Show one edit of block `label` (from `old` to `new`, by `who`) as a diff; the edits one author makes in a
        turn add up into one diff, and another author's edit starts a new one."""
        block = next((b for b in blocks if b.label == label), None)
        if block is None:
            return
        block = block.model_copy(update={"value": new})
        view = self.view(label) or self._add(block)
        same_author = view.diff is not None and view.diff[2] == who and view.diff[1] == old
        view.show(block, old=view.diff[0] if same_author and view.diff else old, who=who)

    def settle(self, blocks: list[Block]) -> None:
        """Clear every shown diff (called when the next turn starts)."""
        for block in blocks:
            view = self.view(block.label)
            if view is not None:
                view.settle(block)

    async def replace(self, blocks: list[Block]) -> None:
        """Show another agent's blocks."""
        await self.remove_children()
        await self.mount_all([BlockView(b) for b in blocks])
