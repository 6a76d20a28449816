"""Core memory blocks: append, replace, delete, limits, read-only, and the edit record."""

from __future__ import annotations

import pytest

from agentos.blocks import Block, CoreMemory
from agentos.errors import MemoryEditError


@pytest.fixture
def memory() -> CoreMemory:
    return CoreMemory(
        [
            Block(label="human", value="Name: Ada\nLikes: tea", limit=40),
            Block(label="rules", value="Be kind.", read_only=True),
        ]
    )


def test_append_adds_a_line_and_records_the_edit(memory: CoreMemory) -> None:
    edit = memory.append("human", "Lives in Oslo", tool_call_id="c1")
    assert memory.get("human").value == "Name: Ada\nLikes: tea\nLives in Oslo"
    assert (edit.label, edit.old_value, edit.new_value, edit.tool_call_id) == (
        "human", "Name: Ada\nLikes: tea", "Name: Ada\nLikes: tea\nLives in Oslo", "c1")
    assert edit.at.tzinfo is not None


def test_append_to_empty_block_has_no_leading_newline() -> None:
    memory = CoreMemory([Block(label="notes")])
    memory.append("notes", "first")
    assert memory.get("notes").value == "first"


def test_replace_swaps_exact_text(memory: CoreMemory) -> None:
    memory.replace("human", "tea", "coffee")
    assert memory.get("human").value == "Name: Ada\nLikes: coffee"


def test_replace_with_empty_text_deletes_the_line(memory: CoreMemory) -> None:
    memory.replace("human", "Likes: tea", "")
    assert memory.get("human").value == "Name: Ada"
    memory.replace("human", "Name: Ada", "")
    assert memory.get("human").value == ""


def test_deleting_a_middle_line_leaves_no_blank_line() -> None:
    memory = CoreMemory([Block(label="b", value="one\ntwo\nthree")])
    memory.replace("b", "two", "")
    assert memory.get("b").value == "one\nthree"


def test_replace_missing_text_fails_loudly(memory: CoreMemory) -> None:
    with pytest.raises(MemoryEditError) as err:
        memory.replace("human", "coffee", "water")
    assert str(err.value) == 'old_content was not found in block "human". Copy the exact text from the block.'
    assert memory.get("human").value == "Name: Ada\nLikes: tea"


def test_replace_ambiguous_text_fails_loudly(memory: CoreMemory) -> None:
    with pytest.raises(MemoryEditError) as err:
        memory.replace("human", "a", "b")
    assert "occurs 3 times" in str(err.value)


def test_edit_over_the_limit_says_by_how_much(memory: CoreMemory) -> None:
    with pytest.raises(MemoryEditError) as err:
        memory.append("human", "x" * 30)
    assert str(err.value) == (
        'this edit would make block "human" 51 characters, 11 over its limit of 40. '
        "Shorten or remove something first."
    )
    assert memory.get("human").value == "Name: Ada\nLikes: tea"


def test_read_only_block_refuses_edits(memory: CoreMemory) -> None:
    with pytest.raises(MemoryEditError, match='block "rules" is read-only'):
        memory.append("rules", "Be rude.")
    with pytest.raises(MemoryEditError, match="read-only"):
        memory.replace("rules", "kind", "rude")


def test_unknown_block_lists_the_known_ones(memory: CoreMemory) -> None:
    with pytest.raises(MemoryEditError) as err:
        memory.append("nope", "x")
    assert str(err.value) == 'no memory block labelled "nope". Blocks: human, rules.'


def test_a_block_already_over_its_limit_loads_and_can_shrink() -> None:
    block = Block(label="human", value="a" * 50 + "b" * 50, limit=10)
    memory = CoreMemory([block])
    memory.replace("human", "b" * 50, "")
    assert memory.get("human").value == "a" * 50
    with pytest.raises(MemoryEditError, match="over its limit"):
        memory.append("human", "more")


def test_labels_are_validated() -> None:
    with pytest.raises(ValueError):
        Block(label="Bad Label")
    with pytest.raises(ValueError, match="already exists"):
        CoreMemory([Block(label="a"), Block(label="a")])
