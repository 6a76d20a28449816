"""The pager's pure policy: unit cases and property-based tests of every invariant."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos.messages import Message, ToolCall
from agentos.pager import ALERT_NAME, MARKER_TOKENS, MIN_TRUNCATED_TOKENS, Budget, Counts, plan, valid_cuts

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def call_msg(*ids: str) -> Message:
    return Message.assistant("", [ToolCall(id=i, name="t") for i in ids])


def result(call_id: str) -> Message:
    return Message(role="tool", content="r", tool_call_id=call_id, name="t")


def splits_pair(messages: list[Message], k: int) -> bool:
    """Brute force: does evicting messages[:k] separate a call from a result?"""
    evicted_calls = {c.id for m in messages[:k] for c in m.tool_calls}
    kept_calls = {c.id for m in messages[k:] for c in m.tool_calls}
    evicted_results = {m.tool_call_id for m in messages[:k] if m.role == "tool"}
    kept_results = {m.tool_call_id for m in messages[k:] if m.role == "tool"}
    return bool(evicted_calls & kept_results) or bool(kept_calls & evicted_results)


# -- strategies ---------------------------------------------------------------------------------


@st.composite
def conversations(draw: st.DrawFn, broken: bool = False) -> list[Message]:
    """Random conversations: user and assistant messages, tool calls with their results.

    With `broken`, results may be missing, late, orphaned or interleaved with other messages.
    """
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 18))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        if kind == "user":
            messages.append(Message.user("u"))
        elif kind == "assistant":
            messages.append(Message.assistant("a"))
        else:
            n = draw(st.integers(1, 3))
            ids = [f"c{len(messages)}_{i}" for i in range(n)]
            messages.append(call_msg(*ids))
            for i in ids:
                if broken and draw(st.booleans()):
                    if draw(st.booleans()):
                        messages.append(Message.user("interleaved"))
                    if draw(st.booleans()):
                        continue  # result missing
                messages.append(result(i))
            if broken and draw(st.booleans()):
                messages.insert(draw(st.integers(0, len(messages))), result("orphan"))
    return messages


@st.composite
def scenarios(draw: st.DrawFn, broken: bool = False) -> tuple[list[Message], Counts, Budget]:
    messages = draw(conversations(broken=broken))
    window = draw(st.integers(4_000, 20_000))
    sizes = tuple(draw(st.lists(st.integers(1, window // 3), min_size=len(messages), max_size=len(messages))))
    fixed = draw(st.integers(0, window // 4))
    counts = Counts(system=fixed // 2, memory=fixed // 4, tools=fixed - fixed // 2 - fixed // 4,
                    summary=draw(st.integers(0, window // 20)), messages=sizes, offset=draw(st.integers(-50, 200)))
    warn = draw(st.floats(0.5, 0.8))
    budget = Budget(window=window, warn_at=warn, evict_at=draw(st.floats(warn, 0.95)),
                    target=draw(st.floats(0.3, warn)), keep_last=draw(st.integers(1, 5)),
                    summary_tokens=window // 10)
    return messages, counts, budget


reasons = st.sampled_from(["auto", "overflow", "manual"])


def newest_question(messages: list[Message]) -> int | None:
    """The index of the user's newest message (not the pager's alert)."""
    return next((i for i in range(len(messages) - 1, -1, -1)
                 if messages[i].role == "user" and messages[i].name != ALERT_NAME), None)


def size_after(messages: list[Message], counts: Counts, budget: Budget, reason: str, k: int) -> int:
    """The request's size once messages[:k] are evicted into a summary of the most the plan allows it."""
    overflow = reason == "overflow" and counts.total > 0
    assumed = max(counts.total, budget.window + 1) if overflow else counts.total
    if k == 0:
        return assumed
    scale = assumed / counts.total if overflow else 1.0
    freed = sum(round(s * scale) for s in counts.messages[:k])
    new_summary = max(counts.summary + MARKER_TOKENS, min(budget.summary_tokens, counts.summary + sum(counts.messages[:k])))
    return assumed - freed + round((new_summary - counts.summary) * scale)


def evict_limit(messages: list[Message], counts: Counts, budget: Budget, reason: str) -> int:
    """How many messages a plan may evict: all but the last few, unless the request would stay over the eviction
    threshold with them; after a rejection, all before the question."""
    newest = newest_question(messages)
    keep_rule = max(0, len(messages) - budget.keep_last)
    if newest is None or (reason != "overflow" and newest <= keep_rule):
        return keep_rule
    if reason == "overflow":
        return newest
    most = max((k for k in range(keep_rule + 1) if not splits_pair(messages, k)), default=0)
    over = size_after(messages, counts, budget, reason, most) > budget.tokens(budget.evict_at)
    return newest if over else keep_rule


# -- properties ---------------------------------------------------------------------------------


@FAST
@given(conversations(broken=True))
def test_valid_cuts_match_brute_force(messages: list[Message]) -> None:
    cuts = valid_cuts(messages)
    assert len(cuts) == len(messages) + 1
    for k, ok in enumerate(cuts):
        if ok:
            assert not splits_pair(messages, k)
    assert cuts[0] and cuts[-1]


@FAST
@given(conversations())
def test_valid_cuts_exact_for_well_formed_context(messages: list[Message]) -> None:
    cuts = valid_cuts(messages)
    assert cuts == [not splits_pair(messages, k) for k in range(len(messages) + 1)]


@FAST
@given(scenarios(broken=True), reasons, st.booleans(), st.integers(1, 3))
def test_plan_invariants(scenario, reason, alerted, attempt) -> None:  # type: ignore[no-untyped-def]
    messages, counts, budget = scenario
    before = copy.deepcopy(messages)
    p = plan(messages, counts, budget, alerted=alerted, reason=reason, attempt=attempt)
    assert messages == before  # pure: inputs untouched
    assert p == plan(messages, counts, budget, alerted=alerted, reason=reason, attempt=attempt)
    n = len(messages)
    # never the last few messages (after a rejection: never the user's newest message, and anything before it
    # may go), never a call without its results
    newest = newest_question(messages)
    assert 0 <= p.evict <= evict_limit(messages, counts, budget, reason)
    assert not splits_pair(messages, p.evict)
    assert newest is None or newest not in dict(p.truncate)  # what the next call answers is never cut
    # truncation only touches messages that stay, and only shrinks them
    for index, keep in p.truncate:
        assert p.evict <= index < n
        assert 0 < keep < counts.messages[index]
    if p.action != "evict":
        assert p.evict == 0 and not p.truncate
    else:  # the new summary may never grow past what it replaces, nor past its share of the window
        if p.evict:
            freed = counts.summary + sum(counts.messages[: p.evict])
            assert p.summary_tokens <= max(counts.summary + MARKER_TOKENS, min(freed, budget.summary_tokens))
    hard = budget.tokens(budget.evict_at)
    if reason == "auto" and counts.total <= hard:
        assert p.action in ("ok", "alert") and p.evict == 0
    if reason == "manual" and p.action == "evict":
        limit = evict_limit(messages, counts, budget, reason)
        candidates = [k for k in range(1, limit + 1) if not splits_pair(messages, k)]
        assert p.evict == max(candidates, default=0)  # a forced compaction evicts all it may


@FAST
@given(scenarios(), st.sampled_from(["auto", "overflow"]))
def test_eviction_reaches_target_with_the_fewest_messages(scenario, reason) -> None:  # type: ignore[no-untyped-def]
    messages, counts, budget = scenario
    p = plan(messages, counts, budget, reason=reason)
    if p.action != "evict" or p.truncate:
        return
    target = budget.tokens(budget.target)
    assert p.tokens_after <= target or p.evict == max(
        k for k in range(1, evict_limit(messages, counts, budget, reason) + 1) if not splits_pair(messages, k))
    if p.tokens_after <= target:  # no smaller valid cut would have been enough
        for k in range(1, p.evict):
            if not splits_pair(messages, k):
                assert size_after(messages, counts, budget, reason, k) > target


@FAST
@given(scenarios(), st.sampled_from(["auto", "overflow"]))
def test_after_a_plan_the_request_fits_the_window(scenario, reason) -> None:  # type: ignore[no-untyped-def]
    messages, counts, budget = scenario
    p = plan(messages, counts, budget, reason=reason)
    if reason == "auto" and counts.total <= budget.tokens(budget.evict_at):
        return
    if reason == "overflow" and counts.total < budget.window // 2:
        return  # the provider's "too long" scales our counts by more than 2: no room is guaranteed
    newest = newest_question(messages)
    if newest is not None and counts.messages[newest] > budget.window // 10:
        return  # the question is never cut, so a large one leaves no room guaranteed
    # the fixed part is under a quarter (half, scaled) and the summary a tenth: there is always room
    assert p.action == "evict"
    assert p.tokens_after <= budget.window
    if reason == "auto":
        assert p.tokens_after <= budget.tokens(budget.evict_at)


@FAST
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=40), st.floats(0.5, 0.85))
def test_alert_once_per_pressure_episode(totals: list[int], warn: float) -> None:
    budget = Budget(window=10_000, warn_at=warn, evict_at=0.99)
    alerted, alerts, episodes, above = False, 0, 0, False
    for total in totals:
        total = min(total, budget.tokens(0.99))
        p = plan([], Counts(system=total), budget, alerted=alerted)
        alerted = p.alerted
        alerts += p.action == "alert"
        now_above = total > budget.tokens(warn)
        episodes += now_above and not above
        above = now_above
    assert alerts == episodes


@FAST
@given(scenarios(), st.integers(1, 3))
def test_overflow_always_makes_progress(scenario, attempt) -> None:  # type: ignore[no-untyped-def]
    messages, counts, budget = scenario
    p = plan(messages, counts, budget, reason="overflow", attempt=attempt)
    evictable = any(not splits_pair(messages, k) for k in range(1, evict_limit(messages, counts, budget, "overflow") + 1))
    if evictable:
        assert p.evict >= 1
    later = plan(messages, counts, budget, reason="overflow", attempt=attempt + 1)
    assert later.evict >= p.evict


# -- unit cases ---------------------------------------------------------------------------------


def test_under_the_alert_threshold_nothing_happens() -> None:
    messages = [Message.user("hi"), Message.assistant("hello")]
    p = plan(messages, Counts(system=100, messages=(10, 10)), Budget(window=1000))
    assert (p.action, p.evict, p.truncate, p.alerted) == ("ok", 0, (), False)


def test_alert_past_75_percent_then_silence_while_the_episode_lasts() -> None:
    budget = Budget(window=1000)
    messages = [Message.user("hi")]
    first = plan(messages, Counts(system=700, messages=(60,)), budget)
    assert first.action == "alert" and first.alerted
    again = plan(messages, Counts(system=700, messages=(80,)), budget, alerted=True)
    assert again.action == "ok" and again.alerted
    below = plan(messages, Counts(system=100, messages=(80,)), budget, alerted=True)
    assert not below.alerted  # the episode is over; the next crossing alerts again


def test_evicts_oldest_down_to_target_keeping_the_last_three() -> None:
    messages = [Message.user(str(i)) for i in range(10)]
    counts = Counts(system=100, messages=(100,) * 10)  # 1100 of 1000: over 90%
    p = plan(messages, counts, Budget(window=1200, summary_tokens=50))
    # target 720: 1100 - 100k + (a summary or marker of at most 96) <= 720 -> k = 5 (k=4 leaves 796)
    assert (p.action, p.evict, p.tokens_before, p.tokens_after) == ("evict", 5, 1100, 696)
    assert p.summary_tokens == 96


def test_the_last_messages_go_when_keeping_them_leaves_the_request_over_the_threshold() -> None:
    # a tool step and a reply, then a question too large to cut: keeping the last three would leave 950 of 1,000
    messages = [Message.user("old"), call_msg("a"), result("a"), Message.assistant("done"), Message.user("big")]
    counts = Counts(system=100, messages=(100, 10, 100, 40, 700))
    p = plan(messages, counts, Budget(window=1000, summary_tokens=50))
    assert p.action == "evict" and p.evict == 4  # everything before the question; the question stays whole
    assert p.tokens_after <= 900 and not p.truncate
    small = plan(messages, Counts(system=100, messages=(300, 10, 100, 40, 400)), Budget(window=1000, summary_tokens=50))
    assert small.evict == 1  # when the last three fit, they stay


def test_never_splits_a_call_from_its_results() -> None:
    messages = [Message.user("q"), call_msg("a", "b"), result("a"), result("b"), Message.assistant("x"),
                Message.user("1"), Message.user("2"), Message.user("3")]
    counts = Counts(system=10, messages=(10, 300, 300, 300, 10, 10, 10, 10))
    p = plan(messages, counts, Budget(window=1000, summary_tokens=10))
    assert p.evict == 4  # k = 2 or 3 would split; 4 is the first valid cut that reaches the target


def test_giant_tool_result_in_the_kept_messages_is_truncated() -> None:
    messages = [Message.user("q"), call_msg("a"), result("a")]
    counts = Counts(system=100, messages=(10, 10, 5000))
    p = plan(messages, counts, Budget(window=1000, summary_tokens=50))
    assert p.action == "evict" and p.evict == 0
    assert [i for i, _ in p.truncate] == [2]
    assert p.tokens_after <= 600


def test_system_prompt_alone_over_the_window_is_too_large() -> None:
    p = plan([Message.user("x")], Counts(system=900, memory=200, tools=10, messages=(1,)), Budget(window=1000))
    assert p.action == "too_large"
    assert "system prompt alone takes 1,110 tokens" in p.reason and "1,000" in p.reason


def test_overflow_assumes_the_request_is_over_the_window() -> None:
    messages = [Message.user(str(i)) for i in range(10)]
    counts = Counts(system=100, messages=(50,) * 10)  # we think 600 of 1000; the provider disagrees
    assert plan(messages, counts, Budget(window=1000)).action == "ok"
    p = plan(messages, counts, Budget(window=1000, summary_tokens=50), reason="overflow")
    assert p.action == "evict" and p.tokens_before == 600 and 1 <= p.evict <= 7


def test_manual_with_nothing_to_evict_says_so() -> None:
    p = plan([Message.user("a")], Counts(system=10, messages=(5,)), Budget(window=1000), reason="manual")
    assert p.action == "ok" and "nothing can be evicted" in p.reason


def test_counts_must_match_messages() -> None:
    with pytest.raises(ValueError):
        plan([Message.user("a")], Counts(), Budget(window=100))


def test_truncation_floor_is_respected_when_it_can_be() -> None:
    messages = [Message.user("a"), Message.user("b"), Message.user("c")]
    counts = Counts(system=100, messages=(3000, 3000, 3000))
    p = plan(messages, counts, Budget(window=8000, summary_tokens=100))
    assert p.tokens_after <= 4800 and all(keep >= MIN_TRUNCATED_TOKENS for _, keep in p.truncate)
