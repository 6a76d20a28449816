"""Rule-based entity extraction for the entity graph: pure functions, offline, general English.

An entity is a proper-noun span ("Caroline", "Bank of America", "McDonald's"), a quoted title
("Charlotte's Web" in quotes), the speaker of a message (what "I", "me", "my" stand for), or a
relation of a person ("my sister" -> "user:sister", "Caroline's mom" -> "caroline:mother"). Each has
a key that ignores case, plurals, possessives and titles, so the same entity said differently, in a
message or in a query, meets under one key.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from agentos.retrieval.entity_words import (
    ABBREVIATIONS,
    COMMON,
    EVENT_WORDS,
    FIRST_PERSON,
    JOINERS,
    ORGANISATION_WORDS,
    OWNERS_ADDRESSEE,
    OWNERS_SELF,
    PLACE_WORDS,
    RELATION_MODIFIERS,
    RELATIONS,
    STOP,
    TITLES,
    VOCATIVE_RELATIONS,
)

USER, AGENT = "user", "agent"  # the speaker keys of unnamed user and assistant messages
MAX_TITLE_WORDS = 8
_TOKEN = re.compile(r"[^\W_][\w'’&+-]*|[.!?…]+|\n|\S")
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{1,80})[\"”]")
_BOUNDARY = frozenset(".!?…:;\n-–—•|")
_SUFFIXES = ("ing", "ed", "ly", "ness", "ful", "less", "ous", "ive", "able", "ible", "ment", "tion", "sion", "ers")
_ENDINGS_KEPT = ("ss", "us", "is")  # not plurals: "class", "campus", "Paris"


@dataclass(frozen=True)
class Mention:
    """One entity said in a text: its key, the words that named it, and what kind of thing it is."""

    key: str
    name: str
    kind: str  # speaker, relation, title, organisation, place, event, name
    certain: bool = True  # False for a lone capitalised word that starts a sentence ("Support groups help")


@dataclass
class _Tok:
    text: str
    word: bool
    at_start: bool  # first word of a sentence


def _fold(word: str) -> str:
    return word.replace("’", "'").lower()


def _base(word: str) -> str:
    """Lower case, before any apostrophe: "What's" -> "what", "Caroline's" -> "caroline"."""
    return _fold(word).split("'")[0]


def _possessive(word: str) -> bool:
    folded = _fold(word)
    return folded.endswith("'s") or (folded.endswith("s'") and len(folded) > 2)


def _strip_possessive(word: str) -> str:
    folded = word.replace("’", "'")
    if folded.lower().endswith("'s"):
        return word[:-2]
    return word.rstrip("'’")


def singular(word: str) -> str:
    """A plural's singular, by English spelling rules (names are keyed the same way on both sides)."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith(_ENDINGS_KEPT):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    return word[:-1]


def entity_key(name: str) -> str:
    """The normal form of a name: lower case, no possessive, no leading title, the last word singular."""
    words = [w for w in (_clean_word(w) for w in name.replace("’", "'").split()) if w]
    while len(words) > 1 and words[0] in TITLES:
        words = words[1:]
    if not words:
        return ""
    words[-1] = singular(words[-1])
    return " ".join(words)


def _clean_word(word: str) -> str:
    word = _strip_possessive(word.strip(".,;:!?\"“”()[]{}*_~`"))
    word = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)).lower()
    word = re.sub(r"'s\b", "", word).strip("'+-&")
    return word


def relation_key(owner: str, noun: str) -> str | None:
    """`owner`'s relation named by `noun` ("user", "sisters" -> "user:sister"), or None if it names none."""
    canonical = RELATIONS.get(_fold(noun)) or RELATIONS.get(singular(_fold(noun)))
    return f"{owner}:{canonical}" if canonical and owner else None


def speaker_key(speaker: str | None, role: str) -> str:
    """The key of who says a message: its name, else "user" for the user and "agent" for the assistant."""
    key = entity_key(speaker) if speaker else ""
    return key or (USER if role == "user" else AGENT)


def alias_words(key: str) -> tuple[str, ...]:
    """The words a multi-word name may also be called by: its first and last ("john smith" -> john, smith)."""
    if ":" in key:
        return ()
    words = key.split()
    if not 2 <= len(words) <= 3:
        return ()
    return tuple(dict.fromkeys(w for w in (words[0], words[-1]) if len(w) > 2 and w not in STOP and w not in JOINERS))


def kind_of(words: list[str]) -> str:
    """What a name is, from its last word ("Lake Tahoe" is a place by its first): a guess, shown, never relied on."""
    lowered = [_base(w) for w in words]
    if lowered[-1] in ORGANISATION_WORDS or lowered[0] in ("university", "bank"):
        return "organisation"
    if lowered[-1] in PLACE_WORDS or lowered[0] in ("lake", "mount", "mt", "cape", "fort", "port"):
        return "place"
    if lowered[-1] in EVENT_WORDS:
        return "event"
    return "name"


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    start = True
    prev_word = ""
    for match in _TOKEN.finditer(text):
        piece = match.group()
        if piece[0].isalnum():
            out.append(_Tok(piece, True, start))
            start, prev_word = False, piece
            continue
        out.append(_Tok(piece, False, False))
        if piece[0] in ".!?…" and _abbreviation(prev_word):
            continue
        if piece[0] in _BOUNDARY or unicodedata.category(piece[0]).startswith("S") or piece in "\"“”":
            start = True
        prev_word = ""
    return out


def _abbreviation(word: str) -> bool:
    """Whether a "." after `word` is part of it: "Mr.", "St.", an initial "J."."""
    if len(word) == 1 and word.isupper():
        return True
    return _base(word) in ABBREVIATIONS and (word[0].isupper() or word in ("vs", "etc", "approx"))


def _capitalised(word: str) -> bool:
    return word[0].isupper() or (word[0].islower() and any(c.isupper() for c in word[1:]))  # "iPhone", "eBay"


def _pronoun(word: str) -> bool:
    return _fold(word) in FIRST_PERSON


def _quoted_titles(text: str) -> tuple[list[Mention], str]:
    """Quoted titles ("Charlotte's Web" in quotes) and the text with them blanked out (so their words are not
    taken again); quoted speech (long, or ending in punctuation) stays."""
    found: list[Mention] = []

    def take(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        words = inner.split()
        if not words or len(words) > MAX_TITLE_WORDS or not _capitalised(words[0]) or inner[-1] in ".!?,;:":
            return match.group()
        if len(words) == 1 and _base(words[0]) in STOP | COMMON:
            return match.group()
        key = entity_key(inner)
        if key:
            found.append(Mention(key, inner, "title"))
        return " , "
    return found, _QUOTED.sub(take, text)


def extract(text: str, speaker: str | None = None, role: str = "user", addressee: str | None = None) -> list[Mention]:
    """The entities a message names, each once: proper-noun spans, quoted titles, the speaker (when it says I,
    me, my...) and relations ("my sister"). `speaker` is the message's name (None: "user" or "agent" by `role`);
    `addressee` is who "your" means (default: the other side)."""
    me = speaker_key(speaker, role)
    you = speaker_key(addressee, "assistant" if role == "user" else "user") if addressee else (
        AGENT if role == "user" else USER)
    mentions, rest = _quoted_titles(text or "")
    tokens = _tokens(rest)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.word:
            i += 1
            continue
        folded = _fold(tok.text)
        if folded in OWNERS_SELF or folded in OWNERS_ADDRESSEE:
            owner = me if folded in OWNERS_SELF else you
            relation, i = _relation_after(tokens, i + 1, owner)
            if folded in FIRST_PERSON:
                mentions.append(Mention(me, speaker or me, "speaker"))
            if relation is not None:
                mentions.append(relation)
            continue
        if _pronoun(tok.text):
            mentions.append(Mention(me, speaker or me, "speaker"))
            i += 1
            continue
        if _capitalised(tok.text):
            found, i = _span(tokens, i, me)
            mentions.extend(found)
            continue
        i += 1
    return _unique(mentions)


def _relation_after(tokens: list[_Tok], i: int, owner: str) -> tuple[Mention | None, int]:
    """A relationship noun at `i`, after at most two modifiers ("my little sister"); the index after it."""
    j = i
    while j < len(tokens) and j - i <= 2 and tokens[j].word:
        word = _fold(tokens[j].text)
        key = relation_key(owner, _strip_possessive(word))
        if key is not None:
            return Mention(key, " ".join(t.text for t in tokens[i - 1 : j + 1]), "relation"), j + 1
        if word not in RELATION_MODIFIERS:
            break
        j += 1
    return None, i


def _span(tokens: list[_Tok], i: int, me: str) -> tuple[list[Mention], int]:
    """The capitalised span starting at `i` (joined by "of", "de"...; ended by a possessive), as mentions."""
    words = [tokens[i]]
    j = i + 1
    while j < len(tokens) and not _possessive(words[-1].text):
        tok = tokens[j]
        if tok.word and _capitalised(tok.text) and not _pronoun(tok.text):
            words.append(tok)
            j += 1
        elif tok.text == "." and j + 1 < len(tokens) and _abbreviation(words[-1].text) and tokens[j + 1].word \
                and _capitalised(tokens[j + 1].text):
            j += 1  # "Mr. Smith", "J. K. Rowling"
        elif tok.word and _fold(tok.text) in JOINERS:
            k = j
            while k < len(tokens) and tokens[k].word and _fold(tokens[k].text) in JOINERS and k - j < 2:
                k += 1
            if k < len(tokens) and tokens[k].word and _capitalised(tokens[k].text) and not _pronoun(tokens[k].text):
                words.extend(tokens[j : k + 1])
                j = k + 1
            else:
                break
        else:
            break
    possessive = _possessive(words[-1].text)
    out: list[Mention] = []
    owner = None
    if len(words) == 1 and _base(words[0].text) in VOCATIVE_RELATIONS:  # "I called Mom": the speaker's mother
        key = relation_key(me, _strip_possessive(words[0].text))
        if key:
            out.append(Mention(key, words[0].text, "relation"))
    elif name_words := _trimmed(words):
        names = [t.text for t in name_words]
        text = " ".join(names[:-1] + [_strip_possessive(names[-1])])
        owner = entity_key(text) or None
        certain = len(name_words) > 1 or not name_words[0].at_start or names[0].isupper()
        if owner:
            out.append(Mention(owner, text, kind_of(names), certain))
    if possessive and owner is not None:
        relation, j = _relation_after(tokens, j, owner)
        if relation is not None:
            out.append(relation)
    return out, j


def _trimmed(words: list[_Tok]) -> list[_Tok]:
    """The span without function words at its ends, and without a common word that only starts the sentence."""
    while words and (_base(words[0].text) in STOP or _fold(words[0].text) in JOINERS):
        words = words[1:]
    while words and (_base(words[-1].text) in STOP or _fold(words[-1].text) in JOINERS):
        words = words[:-1]
    if words and words[0].at_start:
        first = _base(words[0].text)
        if len(words) == 1 and (first in COMMON or _common_shape(first)):
            return []
        if len(words) > 1 and first in COMMON:
            words = words[1:]
    return words


def _common_shape(word: str) -> bool:
    """A word whose ending says it is a common word, not a name ("Honestly", "Painting")."""
    return len(word) > 5 and word.endswith(_SUFFIXES) and not word.isupper()


def _unique(mentions: list[Mention]) -> list[Mention]:
    seen: dict[str, Mention] = {}
    for m in mentions:
        if m.key not in seen or (m.certain and not seen[m.key].certain):
            seen[m.key] = m
    return list(seen.values())


def query_mentions(query: str, speaker: str | None = None) -> list[Mention]:
    """The entities of a search query: as in a user's message, with "the user('s)" meaning the user (I, my)."""
    text = re.sub(r"\b(?:the\s+)?user(?:'s|’s)(?=\s)", "my", query or "", flags=re.IGNORECASE)
    text = re.sub(r"\b(?:the\s+)?user\b", "me", text, flags=re.IGNORECASE)
    found = extract(text, speaker, "user")
    tokens = _tokens(text)
    for i, tok in enumerate(tokens):  # "caroline's sister" in any case: a relation of whoever "caroline" is
        if tok.word and _possessive(tok.text) and not _capitalised(tok.text):
            relation, _ = _relation_after(tokens, i + 1, entity_key(tok.text))
            if relation is not None:
                found.append(relation)
    return _unique(found)


def ngram_keys(text: str, longest: int = 3) -> list[str]:
    """Keys of the text's word n-grams (1 to `longest` words), to match known entities whatever their case:
    "when did caroline go" -> ["caroline", ...]. N-grams that start or end with a stop word are left out."""
    words = [t.text for t in _tokens(text or "") if t.word]
    out: list[str] = []
    for i in range(len(words)):
        for n in range(1, longest + 1):
            gram = words[i : i + n]
            if len(gram) < n:
                break
            first, last = _base(gram[0]), _base(gram[-1])
            if first in STOP or last in STOP or first in JOINERS or last in JOINERS:
                continue
            if n == 1 and (first in COMMON or len(first) < 2):
                continue
            key = entity_key(" ".join(gram))
            if key:
                out.append(key)
    return list(dict.fromkeys(out))
