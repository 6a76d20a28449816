"""Word-level diffs of memory block values, as Rich text: added words green, removed words struck out in red."""

from __future__ import annotations

import difflib
import re
from typing import Literal

from rich.text import Text

Op = Literal["same", "added", "removed"]
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
ADDED_STYLE = "bold green"
REMOVED_STYLE = "strike red"
ELLIPSIS_STYLE = "dim"


GLUE_CHARS = 3  # an unchanged stretch this short (or of spaces and punctuation only) between two changes joins them


def word_diff(old: str, new: str) -> list[tuple[Op, str]]:
    """The edit from `old` to `new` as runs of unchanged, added and removed text (whitespace kept). Changes that only
    short unchanged stretches separate read as one: all that went, then all that came."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    runs: list[tuple[Op, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            runs.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("removed", "".join(a[i1:i2])))
        if j2 > j1:
            runs.append(("added", "".join(b[j1:j2])))
    return _joined(runs)


def _is_glue(text: str) -> bool:
    return len(text.strip()) <= GLUE_CHARS or not any(c.isalnum() for c in text)


def _joined(runs: list[tuple[Op, str]]) -> list[tuple[Op, str]]:
    out: list[tuple[Op, str]] = []
    removed = added = ""
    for index, (op, text) in enumerate(runs):
        changed_after = any(o != "same" for o, _ in runs[index + 1:])
        if op == "removed":
            removed += text
        elif op == "added":
            added += text
        elif (removed or added) and changed_after and _is_glue(text):
            removed, added = removed + text, added + text
        else:
            out += _change(removed, added)
            removed = added = ""
            out.append((op, text))
    return out + _change(removed, added)


def _change(removed: str, added: str) -> list[tuple[Op, str]]:
    runs: list[tuple[Op, str]] = [("removed", removed), ("added", added)]
    return [(op, text) for op, text in runs if text]


def diff_text(old: str, new: str, context: int = 120) -> Text:
    """The diff for display; unchanged stretches longer than 2 x `context` characters are cut to their ends."""
    out = Text()
    runs = word_diff(old, new)
    for index, (op, text) in enumerate(runs):
        if op == "added":
            out.append(text, ADDED_STYLE)
        elif op == "removed":
            out.append(text, REMOVED_STYLE)
        elif len(text) <= 2 * context:
            out.append(text)
        else:
            head = text[:context] if index > 0 else ""
            tail = text[-context:] if index < len(runs) - 1 else ""
            out.append(head)
            out.append(" … ", ELLIPSIS_STYLE)
            out.append(tail)
    if not runs or not (old or new):
        out.append("(empty)", ELLIPSIS_STYLE)
    return out


def changed_chars(old: str, new: str) -> tuple[int, int]:
    """How many characters an edit added and removed."""
    runs = word_diff(old, new)
    return (sum(len(t) for op, t in runs if op == "added"), sum(len(t) for op, t in runs if op == "removed"))
