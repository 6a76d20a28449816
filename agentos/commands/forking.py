"""Forking: an independent copy of an agent, as it is or as it was at a restore point (the CLI's `fork`, the
server's `/fork`)."""

from __future__ import annotations

from agentos.agent.agent import Agent
from agentos.agent.history import RestorePoint
from agentos.commands.rewinding import find_point
from agentos.memory.tier import Progress
from agentos.portable.archive import copy_agent
from agentos.storage.store import Store


def fork_agent(store: Store, name: str, new: str, at: int | None = None, progress: Progress | None = None,
               held: Agent | None = None) -> RestorePoint | None:
    """Copy agent `name` as `new`; with `at`, the copy is rewound to that restore point (checked before anything is
    copied; a copy that cannot be rewound is deleted). `held`: the caller's own open Agent of `name`. The point the
    copy went back to, or None."""
    if at is not None:
        source = held or Agent.load(name, store=store, read_only=True, with_model=False)
        try:
            find_point(source, at)
        finally:
            if held is None:
                source.close()
    copy_agent(store, name, new, progress, held)
    if at is None:
        return None
    fork = Agent.load(new, store=store, with_model=False)
    try:
        done = fork.rewind(at)
    except BaseException:
        fork.close()
        Agent.delete(new, store=store)  # no half-made fork left behind
        raise
    fork.close()
    return done.point
