"""Inferring a turn's speaker and thread (zapomni_core.content.turns)."""

from __future__ import annotations

import pytest

from zapomni_core.content.conversation import indexed_text, reading_context
from zapomni_core.content.turns import THREAD_GAP_S, Inferred, ThreadTracker, leading_speaker
from zapomni_core.memories.requests import MemoryMetadata


@pytest.mark.parametrize(
    ("text", "speaker"),
    [
        ("Caroline: I went to the support group.", "Caroline"),
        ("Dr. Mei-Ling O'Hara: take two.", "Dr. Mei-Ling O'Hara"),
        ("  Jon: hi", "Jon"),
        ("Note: buy milk", None),
        ("TODO: call the plumber", None),
        ("Correction: Declan's number is 087 555 2201", None),  # a label, not a person called Correction
        ("FYI: the office moved", None),
        ("Password: hunter2", None),
        ("Salary: £42,000", None),  # the owner's record, as a memory tool writes one
        ("Allergies: penicillin, latex", None),
        ("Laptop: 2019 MacBook Pro.", None),
        ("Q: what is it?", None),
        ("https://example.org is down", None),
        ("The plan: ship on Monday", None),
        ("Caroline:no space", None),
        ("caroline: lower case", None),
        ("Nate: Congrats! How was it?\n\n[shares a photo holding a controller]", "Nate"),
        ("Maria: Life does throw us some surprises, doesn't it?\n\n", "Maria"),
        ("HTRF: a technology for drug discovery\n" + "Homogeneous time-resolved fluorescence is used. " * 5, None),
    ],
)
def test_a_speaker_is_read_from_a_leading_name(text: str, speaker: str | None) -> None:
    assert leading_speaker(text) == speaker


def test_one_clients_turns_share_a_thread_until_a_gap() -> None:
    tracker = ThreadTracker()
    first = tracker.thread("a", "default", 1000.0)
    assert tracker.thread("a", "default", 1000.0 + THREAD_GAP_S) == first  # each turn restarts the clock
    assert tracker.thread("a", "default", 1000.0 + 2 * THREAD_GAP_S) == first
    later = tracker.thread("a", "default", 1001.0 + 3 * THREAD_GAP_S)
    assert later != first
    assert tracker.thread("a", "default", 0.0) != later  # a date long before: another conversation
    assert tracker.thread("b", "default", 1000.0) not in {first, later}
    assert tracker.thread("a", "other", 1000.0) not in {first, later}


def test_only_turns_get_a_thread_and_only_what_was_not_given_is_inferred() -> None:
    tracker = ThreadTracker()
    note = tracker.infer("Remember the boiler service in June.", None, "a", "default", 0.0)
    assert note == Inferred()
    assert note.to_json() is None
    turn = tracker.infer("Caroline: hi", None, "a", "default", 0.0)
    assert turn.speaker == "Caroline" and turn.thread is not None
    assert Inferred.from_json(turn.to_json()) == turn
    no_client = tracker.infer("Caroline: hi", None, None, "default", 0.0)
    assert no_client == Inferred(speaker="Caroline")
    given = MemoryMetadata.model_validate({"speaker": "Caro", "thread": "t"})
    assert tracker.infer("Caroline: hi", given, "a", "default", 0.0) == Inferred()
    dated = MemoryMetadata.model_validate({"date": "2023-05-08T18:00"})
    assert tracker.infer("Caroline: later", dated, "a", "default", 0.0).thread != turn.thread


def test_a_turn_that_opens_with_its_speaker_is_read_with_the_name_once() -> None:
    dated = MemoryMetadata.model_validate({"date": "2023-05-08T13:56"})
    context = reading_context(dated, "Caroline")
    assert context == "Caroline (8 May 2023)"
    assert indexed_text(context, "Caroline: I went.") == "Caroline (8 May 2023): I went."
    assert indexed_text(reading_context(None, "Caroline"), "Caroline: I went.") == "Caroline: I went."
    given = MemoryMetadata.model_validate({"speaker": "Caro"})
    assert indexed_text(reading_context(given, None), "Caroline: hi") == "Caro: Caroline: hi"
    assert reading_context(dated, None) is None  # a dated note has no reader's context
