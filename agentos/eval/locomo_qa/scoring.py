"""LoCoMo's token F1, by the rules of the LoCoMo authors' own evaluation (snap-research/locomo, task_eval/
evaluation.py), written anew here:

- an answer is normalized: commas dropped, lower case, punctuation removed, the words a, an, the and 'and' removed,
  then split on white space, and each word stemmed with NLTK's Porter stemmer, as theirs is;
- the F1 of two answers is that of their words counted with repeats (0 when no word is shared);
- multi-hop (category 1): the gold answer and the prediction are each split on commas, every gold part takes the
  best F1 of any predicted part, and the score is the mean over the gold parts;
- open-domain (category 3): only the gold answer's part before the first ';' counts;
- temporal and single-hop (2, 4): the plain F1;
- adversarial (5, no gold answer): 1 when the prediction says 'no information available' or 'not mentioned', else 0.

No departure from their rules is known: punctuation is Python's `string.punctuation` (ASCII) as theirs, a gold
answer written as a number is scored as its text, and the stemmer is theirs (NLTK's `PorterStemmer`, from the `eval`
extra). A prediction that failed (no text) scores 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable
from functools import cache

from agentos.errors import ConfigError

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
NOT_ANSWERED = ("no information available", "not mentioned")  # what an adversarial question is to get


def normalize(text: str) -> str:
    """LoCoMo's normalization: commas dropped, lower case, no punctuation, no a/an/the/and, single spaces."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@cache
def _stemmer() -> Callable[[str], str]:
    """NLTK's Porter stemmer in its default mode, as LoCoMo's scoring uses it (imported on first use: 1-3 s)."""
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError:
        raise ConfigError("LoCoMo's F1 stems words with NLTK's Porter stemmer: pip install -e '.[eval]'") from None
    return PorterStemmer().stem


def stem(word: str) -> str:
    """A word's Porter stem, as LoCoMo's scoring makes it."""
    return _stemmer()(word)


def tokens(text: str) -> list[str]:
    """The normalized words of an answer, each stemmed."""
    return [stem(word) for word in normalize(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """The F1 of the two answers' stemmed words (counted with repeats); 0 when they share none."""
    predicted, wanted = tokens(prediction), tokens(gold)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def multi_hop_f1(prediction: str, gold: str) -> float:
    """Both split on commas; the mean over gold parts of each one's best F1 against any predicted part."""
    predicted = [part.strip() for part in prediction.split(",")]
    parts = [part.strip() for part in gold.split(",")]
    return sum(max(token_f1(p, part) for p in predicted) for part in parts) / len(parts)


def locomo_f1(category: int, prediction: str, gold: str) -> float:
    """The score LoCoMo gives one prediction of a question of this category (see the module)."""
    if category == 5:
        said = prediction.lower()
        return 1.0 if any(phrase in said for phrase in NOT_ANSWERED) else 0.0
    if category == 1:
        return multi_hop_f1(prediction, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)
