"""Query understanding without a model: a question becomes the keyword queries that find its answer.

A question's own wording asks ("what did ... say about ..."), while the answer's turn states. So
besides the question itself, search with its content words (question words, auxiliaries, pronouns
and other function words dropped), fused by reciprocal rank with the other ranked lists. A third
variant, the question's names alone, was tried and dropped: on LoCoMo (2 conversations) it cost
0.026 hit@10, since a name alone ranks every turn that mentions it. General English only: nothing
here knows a dataset's speakers, topics or phrasing.
"""

from __future__ import annotations

import re

QUESTION_WORDS = frozenset(
    "what whats what's when where which who whom whose why how did does do is are was were has have had will would "
    "can could should shall may might must been being be am".split()
)
FUNCTION_WORDS = frozenset(
    "a an the of to in on at for from by with about into over after before during since until as than then and or "
    "but nor so if that this these those there here it its it's i me my mine we us our ours you your yours he him "
    "his she her hers they them their theirs one ones any some all each every both either neither not no yes also "
    "just only very really ever never ago kind sort thing things something anything everything lot lots much many "
    "more most less least get got go went gone say said tell told think thought like likes liked".split()
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(question: str) -> list[str]:
    """The question's words that carry its subject: no question words, auxiliaries, pronouns or function words."""
    out = []
    for word in words(question):
        plain = word.lower().strip("'’").removesuffix("'s").removesuffix("’s")
        if plain and plain not in QUESTION_WORDS and plain not in FUNCTION_WORDS:
            out.append(word)
    return out


def variants(question: str) -> list[str]:
    """Keyword queries besides the question itself: its content words, when they differ from it."""
    candidate = " ".join(content_words(question))
    same = " ".join(candidate.lower().split()) == " ".join(question.lower().split())
    return [candidate] if candidate and not same else []
