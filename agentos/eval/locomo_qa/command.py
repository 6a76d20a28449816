"""`python -m agentos.eval locomo-qa`: the conversations chosen (--limit, --conversations), the questions chosen (all
eligible, or a stratified --sample, printed before any is asked), every conversation evaluated in one store (under
--home, else in a temporary directory removed after), then the report printed (and written with --json)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentos.config import database_uri, storage_options
from agentos.errors import AgentExistsError, AgentOSError, ConfigError
from agentos.eval.conversations import DatasetError, read_samples
from agentos.eval.locomo_qa.conversation import evaluate
from agentos.eval.locomo_qa.options import Options, open_models
from agentos.eval.locomo_qa.report import build_report
from agentos.eval.locomo_qa.sampling import choose, describe
from agentos.eval.locomo_qa.table import print_report
from agentos.storage import Store


def conversations(options: Options) -> list[dict[str, Any]]:
    """The conversations of the file: the first --limit, or those --conversations names (in that order)."""
    data = read_samples(options.path, None if options.conversations else options.limit)
    if not options.conversations:
        return data
    by_id = {str(s["sample_id"]): s for s in data}
    missing = [c for c in options.conversations if c not in by_id]
    if missing:
        raise DatasetError(f"{options.path} has no conversation {', '.join(missing)}; it has "
                           f"{', '.join(by_id) or 'none'}")
    return [by_id[c] for c in dict.fromkeys(options.conversations)][: options.limit]


def run(options: Options) -> int:
    """Evaluate, print the report, write it with --json; a model that cannot be used is said, with exit status 2."""
    try:
        data = conversations(options)
    except DatasetError as exc:
        print(f"locomo-qa: {exc}", file=sys.stderr)
        return 2
    picks = choose(data, options.categories, options.questions, options.sample, options.seed)
    if options.sample is not None:
        print(describe(picks, options.seed), flush=True)
    try:
        models = open_models(options)
    except ConfigError as exc:
        print(f"locomo-qa: {exc}", file=sys.stderr)
        return 2
    root = Path(options.home) if options.home else Path(tempfile.mkdtemp(prefix="agentos-locomo-qa-"))
    store = Store(database_uri(root), storage_options(root))
    started = time.perf_counter()
    try:
        done = [evaluate(store, sample, models, options, [p for p in picks if p.conversation == sample["sample_id"]],
                         started)
                for sample in data if any(p.conversation == sample["sample_id"] for p in picks)]
    except AgentExistsError as exc:
        print(f"locomo-qa: {exc} (in --home {options.home}: use another home, or delete the agent there)",
              file=sys.stderr)
        return 2
    except AgentOSError as exc:
        print(f"\nlocomo-qa: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
        if not options.home:
            shutil.rmtree(root, ignore_errors=True)
    report = build_report(options, done, picks if options.sample is not None else None)
    print_report(report)
    if options.json_path:
        Path(options.json_path).write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0
