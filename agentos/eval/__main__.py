"""`python -m agentos.eval locomo PATH [--embedder SPEC]` and `python -m agentos.eval locomo-qa PATH --model SPEC`."""

from __future__ import annotations

import argparse
import sys

from agentos.embedders.resolve import DEFAULT_EMBEDDER
from agentos.errors import show_damage_warnings
from agentos.eval.locomo import run as run_retrieval
from agentos.eval.locomo_qa import CONDITIONS, Options
from agentos.eval.locomo_qa import run as run_qa
from agentos.retrieval.recall_paths import PATHS


def categories(text: str) -> tuple[int, ...]:
    """'1,2,3,4' -> (1, 2, 3, 4)."""
    try:
        chosen = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"categories are numbers 1-5 separated by commas, not {text!r}") from None
    if not chosen or not all(1 <= c <= 5 for c in chosen):
        raise argparse.ArgumentTypeError(f"categories are numbers 1-5 separated by commas, not {text!r}")
    return chosen


def paths(text: str) -> tuple[str, ...]:
    """'keyword,time' -> ('keyword', 'time'), each a known search path."""
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [p for p in chosen if p not in PATHS]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"search paths are among {', '.join(PATHS)}, separated by commas, not {text!r}")
    return chosen


def positive(text: str) -> int:
    """A whole number above 0."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, not {text!r}")
    return int(text)


def conditions(text: str) -> tuple[str, ...]:
    """'agent,none' -> ('agent', 'none'), each a known condition, each once."""
    chosen = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not chosen or any(c not in CONDITIONS for c in chosen):
        raise argparse.ArgumentTypeError(f"conditions are among {', '.join(CONDITIONS)}, separated by commas, "
                                         f"not {text!r}")
    return chosen


def names(text: str) -> tuple[str, ...]:
    """'conv-26,conv-30' -> ('conv-26', 'conv-30')."""
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    if not chosen:
        raise argparse.ArgumentTypeError(f"expected conversation ids separated by commas, not {text!r}")
    return chosen


def whole(text: str) -> int:
    """A whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}")
    return int(text)


def add_qa(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The locomo-qa subcommand's arguments."""
    p = sub.add_parser("locomo-qa", help="LoCoMo QA end to end: answers from agentos's memory and baselines, "
                                         "scored with LoCoMo's F1 (and a judge)")
    p.add_argument("path", help="locomo10.json")
    p.add_argument("--model", required=True, help="the answering model (every condition), e.g. openai/gpt-4.1-mini "
                                                  "or scripted/reader (offline)")
    p.add_argument("--judge", help="the grading model (default: --model; none: no judge, F1 alone); scripted/judge "
                                   "offline")
    p.add_argument("--no-judge", action="store_true", help="no judge: LoCoMo F1 alone (as --judge none)")
    p.add_argument("--fact-model", help="the model consolidation asks (default: --model); scripted/facts offline")
    p.add_argument("--no-facts", action="store_true",
                   help="no fact consolidation: the agent answers from recall (and archival) alone")
    p.add_argument("--conditions", type=conditions, default=("agent", "full"),
                   help="how questions are answered, among agent (the agent searches its memory), search (agentos's "
                        "recall search of the question in the prompt), none (the question alone), gold (the evidence "
                        "turns in the prompt), full (the whole transcript); default agent,full")
    p.add_argument("--limit", type=positive, default=None, help="only the first N conversations")
    p.add_argument("--conversations", type=names, default=None,
                   help="only these conversations, by sample_id, e.g. conv-26,conv-30")
    p.add_argument("--questions", type=positive, default=None, help="only the first N questions per conversation")
    p.add_argument("--sample", type=positive, default=None,
                   help="a fixed sample of N questions of the chosen conversations, stratified by category")
    p.add_argument("--seed", type=whole, default=0, help="the sample's (and the bootstrap's) seed (default 0)")
    p.add_argument("--categories", type=categories, default=(1, 2, 3, 4),
                   help="question categories, e.g. 1,2,3,4 (default; 5, adversarial, is right when it answers "
                        "'not mentioned')")
    p.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                   help=f"recall embedder (default {DEFAULT_EMBEDDER}, as new agents; none: BM25 only)")
    p.add_argument("--window", type=positive, default=None,
                   help="the agents' context window in tokens (e.g. 4096 for a local server serving that)")
    p.add_argument("--prompts", choices=["standard", "compact"], default="standard",
                   help="the agents' prompt set (compact: shorter instructions and tool schemas, for a small window)")
    p.add_argument("--no-baseline", action="store_true", help="leave out the full-context condition (full)")
    p.add_argument("--json", dest="json_path", help="also write the report (with every answer) to this file")
    p.add_argument("--home", help="data home for the agents, kept after (default: a temp dir, removed after)")


def main(argv: list[str] | None = None) -> int:
    show_damage_warnings()  # a file's departures from LoCoMo's format as `warning: ...`
    parser = argparse.ArgumentParser(prog="python -m agentos.eval", description="Memory evaluations.")
    sub = parser.add_subparsers(dest="suite", required=True)
    p = sub.add_parser("locomo", help="LoCoMo: load each conversation into recall, search every question")
    p.add_argument("path", help="locomo10.json")
    p.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                   help=f"{DEFAULT_EMBEDDER} (default, as new agents), none (BM25 only), hash:384, openai/...")
    p.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    p.add_argument("--home", help="data home for the loaded agents (default: a temp dir, removed after)")
    p.add_argument("--paths", type=paths, default=None,
                   help="the search paths to fuse, e.g. keyword,variants,time,graph,neighbours (default: the agent's)")
    p.add_argument("--search-model", help="the model the rewrite and rerank paths ask, e.g. openai/gpt-4.1-mini "
                                          "(default: none; those paths are left out)")
    p.add_argument("--ablation", action="store_true",
                   help="every path alone, then cumulative, with gains over keywords alone (95%% paired bootstrap)")
    p.add_argument("--folds", type=positive, default=1,
                   help="split the conversations by their order in the file into N folds (2: LoCoMo's 1-5 and 6-10) "
                        "and report each held out: weights chosen on the other folds, and the rule that a path is on "
                        "by default only if its gain over keywords alone excludes zero on every fold")
    p.add_argument("--categories", type=categories, default=(1, 2, 3, 4),
                   help="LoCoMo's question categories to ask, e.g. 3 for open-domain alone (default 1,2,3,4)")
    add_qa(sub)
    args = parser.parse_args(argv)
    if args.suite == "locomo-qa":
        chosen = tuple(c for c in args.conditions if c != "full" or not args.no_baseline)
        if not chosen:
            parser.error("--no-baseline leaves no condition: name others with --conditions")
        return run_qa(Options(path=args.path, model=args.model, judge="none" if args.no_judge else args.judge,
                              fact_model=args.fact_model, limit=args.limit, questions=args.questions,
                              categories=args.categories, home=args.home, json_path=args.json_path,
                              conditions=chosen, embedder=args.embedder, facts=not args.no_facts,
                              sample=args.sample, seed=args.seed, conversations=args.conversations,
                              window=args.window, prompts=args.prompts))
    return run_retrieval(args.path, embedder=args.embedder, limit=args.limit, home=args.home, paths=args.paths,
                         ablation=args.ablation, search_model=args.search_model, folds=args.folds,
                         categories=args.categories)


if __name__ == "__main__":
    sys.exit(main())
