"""A local table's versions as files: its manifests, and whether the newest ones were lost.

LanceDB writes a table's manifest `_versions/N.manifest` and then `_versions/latest_version_hint.json`
naming N; so a hint ahead of the newest manifest means committed versions whose manifests are gone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

INVERTED = 2**64 - 1  # manifests named by the newer scheme: this minus the version number


def manifests(path: str) -> list[tuple[int, Path]]:
    """(version, file) of every manifest of a local table, newest first."""
    folder = Path(path) / "_versions"
    found = []
    for entry in os.scandir(folder) if folder.is_dir() else ():
        stem, _, ext = entry.name.partition(".")
        if ext == "manifest" and stem.isdigit():
            number = int(stem)
            found.append((INVERTED - number if number > 2**63 else number, Path(entry.path)))
    return sorted(found, reverse=True)


def lost_versions(path: str) -> int:
    """How many of a local table's newest versions lost their manifest: LanceDB's hint file names the version it
    last committed, and the newest manifest is older. 0 when none (or when there is no hint to go by)."""
    hint = Path(path) / "_versions" / "latest_version_hint.json"
    try:
        hinted = int(json.loads(hint.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    found = manifests(path)
    return max(0, hinted - found[0][0]) if found else 0
