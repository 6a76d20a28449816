"""What `agentos serve` is started with, and the rule that a server without users listens on loopback only."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentos.errors import ConfigError
from agentos.providers.base import Provider
from agentos.server.users import count_users

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8283
DRAIN_SECONDS = 10.0  # on SIGTERM, how long running turns may take to finish before they are cancelled
RELEASE_AFTER = 2.0  # seconds an agent may sit idle before the server gives its lease back (so another worker can take it)
WAIT_FOR_HOLDER = 10.0  # seconds a request waits for another process to give its agent back, before 409

# A model spec -> the provider to use for it, or None for the usual resolution (tests hand in scripted models).
Models = Callable[[str], Provider | None]


@dataclass
class ServeConfig:
    """How one server runs: where it listens, the data home it serves, and its bounds."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    home: Path | None = None  # None: the configured data home ($AGENTOS_HOME)
    queue_size: int = 8  # per agent: turns and changes waiting behind the one running; one more is refused (429)
    drain_seconds: float = DRAIN_SECONDS
    max_body_bytes: int = 1 << 20  # a JSON request (a message, a block, a passage)
    max_import_bytes: int = 1 << 30  # an export file uploaded to /api/agents/import
    models: Models | None = None
    workers: int = 1  # server processes sharing the port; each serves any agent (see docs/serve.md, "Several workers")
    release_after: float | None = RELEASE_AFTER  # an agent idle this long is given back (None: held until shutdown)
    wait_for_holder: float = WAIT_FOR_HOLDER  # how long a request waits for another process to give its agent back
    recycle_mib: float | None = None  # a worker whose heap passes this is replaced by a fresh one (see server.run)


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback interface only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_loopback(host: str, users: int | None = None, home: Path | None = None) -> None:
    """Refuse to listen beyond loopback while no users (with API keys) are configured: every request would act as the
    one local user, with no key, for anyone who can reach the port. `users`: how many there are (None: count those of
    `home`, default the configured data home)."""
    if is_loopback(host) or (users if users is not None else count_users(home)):
        return
    raise ConfigError(
        f"refusing to listen on {host}: this server has no users configured, so every request acts as the one local "
        f"user with no key, and anyone who can reach {host} could read and change every agent. Add a user first "
        f"(agentos users add NAME: requests then need its key), or listen on loopback (--host 127.0.0.1, the "
        f"default) and reach it from elsewhere through an SSH tunnel or a reverse proxy that checks who connects.")
