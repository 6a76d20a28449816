"""Conversation files that differ from LoCoMo's in the ways real files do are read, each departure said; files that
cannot be read at all are refused with an error that says what to fix, and the eval commands exit 2 on them."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentos.eval.__main__ import main
from agentos.eval.conversations import (
    DatasetError,
    DatasetWarning,
    agent_name,
    evidence_ids,
    read_samples,
    session_date,
    sessions,
    speakers,
    turn_messages,
)
from agentos.eval.locomo_qa.prompts import transcript

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-v",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the violin."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Biscuit chewed my hiking boots today."}],
    },
    "qa": [
        {"question": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4, "answer": "Biscuit"},
        {"question": "What did the puppy chew?", "evidence": ["D2:1"], "category": 2, "answer": "boots"},
    ],
}


def variant(**changes: Any) -> dict[str, Any]:
    """SAMPLE with conversation fields replaced (None deletes one)."""
    sample = copy.deepcopy(SAMPLE)
    for key, value in changes.items():
        if value is None:
            del sample["conversation"][key]
        else:
            sample["conversation"][key] = value
    return sample


@pytest.mark.parametrize("text", [
    "1:56 pm on 8 May, 2023", "1:56 PM on 8 May 2023", "1:56 p.m. on May 8, 2023", "1:56  pm on 8 May, 2023",
    "2023-05-08T13:56:00", "2023-05-08 13:56:00+00:00", "2023/05/08 (Mon) 13:56",
])
def test_session_dates_are_read_in_the_forms_real_files_use(text: str) -> None:
    assert session_date(text) == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_a_date_without_a_time_is_its_day_and_text_that_is_no_date_is_none() -> None:
    assert session_date("8 May, 2023") == datetime(2023, 5, 8, tzinfo=UTC)
    assert session_date("May 8, 2023") == datetime(2023, 5, 8, tzinfo=UTC)
    assert session_date("sometime in spring") is None
    assert session_date("") is None


def test_a_date_with_a_zone_keeps_it() -> None:
    moment = session_date("2023-05-08T13:56:00+02:00")
    assert moment is not None and moment.astimezone(UTC).hour == 11


def test_sessions_come_in_number_order_even_when_a_number_is_skipped() -> None:
    sample = variant(session_2=None, session_2_date_time=None,
                     session_10=[{"speaker": "Ben", "dia_id": "D10:1", "text": "Back from the trip."}],
                     session_10_date_time="9:00 am on 1 August, 2023",
                     session_3=[{"speaker": "Ana", "dia_id": "D3:1", "text": "Biscuit is bigger now."}],
                     session_3_date_time="9:00 am on 1 July, 2023")
    assert [s.number for s in sessions(sample)] == [1, 3, 10]
    assert [m.id for m in turn_messages(sample)] == ["conv-v|D1:1", "conv-v|D1:2", "conv-v|D3:1", "conv-v|D10:1"]


def test_a_session_without_a_readable_date_is_dated_from_its_neighbour_and_said() -> None:
    with pytest.warns(DatasetWarning, match="session 2 'next Tuesday' is not a date"):
        later = sessions(variant(session_2_date_time="next Tuesday"))
    assert later[1].start == datetime(2023, 5, 9, 13, 56, tzinfo=UTC)  # a day after session 1
    with pytest.warns(DatasetWarning, match="session 1 has no date"):
        first = sessions(variant(session_1_date_time=None))
    assert first[0].start == datetime(2023, 6, 19, 10, 0, tzinfo=UTC)  # a day before session 2
    assert first[0].start < first[1].start


def test_turns_without_ids_speakers_or_text_are_read_with_stand_ins_or_left_out_and_said() -> None:
    sample = variant(speaker_a=None, speaker_b=None, session_1=[
        {"speaker": "Ana", "text": "I adopted a puppy."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": None},
        {"speaker": "Ben", "dia_id": "D1:3", "blip_caption": "a photo of a violin"},
        "not a turn",
        {"speaker": "Ben", "dia_id": "D2:1", "text": "An id used again."},
    ])
    with pytest.warns(DatasetWarning) as said:
        messages = turn_messages(sample)
    assert [m.id for m in messages] == ["conv-v|D1:1", "conv-v|D1:3", "conv-v|D2:1", "conv-v|D2:1"]
    assert messages[1].content == "[shares an image: a photo of a violin]"
    assert speakers(sample) == ("Ana", "Ben")  # the first two who speak
    assert [m.role for m in messages] == ["user", "assistant", "assistant", "user"]
    texts = " ".join(str(w.message) for w in said)
    assert "turn D1:2 has no text" in texts and "turn 4 is not an object" in texts
    assert "two turns have the id D2:1" in texts


def test_evidence_is_read_from_a_list_or_a_string_and_in_a_file_s_own_turn_ids() -> None:
    known = {"D1:1", "D2:1", "D30:5"}
    assert evidence_ids({"evidence": ["D1:1; D2:1"]}, known) == {"D1:1", "D2:1"}
    assert evidence_ids({"evidence": "D2:1"}, known) == {"D2:1"}
    assert evidence_ids({"evidence": ["D30:05"]}, known) == {"D30:5"}  # written with a leading zero
    assert evidence_ids({"evidence": ["t-7, t-9"]}, {"t-7", "t-8"}) == {"t-7"}
    assert evidence_ids({"evidence": None}, known) == set() and evidence_ids({}, known) == set()


def test_a_file_holds_a_list_one_conversation_or_conversations_keyed_by_id(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(SAMPLE), encoding="utf-8")
    assert [s["sample_id"] for s in read_samples(path)] == ["conv-v"]
    keyed = {"first": {k: v for k, v in SAMPLE.items() if k != "sample_id"}, "second": SAMPLE}
    path.write_text(json.dumps(keyed), encoding="utf-8")
    assert [s["sample_id"] for s in read_samples(path)] == ["first", "conv-v"]
    path.write_text(json.dumps([SAMPLE, SAMPLE, {"conversation": SAMPLE["conversation"], "sample_id": 7}]),
                    encoding="utf-8")
    with pytest.warns(DatasetWarning, match="'conv-v' is taken"):
        assert [s["sample_id"] for s in read_samples(path)] == ["conv-v", "conv-v-2", "7"]
    assert [s["sample_id"] for s in read_samples(path, limit=1)] == ["conv-v"]


@pytest.mark.parametrize(("content", "said"), [
    ("{not json", "is not JSON"),
    ("42", "holds a JSON int, not conversations"),
    ('[{"qa": []}]', "conversation 1 has no 'conversation' object"),
])
def test_a_file_that_is_not_conversations_is_refused_with_what_to_fix(tmp_path: Path, content: str,
                                                                      said: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match=said):
        read_samples(path)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read .*No such file"):
        read_samples(tmp_path / "absent.json")


def test_ids_that_would_share_an_agent_name_get_names_of_their_own() -> None:
    names = {agent_name("locomo", {"sample_id": ident}) for ident in ("会话 1", "会话 2", "conv 1", "conv-1", "x" * 90)}
    assert len(names) == 5 and all(len(n) <= 64 for n in names)
    assert agent_name("locomo", {"sample_id": "conv-1"}) == "locomo-conv-1"


def test_the_transcript_heads_each_session_with_its_date_as_written() -> None:
    text = transcript(variant(session_2_date_time="2023-06-20 10:00"))
    assert text.splitlines()[0] == "Session 1 (1:56 pm on 8 May, 2023):"
    assert "Session 2 (2023-06-20 10:00):\nAna: Biscuit chewed my hiking boots today." in text


def test_the_eval_scores_a_file_in_another_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two conversations whose ids make the same agent name, ISO dates, a skipped session, evidence as a string,
    a category as text, and questions that cannot be scored: all read, the unscorable counted."""
    other = variant(session_2=None, session_2_date_time=None, session_1_date_time="2023-05-08T13:56:00",
                    session_5=SAMPLE["conversation"]["session_2"], session_5_date_time="2023-06-20T10:00:00")
    other["sample_id"] = "conv v"
    other["qa"] = [{"question": "What did the puppy chew?", "evidence": "D2:1", "category": "2"},
                   {"question": "Who sang?", "evidence": ["D9:9"], "category": 1},
                   {"question": "No category", "evidence": ["D1:1"]}, "not a question"]
    first = copy.deepcopy(SAMPLE)
    first["sample_id"] = "conv:v"
    path = tmp_path / "other.json"
    path.write_text(json.dumps([first, other]), encoding="utf-8")
    assert main(["locomo", str(path)]) == 0
    out = capsys.readouterr().out
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert overall.split()[2] == "4"  # 2 + 2 asked
    assert float(overall.split()[5]) == 0.75  # the question citing a turn the conversation lacks is a miss
    assert "left out (no text, category or cited turn): 2; asked but citing no turn of their conversation " \
           "(scored as misses): 1" in out


@pytest.mark.parametrize("suite", [["locomo"], ["locomo-qa", "--model", "scripted/reader"]])
def test_the_eval_commands_refuse_an_unreadable_file_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 suite: list[str]) -> None:
    path = tmp_path / "broken.json"
    path.write_text("[{", encoding="utf-8")
    assert main([suite[0], str(path), *suite[1:]]) == 2
    assert "is not JSON" in capsys.readouterr().err


def test_the_eval_says_so_when_no_question_can_be_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = copy.deepcopy(SAMPLE)
    sample["qa"] = [{"question": "Anything?", "evidence": [], "category": 5}]
    path = tmp_path / "none.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    assert main(["locomo", str(path)]) == 2
    assert "nothing can be scored" in capsys.readouterr().err
