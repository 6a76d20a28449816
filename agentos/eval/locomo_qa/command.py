"""`python -m agentos.eval locomo-qa`: every conversation evaluated in one store (under --home, else in a temporary
directory removed after), then the report printed (and written with --json)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from agentos.config import database_uri, storage_options
from agentos.errors import AgentExistsError, AgentOSError, ConfigError
from agentos.eval.conversations import DatasetError, read_samples
from agentos.eval.locomo_qa.conversation import evaluate
from agentos.eval.locomo_qa.options import Options, open_models
from agentos.eval.locomo_qa.report import build_report, print_report
from agentos.storage import Store


def run(options: Options) -> int:
    """Evaluate, print the report, write it with --json; a model that cannot be used is said, with exit status 2."""
    try:
        data = read_samples(options.path, options.limit)
    except DatasetError as exc:
        print(f"locomo-qa: {exc}", file=sys.stderr)
        return 2
    try:
        models = open_models(options)
    except ConfigError as exc:
        print(f"locomo-qa: {exc}", file=sys.stderr)
        return 2
    root = Path(options.home) if options.home else Path(tempfile.mkdtemp(prefix="agentos-locomo-qa-"))
    store = Store(database_uri(root), storage_options(root))
    try:
        done = [evaluate(store, sample, models, options) for sample in data]
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
    report = build_report(options, done)
    print_report(report)
    if options.json_path:
        Path(options.json_path).write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0
