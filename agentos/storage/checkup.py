"""What `agentos doctor` found: damaged tables with what can be (or was) recovered and what is lost, and agents'
saved messages that are nowhere to be found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa


@dataclass
class Finding:
    """One damaged table: what is wrong, what can be (or was) recovered, and what is lost."""

    table: str
    damage: list[str]
    recovered: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    rows: pa.Table | None = None  # what the table holds once rebuilt; None when it cannot be rebuilt


@dataclass(frozen=True)
class MissingMessages:
    """An agent's saved messages that are nowhere in the messages table (beyond those recorded as lost)."""

    name: str
    missing: tuple[int, ...]  # their seq numbers, those recorded as lost included
    count: int  # messages the agent ever saved
    recorded: int = 0  # of the missing, how many an earlier repair recorded as lost

    @property
    def remaining(self) -> int:
        """The messages recall memory still holds: the count `show` and the prompt report."""
        return self.count - len(self.missing)

    def describe(self) -> str:
        new = len(self.missing) - self.recorded  # what loading the agent warns of
        earlier = f", besides the {self.recorded} an earlier repair recorded as lost" if self.recorded else ""
        return (f'agent "{self.name}": {new} of its {self.count} saved messages are missing{earlier} (seq '
                f"{_ranges(list(self.missing))}); they are lost unless a backup of the database folder has them. "
                f"Recall memory holds the other {self.remaining}.")


@dataclass
class Checkup:
    """What `doctor` found and did."""

    findings: list[Finding]
    missing: list[MissingMessages]
    repaired: bool = False
    backup: Path | None = None
    notes: list[str] = field(default_factory=list)  # what a repair recorded beside the tables, and what it could not do

    @property
    def healthy(self) -> bool:
        return not self.findings and not self.missing

    def lines(self) -> list[str]:
        if self.healthy:
            return ["No damage found."]
        out = []
        for f in self.findings:
            out.append(f"table {f.table!r}: " + "; ".join(f.damage))
            out.extend(f"  {'recovered' if self.repaired else 'can recover'}: {r}" for r in f.recovered)
            out.extend(f"  lost: {item}" for item in f.lost)
        out.extend(m.describe() for m in self.missing)
        out.extend(self.notes)
        if self.repaired:
            out.append(f"Repaired. The damaged tables as they were are kept in {self.backup}.")
        elif any(f.rows is not None for f in self.findings):
            out.append("Run again with --repair to rebuild the damaged tables from what can be read "
                       "(a copy of each goes to doctor-backups/ first).")
        return out


def _ranges(numbers: list[int]) -> str:
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
