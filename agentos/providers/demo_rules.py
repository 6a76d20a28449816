"""The demo model's rules: the phrases it recognises, and how it reads its memory tools' results."""

from __future__ import annotations

import re

from agentos.messages import Message

_APOSTROPHE = "['\u2019]"
NAME = re.compile(r"\b(?:my name is|call me)\s+([A-Z][\w'-]*)", re.IGNORECASE)
SELF_NAME = re.compile(rf"(?i:\bi(?:{_APOSTROPHE}m| am))\s+([A-Z][\w'-]*)")  # "I'm Ada", not "I'm allergic"
KNOWN_NAME = re.compile(r"^Name: (.+)$", re.MULTILINE)
HUMAN_BLOCK = re.compile(r"<human [^>]*>.*?<value>\n(.*?)\n</value>", re.DOTALL)
PREFERENCE = re.compile(r"\bi (?:really |also )?(like|love|enjoy|prefer)\s+(.+)", re.IGNORECASE)
FAVOURITE = re.compile(r"\bmy favou?rite\s+(.+?)\s+is\s+(.+)", re.IGNORECASE)
REMEMBER = re.compile(rf"\b(?:remember that|note that|do not forget|don{_APOSTROPHE}?t forget)\s+(?:that\s+)?(.+)",
                      re.IGNORECASE | re.DOTALL)
ARCHIVAL_QUESTION = re.compile(r"\bwhat do you (?:remember|know) about\s+(.+)", re.IGNORECASE | re.DOTALL)
RECALL_QUESTION = re.compile(
    r"\b(?:what did i (?:say|tell you|write) about|did i (?:ever )?(?:mention|say anything about|talk about))\s+(.+)",
    re.IGNORECASE | re.DOTALL)
# what fact memory keeps (the demo's consolidation answers, see `demo_facts`): where the user lives and works
LIVES = re.compile(r"\bi (?:now |still |currently )?live in\s+(.+)", re.IGNORECASE)
MOVED = re.compile(rf"\bi(?:{_APOSTROPHE}ve| have)? (?:just |recently |finally )?moved to\s+(.+)", re.IGNORECASE)
WORKS = re.compile(r"\bi (?:now |still |currently )?work (?:at|for)\s+(.+)", re.IGNORECASE)
NO_LONGER = re.compile(rf"\bi (?:no longer|don{_APOSTROPHE}?t|do not) (live in|work at|work for)\s+(.+)", re.IGNORECASE)
FACT_QUESTION = re.compile(r"\bwhere do i (live|work)\b", re.IGNORECASE)
_TIME_TAIL = re.compile(r"\s+(?:(?:last|this|next) \w+|\w+ ago|recently|now|today|yesterday|any ?more|again)$",
                        re.IGNORECASE)
# one result line of `format_page`: "- [when] user: text" (recall) or "- [when] id arch-1 [tags: a, b]: text" (archival)
RESULT_LINE = re.compile(r"^- \[[^\]]*\] (?P<label>user|assistant|id \S+)(?: \[tags: [^\]]*\])?: (?P<text>.*)$",
                         re.MULTILINE)
# one result line of `fact_search`: "- [fact-id] text (subject, category; since 2026-05-01...)"
FACT_LINE = re.compile(r"^- \[[^\]]+\] (?P<text>.+?) \([^;\n]*; since (?P<since>\d{4}-\d{2}-\d{2})", re.MULTILINE)
_MORE = re.compile(r" \[\.\.\. [\d,]+ more characters\]$")
# capitalised words that follow "I'm" / "I am" without being a name ("I'm Fine", "I am Going")
NOT_NAMES = frozenset(
    "a an the not so very really just also still here there back fine good great ok okay well sure sorry glad happy "
    "sad tired busy new from in at on with going trying looking working thinking feeling curious interested".split())
_PERSON = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "am": "are",
           "i'm": "you're", "i've": "you've", "i'll": "you'll", "i'd": "you'd"}
_PERSON_WORD = re.compile(r"\b(?:i'm|i've|i'll|i'd|i|me|my|mine|myself|am)\b", re.IGNORECASE)


def clean(text: str) -> str:
    """`text` on one line, without surrounding quotes, spaces or end punctuation."""
    return " ".join(text.split()).strip(" \"'\u201c\u201d.!?;:,")


def first_clause(text: str) -> str:
    """The words up to the first comma or sentence end: "green tea, mostly" -> "green tea"."""
    return clean(re.split(r"[,;.!?]", text, maxsplit=1)[0])


def said_name(text: str) -> str | None:
    """The name in "my name is X" / "call me X" (any case), or "I'm X" with X capitalised and not a common word."""
    match = NAME.search(text)
    if match:
        return match.group(1)
    return next((m.group(1) for m in SELF_NAME.finditer(text) if m.group(1).lower() not in NOT_NAMES), None)


def preference_line(text: str) -> str | None:
    """The line for the human block a stated preference becomes ("Likes: green tea"), if any."""
    if text.rstrip().endswith("?"):
        return None
    favourite = FAVOURITE.search(text)
    if favourite and first_clause(favourite.group(2)):
        return f"Favourite {clean(favourite.group(1)).lower()}: {first_clause(favourite.group(2))}"
    match = PREFERENCE.search(text)
    what = first_clause(match.group(2)) if match else ""
    if not match or not what:
        return None
    return f"{'Prefers' if match.group(1).lower() == 'prefer' else 'Likes'}: {what}"


def _place(text: str) -> str:
    """Where, without the time said after it: "Porto last month, finally" -> "Porto"."""
    place = re.split(r"\s+(?:and|but|so|because|since|where|with|while)\s+", first_clause(text), maxsplit=1)[0]
    while _TIME_TAIL.search(place):
        place = _TIME_TAIL.sub("", place)
    return place


def stated_facts(text: str) -> list[tuple[str, str]]:
    """The facts a user's message states, as (sentence, category), in the words fact memory keeps them in."""
    if text.rstrip().endswith("?"):
        return []
    found: list[tuple[str, str]] = []
    name = said_name(text)
    if name:
        found.append((f"The user's name is {name}.", "biographical"))
    ended = NO_LONGER.search(text)
    if ended and _place(ended.group(2)):
        verb = "lives in" if ended.group(1).lower() == "live in" else "works at"
        found.append((f"The user no longer {verb} {_place(ended.group(2))}.", "biographical"))
    else:
        lives = LIVES.search(text) or MOVED.search(text)
        if lives and _place(lives.group(1)):
            found.append((f"The user lives in {_place(lives.group(1))}.", "biographical"))
        works = WORKS.search(text)
        if works and _place(works.group(1)):
            found.append((f"The user works at {_place(works.group(1))}.", "biographical"))
    line = preference_line(text)
    if line:
        key, _, what = line.partition(": ")
        sentence = {"Likes": f"The user likes {what}.", "Prefers": f"The user prefers {what}."}.get(
            key, f"The user's {key[:1].lower() + key[1:]} is {what}.")
        found.append((sentence, "preference"))
    return found


def question_topic(pattern: re.Pattern[str], text: str) -> str | None:
    """What a question asks about ("what do you remember about Mia?" -> "Mia"), or None."""
    match = pattern.search(text)
    topic = clean(match.group(1)) if match else ""
    return topic or None


def second_person(text: str) -> str:
    """The user's words said back to them: "my sister" -> "your sister"."""
    return _PERSON_WORD.sub(lambda match: _PERSON[match.group(0).lower()], text)


def human_block(system_dynamic: str) -> str:
    """The `human` block's value as the system prompt shows it."""
    match = HUMAN_BLOCK.search(system_dynamic)
    return match.group(1) if match else ""


def has_line(block: str, line: str) -> bool:
    """Whether `block` already holds `line` (ignoring case and spacing)."""
    wanted = " ".join(line.lower().split())
    return any(" ".join(existing.lower().split()) == wanted for existing in block.splitlines())


def result_hits(result: str) -> list[tuple[str, str]]:
    """The (label, text) of each result line of a search tool's answer, best first."""
    return [(m.group("label"), _MORE.sub("", m.group("text")).strip()) for m in RESULT_LINE.finditer(result)]


def fact_hits(result: str) -> list[tuple[str, str]]:
    """The (text, since) of each fact in a fact_search answer, best first."""
    return [(m.group("text"), m.group("since")) for m in FACT_LINE.finditer(result)]


def same_text(a: str, b: str) -> bool:
    """Whether two messages say the same thing (ignoring case and spacing)."""
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def last_user_text(messages: list[Message]) -> str:
    """The user's latest message (not a note of the pager's): the question a tool call serves."""
    for message in reversed(messages):
        if message.role == "user" and not message.name:
            return message.content
    return ""
