"""LoCoMo question answering end to end: the agent answers from its memory; a judge model grades every answer.

For each conversation an agent is made whose recall holds every turn with its real date (`conversations.
turn_messages`), fact memory is turned on and consolidated in the foreground, and each question is asked as one turn
of the agent. A full-context baseline gets the same question with the whole transcript in one model call.

Each question is answered independently: a restore point is taken after consolidation, before the first question,
and the agent is rewound to it after every question (`Agent.rewind`), which takes back the turn's messages from
context and recall, so no question sees another's turn. Background consolidation is switched off for the questions
(fact_search stays offered, as the agent has a fact table once anything was stored), so no question's turn becomes
a fact either.

The answering models are the agent's (--model) and the baseline's (the same); consolidation asks --fact-model, the
grading asks --judge. The scripted specs scripted/reader, scripted/judge and scripted/facts (agentos.eval.
scripted_models) are resolved by `agentos.eval.models`, so the whole run works offline.

The parts: `options` (what to run, its models), `prompts`, `conversation` (loading, consolidating, asking), `judge`,
`results`, `report`, `command` (`run`).
"""

from agentos.eval.locomo_qa.command import run
from agentos.eval.locomo_qa.conversation import evaluate
from agentos.eval.locomo_qa.judge import JUDGE_TRIES, judge_answer
from agentos.eval.locomo_qa.options import Models, Options, open_models
from agentos.eval.locomo_qa.prompts import question_prompt, questions, transcript
from agentos.eval.locomo_qa.report import accuracy, build_report, print_report, wilson
from agentos.eval.locomo_qa.results import Answer, Conversation, Grade, Row
from agentos.eval.models import resolve

__all__ = ["JUDGE_TRIES", "Answer", "Conversation", "Grade", "Models", "Options", "Row", "accuracy", "build_report",
           "evaluate", "judge_answer", "open_models", "print_report", "question_prompt", "questions", "resolve", "run",
           "transcript", "wilson"]
