"""Entity extraction: names, possessives, sentence starts, quoted titles, keys, aliases, first person."""

from __future__ import annotations

import pytest

from agentos.retrieval.entities import (
    Mention,
    alias_words,
    entity_key,
    extract,
    ngram_keys,
    query_mentions,
    relation_key,
    singular,
    speaker_key,
)
from agentos.retrieval.entity_rank import Graph


def keys(text: str, speaker: str | None = None, role: str = "user") -> list[str]:
    return [m.key for m in extract(text, speaker, role)]


def test_proper_noun_spans_with_joiners_and_titles() -> None:
    found = keys("Yesterday Ann met Mr. Smith at the Bank of America in New York City, then saw Leonardo da Vinci.")
    assert found == ["ann", "smith", "bank of america", "new york city", "leonardo da vinci"]
    kinds = {m.key: m.kind for m in extract("We went to the University of Porto and Lake Tahoe for the Jazz Festival.")}
    assert kinds == {"university of porto": "organisation", "lake tahoe": "place", "jazz festival": "event"}


def test_possessives_end_a_name_and_are_dropped_from_its_key() -> None:
    assert keys("Caroline's garden is lovely, and so is McDonald's.") == ["caroline", "mcdonald"]
    assert entity_key("McDonald's") == entity_key("McDonalds") == entity_key("mcdonald") == "mcdonald"
    assert entity_key("James'") == entity_key("James")


def test_a_common_word_that_starts_a_sentence_is_not_an_entity() -> None:
    assert keys("Painting is fun. Honestly, Thanks! Anyway the weather was nice. Did it rain?") == []
    assert keys("The Beatles played. Then Oslo.") == ["beatle", "oslo"]
    # a lone capitalised word at a sentence start that no list knows is kept, but marked as uncertain
    only, me = extract("Pottery relaxes me.", "Ann")
    assert (only.key, only.certain, me.key) == ("pottery", False, "ann")
    assert all(m.certain for m in extract("I love Pottery now.", "Ann"))


def test_quoted_titles_are_one_entity_and_speech_is_not() -> None:
    found = extract('I read "Charlotte\'s Web" and “The Old Man and the Sea” to them.', "Ann")
    assert [(m.key, m.kind) for m in found if m.kind == "title"] == [("charlotte web", "title"),
                                                                      ("the old man and the sea", "title")]
    assert "charlotte" not in [m.key for m in found]  # the title's words are not taken again
    speech = extract('She said "Paris was lovely, really." and left.')
    assert [m.key for m in speech] == ["paris"]


def test_case_plural_and_accent_insensitive_keys() -> None:
    assert entity_key("Sisters") == entity_key("sister") == "sister"
    assert entity_key("NEW YORK") == entity_key("new york") == "new york"
    assert entity_key("José") == entity_key("jose")
    assert singular("parties") == "party" and singular("classes") == "class" and singular("Paris") == "Paris"
    assert entity_key("Dr. Jane Goodall") == "jane goodall" and entity_key("Mr.") == "mr"


def test_alias_words_of_a_multi_word_name() -> None:
    assert alias_words("john smith") == ("john", "smith")
    assert alias_words("bank of america") == ("bank", "america")
    assert alias_words("oslo") == () and alias_words("user:sister") == ()


def test_first_person_is_the_speaker_by_name_or_by_role() -> None:
    assert keys("I think so, me too, and it's mine.", "Ann") == ["ann"]
    assert keys("I think so.") == ["user"]
    assert keys("I can help with that.", role="assistant") == ["agent"]
    assert keys("I'm fine; I've been busy myself.", "Bo", "assistant") == ["bo"]
    assert speaker_key(None, "user") == "user" and speaker_key("Caroline", "user") == "caroline"


def test_relations_of_the_speaker_the_addressee_and_a_named_person() -> None:
    assert keys("My little sister and our two dogs visited.") == ["user", "user:sister", "user:dog"]
    assert keys("My sister Beatrix lives in Porto.", "Ann") == ["ann", "ann:sister", "beatrix", "porto"]
    assert keys("How is your mom?", role="assistant") == ["user:mother"]
    assert keys("How is your mom?", role="user") == ["agent:mother"]
    assert [m.key for m in extract("How is your mom?", "Mel", "assistant", addressee="Caroline")] == ["caroline:mother"]
    assert keys("Caroline's kids and Tom's boss came.") == ["caroline", "caroline:child", "tom", "tom:boss"]
    assert keys("I called Mom; Dad says hi.", "Ann") == ["ann", "ann:mother", "ann:father"]
    assert relation_key("user", "Sisters") == "user:sister" and relation_key("user", "table") is None


def test_my_sister_means_the_same_entity_in_a_message_and_in_a_query() -> None:
    stored = [m.key for m in extract("my sister is a nurse")]
    asked = [m.key for m in query_mentions("What does my sister do?")]
    assert "user:sister" in stored and "user:sister" in asked
    assert "user:sister" in [m.key for m in query_mentions("What does the user's sister do?")]
    assert "caroline:sister" in [m.key for m in query_mentions("what does caroline's sister do")]


def test_the_users_name_and_user_reach_the_same_entity() -> None:
    graph = Graph()
    rows = [{"entity_key": m.key, "name": m.name, "kind": m.kind, "role": "user", "certain": m.certain}
            for m in extract("My sister Beatrix moved to Porto.", "Caroline")]
    graph.add_message("m1", 1.0, rows)
    assert graph.resolve("user") == {"caroline"} and graph.resolve("caroline") == {"caroline"}
    assert graph.resolve("user:sister") == {"caroline:sister"}
    assert {"caroline:sister"} in graph.groups("Where does my sister live?")
    assert {"caroline:sister"} in graph.groups("Where does Caroline's sister live?")
    assert {"caroline"} in graph.groups("what did I say?")  # the user's first person
    # an unnamed user: "user" itself
    plain = Graph()
    plain.add_message("m2", 1.0, [{"entity_key": m.key, "name": m.name, "kind": m.kind, "role": "user"}
                                  for m in extract("my sister sings")])
    assert plain.groups("what does my sister do?") == [frozenset({"user"}), frozenset({"user:sister"})]


def test_aliases_link_a_part_of_a_name_only_when_unambiguous() -> None:
    graph = Graph()
    for i, text in enumerate(["John Smith called.", "Mr. Smith came by.", "Ann Lee and Ann Ray met."]):
        graph.add_message(f"m{i}", float(i), [{"entity_key": m.key, "name": m.name, "kind": m.kind, "role": "user"}
                                              for m in extract(text)])
    assert graph.resolve("smith") == {"smith", "john smith"}
    assert graph.resolve("john smith") == {"john smith", "smith"}
    assert graph.resolve("ann") == frozenset()  # "Ann Lee" or "Ann Ray": neither
    assert graph.resolve("ann lee") == {"ann lee"}


def test_query_names_in_any_case_match_known_entities() -> None:
    assert ngram_keys("when did caroline go to the lgbtq support group") == [
        "caroline", "caroline go", "lgbtq", "lgbtq support", "lgbtq support group", "support", "support group",
        "group"]
    graph = Graph()
    graph.add_message("m", 1.0, [{"entity_key": "lgbtq", "name": "LGBTQ", "kind": "name", "role": "user"}])
    assert graph.groups("tell me about lgbtq events") == [frozenset({"lgbtq"})]


@pytest.mark.parametrize("text", ["", "   ", "12345 !!! ???", "\ud800 odd", "a" * 5000, "\"" * 30, "’s 's"])
def test_odd_texts_never_fail(text: str) -> None:
    assert isinstance(extract(text), list) and isinstance(query_mentions(text), list)


def test_mentions_are_unique_per_text() -> None:
    found = extract("Oslo, Oslo and OSLO. I and I.", "Ann")
    assert found == [Mention("oslo", "Oslo", "name"), Mention("ann", "Ann", "speaker")]
