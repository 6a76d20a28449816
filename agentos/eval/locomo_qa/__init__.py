"""LoCoMo question answering end to end: the same questions answered under several conditions, scored with
LoCoMo's token F1 and, optionally, graded by a judge model.

The conditions (`options.CONDITIONS`): `agent`, the agent's own turn, searching its memory with its tools; `search`,
agentos's recall search of the question (the agent's default paths, top 10) given in the prompt, one call; `none`,
the question alone; `gold`, the question's evidence turns given in the prompt, one call (the model's upper bound);
`full`, the whole transcript, one call. All share one wording (`prompts`) and the agent's output cap.

For each conversation an agent is made whose recall holds every turn with its real date (`conversations.
turn_messages`); unless --no-facts, fact memory is turned on and consolidated in the foreground. Each question is
answered independently: a restore point is taken before the first question and the agent is rewound to it after
every agent turn (`Agent.rewind`), which takes back the turn's messages from context and recall, so no question
sees another's turn. Background consolidation is switched off for the questions (fact_search stays offered, as the
agent has a fact table once anything was stored), so no question's turn becomes a fact either.

The questions are every eligible one, or a fixed sample stratified by category (`sampling`). Every answer gets
LoCoMo's F1 (`scoring`); with a judge, a grade (`judge`). The report (`report`, printed by
`table`) gives per condition and category the mean F1 with a bootstrap interval, judge accuracy with a Wilson
interval (`stats`), the time and tokens per question, and the paired F1 difference of `agent` and `search` over
`none`.

The answering model is --model, consolidation asks --fact-model, the grading asks --judge (none: no judge). The
scripted specs scripted/reader, scripted/judge and scripted/facts (agentos.eval.scripted_models) are resolved by
`agentos.eval.models`, so the whole run works offline.
"""

from agentos.eval.locomo_qa.command import run
from agentos.eval.locomo_qa.conditions import Asker, ask_agent, ask_model
from agentos.eval.locomo_qa.conversation import evaluate
from agentos.eval.locomo_qa.judge import JUDGE_TRIES, judge_answer
from agentos.eval.locomo_qa.options import CONDITIONS, Models, Options, open_models
from agentos.eval.locomo_qa.prompts import question_prompt, questions, transcript
from agentos.eval.locomo_qa.report import accuracy, build_report
from agentos.eval.locomo_qa.results import Answer, Conversation, Grade, Row
from agentos.eval.locomo_qa.sampling import Pick, choose, eligible, shares, stratified
from agentos.eval.locomo_qa.scoring import locomo_f1, multi_hop_f1, normalize, token_f1
from agentos.eval.locomo_qa.stats import bootstrap, paired, wilson
from agentos.eval.locomo_qa.table import print_report
from agentos.eval.models import resolve

__all__ = ["CONDITIONS", "JUDGE_TRIES", "Answer", "Asker", "Conversation", "Grade", "Models", "Options", "Pick",
           "Row", "accuracy", "ask_agent", "ask_model", "bootstrap", "build_report", "choose", "eligible",
           "evaluate", "judge_answer", "locomo_f1", "multi_hop_f1", "normalize", "open_models", "paired",
           "print_report", "question_prompt", "questions", "resolve", "run", "shares", "stratified", "token_f1",
           "transcript", "wilson"]
