"""How worn a table is: the small fragments its commits left since its last compaction, and the versions kept."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Wear:
    """What a table's commits have left since its last compaction: small fragments (each slows a scan and a
    search), and versions kept on disk with the age of the oldest (what a cleanup would remove)."""

    small_fragments: int
    versions: int
    oldest_version_age_s: float


def table_wear(handle: Any, versions_folder: Path | None) -> Wear:
    """The wear of an open table at its latest version; a local table's `versions_folder` (its `_versions`) is
    listed, which is cheap, else (None, or not there) the versions are asked of LanceDB."""
    handle.checkout_latest()
    small = int(handle.stats()["fragment_stats"]["num_small_fragments"])
    if versions_folder is not None and versions_folder.is_dir():
        times = [entry.stat().st_mtime for entry in os.scandir(versions_folder) if entry.name.endswith(".manifest")]
        oldest = min(times, default=time.time())
    else:
        stamps = [v["timestamp"].timestamp() for v in handle.list_versions()]
        times, oldest = stamps, min(stamps, default=time.time())
    return Wear(small, len(times), max(0.0, time.time() - oldest))
