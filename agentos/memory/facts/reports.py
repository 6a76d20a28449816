"""What consolidation did: one report per batch, and a run's batches together."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentos.memory.facts.rows import FactChange
from agentos.messages import Usage


@dataclass
class BatchReport:
    """What one batch did."""

    through_seq: int | None  # None: a skipped batch read again (it moves no watermark)
    messages: int
    changes: list[FactChange] = field(default_factory=list)
    skipped: str | None = None
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    seconds: float = 0.0
    retried: str | None = None  # the skip this batch read again


@dataclass
class ConsolidationReport:
    """What a run of consolidation did, batch by batch."""

    batches: list[BatchReport] = field(default_factory=list)

    @property
    def changes(self) -> list[FactChange]:
        return [c for b in self.batches for c in b.changes]

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)

    def summary(self) -> str:
        kinds = ", ".join(f"{self.count(k)} {k}" for k in ("add", "update", "delete") if self.count(k))
        skipped = sum(1 for b in self.batches if b.skipped)
        retried = sum(1 for b in self.batches if b.retried)
        read = sum(b.messages for b in self.batches)
        text = f"{read} message(s) read in {len(self.batches)} batch(es): {kinds or 'no changes'}"
        text += f"; {retried} skipped batch(es) read again" if retried else ""
        return text + (f"; {skipped} batch(es) skipped" if skipped else "")


def change_line(change: FactChange, old_text: str | None) -> str:
    """A change in one line, for people watching (the TUI, the REPL): "+ new", "~ new (was: old)", "- old"."""
    text = change.fact.text if change.fact else ""
    if change.kind == "update":
        return f"~ {text}" + (f" (was: {old_text})" if old_text else "")
    if change.kind == "delete":
        return f"- {old_text or change.old_fact_id} (no longer true)"
    return f"+ {text}" if change.kind == "add" else f"{change.kind} {text}"
