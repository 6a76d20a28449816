"""archival_insert / archival_search: chunking, dedup, tags, dates, paging, totals, counts."""

from __future__ import annotations

import re

import pytest

from agentos.agent.agent import Agent
from agentos.memory.archival import chunk_text
from tests.memory_helpers import archival, call, day, make_agent


def _total(text: str) -> int:
    return int(re.search(r"of (\d+)", text).group(1))  # type: ignore[union-attr]


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_empty_store(embedder: str) -> None:
    agent = make_agent(embedder=embedder)
    text, err = call(agent, "archival_search", query="anything")
    assert not err and text.startswith("No passages found")
    assert call(agent, "archival_search", query="")[0].startswith("No passages found")


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_insert_then_search_at_once_and_count(embedder: str) -> None:
    agent = make_agent(embedder=embedder)
    text, err = call(agent, "archival_insert", content="Ada's cat is called Pixel.", tags=["pets"])
    assert not err and "Stored 1 passage" in text
    assert archival(agent).count() == 1
    assert "archival passages: 1" in agent.system_prompt().lower() or "1" in agent.system_prompt()
    found, _ = call(agent, "archival_search", query="cat Pixel")
    assert "Pixel" in found and "[tags: pets]" in found and "of 1 " in found


def test_duplicate_is_not_stored_twice_and_agent_is_told() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="The launch is on Friday.")
    text, err = call(agent, "archival_insert", content="  The launch   is on Friday. ")
    assert not err and "Already in archival memory" in text and "nothing stored twice" in text
    assert archival(agent).count() == 1 and archival(agent).count() == 1


def test_long_content_is_chunked() -> None:
    long = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(300))
    chunks = chunk_text(long)
    assert len(chunks) > 5 and all(len(c) <= 1200 for c in chunks)
    assert " ".join(chunks).split() == long.split()
    agent = make_agent()
    text, _ = call(agent, "archival_insert", content=long)
    assert f"Stored {len(chunks)} passage(s)" in text
    assert archival(agent).count() == len(chunks)
    assert chunk_text("x" * 5000) == ["x" * 1200] * 4 + ["x" * 200]


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_paging_and_true_totals(embedder: str) -> None:
    agent = make_agent(embedder=embedder)
    archival(agent).insert_many([f"note {i} about gardening tomatoes" for i in range(12)])
    first, _ = call(agent, "archival_search", query="gardening")
    assert "1-5 of 12 (page 0 of pages 0-2)" in first
    seen = set()
    for page in range(3):
        text, _ = call(agent, "archival_search", query="gardening", page=page)
        seen |= set(re.findall(r"note \d+", text))
    assert len(seen) == 12
    last, _ = call(agent, "archival_search", query="gardening", page=2)
    assert "11-12 of 12" in last
    past, err = call(agent, "archival_search", query="gardening", page=9)
    assert not err and "past the end" in past and "12" in past
    listing, _ = call(agent, "archival_search", query="")
    assert _total(listing) == 12
    # one insert shares one created_at: the listing's pages still cover every passage once, newest first
    listed = [re.findall(r"note \d+", call(agent, "archival_search", query="", page=p)[0]) for p in range(3)]
    assert sorted(n for page in listed for n in page) == sorted(f"note {i}" for i in range(12))
    assert listed[0][0] == "note 11"


def test_tag_filter() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="Tomatoes need sun.", tags=["garden"])
    call(agent, "archival_insert", content="Tomatoes go in the sauce.", tags=["cooking", "it's"])
    garden, _ = call(agent, "archival_search", query="tomatoes", tags=["garden"])
    assert "need sun" in garden and "sauce" not in garden and "of 1 " in garden
    both, _ = call(agent, "archival_search", query="tomatoes", tags=["garden", "cooking"])
    assert _total(both) == 2
    quoted, _ = call(agent, "archival_search", query="tomatoes", tags=["it's"])
    assert "sauce" in quoted and _total(quoted) == 1
    none, _ = call(agent, "archival_search", query="tomatoes", tags=["nope"])
    assert none.startswith("No passages")


def test_date_filter() -> None:
    agent = make_agent()
    arch = archival(agent)
    arch.insert_many(["old memo about taxes"], created_at=day(1))
    arch.insert_many(["new memo about taxes"], created_at=day(20))
    text, _ = call(agent, "archival_search", query="taxes", start_date="2024-01-10")
    assert "new memo" in text and "old memo" not in text
    text, _ = call(agent, "archival_search", query="taxes", end_date="2024-01-01")
    assert "old memo" in text and "new memo" not in text
    text, _ = call(agent, "archival_search", query="", start_date="2024-01-01", end_date="2024-01-31")
    assert text.index("new memo") < text.index("old memo")  # listing: newest first
    text, err = call(agent, "archival_search", query="taxes", start_date="last tuesday")
    assert err and "not a date" in text
    text, err = call(agent, "archival_search", query="taxes", start_date="2024-02-01", end_date="2024-01-01")
    assert err and "after end_date" in text


def test_delete_updates_count() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="to be forgotten")
    pid = archival(agent).search("forgotten").hits[0].id
    assert archival(agent).delete(pid)
    assert not archival(agent).delete(pid)
    assert archival(agent).count() == 0


def test_archival_survives_reload() -> None:
    agent = make_agent()
    call(agent, "archival_insert", content="persistent fact about Lisbon")
    agent.close()
    again = Agent.load("sam", provider=agent.provider)
    assert archival(again).count() == 1
    assert "Lisbon" in call(again, "archival_search", query="Lisbon")[0]


def test_bad_arguments_are_tool_errors() -> None:
    agent = make_agent()
    assert call(agent, "archival_insert", content="   ")[1]
    assert call(agent, "archival_search", query="x", page=-1)[1]
    text, err = call(agent, "archival_search", query="x", tags=["a\nb"])
    assert err and "bad tag" in text


def test_search_through_the_ann_index() -> None:
    agent = make_agent(embedder="hash:32")
    arch = archival(agent)
    arch.insert_many([f"passage {i} about topic {i % 13} and colour {i % 7}" for i in range(300)])
    assert arch.ensure_ann_index(min_rows=100)
    text, err = call(agent, "archival_search", query="topic 5 colour 3")
    assert not err and "of " in text
    assert len(arch.nearest("topic 5 colour 3", 10)) == 10
    exact = arch.nearest("topic 5 colour 3", 10, exact=True)
    assert len(set(arch.nearest("topic 5 colour 3", 10)) & set(exact)) >= 8


def test_a_listing_page_is_right_even_when_a_compaction_renumbered_the_rows() -> None:
    agent = make_agent()
    arch = archival(agent)
    for i in range(4):  # four commits, four fragments
        arch.insert_many([f"note {i} about harbours"])
    listed = arch.table.search().select(["id"]).with_row_id(True).limit(None).to_arrow().to_pylist()
    before = {r["id"]: r["_rowid"] for r in listed}  # as the newest-first listing reads them
    arch.optimize()  # compaction rewrites the fragments: the row ids above are stale now
    hits = arch._hits([(key, 0.0) for key in before], before)
    assert sorted(h.text for h in hits) == [f"note {i} about harbours" for i in range(4)]
    text, err = call(agent, "archival_search", query="")
    assert not err and "of 4" in text and text.index("note 3") < text.index("note 0")


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_filters_hold_whether_applied_before_or_after_ranking(embedder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.retrieval.search as search
    from agentos.retrieval.search import POSTFILTER_FROM, kept_share, tag_clause

    arch = archival(make_agent(embedder=embedder))
    assert kept_share(arch.table, tag_clause(["common"])) is None  # a small table: always filtered first
    monkeypatch.setattr(search, "POSTFILTER_MIN_ROWS", 0)  # as if the table were large
    arch.insert_many([f"harbour note {i}" for i in range(8)], tags=["common"])
    arch.insert_many([f"harbour memo {i}" for i in range(2)], tags=["rare"])
    assert kept_share(arch.table, tag_clause(["common"])) == 0.8 >= POSTFILTER_FROM  # filtered after ranking
    assert kept_share(arch.table, tag_clause(["rare"])) == 0.2 < POSTFILTER_FROM  # filtered before
    for tag, count in (("common", 8), ("rare", 2)):
        pages = [arch.search("harbour", tags=[tag], page=p) for p in range(2)]
        hits = [h for page in pages for h in page.hits]
        assert pages[0].total == count and len({h.id for h in hits}) == count
        assert all(h.tags == [tag] for h in hits)
    since = arch.search("harbour", start=day(1, 1, 2000))  # keeps every row: filtered after ranking
    assert since.total == 10


def test_a_filter_applied_after_ranking_loses_no_match(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.memory.archival as archival_module
    import agentos.retrieval.search as search

    monkeypatch.setattr(search, "POSTFILTER_MIN_ROWS", 0)  # as if the table were large
    monkeypatch.setattr(archival_module, "MAX_CANDIDATES", 2)  # so the best few matches are all untagged
    monkeypatch.setattr(archival_module, "VECTOR_CANDIDATES", 2)
    arch = archival(make_agent(embedder="hash:64"))
    arch.insert_many([f"meeting notes {i}" for i in range(30)], tags=["work"])
    arch.insert_many([f"dentist dentist {i}" for i in range(10)])
    arch.insert_many(["a long work memo that also mentions the dentist once", "dentist booked for the team"],
                     tags=["work"])
    assert search.kept_share(arch.table, search.tag_clause(["work"])) == 32 / 42  # filtered after ranking first
    page = arch.search("dentist", tags=["work"])
    assert {h.text for h in page.hits} >= {"dentist booked for the team",
                                           "a long work memo that also mentions the dentist once"}
    assert all(h.tags == ["work"] for h in page.hits)


def test_a_hybrid_page_shows_each_passage_whichever_search_found_it() -> None:
    arch = archival(make_agent(embedder="hash:64"))
    arch.insert_many(["harbour lights at dusk", "the harbour pilot retired"], tags=["sea"])
    arch.insert_many(["dentist on tuesday", "buy oat milk", "call the plumber"], tags=["errands"])
    page = arch.search("harbour")
    assert page.total == 5  # two keyword matches; every passage is among the nearest vectors
    stored = {h.id: (h.text, h.tags) for h in arch.search("", page_size=10).hits}
    assert {h.id: (h.text, h.tags) for h in page.hits} == stored  # each brought by the search that found it
    assert {h.text for h in page.hits[:2]} == {"harbour lights at dusk", "the harbour pilot retired"}


def test_a_date_range_gives_the_same_page_filtered_before_or_after_ranking(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.memory.archival as archival_module
    import agentos.retrieval.search as search

    monkeypatch.setattr(search, "POSTFILTER_MIN_ROWS", 0)  # as if the table were large
    monkeypatch.setattr(archival_module, "MAX_CANDIDATES", 2)  # so filtering after ranking finds enough rows
    monkeypatch.setattr(archival_module, "VECTOR_CANDIDATES", 2)
    arch = archival(make_agent(embedder="hash:64"))
    # distinct scores: with ties, which rows make a cut would be LanceDB's choice, not the filter's
    arch.insert_many([f"{'harbour ' * (i + 1)}log {i}" for i in range(7)], created_at=day(1))
    arch.insert_many([f"{'harbour ' * (i + 1)}log {i} later" for i in range(3)], created_at=day(20))
    kept = search.kept_share(arch.table, arch._where(None, day(10), None))
    assert search.SCANNED_POSTFILTER_FROM <= kept == 0.3 < search.POSTFILTER_FROM  # a date range: after ranking
    after = arch.search("harbour log", start=day(10))
    monkeypatch.setattr(search, "SCANNED_POSTFILTER_FROM", 1.0)  # now filtered first
    before = arch.search("harbour log", start=day(10))
    assert [(h.id, h.text) for h in after.hits] == [(h.id, h.text) for h in before.hits]
    assert after.hits and all(h.text.endswith("later") for h in after.hits)
