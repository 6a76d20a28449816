"""`agentos serve`: agents behind an HTTP API. FastAPI and uvicorn are imported only once it is sure to run."""

from __future__ import annotations

import argparse
import importlib

from agentos.server.config import ServeConfig, require_loopback


def cmd_serve(args: argparse.Namespace) -> int:
    require_loopback(args.host)  # refused before anything heavy is imported
    config = ServeConfig(host=args.host, port=args.port, drain_seconds=args.drain, queue_size=args.queue,
                         workers=args.workers, release_after=args.release_after, wait_for_holder=args.wait,
                         recycle_mib=args.recycle_mib)
    return int(importlib.import_module("agentos.server.run").serve(config))
