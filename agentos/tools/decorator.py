"""The @tool decorator: a typed, documented Python function becomes a tool with JSON schemas."""

from __future__ import annotations

import copy
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentos.errors import ToolArgumentsError, ToolDefinitionError
from agentos.tools.context import ToolContext


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description}), by docstring_parser; a
    parameter's description is one line however many it was written on."""
    parsed = docstring_parser.parse(doc or "", style=docstring_parser.DocstringStyle.GOOGLE)
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    description = ("\n\n" if parsed.blank_after_short_description else "\n").join(parts)
    return description, {p.arg_name.lstrip("*"): " ".join((p.description or "").split()) for p in parsed.params}


def _is_context_param(annotation: Any) -> bool:
    return annotation is ToolContext or annotation == "ToolContext"


class Tool:
    """A callable tool: its name, description, argument model and both providers' schemas."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None, description: str | None = None) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ToolDefinitionError(f"Tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'.")
        doc_description, param_docs = parse_docstring(fn.__doc__ or "")
        self.description = description or doc_description
        if not self.description:
            raise ToolDefinitionError(f"Tool {self.name!r} needs a docstring that says what it does.")
        try:
            hints = typing.get_type_hints(fn)
        except Exception as exc:  # noqa: BLE001 - any failure here is a definition error
            raise ToolDefinitionError(f"Tool {self.name!r}: cannot resolve type hints ({exc}).") from exc
        self.context_param: str | None = None
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(fn).parameters.items():
            annotation = hints.get(pname, param.annotation)
            if _is_context_param(annotation):
                self.context_param = pname
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(f"Tool {self.name!r}: *args and **kwargs are not supported.")
            if annotation is inspect.Parameter.empty:
                raise ToolDefinitionError(f"Tool {self.name!r}: parameter {pname!r} needs a type hint.")
            doc = param_docs.get(pname)
            if not doc:
                raise ToolDefinitionError(
                    f"Tool {self.name!r}: parameter {pname!r} has no description. "
                    f"Describe it under 'Args:' in the docstring."
                )
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, Field(default, description=doc))
        model_name = "".join(part.capitalize() for part in re.split(r"[_-]", self.name)) + "Args"
        self.args_model: type[BaseModel] = create_model(
            model_name, __config__=ConfigDict(extra="forbid"), **fields
        )
        self.parameters = _clean_schema(self.args_model.model_json_schema())

    def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Run the tool with the model's arguments (a JSON object). Raises ToolArgumentsError when they do not fit
        its parameters, ToolError for what the tool refuses."""
        try:
            parsed = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgumentsError(_describe_validation(exc)) from exc
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.context_param:
            kwargs[self.context_param] = context
        return self.fn(**kwargs)

    def openai_schema(self) -> dict[str, Any]:
        """The tool in OpenAI Chat Completions `tools` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def anthropic_schema(self) -> dict[str, Any]:
        """The tool in Anthropic Messages `tools` format."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def compact(self) -> Tool:
        """The same tool described in fewer tokens, for a small context window: the description's first sentence,
        and only the required parameters, with their types and no descriptions. It runs exactly as before (made
        once per tool, so schema caches keyed by the tool keep working)."""
        made = self.__dict__.get("_compact_view")
        if made is not None:
            return made
        short = copy.copy(self)
        short.description = self.description.split("\n")[0].split(". ")[0].rstrip(".") + "."
        required = list(self.parameters.get("required", []))
        properties = self.parameters.get("properties", {})
        short.parameters = {"type": "object", "required": required,
                            "properties": {name: {k: v for k, v in properties[name].items() if k != "description"}
                                           for name in required if name in properties}}
        self.__dict__["_compact_view"] = short
        return short

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "missing":
            parts.append(f"{where}: missing required argument")
        elif err["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown argument")
        else:
            parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's `title` noise so schemas are small and stable."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    cleaned = strip(schema)
    cleaned.setdefault("properties", {})
    cleaned["additionalProperties"] = False
    return cleaned


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None) -> Any:
    """Turn a typed function with a Google-style docstring into a `Tool`.

    Use as `@tool` or `@tool(name="...")`. A parameter typed `ToolContext` receives the agent's memory.
    """
    if fn is None:
        return lambda f: Tool(f, name=name, description=description)
    return Tool(fn, name=name, description=description)
