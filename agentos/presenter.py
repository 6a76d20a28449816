"""Events as a front end shows them: one dispatch on the event's type, calling the methods of a `View` that the line
REPL and the TUI each implement; the lines of fact news, written once for both."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

from agentos.events import (
    Event,
    FactsChanged,
    FactsNotice,
    MemoryEdited,
    MessagesEvicted,
    Notice,
    ReplyIncomplete,
    Retrying,
    SecretsRemoved,
    StepSaved,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    UsageReported,
)
from agentos.formatting import describe_eviction, describe_failure, describe_incomplete, describe_retry, ends_session
from agentos.memory.secret_gate import describe as describe_secrets

Kind = Literal["info", "notice", "error"]

NOTIFY_FACTS = 3  # new facts named in one notification; the rest are counted
FACT_NOTE_CHARS = 80  # each cut to this many characters there
ONE_CHANGE = {"+ ": "New fact: ", "~ ": "Updated fact: "}  # a notification of one change, by its line's mark


class View(Protocol):
    """What a front end does with each kind of event. A method may return an awaitable (the TUI's), which the
    caller of `present` awaits, in order."""

    def reply_text(self, text: str) -> Any: ...

    def reply_end(self) -> Any: ...  # before anything that is not reply text

    def retry_over(self) -> Any: ...  # anything but a retry's wait came: the retry (if one) is over

    def tool_started(self, event: ToolCallStarted) -> Any: ...

    def tool_finished(self, event: ToolCallFinished) -> Any: ...

    def memory_edited(self, event: MemoryEdited) -> Any: ...

    def retrying(self, event: Retrying, text: str) -> Any: ...

    def line(self, text: str, kind: Kind) -> Any: ...

    def failed(self, event: TurnFailed, text: str, ends_session: bool) -> Any: ...

    def facts_changed(self, lines: list[str]) -> Any: ...

    def facts_notice(self, event: FactsNotice) -> Any: ...


def event_line(event: Event) -> tuple[str, Kind] | None:
    """The one line an event that is only told about reads as (an eviction, a notice, an incomplete reply)."""
    if isinstance(event, MessagesEvicted):
        return describe_eviction(event), "info"
    if isinstance(event, ReplyIncomplete):
        return describe_incomplete(event), "notice"
    if isinstance(event, Notice):
        return f"! {event.text}", "notice"
    if isinstance(event, SecretsRemoved):
        return (f"! secret gate: {describe_secrets(event.kinds)} ({', '.join(event.where)}) replaced by a placeholder "
                f"in what is stored and sent to the model", "notice")
    return None


def changes_numbers(event: Event) -> bool:
    """Whether the event changes the numbers a status line shows (tokens used, messages in context)."""
    return isinstance(event, (UsageReported, MessagesEvicted))


def present(event: Event, view: View) -> list[Any]:
    """Show one event through `view`; returns what its methods returned (awaitables to await, in order)."""
    if isinstance(event, TextDelta):
        return [view.reply_text(event.text)]
    if isinstance(event, FactsChanged):  # background news: it may come while a reply streams, and leaves it be
        return [view.facts_changed(list(event.changes))]
    if isinstance(event, FactsNotice):
        return [view.facts_notice(event)]
    if isinstance(event, (UsageReported, StepSaved)):  # shown by nothing but the numbers: the reply goes on
        return [view.retry_over()]
    done = [view.reply_end()]
    if isinstance(event, Retrying):
        return [*done, view.retrying(event, describe_retry(event))]
    done.append(view.retry_over())
    told = event_line(event)
    if told is not None:
        done.append(view.line(*told))
    elif isinstance(event, ToolCallStarted):
        done.append(view.tool_started(event))
    elif isinstance(event, ToolCallFinished):
        done.append(view.tool_finished(event))
    elif isinstance(event, MemoryEdited):
        done.append(view.memory_edited(event))
    elif isinstance(event, TurnFailed):
        done.append(view.failed(event, describe_failure(event), ends_session(event)))
    return done


def is_fact_news(event: Event) -> bool:
    """Whether fact memory changed (so that what shows the facts reads them afresh)."""
    return isinstance(event, FactsChanged)


def fact_lines(events: Iterable[Event]) -> list[str]:
    """Consolidation's events as lines: `[facts] + Ada likes green tea`, `[facts] warning: …`."""
    lines: list[str] = []
    for event in events:
        if isinstance(event, FactsChanged):
            lines += [fact_change_line(change) for change in event.changes]
        elif isinstance(event, FactsNotice):
            lines.append(fact_notice_line(event))
    return lines


def fact_change_line(change: str) -> str:
    """One change to fact memory as a line of its own: `[facts] + Ada likes green tea`."""
    return f"[facts] {change}"


def fact_notice_line(event: FactsNotice) -> str:
    """A notice of consolidation as a line of its own: `[facts] warning: …`."""
    return f"[facts] {event.level}: {event.text}"


def describe_fact_changes(lines: Sequence[str]) -> str:
    """What consolidation changed, for a notification: "New fact: …", or several summarised in one."""
    if len(lines) == 1:
        line = lines[0]
        lead = ONE_CHANGE.get(line[:2])
        return f"{lead}{line[2:]}" if lead else f"Fact memory: {line}"
    adds = [line[2:] for line in lines if line.startswith("+ ")]
    named = adds if len(adds) == len(lines) else list(lines)
    shown = "; ".join(_cut(item, FACT_NOTE_CHARS) for item in named[:NOTIFY_FACTS])
    more = f"; and {len(named) - NOTIFY_FACTS} more" if len(named) > NOTIFY_FACTS else ""
    what = "new facts" if named is adds else "fact changes"
    return f"{len(named)} {what}: {shown}{more}"


def _cut(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
