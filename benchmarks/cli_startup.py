"""How long `agentos --help` takes, from process start to exit (target: under 0.5 s).

    python benchmarks/cli_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "agentos.cli", "--help"], check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(f"agentos --help over {args.runs} runs: median {statistics.median(times):.0f} ms, "
          f"max {times[-1]:.0f} ms (python startup included)")


if __name__ == "__main__":
    main()
