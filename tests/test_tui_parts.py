"""The TUI's pure parts: the word diff of a memory edit and the context gauge."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentos.tui.diff import ADDED_STYLE, REMOVED_STYLE, changed_chars, diff_text, word_diff
from agentos.tui.status import PARTS, StatusInfo, gauge

words = st.lists(st.sampled_from(["Ada", "likes", "tea", "coffee", " ", "\n", ".", "Name:", "Mia", "x"]), max_size=30)


@given(words, words)
def test_a_diff_holds_both_values_exactly(old: list[str], new: list[str]) -> None:
    old_text, new_text = "".join(old), "".join(new)
    runs = word_diff(old_text, new_text)
    assert "".join(t for op, t in runs if op != "added") == old_text
    assert "".join(t for op, t in runs if op != "removed") == new_text
    assert all(t for _, t in runs)


def test_a_replaced_word_is_struck_and_the_new_one_added() -> None:
    assert word_diff("Likes tea", "Likes coffee") == [("same", "Likes "), ("removed", "tea"), ("added", "coffee")]
    text = diff_text("Likes tea", "Likes coffee")
    assert text.plain == "Likes teacoffee"
    assert [(str(s.style), text.plain[s.start:s.end]) for s in text.spans] == [(REMOVED_STYLE, "tea"),
                                                                               (ADDED_STYLE, "coffee")]
    assert changed_chars("Likes tea", "Likes coffee") == (6, 3)


def test_a_rewrite_reads_as_what_went_then_what_came() -> None:
    runs = word_diff("Nothing is known about the user yet.", "Name: Ada\nLikes: green tea")
    assert runs == [("removed", "Nothing is known about the user yet."), ("added", "Name: Ada\nLikes: green tea")]


def test_a_long_unchanged_stretch_is_cut_to_its_ends() -> None:
    old = "start " + "filler " * 100 + "end"
    text = diff_text(old, old.replace("end", "finish"), context=20)
    assert " … " in text.plain and len(text.plain) < 80 and text.plain.endswith("endfinish")


def info(**parts: int) -> StatusInfo:
    return StatusInfo(model="m", window=1000, parts=tuple((key, parts.get(key, 0)) for key, _, _ in PARTS),
                      correction=0, messages=3, in_context=3, archival=0, compactions=0)


def test_the_gauge_fits_its_width_and_shows_each_part_in_proportion() -> None:
    status = info(system=250, memory=50, tools=200, summary=0, messages=0)
    for width in (40, 80, 120, 200):
        line = gauge(status, width)
        assert len(line) <= width and "500/1,000 tokens (50%)" in line.plain
    wide = gauge(status, 200)
    assert "system 250" in wide.plain and "tools 200" in wide.plain
    cells = {colour: sum(s.end - s.start for s in wide.spans if str(s.style) == colour and
                         set(wide.plain[s.start:s.end]) == {"█"} and s.end - s.start > 1)
             for _, _, colour in PARTS}
    system, tools = cells[PARTS[0][2]], cells[PARTS[2][2]]
    assert system > tools > 0 and cells[PARTS[3][2]] == 0  # the summary takes no tokens, so no cell


def test_a_part_too_small_for_a_cell_still_shows() -> None:
    line = gauge(info(system=600, messages=1), 80)
    messages_colour = PARTS[4][2]
    assert any(str(s.style) == messages_colour and line.plain[s.start:s.end] == "█" for s in line.spans)
