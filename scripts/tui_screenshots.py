"""Draw the TUI's pictures for the README: the demo's guided tour mid-conversation, the 80x24 layout and a block's
history, as PNG (Textual's SVG screenshots drawn by rsvg-convert; the SVG is kept only where that is not installed).

    python scripts/tui_screenshots.py [OUT_DIR]        # default: docs/

Runs offline on the demo model in a scratch AGENTOS_HOME; nothing of yours is touched."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


async def tour(app: Any, pilot: Any, steps: int) -> None:
    """Send the tour's next `steps` suggestions, as a user pressing Enter would."""
    for _ in range(steps):
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
    await pilot.pause(0.5)


def shoot(name: str, size: tuple[int, int], steps: int, history: bool, out: Path) -> Path:
    from agentos.agent.agent import Agent
    from agentos.providers.demo import DEMO_TOUR, demo_provider
    from agentos.tui.app import AgentApp

    class Still(AgentApp):
        PROMPT_BLINKS = False

    app = Still(Agent.create(f"demo-{name}", provider=demo_provider()), tour=DEMO_TOUR)

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await tour(app, pilot, steps)
            if history:
                app.action_block_history("human")
                await pilot.pause(0.3)
            app.save_screenshot(f"{name}.svg", str(out))

    asyncio.run(main())
    app.agent.close()
    return out / f"{name}.svg"


def to_png(svg: Path) -> Path | None:
    """A PNG beside the SVG; spaces kept as drawn (Textual's SVGs rely on a browser keeping them)."""
    if shutil.which("rsvg-convert") is None:
        print("rsvg-convert is not installed (apt-get install librsvg2-bin fonts-firacode): SVG only", file=sys.stderr)
        return None
    fixed = svg.with_suffix(".preserve.svg")
    fixed.write_text(svg.read_text().replace("<svg ", '<svg xml:space="preserve" ', 1))
    png = svg.with_suffix(".png")
    subprocess.run(["rsvg-convert", "-o", str(png), str(fixed)], check=True)
    fixed.unlink()
    svg.unlink()
    return png


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs"
    out.mkdir(parents=True, exist_ok=True)
    os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-shots-")
    for name, size, steps, history in (("tui-tour", (120, 36), 2, False), ("tui-narrow", (80, 24), 2, False),
                                       ("tui-history", (120, 36), 2, True)):
        svg = shoot(name, size, steps, history, out)
        print(to_png(svg) or svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
