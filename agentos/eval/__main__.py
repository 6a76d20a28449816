"""`python -m agentos.eval locomo PATH [--embedder SPEC]`."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentos.eval", description="Retrieval evaluations.")
    sub = parser.add_subparsers(dest="suite", required=True)
    p = sub.add_parser("locomo", help="LoCoMo: load each conversation into recall, search every question")
    p.add_argument("path", help="locomo10.json")
    p.add_argument("--embedder", default="none", help="none (BM25 only), hash:384, st/all-MiniLM-L6-v2, openai/...")
    p.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    p.add_argument("--home", help="data home for the loaded agents (default: a temp dir, removed after)")
    args = parser.parse_args(argv)
    from agentos.eval.locomo import run

    return run(args.path, embedder=args.embedder, limit=args.limit, home=args.home)


if __name__ == "__main__":
    sys.exit(main())
