"""`agentos forget NAME`: forget text, a pattern, a fact, a period or everything the agent learnt, in every tier and
in the copies its rewinds kept; it shows what will go and asks first (`--yes` does not ask, `--dry-run` only shows)."""

from __future__ import annotations

import argparse
import sys

from agentos.agent.agent import Agent
from agentos.commands.forgetting import build_request, describe, forget_everywhere, plan_everywhere
from agentos.config import data_home
from agentos.errors import AgentOSError
from agentos.memory.forget_request import ForgetRequest
from agentos.storage.traces import traces


def cmd_forget(args: argparse.Namespace) -> int:
    request = build_request(text=args.text, regex=args.regex, fact_id=args.fact, before=args.before,
                            between=args.between, everything=args.all)
    agent = Agent.load(args.name, with_model=False, read_only=args.dry_run)
    try:
        planned = plan_everywhere(agent, request)
        print("\n".join(describe(planned, request, done=False)))
        if not any(r.total for r in planned):
            print("Nothing to forget.")
            return 0
        if args.dry_run:
            print("Dry run: nothing was forgotten.")
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                raise AgentOSError(f'refusing to forget in "{args.name}" without confirmation; pass --yes.')
            if input("Forget all of this, for good? [y/N] ").strip().lower() not in ("y", "yes"):
                print("Nothing was forgotten.")
                return 1
        done = forget_everywhere(agent, request)
    finally:
        agent.close()
    print("\n".join(describe(done, request, done=True)))
    if args.check:
        print(checked(request, {row.agent_id: name for name, row in agent.store.agent_rows().items()}))
    failed = [r.name for r in done if r.error]
    return 1 if failed else 0


def checked(request: ForgetRequest, names: dict[str, str]) -> str:
    """What a search of every file and table version under the data home finds of the forgotten text."""
    if request.text is None or request.regex:
        return "--check searches for text given with --text; nothing was searched."
    places = traces(data_home(), request.text)
    if not places:
        return "Checked every file and every table version under the data home: no trace of it is left."
    def owner(place: str) -> str:
        return next((f' (agent "{name}")' for agent_id, name in names.items() if agent_id in place), "")
    return "Still found (other agents, or a copy forget could not open):\n" + "\n".join(
        f"  {place}{owner(place)}" for place in places)

