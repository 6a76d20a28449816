"""`agentos blocks share|detach|list`: blocks several agents of one database share."""

from __future__ import annotations

import argparse

from agentos.agent.agent import open_store
from agentos.agent.sharing import detach_block, share_block, shared_uses
from agentos.formatting import short


def cmd_share(args: argparse.Namespace) -> int:
    row = share_block(open_store(), args.label, args.source, args.target, replace=args.replace)
    print(f'Agents "{args.source}" and "{args.target}" share block "{args.label}" ({row.id}, {len(row.value):,} '
          f"characters): an edit by either is seen by the other at its next step.")
    return 0


def cmd_detach(args: argparse.Namespace) -> int:
    removed = detach_block(open_store(), args.label, args.name)
    print(f'Agent "{args.name}" has block "{args.label}" to itself now (a copy of the shared one, as it was).'
          + (" No agent used the shared block any more, so it was deleted." if removed else ""))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    uses = shared_uses(open_store(), args.name)
    for use in uses:
        row = use.row
        by = f", last edited by {row.updated_by_name}" if row.updated_by_name else ""
        print(f"{row.label} ({row.id}): {len(row.value):,}/{row.limit:,} chars, revision {row.rev}{by}")
        print(f"  used by: {', '.join(f'{n} (as {lb})' if lb != row.label else n for n, lb in use.agents) or 'none'}")
        print(f"  {short(row.value, 100)}")
    if not uses:
        print("No shared blocks." if args.name is None else f'Agent "{args.name}" shares no blocks.')
    return 0
