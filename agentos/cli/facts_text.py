"""How `agentos facts` shows facts, their sources, changes and settings: pure functions from records to lines."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time
from typing import TYPE_CHECKING, Any

from agentos.errors import FactError
from agentos.retrieval.search import shorten

if TYPE_CHECKING:
    from agentos.memory.facts.rows import Fact, FactChange
    from agentos.memory.facts.settings import FactSettings
    from agentos.memory.facts.tier import FactTier

Sources = dict[str, dict[str, Any]]  # message id -> the message's id, role, name, content, created_at
FIELD_WIDTH = 15


def _day(moment: datetime) -> str:
    """A date, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def _time(moment: datetime) -> str:
    """A time to the minute, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def fact_line(fact: Fact) -> str:
    """One fact in one line: id, text, subject/category, since/until, status when not current, confidence."""
    span = f"since {_day(fact.valid_from)}" + (f", until {_day(fact.valid_to)}" if fact.valid_to else "")
    status = "" if fact.current else f"; {fact.status}"
    return f"{fact.id}  {fact.text}  ({fact.subject}/{fact.category}; {span}{status}; confidence {fact.confidence:.2f})"


def _one_line(text: str, limit: int | None) -> str:
    """Text on one line, cut at `limit` characters when given."""
    flat = " ".join((text or "").split())
    return shorten(flat, limit) if limit else flat


def source_lines(fact: Fact, sources: Sources, limit: int | None = None) -> list[str]:
    """The messages a fact came from: time, speaker and text (or that one is no longer stored)."""
    lines = []
    for message_id in fact.source_ids:
        found = sources.get(message_id)
        if found is None:
            lines.append(f"{message_id} (no longer stored)")
            continue
        who = found.get("name") or found["role"]
        lines.append(f"{_time(found['created_at'])}  {who}: {_one_line(found['content'], limit)}")
    return lines


def change_brief(change: FactChange) -> str:
    """A change in a few words: kind, who, when, why."""
    reason = f": {change.reason}" if change.reason else ""
    return f"{change.kind} by {change.by} on {_time(change.at)} ({change.id}){reason}"


def _logged(facts: FactTier, change_id: str | None) -> str:
    """The change with this id, in brief; the bare id when the log does not have it."""
    if not change_id:
        return "-"
    try:
        return change_brief(facts.change(change_id))
    except FactError:
        return f"{change_id} (not in the change log)"


def _moment(moment: datetime) -> str:
    """A bound in words: the day when it is a whole day's end (a date given), else the time, UTC."""
    utc = moment.astimezone(UTC)
    return _day(utc) if utc.time() == time.max else f"{_time(utc)} UTC"


def _what(*, include_ended: bool, as_of: datetime | None, subject: str | None) -> str:
    """The facts a listing or search shows, in words."""
    about = f" about {subject}" if subject else ""
    if as_of:
        return f"facts{about} believed on {_moment(as_of)}"
    return f"facts{about} (every version)" if include_ended else f"current facts{about}"


def _title(name: str, *, include_ended: bool, as_of: datetime | None, subject: str | None) -> str:
    """The head of a listing."""
    about = f" about {subject}" if subject else ""
    if as_of:
        return f'Facts{about} of "{name}" believed on {_moment(as_of)}'
    return f'Every version of the facts{about} of "{name}"' if include_ended else f'Current facts{about} of "{name}"'


def change_lines(log: Sequence[FactChange], ended: dict[str, Fact]) -> list[str]:
    """The log in lines: one per change or skipped batch; runs of plain progress rows as one line."""
    undone = {c.target_change: c.id for c in log if c.kind == "undo" and c.target_change}
    lines: list[str] = []
    run: list[FactChange] = []
    for change in [*log, None]:
        if change is not None and change.kind == "batch":
            run.append(change)
            continue
        if run:
            lines.append(_batches(run))
            run = []
        if change is not None:
            mark = f"  [undone by {undone[change.id]}]" if change.id in undone else ""
            lines.append(f"{_time(change.at)}  {change.id}  {change.kind:<7} by {change.by:<12} "
                         f"{change_text(change, ended)}{mark}")
    return lines


def _batches(run: Sequence[FactChange]) -> str:
    """A run of consolidation's progress rows in one line."""
    messages = sum(len(c.message_ids) for c in run)
    return (f"{_time(run[-1].at)}  consolidation read {messages} message(s) in {len(run)} batch(es), through "
            f"message #{run[-1].through_seq}")


def change_text(change: FactChange, ended: dict[str, Fact]) -> str:
    """What one change did, in words, with its reason."""
    made = f' {change.fact_id} "{change.fact.text}"' if change.fact else ""
    old = ended.get(change.old_fact_id or "")
    kind, reason = change.kind, change.reason
    if kind == "add":
        text = f"+{made}"
    elif kind in ("update", "correct"):
        text = f"~ {change.old_fact_id} ->{made}"
    elif kind in ("delete", "retract", "prune"):
        text = f"- {change.old_fact_id}" + (f' "{old.text}"' if old is not None else "")
    elif kind == "undo":
        text = f"undo of {change.target_change}"
        reason = "" if reason.startswith("undo of") else reason
    elif kind == "skip":
        where = f"through #{change.through_seq}" if change.through_seq is not None else "again"
        text = f"skipped {len(change.message_ids)} message(s) {where}" + (f" with {change.model}" if change.model else "")
    elif kind == "retry":
        text = f"skip {change.target_change}: {len(change.message_ids)} message(s)"
    elif kind == "rewind":
        text = f"consolidation goes back to after message #{change.through_seq}"
    else:
        text = kind
    return text + (f"  ({reason})" if reason else "")


def _describe_mode(settings: FactSettings) -> str:
    """When consolidation runs, in words."""
    return {"off": "nothing new is consolidated", "turn": "consolidated after every turn",
            "batch": f"consolidated once {settings.batch_turns} turns are waiting",
            "idle": f"consolidated once the agent has been idle {settings.idle_seconds:g} s"}[settings.mode]


def settings_lines(settings: FactSettings, agent_model: str) -> list[str]:
    """Fact settings, one per line."""
    lines = []
    for key, value in settings.model_dump().items():
        if key == "model" and value is None:
            value = f"{agent_model} (the agent's own)"
        elif key == "prompt_tokens" and not value:
            value = "0 (no facts in the prompt; the model finds them with fact_search)"
        lines.append(f"  {key.replace('_', ' ') + ':':<{FIELD_WIDTH}} {value}")
    return lines
