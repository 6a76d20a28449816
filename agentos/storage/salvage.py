"""What a damaged table still holds: its newest readable version, read fragment by fragment, and the rows that
only data files no version refers to keep (a commit whose manifest was lost).

Uses the Lance format library (pylance) directly, below LanceDB: only there are fragments, versions and
data files visible. Nothing here writes; `agentos.storage.doctor` decides what to restore.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from agentos.storage.failures import DAMAGE_SIGNS
from agentos.storage.versions import lost_versions, manifests


@dataclass(frozen=True)
class BadFragment:
    """A fragment whose data cannot be read: which files, how many rows they held, and what failed."""

    fragment_id: int
    files: tuple[str, ...]
    rows: int
    error: str


@dataclass
class TableScan:
    """A table as far as it can be read."""

    name: str
    path: str
    version: int | None = None  # the newest version that could be opened; None when none could
    skipped_manifests: list[str] = field(default_factory=list)  # newer manifests that could not be read
    good: pa.Table | None = None  # every row of the readable fragments
    bad: list[BadFragment] = field(default_factory=list)
    orphans: pa.Table | None = None  # rows of data files newer than `version` that it does not refer to
    orphan_files: list[str] = field(default_factory=list)
    lost_versions: int = 0  # newest versions whose manifest is gone (see `lost_versions`)
    error: str | None = None  # why nothing could be read

    @property
    def commits_lost(self) -> bool:
        """Whether committed versions are unreadable or gone, so orphan rows may be committed data (without this,
        orphans are what a cut-short or failed commit left, and were never committed)."""
        return bool(self.skipped_manifests or self.lost_versions)


def short(error: BaseException | str) -> str:
    """What a Lance read error says about the file: missing, cut short or corrupt, or else its first line."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if "Not found" in text:
        return "the file is missing"
    if any(sign in text for sign in DAMAGE_SIGNS):
        return "the file is cut short or corrupt"
    return text.split(", /rustc/")[0].split(", /root/")[0].split(", /home/")[0][:200]


def describe_damage(table: str, bad: list[BadFragment], skipped: list[str]) -> str:
    """One sentence for a person: what in `table` cannot be read, and what to do."""
    parts = []
    if bad:
        rows = sum(b.rows for b in bad)
        parts.append(f"{len(bad)} of its data files cannot be read ({bad[0].error}), so {rows} row(s) in them are "
                     f"left out")
    if skipped:
        parts.append(f"its newest {len(skipped)} version(s) cannot be read, so an older version was used")
    return (f"table {table!r} is damaged: {'; '.join(parts)}. What could be read was loaded. Run `agentos doctor` "
            f"to see what is affected, and `agentos doctor --repair` to rebuild it from what can be read.")


def table_path(db_uri: str, name: str) -> str:
    return f"{db_uri.rstrip('/')}/{name}.lance"


def open_newest_readable(path: str, storage_options: dict[str, str] | None = None) -> tuple[Any, list[str]]:
    """The table at its newest version that opens, and the newer manifests that did not (local tables only
    fall back; elsewhere the newest version must open)."""
    import lance

    try:
        return lance.dataset(path, storage_options=storage_options), []
    except Exception as first:  # noqa: BLE001 - any failure to open: try the older versions
        skipped: list[str] = []
        for version, manifest in manifests(path):
            try:
                return lance.dataset(path, version=version, storage_options=storage_options), skipped
            except Exception:  # noqa: BLE001
                skipped.append(str(manifest))
        raise first


def read_fragments(dataset: Any, filter: str | None = None,
                   columns: list[str] | None = None) -> tuple[pa.Table, list[BadFragment]]:
    """Every readable fragment's rows (matching `filter`), and the fragments that could not be read."""
    parts, bad = [], []
    schema = dataset.schema if columns is None else pa.schema([dataset.schema.field(c) for c in columns])
    for fragment in dataset.get_fragments():
        try:
            parts.append(fragment.to_table(filter=filter, columns=columns))
        except Exception as exc:  # noqa: BLE001 - a damaged fragment is reported, not fatal
            files = tuple(d.path for d in fragment.metadata.files)
            bad.append(BadFragment(fragment.fragment_id, files, int(fragment.metadata.physical_rows or 0), short(exc)))
    table = pa.concat_tables([p.cast(schema) for p in parts]) if parts else schema.empty_table()
    return table, bad


def referenced_files(dataset: Any, path: str, storage_options: dict[str, str] | None = None) -> set[str]:
    """Data files any kept version of the table refers to (versions whose manifest cannot be read count none)."""
    import lance

    files = {d.path for f in dataset.get_fragments() for d in f.metadata.files}
    for version, _ in manifests(path):
        try:
            old = lance.dataset(path, version=version, storage_options=storage_options)
            files.update(d.path for f in old.get_fragments() for d in f.metadata.files)
        except Exception:  # noqa: BLE001 - an unreadable version refers to nothing we can use
            continue
    return files


def orphan_rows(dataset: Any, path: str) -> tuple[pa.Table | None, list[str]]:
    """Rows in local data files written after `dataset`'s version was committed that no kept version refers to:
    a later commit whose manifest is gone (or one that failed at the same time). Older unreferenced files (a
    compaction or a write that lost a race, kept until cleanup) are not looked at. Unreadable files are skipped."""
    from lance.file import LanceFileReader

    folder = Path(path) / "data"
    manifest = dict(manifests(path)).get(dataset.version)
    if not folder.is_dir() or manifest is None:
        return None, []
    committed_at = manifest.stat().st_mtime
    referenced = referenced_files(dataset, path)
    parts, files = [], []
    names = dataset.schema.names
    for entry in sorted(os.scandir(folder), key=lambda e: e.stat().st_mtime):  # oldest first
        if entry.name in referenced or not entry.name.endswith(".lance") or entry.stat().st_mtime < committed_at:
            continue
        try:
            data = LanceFileReader(entry.path).read_all().to_table()
            if set(names) <= set(data.schema.names):
                parts.append(data.select(names).cast(dataset.schema))
                files.append(entry.path)
        except Exception:  # noqa: BLE001 - a half-written file holds nothing to recover
            continue
    return (pa.concat_tables(parts) if parts else None), files


def earlier_rows(path: str, below: int | None,
                 storage_options: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """The rows of the newest version older than `below` (every version when None) that reads whole and holds any,
    with its number: what a one-row table held before its newest data was lost. Local tables only."""
    import lance

    for version, _ in manifests(path):
        if below is not None and version >= below:
            continue
        try:
            dataset = lance.dataset(path, version=version, storage_options=storage_options)
            rows, bad = read_fragments(dataset)
        except Exception:  # noqa: BLE001 - an unreadable version holds nothing to use
            continue
        if rows.num_rows and not bad:
            return rows.to_pylist(), version
    return [], None


def scan(db_uri: str, name: str, storage_options: dict[str, str] | None = None) -> TableScan:
    """Read table `name` as far as it can be read (see `TableScan`)."""
    path = table_path(db_uri, name)
    result = TableScan(name=name, path=path)
    try:
        dataset, result.skipped_manifests = open_newest_readable(path, storage_options)
    except Exception as exc:  # noqa: BLE001
        result.error = short(exc)
        return result
    result.version = dataset.version
    result.good, result.bad = read_fragments(dataset)
    if "://" not in db_uri:
        result.lost_versions = lost_versions(path)
        if result.commits_lost:
            result.orphans, result.orphan_files = orphan_rows(dataset, path)
    return result
