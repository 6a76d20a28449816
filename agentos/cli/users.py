"""`agentos users`: the users of `agentos serve` and their API keys. A new key goes to stdout alone (so that
`KEY=$(agentos users add ada)` works) and what to know about it to stderr; it is shown this once and stored only as a
salted hash."""

from __future__ import annotations

import argparse
import sys

from agentos.errors import AgentOSError
from agentos.server.users import User, Users, user_database


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _key(user: User, key: str, users: Users, what: str) -> None:
    _say(f'{what}. Their API key follows; it is shown this once and cannot be shown again (only replaced, with '
         f"`agentos users rotate {user.name}`):")
    print(key, flush=True)
    _say("Requests to `agentos serve` send it as the header `Authorization: Bearer KEY`.")


def _agents(user: User, users: Users) -> str:
    return "the CLI's agents (the data home's own database)" if user.cli_agents else user_database(user, users.home)


def cmd_add(args: argparse.Namespace) -> int:
    users = Users()
    first = not users.all()
    user, key = users.add(args.name, cli_agents=args.cli_agents)
    _key(user, key, users, f'Added user "{user.name}" ({user.id}); their agents: {_agents(user, users)}')
    if first:
        owner = user.name if user.cli_agents else "a user added with --cli-agents"
        _say(f"This is the first user: from now on `agentos serve` asks every request for a key, and may listen beyond "
             f"loopback. The CLI's agents are served only to {owner}.")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    users = Users().all()
    if not users:
        print("No users: `agentos serve` serves the one local user (the CLI's agents) with no key, on loopback only. "
              "Add one with: agentos users add NAME")
        return 0
    width = max(4, *(len(u.name) for u in users))
    print(f"{'NAME':<{width}}  {'ID':<20}  {'CREATED':<25}  AGENTS")
    for user in users:
        agents = "the CLI's" if user.cli_agents else "their own"
        print(f"{user.name:<{width}}  {user.id:<20}  {user.created_at:<25}  {agents}")
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    users = Users()
    user, key = users.rotate(args.name)
    _key(user, key, users, f'New key for user "{user.name}"; their old key no longer works')
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    users = Users()
    user = users.find(args.name)
    where = _agents(user, users)
    if not args.yes:
        if not sys.stdin.isatty():
            raise AgentOSError(f'refusing to remove user "{user.name}" without confirmation; pass --yes.')
        answer = input(f'Remove user "{user.name}"? Their key stops working at once; their agents stay on disk '
                       f"({where}) but are no longer served. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Not removed.")
            return 1
    users.remove(user.name)
    kept = "they stay the CLI's" if user.cli_agents else f"they stay on disk in {where}, served to no one"
    print(f'Removed user "{user.name}": their key no longer works. Their agents were not deleted: {kept}.')
    return 0
