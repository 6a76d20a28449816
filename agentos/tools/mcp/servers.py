"""How an agent reaches one MCP server: a command to start (stdio) or a URL (streamable HTTP), never a secret.

Environment values and headers are kept as references: `env` maps a variable the server gets to the variable of
agentos's own environment it is copied from, and a header's value may name variables as `${NAME}`; both are read
when the server is started, so an exported agent carries no credentials.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase

from pydantic import BaseModel, Field, field_validator, model_validator

from agentos.errors import ConfigError

SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_TIMEOUT_S = 30.0


class McpServerSpec(BaseModel):
    """One MCP server an agent takes tools from."""

    name: str
    command: list[str] | None = None  # stdio: the program and its arguments
    url: str | None = None  # streamable HTTP
    env: dict[str, str] = Field(default_factory=dict)  # the server's variable -> the name of ours it is copied from
    headers: dict[str, str] = Field(default_factory=dict)  # HTTP header -> value, `${NAME}` read from our environment
    allow: list[str] | None = None  # the server's tool names (or fnmatch patterns) offered; None: all of them
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)  # per call, and for starting the server
    cwd: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not SERVER_NAME.match(name):
            raise ValueError(f"invalid MCP server name {name!r}: use 1-32 letters, digits, '_' or '-', starting with "
                             f"a letter or digit (it prefixes the names of the server's tools)")
        return name

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        for ours in env.values():
            if not ENV_NAME.match(ours):
                raise ValueError(f"{ours!r} is not the name of an environment variable; the value itself is never "
                                 f"stored: give the name of the variable that holds it")
        return env

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError(f'MCP server "{self.name}" needs exactly one of a command (stdio) or a URL (HTTP)')
        if self.command is not None and not self.command:
            raise ValueError(f'MCP server "{self.name}" has an empty command')
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError(f'MCP server "{self.name}": the URL must start with http:// or https://, not {self.url!r}')
        if self.url is None and self.headers:
            raise ValueError(f'MCP server "{self.name}": headers are for an HTTP server, and this one runs a command')
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def where(self) -> str:
        """The command line or the URL, as a person reads it."""
        return " ".join(self.command) if self.command is not None else str(self.url)

    def allows(self, tool: str) -> bool:
        return self.allow is None or any(fnmatchcase(tool, pattern) for pattern in self.allow)

    def environment(self) -> dict[str, str]:
        """The variables the server gets, read from this process's environment now."""
        return {theirs: _read(ours, self.name) for theirs, ours in self.env.items()}

    def expanded_headers(self) -> dict[str, str]:
        """The headers with each `${NAME}` replaced by that variable of this process's environment."""
        return {key: REFERENCE.sub(lambda m: _read(m.group(1), self.name), value) for key, value in self.headers.items()}


def _read(variable: str, server: str) -> str:
    value = os.environ.get(variable)
    if value is None:
        raise ConfigError(f'MCP server "{server}" needs the environment variable {variable}, which is not set. '
                          f"Set it where agentos runs (the agent stores only its name).")
    return value


def find_server(servers: list[McpServerSpec], name: str) -> McpServerSpec:
    """The server called `name`; ConfigError listing the ones there are."""
    for spec in servers:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in servers) or "none"
    raise ConfigError(f'no MCP server named "{name}" (this agent has: {known}). Add one with: agentos mcp add')
