"""A cheap look for damage in a table without reading its rows, as opening an agent takes for every table it uses.

The table's newest version is opened (its manifest read) and each fragment's data files, and its deletion file, must
exist with the size the manifest recorded; a fragment that fails is then read, to report what `agentos doctor` will
find in it (and nothing it will not). Local tables only: elsewhere a look at each file costs a request, and a table
that does not open cannot be told from one that cannot be reached, so a remote table is not looked at.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentos.storage.salvage import BadFragment, open_newest_readable, short, table_path
from agentos.storage.versions import INVERTED, lost_versions, manifests


@dataclass(frozen=True)
class TableDamage:
    """What the look found wrong with one table."""

    table: str
    bad: tuple[BadFragment, ...] = ()
    skipped: tuple[str, ...] = ()  # newer manifests that could not be read
    lost_versions: int = 0  # newest versions whose manifest is gone
    error: str | None = None  # why the table cannot be opened at all

    def describe(self, what: str) -> str:
        """One sentence for a person: what in the table (which holds `what`) is damaged, and what to do."""
        parts = []
        if self.error:
            parts.append(f"it cannot be opened ({self.error})")
        if self.bad:
            rows = sum(b.rows for b in self.bad)
            parts.append(f"{len(self.bad)} of its data files cannot be read ({self.bad[0].error}), holding {rows} "
                         f"row(s)")
        if self.skipped:
            parts.append(f"its newest {len(self.skipped)} version(s) cannot be read")
        if self.lost_versions:
            parts.append(f"its newest {self.lost_versions} version(s) are missing (their manifests are gone)")
        return (f"table {self.table!r} ({what}) is damaged: {'; '.join(parts)}. The agent was loaded; until the "
                f"table is repaired, {what} may be incomplete or fail to read. Run `agentos doctor` to "
                f"see what is affected, and `agentos doctor --repair` to rebuild it from what can be read.")


def check_table(db_uri: str, name: str, storage_options: dict[str, str] | None = None) -> TableDamage | None:
    """The damage found in table `name` without reading its rows, or None when none is (or it does not exist)."""
    if "://" in db_uri:
        return None
    path = table_path(db_uri, name)
    if not (Path(path) / "_versions").is_dir():
        return None  # no such table (yet)
    try:
        dataset, skipped = open_newest_readable(path, storage_options)
    except Exception as exc:  # noqa: BLE001 - no version opens: that is the damage, if any was ever committed
        return TableDamage(name, error=short(exc)) if manifests(path) else None
    bad = _bad_fragments(path, dataset)
    if bad and not skipped and dataset.latest_version != dataset.version:
        bad = _bad_fragments(path, lance_dataset(path, storage_options))  # a compaction's cleanup, not damage?
    lost = _lost_versions(path)
    if not (bad or skipped or lost):
        return None
    return TableDamage(name, tuple(bad), tuple(skipped), lost)


def lance_dataset(path: str, storage_options: dict[str, str] | None = None) -> Any:
    """The table at its newest version, by Lance."""
    import lance

    return lance.dataset(path, storage_options=storage_options)


def _bad_fragments(path: str, dataset: Any) -> list[BadFragment]:
    """The fragments of `dataset` whose files are not as its manifest recorded and that cannot be read."""
    return [b for b in (_confirmed(f) for f in dataset.get_fragments() if not _intact(path, f.metadata)) if b]


def _lost_versions(path: str) -> int:
    """`versions.lost_versions`, without listing every manifest (thousands, until old versions are cleaned up) when
    the one LanceDB's hint names is there, as it nearly always is."""
    folder = Path(path) / "_versions"
    try:
        hinted = int(json.loads((folder / "latest_version_hint.json").read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    if (folder / f"{INVERTED - hinted}.manifest").is_file() or (folder / f"{hinted}.manifest").is_file():
        return 0
    return lost_versions(path)


def _intact(path: str, metadata: Any) -> bool:
    """Whether a fragment's files are all there, each of the size the manifest recorded (when it recorded one)."""
    for data in metadata.files:
        if getattr(data, "base_id", None) is not None:
            continue  # kept under another base path: not looked at
        expected = getattr(data, "file_size_bytes", None)
        name = getattr(data, "_path", None) or data.path  # `path` builds a class on each call: 9 us a file
        try:
            size = os.stat(f"{path}/data/{name}").st_size
        except OSError:
            return False
        if expected and size != expected:
            return False
    deletions = metadata.deletion_file
    if deletions is not None and getattr(deletions, "base_id", None) is None:
        where = Path(path) / "_deletions" / Path(deletions.path(metadata.id, base_uri=path)).name
        if not where.is_file():
            return False
    return True


def _confirmed(fragment: Any) -> BadFragment | None:
    """The fragment as a bad one when reading it fails (as `agentos doctor` reads it), else None."""
    try:
        fragment.to_table()
        return None
    except BaseException as exc:  # noqa: BLE001 - Lance panics (a BaseException) on some damaged files
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise
        metadata = fragment.metadata
        return BadFragment(fragment.fragment_id, tuple(d.path for d in metadata.files),
                           int(metadata.physical_rows or 0), short(exc))
