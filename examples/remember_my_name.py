"""An agent learns the user's name into its `human` block, is saved, and resumes in a new process.

Runs offline with the scripted provider: python examples/remember_my_name.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from agentos import Agent
from agentos.agent.agent import list_agents
from agentos.providers import ScriptedProvider, Step


def first_session() -> None:
    """Meet the user; the scripted model saves the name with core_memory_replace."""
    model = ScriptedProvider(
        [
            Step(tool_calls=[("core_memory_replace", {"label": "human",
                                                      "old_content": "Nothing is known about the user yet.",
                                                      "new_content": "Name: Ada Lovelace"})]),
            "Lovely to meet you, Ada! I'll remember your name.",
        ]
    )
    if "example-ada" in {a.name for a in list_agents()}:  # a second run: meet again from the start
        Agent.delete("example-ada")
    agent = Agent.create("example-ada", provider=model)
    for event in agent.turn("Hello! I'm Ada Lovelace."):
        if event.type == "memory_edited":
            print(f"[memory] {event.label}: {event.old_value!r} -> {event.new_value!r}")
        elif event.type == "turn_finished":
            print(f"agent: {event.reply.content}")
    agent.close()


def second_session() -> None:
    """A new process: load the agent and answer from its memory."""

    def answer(request):
        known = "Name: Ada Lovelace" in request.system
        return "Of course: you are Ada Lovelace." if known else "Sorry, I don't know you."

    agent = Agent.load("example-ada", provider=ScriptedProvider(answer))
    print(f"resumed with {len(agent.context)} messages in context; human block = {agent.block('human').value!r}")
    for event in agent.turn("Do you remember my name?"):
        if event.type == "turn_finished":
            print(f"agent: {event.reply.content}")
    agent.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--resume":
        second_session()
    else:
        if "AGENTOS_HOME" not in os.environ:  # (setdefault would make a temp folder even when it is set)
            os.environ["AGENTOS_HOME"] = tempfile.mkdtemp(prefix="agentos-example-")
        print(f"data home: {os.environ['AGENTOS_HOME']}")
        first_session()
        subprocess.run([sys.executable, __file__, "--resume"], check=True, env=os.environ)
