"""The @tool decorator and the registry: every failure mode reaches the model as a clear tool result."""

from __future__ import annotations

import pytest

from agentos.blocks import Block
from agentos.errors import MemoryEditError, ToolDefinitionError, ToolError
from agentos.messages import ToolCall
from agentos.tools import ToolContext, ToolRegistry, tool


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails.

    Args:
        reason: Why it fails.
    """
    raise RuntimeError(reason)


@tool
def refuse(reason: str) -> str:
    """Fails with a ToolError.

    Args:
        reason: The message.
    """
    raise ToolError(reason)


@tool
def chatty(size: int) -> str:
    """Returns a lot of text.

    Args:
        size: How many characters.
    """
    return "x" * size


class NoMemory:
    """A memory interface for tools that use none."""

    def block(self, label: str) -> Block:
        if label not in ("human", "notes"):
            raise MemoryEditError(f'no memory block labelled "{label}". Blocks: human, notes.')
        return Block(label=label, value=f"value of {label}")

    def append_block(self, label: str, content: str) -> Block:
        raise AssertionError("not used")

    replace_block = append_block

    def tier(self, kind: type) -> object:
        raise AssertionError("not used")


def run(registry: ToolRegistry, name: str, arguments: str):
    return registry.execute(ToolCall(id="c1", name=name, arguments=arguments), ToolContext(memory=NoMemory()))


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry([add, explode, refuse, chatty], output_limit=100)


def test_valid_call_runs_and_returns_text(registry: ToolRegistry) -> None:
    outcome = run(registry, "add", '{"a": 3}')
    assert (outcome.text, outcome.is_error) == ("5", False)


def test_unknown_tool(registry: ToolRegistry) -> None:
    outcome = run(registry, "multiply", "{}")
    assert outcome.is_error
    assert outcome.text == ('Error: unknown tool "multiply". Tools you can call: add, chatty, explode, refuse. Call a '
                            'tool by its name with its arguments, for example: {"name": "add", "arguments": '
                            '{"a": "..."}}.')


def test_malformed_json(registry: ToolRegistry) -> None:
    outcome = run(registry, "add", '{"a": 3,')
    assert outcome.is_error
    assert outcome.text == (
        "Error: the arguments for add are not valid JSON (Expecting property name enclosed in double quotes "
        "at position 8). Send one JSON object."
    )


def test_arguments_not_an_object(registry: ToolRegistry) -> None:
    outcome = run(registry, "add", "[1, 2]")
    assert outcome.text == "Error: the arguments for add must be a JSON object, not list."


def test_missing_argument(registry: ToolRegistry) -> None:
    outcome = run(registry, "add", '{"b": 1}')
    assert outcome.text == "Error: invalid arguments for add: a: missing required argument."


def test_invalid_and_unknown_arguments(registry: ToolRegistry) -> None:
    outcome = run(registry, "add", '{"a": "three", "c": 1}')
    assert outcome.text == (
        "Error: invalid arguments for add: a: Input should be a valid integer, unable to parse string as an "
        "integer; c: unknown argument."
    )


def test_exception_inside_tool(registry: ToolRegistry) -> None:
    outcome = run(registry, "explode", '{"reason": "boom"}')
    assert outcome.text == "Error: explode failed: RuntimeError: boom"
    assert outcome.is_error


def test_tool_error_message_passes_through(registry: ToolRegistry) -> None:
    assert run(registry, "refuse", '{"reason": "not today"}').text == "Error: not today"


def test_output_is_capped_with_a_note(registry: ToolRegistry) -> None:
    outcome = run(registry, "chatty", '{"size": 250}')
    assert outcome.text == "x" * 100 + "\n[output truncated: showed 100 of 250 characters]"
    assert not outcome.is_error


def test_empty_arguments_mean_no_arguments() -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert run(ToolRegistry([ping]), "ping", "").text == "pong"


def test_parameter_without_description_is_rejected() -> None:
    def bad(a: int, b: int) -> int:
        """Add.

        Args:
            a: documented.
        """
        return a + b

    with pytest.raises(ToolDefinitionError, match="parameter 'b' has no description"):
        tool(bad)


def test_parameter_without_type_hint_is_rejected() -> None:
    def bad(a):  # type: ignore[no-untyped-def]
        """Echo.

        Args:
            a: anything.
        """
        return a

    with pytest.raises(ToolDefinitionError, match="needs a type hint"):
        tool(bad)


def test_tool_without_docstring_is_rejected() -> None:
    def bad(a: int) -> int:
        return a

    with pytest.raises(ToolDefinitionError, match="needs a docstring"):
        tool(bad)


def test_context_parameter_is_hidden_from_the_schema() -> None:
    @tool
    def whoami(prefix: str, ctx: ToolContext) -> str:
        """Say who is calling.

        Args:
            prefix: Text before the name.
        """
        return f"{prefix} {ctx.memory.block('human').value} {ctx.call_id}"

    assert list(whoami.parameters["properties"]) == ["prefix"]
    out = ToolRegistry([whoami]).execute(ToolCall(id="c9", name="whoami", arguments='{"prefix": "hi"}'),
                                         ToolContext(memory=NoMemory(), call_id="c9"))
    assert out.text == "hi value of human c9"


def test_multiline_parameter_descriptions_and_defaults() -> None:
    @tool(name="lookup")
    def find(query: str, limit: int = 5) -> list[str]:
        """Find things.

        Args:
            query: What to look for; this description
                continues on a second line.
            limit: At most this many.
        """
        return [query] * limit

    props = find.parameters["properties"]
    assert props["query"]["description"] == "What to look for; this description continues on a second line."
    assert props["limit"]["default"] == 5
    assert find.parameters["required"] == ["query"]
    assert find.name == "lookup"
