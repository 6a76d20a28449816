"""The presenter: one dispatch from events to a front end's view, and the lines of fact news."""

from __future__ import annotations

from typing import Any

from agentos.events import (
    Event,
    FactsChanged,
    FactsNotice,
    MemoryEdited,
    MessagesEvicted,
    Notice,
    ReplyIncomplete,
    Retrying,
    StepSaved,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    UsageReported,
)
from agentos.messages import Usage
from agentos.presenter import changes_numbers, describe_fact_changes, event_line, fact_lines, is_fact_news, present


class Recorder:
    """A view that records each call, by method name and its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any) -> str:
            self.calls.append((name, *args))
            return name

        return record


def shown(*events: Event) -> list[tuple[Any, ...]]:
    view = Recorder()
    for event in events:
        present(event, view)
    return view.calls


def test_reply_text_streams_and_anything_else_ends_the_reply_first() -> None:
    started = ToolCallStarted(call_id="c1", name="archival_search", arguments="{}")
    calls = shown(TextDelta(text="Hel"), TextDelta(text="lo"), started)
    assert calls == [("reply_text", "Hel"), ("reply_text", "lo"), ("reply_end",), ("retry_over",),
                     ("tool_started", started)]


def test_each_kind_of_event_reaches_its_method() -> None:
    finished = ToolCallFinished(call_id="c1", name="x", result="boom", is_error=True)
    edited = MemoryEdited(label="human", old_value="", new_value="Name: Ada")
    failed = TurnFailed(error="agent deleted", kind="AgentDeletedError", steps=0)
    names = [call[0] for call in shown(finished, edited, failed)]
    assert names == ["reply_end", "retry_over", "tool_finished"] * 1 + ["reply_end", "retry_over", "memory_edited",
                                                                        "reply_end", "retry_over", "failed"]
    assert shown(failed)[-1] == ("failed", failed, "error: agent deleted (AgentDeletedError)", True)


def test_a_retry_is_not_over_until_something_else_comes() -> None:
    retry = Retrying(reason="rate limited", error="429", attempt=1, max_retries=3, wait=4.0, remaining=4.0)
    calls = shown(retry)
    assert calls == [("reply_end",), ("retrying", retry, "rate limited, retrying in 4 s (attempt 1 of 3)")]


def test_lines_for_evictions_notices_and_incomplete_replies() -> None:
    evicted = MessagesEvicted(count=4, tokens_before=900, tokens_after=300, summarized=True)
    assert event_line(evicted) == ("⋯ 4 old messages moved out of context, summarized (900→300 tokens)", "info")
    assert event_line(Notice(text="careful")) == ("! careful", "notice")
    assert event_line(ReplyIncomplete(reason="max_tokens", detail="cut short")) == ("! cut short", "notice")
    assert shown(Notice(text="careful"))[-1] == ("line", "! careful", "notice")


def test_quiet_events_show_nothing_and_leave_a_streaming_reply_be() -> None:
    """A server that sends the usage before the reply's last text (any OpenAI-compatible one) keeps one reply line."""
    usage = UsageReported(usage=Usage())
    calls = shown(TextDelta(text="Hello f"), usage, TextDelta(text="rom the mock."), StepSaved(rev=1, message_ids=[]))
    assert calls == [("reply_text", "Hello f"), ("retry_over",), ("reply_text", "rom the mock."), ("retry_over",)]
    assert changes_numbers(usage) and not changes_numbers(Notice(text="x"))


def test_fact_news_leaves_a_streaming_reply_be() -> None:
    news = FactsChanged(changes=["+ Ada likes tea"], count=1)
    notice = FactsNotice(text="skipped", level="warning")
    assert shown(TextDelta(text="Hi"), news, notice) == [("reply_text", "Hi"), ("facts_changed", ["+ Ada likes tea"]),
                                                         ("facts_notice", notice)]
    assert is_fact_news(news) and not is_fact_news(notice)


def test_fact_lines_are_written_once_for_the_repl_and_the_tui() -> None:
    events = [FactsChanged(changes=["+ Ada likes tea"], count=1), FactsNotice(text="boom", level="error")]
    assert fact_lines(events) == ["[facts] + Ada likes tea", "[facts] error: boom"]
    assert describe_fact_changes(["+ Ada likes tea"]) == "New fact: Ada likes tea"
