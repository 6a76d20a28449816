"""The secret gate's built-in detectors: each finds the spans of one kind of secret in a text (API keys of the common
providers, PEM private keys, passwords and PINs given as such, card numbers with a valid checksum).

Every pattern runs in time linear in its input: no quantifier can backtrack over a long run of text (possessive
quantifiers where a run repeats), and a PEM block's END is searched for once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

Span = tuple[int, int]
Finder = Callable[[str], Iterator[Span]]

_NOT_A_VALUE = {  # words that follow "password is" in a sentence about a password, not in one that gives it
    "a", "an", "the", "not", "too", "very", "so", "also", "still", "now", "being", "been", "wrong", "incorrect",
    "correct", "right", "invalid", "valid", "required", "needed", "optional", "missing", "empty", "blank", "weak",
    "strong", "short", "long", "expired", "changed", "reset", "saved", "stored", "set", "sent", "secret", "secure",
    "safe", "hidden", "encrypted", "hashed", "different", "same", "fine", "ok", "okay", "good", "bad", "easy", "hard",
    "known", "unknown", "here", "there", "below", "above", "attached", "in", "on", "at", "for", "to", "of", "with",
    "my", "your", "his", "her", "our", "their", "its", "this", "that", "what", "which", "ready", "done", "new", "old",
    "updated", "protected", "mine", "yours", "generated", "temporary", "shown", "given", "used", "working", "none",
    "null", "nil", "undefined", "true", "false", "password", "passwd", "pwd", "pin", "passcode", "passphrase",
    "was", "were", "is", "are", "will", "would", "should", "must", "can", "could", "may", "might", "has", "have",
    "had", "does", "did",
}
MASKED = re.compile(r"[*•·xX.#_-]+")  # "********": already hidden


def regex_finder(pattern: re.Pattern[str], check: Callable[[str], bool] | None = None) -> Finder:
    """Spans of `pattern`'s matches (of its group `secret` when it has one) that pass `check`."""
    group = "secret" if "secret" in pattern.groupindex else 0

    def find(text: str) -> Iterator[Span]:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            while end > start and text[end - 1] == ".":  # a sentence's full stop is not part of the secret
                end -= 1
            if end > start and (check is None or check(text[start:end])):
                yield start, end
    return find


def _mixed(value: str) -> bool:
    """Random-looking: letters and digits both (so a hyphenated word such as sk-learn-... is no key)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _cased(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


_CRED_VALUE = r"[\"'`]?(?P<secret>[A-Za-z0-9_\-+/=.~]{16,512})"
_GIVEN = r"[\"']?[ \t]*(?:[:=]|\s+is\s+)[ \t]*"
_PROVIDERS: list[tuple[str, str, Callable[[str], bool] | None]] = [
    ("Anthropic API key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,400}", _mixed),
    ("OpenAI API key", r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,400}", _mixed),
    ("AWS access key ID", r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", None),
    ("AWS secret access key", r"(?i)(?<![A-Za-z0-9])(?:aws[_ .-]?secret(?:[_ .-]?access)?|secret[_ .-]?access)"
                              rf"[_ .-]?key{_GIVEN}[\"']?(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])", None),
    ("GitHub token", r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"
                     r"(?![A-Za-z0-9_])", None),
    ("Google API key", r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", None),
    ("Slack token", r"(?<![A-Za-z0-9_-])xox[baprse]-[0-9A-Za-z-]{10,250}", _mixed),
    ("Stripe key", r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,247}", None),
    ("Hugging Face token", r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,64}(?![A-Za-z0-9_])", _cased),
    ("API key", rf"(?i)(?<![A-Za-z0-9])(?:api[_ -]?key|apikey|client[_ -]?secret|secret[_ -]?key){_GIVEN}{_CRED_VALUE}",
     _mixed),
    ("access token", r"(?i)(?<![A-Za-z0-9])(?:access|auth|refresh|bearer|api|private)[_ -]?token"
                     rf"{_GIVEN}{_CRED_VALUE}", _mixed),
    ("access token", rf"(?<![A-Za-z0-9])Bearer[ \t]+{_CRED_VALUE}", _mixed),
]

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"(?:(?:\s|\\[nr])++[A-Za-z0-9+/=]{16,}+)*+")  # the lines of a key cut before its END


def _private_keys(text: str) -> Iterator[Span]:
    """PEM private key blocks, BEGIN through END (or through the key's last line when its END is missing)."""
    pos, ends = 0, True
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end = _PEM_END.search(text, begin.end()) if ends else None
        ends = end is not None  # no END after this BEGIN: none after a later one either
        stop = end.end() if end is not None else _PEM_BODY.match(text, begin.end()).end()  # type: ignore[union-attr]
        yield begin.start(), stop
        pos = stop


_GIVEN_AS = (r"(?:\s+(?:for|to|of)\s+(?:the\s+|my\s+|our\s+)?[\w.@-]{1,40})?"  # "password for ada@x.org"
             r"(?:(?P<assign>[\"']?[ \t]*[:=][ \t]*)|(?P<said>\s+(?:is|was|will\s+be)[ \t]*:?[ \t]*))")
_PASSWORD_CUE = re.compile(rf"(?i)(?<![A-Za-z0-9])(?:pass(?:word|wd|phrase|code)|pwd|pw){_GIVEN_AS}")
_PIN_CUE = re.compile(rf"(?i)(?<![A-Za-z0-9])pin(?:[ -]?(?:code|number))?{_GIVEN_AS}")
_BARE = re.compile(r"[^\s\"'`<>\\]{1,128}")
_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’"}
_CLAUSE_END = re.compile(r"[ \t]*(?:$|[\n.,;!?)\]}\"'`]|(?:and|but|or|so|then)\b)")


def _given_values(cue: re.Pattern[str], like: Callable[[str], bool]) -> Finder:
    """Values given after a cue word: `password: X`, `pw=X`, `my password is X`, `the PIN is X` (a quoted value
    may hold spaces). Without the cue word, nothing is taken for a password."""
    def find(text: str) -> Iterator[Span]:
        for given in cue.finditer(text):
            start = given.end()
            close = _QUOTES.get(text[start:start + 1])
            stop = text.find(close, start + 1, start + 130) if close else -1
            if close and stop > start + 1 and "\n" not in text[start + 1:stop]:
                start, end = start + 1, stop
            else:
                bare = _BARE.match(text, start)
                if bare is None:
                    continue
                end = bare.end()
                while end > start and text[end - 1] in (".,;:!?)]}" if given.group("said") else ",;"):
                    end -= 1  # the sentence's punctuation (after a `:` or `=`, only a list's comma)
                if (given.group("said") or text[start:end].isalpha()) and not _CLAUSE_END.match(text, end):
                    continue  # "the password is 8 characters long", "Password: Enter yours": a sentence about it
            if like(text[start:end]):
                yield start, end
    return find


_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|.*[\[\]()].*")  # `self.pwd`, `auth[2]`, `None):`: code


def _password_like(value: str) -> bool:
    return (len(value) >= 4 and value.lower() not in _NOT_A_VALUE and not MASKED.fullmatch(value)
            and value[0] not in "$%{[(<" and not _CODE.fullmatch(value))


def _pin_like(value: str) -> bool:
    return value.isdigit() and 4 <= len(value) <= 12


_DIGIT_RUN = re.compile(r"(?<![\w+.])\d++(?:[ -]\d++)*+")
_DIGITS = re.compile(r"\d+")


def _card_numbers(text: str) -> Iterator[Span]:
    """Card numbers: 13 to 19 digits, whole or in groups of 3 or more split by single spaces or dashes (one kind of
    split), starting 2-6 (the card networks), with a valid Luhn checksum."""
    for run in _DIGIT_RUN.finditer(text):
        spans = [g.span() for g in _DIGITS.finditer(text, run.start(), run.end())]
        follows = text[run.end():run.end() + 2]
        if follows[:1].isalnum() or follows[:1] == "_" or (follows[:1] == "." and follows[1:].isdigit()):
            spans.pop()  # its last group runs on into a word, or is a decimal number's whole part
        groups = [text[a:b] for a, b in spans]
        splits = [text[b:b + 1] for _, b in spans]  # what follows each group
        i = 0
        while i < len(groups):
            best, digits = None, ""
            for j in range(i, len(groups)):
                if len(groups[j]) < 3 or (j > i + 1 and splits[j - 1] != splits[i]):
                    break
                digits += groups[j]
                if len(digits) > 19:
                    break
                if len(digits) >= 13 and _card_like(digits):
                    best = j
            if best is None:
                i += 1
                continue
            yield spans[i][0], spans[best][1]
            i = best + 1


_DOUBLED = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]  # a digit doubled, its two digits added (Luhn)


def _card_like(digits: str) -> bool:
    if digits[0] not in "23456" or len(set(digits)) == 1 or not digits.isascii():
        return False
    total = sum(map(int, digits[-1::-2])) + sum(_DOUBLED[int(d)] for d in digits[-2::-2])
    return total % 10 == 0


BUILT_IN: list[tuple[str, Finder]] = [
    *((kind, regex_finder(re.compile(pattern), check)) for kind, pattern, check in _PROVIDERS),
    ("private key", _private_keys),
    ("card number", _card_numbers),
    ("password", _given_values(_PASSWORD_CUE, _password_like)),
    ("PIN", _given_values(_PIN_CUE, _pin_like)),
]


_PASSWORD_KEY = re.compile(r"(?i)(?:[a-z0-9]+[_-])?(?:password|passwd|passphrase|passcode|pwd)")
_PIN_KEY = re.compile(r"(?i)(?:[a-z0-9]+[_-])?pin(?:[_-]?code)?")
_PRIVATE_KEY = re.compile(r"(?i)(?:[a-z0-9]+[_-])?private[_-]?key")
_TOKEN_KEY = re.compile(r"(?i)(?:[a-z0-9]+[_-])?(?:api[_-]?key|apikey|(?:access|auth|refresh|bearer|api)[_-]?token"
                        r"|(?:client[_-])?secret|secret[_-]?key)")


def secret_key(key: str | None, value: str) -> str | None:
    """The kind of secret `value` is when a JSON object gives it under `key` ("password", "api_key"...), if any."""
    if not key or len(key) > 64 or not value.strip() or MASKED.fullmatch(value):
        return None
    if _PASSWORD_KEY.fullmatch(key):
        return "password"
    if _PIN_KEY.fullmatch(key):
        return "PIN" if _pin_like(value) else None
    if _PRIVATE_KEY.fullmatch(key):
        return "private key"
    return "API key" if _TOKEN_KEY.fullmatch(key) else None
