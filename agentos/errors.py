"""The error tree: every failure a user or the model can see is one of these; and how agentos's warnings are shown."""

from __future__ import annotations

import sys
import warnings
from typing import Any


class AgentOSError(Exception):
    """Base of all agentos errors; its message is written for the person reading it."""


class ConfigError(AgentOSError):
    """Settings are missing or invalid (model spec, data home, prompt directory)."""


class AgentNotFoundError(AgentOSError):
    """No agent has the requested name."""


class AgentExistsError(AgentOSError):
    """An agent with this name already exists."""


class InvalidNameError(AgentOSError):
    """An agent name that cannot be used."""


class AgentBusyError(AgentOSError):
    """Another live process holds the agent for writing; the message names it."""


class LeaseLostError(AgentOSError):
    """This session no longer holds its agent (taken over, or changed under it); it refuses to write."""


class AgentDeletedError(LeaseLostError):
    """The agent was deleted while this session had it open."""


class ForgetError(AgentOSError):
    """A request to forget that cannot be carried out as asked (nothing named, a bad pattern, an unknown fact)."""


class ReadOnlyAgentError(AgentOSError):
    """The agent was opened read-only and cannot change."""


class StorageError(AgentOSError):
    """The database could not be read or written (corrupt files, full disk, permissions)."""


class DamagedStoreError(StorageError):
    """Files of the store are damaged in a way that writing now could make worse; `agentos doctor` says more."""


class AgentOSWarning(UserWarning):
    """Something the user should know that does not stop the work; the CLI prints it as `warning: ...`."""


class DamageWarning(AgentOSWarning):
    """Something stored is damaged, but what could be read was loaded; the text says what and what to do."""


class WindowWarning(AgentOSWarning):
    """The context window the agent budgets for is not what the server serves (or the server's default limits it)."""


def show_damage_warnings() -> None:
    """Print agentos's own warnings as `warning: ...` on stderr (other warnings keep Python's own format)."""
    default = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, AgentOSWarning):
            print(f"warning: {message}", file=sys.stderr)
        else:
            default(message, category, *args, **kwargs)

    warnings.showwarning = show


class ToolDefinitionError(AgentOSError):
    """A Python function cannot be turned into a tool (missing descriptions, bad types)."""


class ToolError(AgentOSError):
    """A tool refused or failed; the message goes back to the model as the tool result."""


class ToolArgumentsError(ToolError):
    """A tool call's arguments do not fit the tool's parameters (the message says which and why)."""


class MemoryEditError(ToolError):
    """A core memory edit was refused (missing text, over the limit, read-only block)."""


class FactError(ToolError):
    """A fact or change that does not exist, or a change to facts that cannot be made (e.g. an undo after a later
    change to the same fact)."""


class ProviderError(AgentOSError):
    """A model provider failed."""


class AuthenticationError(ProviderError):
    """The provider rejected the credentials."""


class RateLimitError(ProviderError):
    """The provider asked us to slow down; `retry_after` is in seconds when it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """The provider failed on its side (5xx) or was unreachable; `retry_after` is in seconds when it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IncompleteStreamError(ServerError):
    """The stream ended before the model said the reply was finished: a cut connection (`partial`), or a
    response with no events at all (an error page behind a 200, a proxy, a server that does not stream).
    Retried when nothing had arrived yet."""

    UNNAMED = "the model's server"

    def __init__(self, partial: bool, server: str = UNNAMED) -> None:
        if partial:
            text = (f"{server} stopped mid-reply: the stream ended before the reply was finished (the "
                    "connection was probably cut). Try again.")
        else:
            text = (f"{server} sent no reply: the response ended without a single event (an error page, a "
                    "proxy, or a server that does not stream). Check the server and its address.")
        super().__init__(text)
        self.partial = partial
        self.server = server


class ProviderTimeoutError(ProviderError):
    """The provider did not answer in time."""


class ContextOverflowError(ProviderError):
    """The provider rejected the request as longer than the model's context window."""


class ScriptExhaustedError(ProviderError):
    """The scripted provider was called more times than its script has steps."""


class RealProviderBlockedError(ProviderError):
    """A real provider was used inside the test suite without opting in."""


class EmbedderError(AgentOSError):
    """An embedder could not be built or reached (unknown spec, missing package, service down)."""


class EmbedderMismatchError(StorageError):
    """A table was built with a different embedder from the one asked for."""
