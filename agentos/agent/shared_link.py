"""An agent's link to the shared blocks it is attached to (see `storage.shared_blocks`).

It tells the agent's state owner what other agents changed (each change an edit "by" the agent that made it, so the
edit log records what this agent saw), and commits this agent's edits to the shared row first, by compare-and-set.
It changes nothing itself: `TurnState` applies what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentos.blocks import Block, Editor, MemoryEdit
from agentos.errors import MemoryEditError
from agentos.storage.shared_blocks import SharedBlocks, SharedRow
from agentos.times import as_utc

SHOWN_CHARS = 600  # of the block's new value, the most a conflict's message shows (tool errors are kept short)
USER_RETRIES = 5  # a user's edit (`agentos memory set`) is made again by itself after a conflict, this many times


class SharedConflict(MemoryEditError):
    """An edit of a shared block that another edit got in before: not made; the message tells the model to redo it."""

    def __init__(self, message: str, by: Editor) -> None:
        super().__init__(message)
        self.by = by


def conflict_message(label: str, row: SharedRow | None) -> str:
    """What the model is told when its edit of a shared block lost to another edit: who made that one, the value now."""
    if row is None:
        return f'block "{label}" changed meanwhile; your edit was not made. Read the block again and make it again.'
    who = f"by agent {row.updated_by_name}" if row.updated_by_name else "by another agent"
    value = row.value if len(row.value) <= SHOWN_CHARS else "..." + row.value[-SHOWN_CHARS:]
    return (f'block "{label}" is shared with other agents, and it changed meanwhile ({who}); your edit was not made. '
            f"Its value now is (your core memory shows it from now on):\n{value}\n(end of block) Make your edit "
            f"again on this value.")


def seen_copy(block: Block, row: SharedRow) -> tuple[Block, MemoryEdit | None]:
    """The agent's copy of a shared block brought up to `row`, and the edit it saw (None when the value is the same)."""
    copy = block.model_copy(update={"value": row.value, "limit": row.limit, "description": row.description,
                                    "shared_rev": row.rev})
    if row.value == block.value:
        return copy, None
    edit = MemoryEdit(label=block.label, old_value=block.value, new_value=row.value, by="shared",
                      tool_call_id=f"shared:{row.updated_by_name or row.updated_by or 'unknown'}")
    if row.updated_at is not None:
        edit.at = as_utc(row.updated_at)  # when it was made, not when this agent saw it
    return copy, edit


class SharedLink:
    """Reads the shared blocks an agent uses (only when the table moved since it last looked) and writes its edits."""

    def __init__(self, shared: SharedBlocks) -> None:
        self.shared = shared
        self._version: int | None = None  # the table's version when its rows were last read
        self.rows: dict[str, SharedRow] = {}  # as last read, by id

    def changes(self, blocks: Iterable[Block], force: bool = False) -> list[tuple[Block, MemoryEdit | None]]:
        """Each shared block of `blocks` whose row moved past the revision its copy shows, brought up to date (with the
        edit it saw), and each whose row is gone, made private. Nothing is read while the table has not moved."""
        attached = [b for b in blocks if b.shared_id is not None]
        if not attached:
            return []
        version = self.shared.version()  # read before the rows: a write after it moves it again
        if not force and version is not None and version == self._version:
            return []
        self.rows = self.shared.get(b.shared_id for b in attached if b.shared_id is not None)
        self._version = version
        moved: list[tuple[Block, MemoryEdit | None]] = []
        for block in attached:
            row = self.rows.get(block.shared_id or "")
            if row is None:
                moved.append((block.model_copy(update={"shared_id": None, "shared_rev": 0}), None))
            elif row.rev != block.shared_rev:
                moved.append(seen_copy(block, row))
        return moved

    def commit(self, block: Block, value: str, agent_id: str, name: str) -> bool:
        """Write an edit of a shared block to its row, if the row is still at the copy's revision."""
        assert block.shared_id is not None
        return self.shared.write(block.shared_id, block.shared_rev, value, agent_id, name)
