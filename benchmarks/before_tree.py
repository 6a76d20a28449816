"""`--before PATH` for benchmarks: the same script with the same arguments, first on an earlier agentos source tree
(a checkout of an earlier commit), so that before and after come from one run on one machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def measure_before_first(before: str | None) -> None:
    """Run this script on the tree at `before` (its agentos ahead on the path), then say that this tree follows."""
    if not before:
        return
    print(f"== before: {before}", flush=True)
    own = [a for i, a in enumerate(sys.argv[1:]) if a != "--before" and sys.argv[i] != "--before"]
    env = {**os.environ, "PYTHONPATH": str(Path(before).resolve())}
    subprocess.run([sys.executable, str(Path(sys.argv[0]).resolve()), *own], env=env, check=True)
    print("== after: this tree", flush=True)
