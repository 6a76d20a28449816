"""Importing an agentos export file (the CLI's `import`, the server's `/import`): which kind a file is, and the
import with a context window given on the way."""

from __future__ import annotations

import zipfile
from pathlib import Path

from agentos.agent.agent import Agent
from agentos.memory.tier import Progress
from agentos.portable.archive import SUFFIX, TransferReport, import_agent
from agentos.storage.store import Store


def is_agentos_file(path: Path) -> bool:
    """Whether `path` is (or is taken for) an agentos export rather than a Letta agent file (JSON)."""
    return path.suffix == SUFFIX or not path.is_file() or zipfile.is_zipfile(path)


def set_window(store: Store, name: str, window: int | None) -> None:
    """Give agent `name` this context window (None: the model's own again), saved."""
    agent = Agent.load(name, store=store, with_model=False)
    try:
        agent.update_settings(context_window=window)
        agent.save()
    finally:
        agent.close()


def import_native(store: Store, path: Path, name: str | None = None, model: str | None = None,
                  window: int | None = None, progress: Progress | None = None) -> TransferReport:
    """Import the agentos export at `path` (as `name`, with `model`, see `import_agent`), then give it `window`."""
    report = import_agent(store, path, name, progress=progress, model=model)
    if window is not None:
        set_window(store, report.name, window)
    return report
