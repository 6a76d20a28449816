"""Where a text still is under a data home: in any file's bytes, or in any row of any version of any table (values
written compressed, such as restore points' states, are opened). The proof that a forget left nothing behind."""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 256 * 1024 * 1024  # a larger file is read in pieces


def _strings(value: Any) -> list[str]:
    if isinstance(value, bytes):
        try:
            value = zlib.decompress(value)
        except zlib.error:
            pass
        return [value.decode("utf-8", errors="replace")]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _file_holds(path: Path, pattern: re.Pattern[bytes], width: int) -> bool:
    with path.open("rb") as file:
        tail = b""
        while chunk := file.read(MAX_FILE_BYTES):
            if pattern.search(tail + chunk):
                return True
            tail = chunk[-width:]
    return False


def traces(home: Path, text: str) -> list[str]:
    """Every place under `home` that holds `text` (any case): `file PATH` for a file's bytes, `table NAME vN` for a
    row of a table's version N. Empty when there is none."""
    import lancedb

    found: set[str] = set()
    needle = text.lower()
    pattern = re.compile(re.escape(text.encode("utf-8")), re.IGNORECASE)
    for path in sorted(home.rglob("*")):
        if path.is_file() and _file_holds(path, pattern, len(text.encode("utf-8"))):
            found.add(f"file {path.relative_to(home)}")
    for folder in sorted({p.parent for p in home.rglob("*.lance") if p.is_dir()}):
        db = lancedb.connect(folder)
        for name in db.list_tables().tables:
            try:
                table = db.open_table(name)
                versions = [v["version"] for v in table.list_versions()]
            except Exception:  # noqa: BLE001 - a table that cannot be opened is found by its files' bytes
                continue
            for version in versions:
                try:
                    table.checkout(version)
                    rows = table.to_arrow().to_pylist()
                except Exception:  # noqa: BLE001 - an unreadable version: its files were searched above
                    continue
                if any(needle in s.lower() for row in rows for s in _strings(row)):
                    found.add(f"table {name} v{version}")
    return sorted(found)
