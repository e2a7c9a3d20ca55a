"""Times named in questions and stated in stored texts (zapomni_core.search.temporal)."""

from __future__ import annotations

from datetime import date

import pytest

from zapomni_core.search.temporal import Days, absolute_days, question_time, stated_times

SAID = date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("What movie did Joanna watch on 1 May, 2022?", date(2022, 5, 1), date(2022, 5, 1)),
        ("Who did Maria have dinner with on May 3, 2023?", date(2023, 5, 3), date(2023, 5, 3)),
        ("Where did Joanna travel to in July 2022?", date(2022, 7, 1), date(2022, 7, 31)),
        ("Which tournament did Nate win in the beginning of November 2022?", date(2022, 11, 1), date(2022, 11, 10)),
        ("Where was Tim in the week before 16 November 2023?", date(2023, 11, 9), date(2023, 11, 16)),
        ("What did she paint in 2022?", date(2022, 1, 1), date(2022, 12, 31)),
    ],
)
def test_a_question_names_days(question: str, first: date, last: date) -> None:
    assert question_time(question).days == [Days(first, last)]


def test_a_month_without_a_year_meets_that_month_of_any_year() -> None:
    [june] = question_time("When did Melanie go camping in June?").days
    assert june.meets(Days(date(2021, 6, 30), date(2021, 6, 30)))
    assert not june.meets(Days(date(2021, 7, 1), date(2021, 7, 2)))


@pytest.mark.parametrize(
    ("question", "when"),
    [
        ("When did Caroline go to the support group?", True),
        ("How long ago was Caroline's 18th birthday?", True),
        ("What year did John start surfing?", True),
        ("What did Caroline research?", False),
        ("What may I bring to the party?", False),  # "may" is not May
    ],
)
def test_a_question_asking_when(question: str, when: bool) -> None:
    assert question_time(question).asks_when is when
    assert question_time(question).days == []


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("I went to the support group yesterday", date(2023, 5, 7), date(2023, 5, 7)),
        ("We went camping last week!", date(2023, 5, 1), date(2023, 5, 7)),
        ("I ran a charity race last Saturday", date(2023, 5, 6), date(2023, 5, 6)),
        ("I'm starting the new job next month", date(2023, 6, 1), date(2023, 6, 30)),
        ("Two years ago I moved here", date(2021, 1, 1), date(2021, 12, 31)),
        ("Back in March 2022 I adopted a dog", date(2022, 3, 1), date(2022, 3, 31)),
    ],
)
def test_a_text_states_days_read_against_the_day_it_was_said(text: str, first: date, last: date) -> None:
    days, states = stated_times(text, SAID)
    assert states and days[0] == Days(SAID, SAID) and Days(first, last) in days[1:]


def test_a_text_with_no_time_states_only_its_own_day() -> None:
    assert stated_times("I love pottery, it calms me down.", SAID) == ([Days(SAID, SAID)], False)
    assert stated_times("I love pottery.", None) == ([], False)
    # No such day: the month it names is what is read.
    assert absolute_days("on 31 February 2023") == [Days(date(2023, 2, 1), date(2023, 2, 28))]
