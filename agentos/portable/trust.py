"""What an imported file may not decide alone: which server receives the user's API key.

A model spec with a base URL (`openai/gpt-4o@https://host/v1`) sends that family's key to the host on every call.
An export file or a Letta agent file can name any host, so an import takes a base URL as it is only when the
server is on this machine; any other needs the user's own `--model`.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlparse

from agentos.errors import AgentOSError, ConfigError
from agentos.providers.models import parse_spec

LOCAL_NAMES = {"localhost", "localhost.localdomain"}


def is_local(url: str) -> bool:
    """Whether `url` points at this machine (a loopback name or address)."""
    host = (urlparse(url).hostname or "").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_model_server(spec: str, path: Path) -> None:
    """Refuse, with what to do, a model spec from file `path` whose base URL is not on this machine."""
    try:
        parsed = parse_spec(spec)
    except ConfigError:
        return  # not a spec agentos can call at all: opening the agent says so, and sends nothing anywhere
    if parsed.base_url is None or is_local(parsed.base_url):
        return
    bare = f"{parsed.family}/{parsed.model}"
    raise AgentOSError(
        f"{path.name} names the model {spec!r}, which would send your {parsed.family} API key to "
        f"{parsed.base_url}, a server not on this machine. Nothing was imported. If you trust that server, import "
        f"again with --model '{spec}'; otherwise choose a model, for example --model {bare}.")
