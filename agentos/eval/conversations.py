"""Conversation files in LoCoMo's format, read as they come from real sources: sessions, dated turns, questions.

Files that differ from LoCoMo in small ways (other date formats, a missing date or turn id, speakers not named, a
session number skipped, evidence as one string) are read, each departure said once as a `DatasetWarning`. A file
that cannot be read as conversations at all raises a `DatasetError` that says where and what to fix.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentos.errors import AgentOSError, AgentOSWarning
from agentos.messages import Message, Role
from agentos.times import iso_moment

_DIA = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"session_(\d+)")
_ISO = re.compile(r"\s*\d{4}-\d{2}-\d{2}")
# the forms session dates come in, LoCoMo's first ('1:56 pm on 8 May, 2023'), matched after spaces are collapsed
# and dots dropped ('p.m.' is 'pm')
_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y", "%I:%M %p on %d %B %Y", "%I:%M %p on %B %d, %Y", "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %b %d, %Y", "%I:%M %p, %d %B %Y", "%d %B, %Y", "%d %B %Y", "%B %d, %Y", "%B %d %Y", "%d %b %Y",
    "%b %d, %Y", "%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d",
)
FIRST_DAY = datetime(2000, 1, 1, tzinfo=UTC)  # the date of a conversation none of whose sessions has one


class DatasetError(AgentOSError):
    """An evaluation file that cannot be read as conversations; the message says which part and why."""


class DatasetWarning(AgentOSWarning):
    """A part of an evaluation file that was read with a stand-in (a date, an id, a speaker) or left out."""


@dataclass(frozen=True)
class Session:
    """One session of a conversation: its number, its start, the date as the file wrote it, and its turns."""

    number: int
    start: datetime
    date_text: str
    turns: list[dict[str, Any]]


def _warn(text: str) -> None:
    warnings.warn(text, DatasetWarning, stacklevel=1)  # one place: the same departure read twice is said once


def read_samples(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The conversations of a file (a list of them, one alone, or an object keyed by id), each with a `sample_id`
    (its key or position when it has none) and a list of `qa`; at most `limit`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise DatasetError(f"{path} is not JSON: {exc}. Give a LoCoMo-format file (a list of conversations).") from exc
    if isinstance(data, dict) and "conversation" in data:
        named: list[tuple[str | None, Any]] = [(None, data)]
    elif isinstance(data, dict):
        named = [(str(key), value) for key, value in data.items()]
    elif isinstance(data, list):
        named = [(None, value) for value in data]
    else:
        raise DatasetError(f"{path} holds a JSON {type(data).__name__}, not conversations: give a list of objects "
                           "each with 'conversation' and 'qa', as in LoCoMo")
    samples: list[dict[str, Any]] = []
    taken: set[str] = set()
    for position, (key, sample) in enumerate(named[:limit], start=1):
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise DatasetError(f"{path}: conversation {key or position} has no 'conversation' object (LoCoMo's "
                               "format: {'sample_id', 'conversation': {'session_1': [turns], ...}, 'qa': [...]})")
        qa = sample.get("qa")
        if not isinstance(qa, list):
            if qa is not None:
                _warn(f"conversation {key or position}: 'qa' is not a list; it has no questions")
            qa = []
        given = sample.get("sample_id")
        ident = str(given if given not in (None, "") else key or f"conv-{position}")
        if ident in taken:
            _warn(f"conversation {position}: sample_id {ident!r} is taken by an earlier one; read as {ident}-{position}")
            ident = f"{ident}-{position}"
        taken.add(ident)
        samples.append({**sample, "sample_id": ident, "qa": qa})
    return samples


def agent_name(prefix: str, sample: dict[str, Any]) -> str:
    """A valid agent name for a conversation, one per sample_id: its letters kept, a short hash added when any
    had to be replaced (so that two ids never share a name)."""
    ident = sample["sample_id"]
    kept = re.sub(r"[^A-Za-z0-9_.-]", "-", f"{prefix}-{ident}")
    if kept == f"{prefix}-{ident}" and len(kept) <= 64:
        return kept
    digest = hashlib.sha1(ident.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{kept[:55]}-{digest}"


def session_date(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' (or another common form, or ISO 8601) -> an aware UTC datetime (the text's zone, or UTC
    when it names none); None when it is no date."""
    cleaned = str(text).strip() if _ISO.match(str(text)) else " ".join(str(text).replace(".", "").split())
    for form in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, form).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        return iso_moment(cleaned)
    except (ValueError, OverflowError):
        return None


def _session_keys(conv: dict[str, Any]) -> list[tuple[int, str]]:
    """('session_3' -> 3, 'session_3') for each session key, in number order."""
    return sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.fullmatch(key)))


def sessions(sample: dict[str, Any]) -> list[Session]:
    """The sessions in number order (a number may be skipped). A session without a readable date is dated a day
    after the one before it (a day before the first dated one, when it comes first), and that is warned."""
    conv = sample["conversation"]
    found: list[tuple[int, datetime | None, str, list[dict[str, Any]]]] = []
    for number, key in _session_keys(conv):
        turns = conv[key]
        if not isinstance(turns, list):
            _warn(f"{sample['sample_id']}: {key} is not a list of turns; it is left out")
            continue
        text = conv.get(f"{key}_date_time")
        found.append((number, session_date(text) if text is not None else None, "" if text is None else str(text),
                      turns))
    known = [start for _, start, _, _ in found if start is not None]
    previous = known[0] - timedelta(days=1) if known else FIRST_DAY
    result: list[Session] = []
    for number, start, text, turns in found:
        if start is None:
            start = previous + timedelta(days=1) if result else previous
            said = f"{text!r} is not a date we read" if text else "has no date"
            _warn(f"{sample['sample_id']}: session {number} {said}; it is dated {start:%d %B %Y}, a day from the "
                  "session before it (or after it, when it comes first)")
        result.append(Session(number, start, text, turns))
        previous = start
    return result


def speakers(sample: dict[str, Any]) -> tuple[str, str]:
    """Speaker A and speaker B: as the file names them, else the first two who speak."""
    conv = sample["conversation"]
    a, b = conv.get("speaker_a"), conv.get("speaker_b")
    if a and b:
        return str(a), str(b)
    turns = [t for _, key in _session_keys(conv) if isinstance(conv[key], list) for t in conv[key]]
    seen = list(dict.fromkeys(str(t["speaker"]) for t in turns if isinstance(t, dict) and t.get("speaker")))
    seen = [str(a)] + [s for s in seen if s != str(a)] if a else seen
    seen += [name for name in ("A", "B") if name not in seen]
    return seen[0], seen[1]


def session_messages(sample: dict[str, Any]) -> list[tuple[Session, list[Message]]]:
    """Each session with one message per turn, dated by the session (a second apart); the id carries the turn's
    dia_id (its position 'D<session>:<n>' when it has none); speaker A is 'user', the other 'assistant'. A turn
    without text or image is left out."""
    a, _ = speakers(sample)
    result = []
    seen: set[str] = set()
    for session in sessions(sample):
        messages: list[Message] = []
        for offset, turn in enumerate(session.turns):
            if not isinstance(turn, dict):
                _warn(f"{sample['sample_id']}: session {session.number} turn {offset + 1} is not an object; left out")
                continue
            dia_id = str(turn.get("dia_id") or f"D{session.number}:{offset + 1}")
            if dia_id in seen:
                _warn(f"{sample['sample_id']}: two turns have the id {dia_id}; evidence citing it is met by either")
            seen.add(dia_id)
            given = turn.get("text")
            text = given if isinstance(given, str) else ""
            if turn.get("blip_caption"):
                text = f"{text} [shares an image: {turn['blip_caption']}]".strip()
            if not text.strip():
                _warn(f"{sample['sample_id']}: turn {dia_id} has no text; left out")
                continue
            speaker = str(turn.get("speaker") or "unknown")
            role: Role = "user" if speaker == a else "assistant"
            messages.append(Message(id=f"{sample['sample_id']}|{dia_id}", role=role, content=text, name=speaker,
                                    created_at=session.start + timedelta(seconds=offset)))
        result.append((session, messages))
    return result


def turn_messages(sample: dict[str, Any]) -> list[Message]:
    """Every turn of the conversation as a message, in order (see `session_messages`)."""
    return [message for _, messages in session_messages(sample) for message in messages]


def evidence_ids(qa: dict[str, Any], known: set[str]) -> set[str]:
    """The turn ids a question cites as its evidence: LoCoMo's 'D3:7' wherever it is written, and any other word
    of the evidence that is a turn id of the conversation (`known`), for files with ids of their own."""
    evidence = qa.get("evidence")
    parts = [evidence] if isinstance(evidence, str) else evidence if isinstance(evidence, list) else []
    text = " ".join(str(p) for p in parts)
    cited = {_unpadded(d) if d not in known and _unpadded(d) in known else d for d in _DIA.findall(text)}
    return cited | {word for word in re.split(r"[;,\s]+", text) if word in known}


def _unpadded(dia_id: str) -> str:
    """'D30:05' -> 'D30:5' (a cited id written with a leading zero)."""
    return re.sub(r"(?<=[D:])0+(?=\d)", "", dia_id)


CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}  # LoCoMo's


def category(qa: dict[str, Any]) -> int | None:
    """The question's category as a number (`CATEGORIES`: 1 multi-hop ... 5 adversarial), None when it has none."""
    try:
        return int(qa.get("category"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
