"""A tool described by a JSON Schema rather than a Python signature: what a tool from an MCP server becomes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentos.errors import ToolArgumentsError
from agentos.tools.context import ToolContext
from agentos.tools.decorator import Tool

MAX_ERRORS_SAID = 3


class SchemaTool(Tool):
    """A tool whose parameters are a JSON Schema it was handed; `run(arguments)` does the work.

    The arguments are checked against the schema before `run` sees them, so the model hears what is wrong the way
    it does for a Python tool."""

    def __init__(self, name: str, description: str, parameters: dict[str, Any],
                 run: Callable[[dict[str, Any]], Any]) -> None:
        # Not Tool.__init__: there is no function to read a signature from; the schema is given.
        self.name = name
        self.description = description
        self.parameters = parameters
        self.run = run
        self.fn = run
        self.context_param = None

    def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        problems = schema_problems(self.parameters, arguments)
        if problems:
            raise ToolArgumentsError("; ".join(problems))
        return self.run(arguments)


def schema_problems(schema: dict[str, Any], value: Any) -> list[str]:
    """Where `value` breaks `schema`, a few of them, each as `where: why` (empty when it fits)."""
    import jsonschema  # deferred: 0.1 s, needed only when a tool from a server is called

    validator = jsonschema.validators.validator_for(schema)(schema)
    said = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))[:MAX_ERRORS_SAID]:
        where = ".".join(str(p) for p in error.absolute_path) or "arguments"
        said.append(f"{where}: {error.message}")
    return said
