"""Opening the agent behind the first frame: the app paints and takes typing at once while a worker loads the agent
from storage and reads its numbers. What is typed meanwhile stays in the input, and a message sent meanwhile is sent
once the agent is shown. AgentApp is one.

AGENTOS_TUI_TIMINGS=FILE is the hook for a startup benchmark: the app appends one JSON line to FILE when its first
frame is painted ({"event": "painted", "at": <time.time()>}) and one when the agent is shown ("shown"), then quits
(saving the agent) as Ctrl-C would."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import work
from textual.widgets import Input

from agentos.agent.agent import Agent
from agentos.tui.messages import AgentOpened, OpenFailed
from agentos.tui.status import StatusInfo, take_status
from agentos.tui.turns import TurnRunner

Loader = Callable[[], Agent]
TIMINGS_VARIABLE = "AGENTOS_TUI_TIMINGS"
OPENING = "Opening the agent… (type away: what you type is kept, and a message sent now goes once it is open)"
SENT_WHEN_OPEN = "(the agent is still opening: this message is sent as soon as it is open)"


class Opening(TurnRunner):
    """Loads the agent on a worker after the first frame, and shows it when it is there."""

    if TYPE_CHECKING:  # the app's own

        def show_agent(self, info: StatusInfo | None = None) -> None: ...

        def send(self, text: str) -> None: ...

    def take(self, agent: Agent | Loader) -> None:
        """The agent to show, or a loader to call behind the first frame (`lambda: Agent.load(name)`)."""
        self.load: Loader | None = None
        if isinstance(agent, Agent):
            self.agent = agent
        else:
            self.load = agent
        self.opening = False  # the agent is being loaded: there is no `agent` yet
        self.open_error: Exception | None = None  # why it could not be (run_tui raises it)
        self.send_when_open = False  # Enter was pressed while opening: send the text once the agent is shown

    def open_or_show(self) -> None:
        """On mount: show the agent, or begin loading it (the frame is painted meanwhile)."""
        self.call_after_refresh(self.note_timing, "painted")
        if self.load is not None:
            self.begin_opening(self.load)
        else:
            self.show_agent()
            self.call_after_refresh(self.note_timing, "shown")

    def begin_opening(self, load: Loader) -> None:
        """Say that the agent is opening, and load it on a worker (the input takes typing meanwhile)."""
        self.opening = True
        self._idle.clear()  # a worker is about to have the agent: quitting waits for it, then closes it
        self.conversation.add(OPENING, classes="info")
        self._open(load)

    # Its own group: the turn of a message sent while it loaded starts as soon as AgentOpened arrives, which can be
    # before this thread has returned, and an exclusive worker of the same group would cancel it.
    @work(thread=True, exclusive=True, group="opening", exit_on_error=False)
    def _open(self, load: Loader) -> None:
        try:
            agent = load()
        except Exception as exc:  # noqa: BLE001 - run_tui raises it once the app is gone
            self.worker_done()
            self.post_message(OpenFailed(exc))
            return
        self.agent = agent  # from here on, quitting closes it (the screen shows it once AgentOpened arrives)
        try:
            info: StatusInfo | None = take_status(agent)
        except Exception:  # noqa: BLE001 - the numbers are a nicety, read again after each turn
            info = None
        self.worker_done()
        self.post_message(AgentOpened(agent, info))

    async def on_agent_opened(self, message: AgentOpened) -> None:
        if self.quitting:
            return
        await self.conversation.remove_children()
        await self.memory_panel.replace(message.agent.blocks)
        self.opening = False
        self.show_agent(message.info)
        self.call_after_refresh(self.note_timing, "shown")
        if self.send_when_open:
            self.send_when_open = False
            prompt = self.query_one("#prompt", Input)
            text = prompt.value.strip()
            prompt.clear()
            if text:
                self.send(text)

    def on_open_failed(self, message: OpenFailed) -> None:
        self.opening = False
        self.open_error = message.error
        self.exit(1)

    def note_timing(self, event: str) -> None:
        """With AGENTOS_TUI_TIMINGS set: append when `event` happened to its file; quit once the agent is shown."""
        path = os.environ.get(TIMINGS_VARIABLE)
        if not path:
            return
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"event": event, "at": time.time()}) + "\n")
        if event == "shown":
            self.call_later(self.action_quit)
