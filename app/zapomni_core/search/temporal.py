"""Times in questions read against the times of what was stored.

A memory has a date (its `date` metadata, else when it was added). A conversation turn often says
when something happened relative to that date: "I went to the support group yesterday", "we went
camping last week", "I'm starting a new job next month". A person asked "What did Melanie do in
May 2023?" or "When did Caroline go to the support group?" reads those words against the day the
turn was said. This module does the same, with no model:

- `question_time(text)`: the days a question asks about ("in May 2023", "on 1 May, 2022",
  "the week before 16 November 2023", "in 2022", "in June"), and whether it asks *when* something
  happened ("When did ...", "How long ago ...", "What year ...").
- `stated_times(text, date)`: the days a stored text speaks of, read against its date: the date
  itself, and what "yesterday", "last week", "two days ago", "next month", "last Saturday",
  "in May 2023" and the like point to from it.

The search pipeline (`pipeline.py`) then favours results whose stated days meet the question's days,
and, for a question asking when, results that state a time at all: measured in
docs/decisions/0027-temporal-and-multi-hop-recall.md.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from zapomni_core.search.types import Ranked
from zapomni_core.validation import parse_iso8601

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3, "several": 3,
}  # fmt: skip

_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_NUM = r"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)"
_UNIT = r"(day|week|weekend|month|year)s?"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\.?,?\s+{_YEAR}\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+{_DAY},?\s+{_YEAR}\b", re.I)
_PART_MONTH_YEAR = re.compile(
    rf"\b(?:(beginning|start|early|middle|mid|end|late)(?:\s+of)?[\s-]+)?{_MONTH}\.?,?\s+(?:of\s+)?{_YEAR}\b", re.I
)
_IN_MONTH = re.compile(rf"\b(?:in|during|of|since)\s+(?:(early|mid|late)[\s-]+)?{_MONTH}\b(?!\s*,?\s*\d)", re.I)
_IN_YEAR = re.compile(rf"\b(?:in|during|of|since|around)\s+{_YEAR}\b", re.I)
_AROUND = re.compile(
    rf"\b(?:the\s+)?(day|week|weekend|month)\s+(before|after|of)\s+(?:the\s+)?{_DAY}\s+{_MONTH},?\s+{_YEAR}\b", re.I
)
_WHEN = re.compile(
    r"^\s*(?:when\b|since when\b|how long\b|how many (?:days|weeks|months|years)\b|"
    r"what (?:year|month|day|date|time|week|weekend)\b|which (?:year|month|day|date|week|weekend)\b|"
    r"in which (?:year|month|week)\b|around when\b|at what (?:age|time|point)\b)",
    re.I,
)

# Relative times in a stored text, read against its date.
_AGO = re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I)
_LAST = re.compile(rf"\b(last|past|previous|this|next|coming)\s+{_UNIT}\b", re.I)
_LAST_WEEKDAY = re.compile(rf"\b(last|this|next|on)\s+{_WEEKDAY}\b", re.I)
_PLAIN = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|this morning|this afternoon|this evening|last night|"
    r"the other day|a few days ago|recently|just now|earlier today|the day before yesterday)\b",
    re.I,
)


@dataclass(frozen=True)
class Days:
    """An inclusive range of days; `month_only` ranges (a month with no year) match that month in any year."""

    first: date
    last: date
    month_only: int | None = None

    def meets(self, other: Days) -> bool:
        if self.month_only is not None:
            return other._has_month(self.month_only)
        if other.month_only is not None:
            return self._has_month(other.month_only)
        return self.first <= other.last and other.first <= self.last

    def _has_month(self, month: int) -> bool:
        if (self.last - self.first).days >= 365:
            return True
        day = self.first
        while day <= self.last:
            if day.month == month:
                return True
            day = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
        return False


@dataclass(frozen=True)
class QuestionTime:
    days: list[Days]  # what the question names (empty: none)
    asks_when: bool  # "When did ...", "How long ago ...": the answer is a time

    @property
    def any(self) -> bool:
        return bool(self.days) or self.asks_when


NO_TIME = QuestionTime(days=[], asks_when=False)


def _month(name: str) -> int:
    key = name.lower().rstrip(".")
    return _MONTHS.get(key) or _MONTHS[key[:3]]


def _month_days(year: int, month: int, part: str | None = None) -> Days:
    last = calendar.monthrange(year, month)[1]
    first_day, last_day = 1, last
    part = (part or "").lower()
    if part in ("beginning", "start", "early"):
        last_day = 10
    elif part in ("middle", "mid"):
        first_day, last_day = 10, 20
    elif part in ("end", "late"):
        first_day = 20
    return Days(date(year, month, first_day), date(year, month, last_day))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def absolute_days(text: str) -> list[Days]:
    """The dates, months and years a text names outright."""
    found: list[Days] = []
    taken: list[tuple[int, int]] = []

    def free(match: re.Match[str]) -> bool:
        return all(match.end() <= a or match.start() >= b for a, b in taken)

    for match in _AROUND.finditer(text):
        unit, relation, day_s, month_s, year_s = match.groups()
        anchor = _safe_date(int(year_s), _month(month_s), int(day_s))
        if anchor is None:
            continue
        span = {"day": 1, "week": 7, "weekend": 3, "month": 31}[unit.lower()]
        if relation.lower() == "before":
            found.append(Days(anchor - timedelta(days=span), anchor))
        elif relation.lower() == "after":
            found.append(Days(anchor, anchor + timedelta(days=span)))
        else:
            found.append(Days(anchor - timedelta(days=span // 2 + 1), anchor + timedelta(days=span // 2 + 1)))
        taken.append(match.span())
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for match in pattern.finditer(text):
            if not free(match):
                continue
            if order == "dmy":
                day_s, month_s, year_s = match.groups()
            else:
                month_s, day_s, year_s = match.groups()
            day = _safe_date(int(year_s), _month(month_s), int(day_s))
            if day is not None:
                found.append(Days(day, day))
                taken.append(match.span())
    for match in _PART_MONTH_YEAR.finditer(text):
        if free(match):
            part, month_s, year_s = match.groups()
            found.append(_month_days(int(year_s), _month(month_s), part))
            taken.append(match.span())
    for match in _IN_YEAR.finditer(text):
        if free(match):
            year = int(match.group(1))
            found.append(Days(date(year, 1, 1), date(year, 12, 31)))
            taken.append(match.span())
    for match in _IN_MONTH.finditer(text):
        if free(match) and not (match.group(2).lower() == "may" and match.group(1) is None):
            month = _month(match.group(2))
            found.append(Days(date(1, month, 1), date(1, month, 28), month_only=month))
            taken.append(match.span())
    return found


def question_time(text: str) -> QuestionTime:
    """The days a question names, and whether it asks when."""
    return QuestionTime(days=absolute_days(text), asks_when=bool(_WHEN.match(text)))


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _shift_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _unit_days(said: date, unit: str, offset: int) -> Days:
    """The day, week, month or year `offset` units from the one `said` is in (0: this one)."""
    unit = unit.lower()
    if unit == "day":
        day = said + timedelta(days=offset)
        return Days(day, day)
    if unit in ("week", "weekend"):
        start = said - timedelta(days=said.weekday()) + timedelta(weeks=offset)
        if unit == "weekend":
            return Days(start + timedelta(days=4), start + timedelta(days=6))
        return Days(start, start + timedelta(days=6))
    if unit == "month":
        first = _shift_months(said.replace(day=1), offset)
        return _month_days(first.year, first.month)
    year = said.year + offset
    return Days(date(year, 1, 1), date(year, 12, 31))


def relative_days(text: str, said: date) -> list[Days]:
    """What the relative times of a text point to, read from the day it was said."""
    found: list[Days] = []
    for match in _PLAIN.finditer(text):
        word = match.group(1).lower()
        if word in ("yesterday", "last night"):
            found.append(Days(said - timedelta(days=1), said - timedelta(days=1)))
        elif word == "the day before yesterday":
            found.append(Days(said - timedelta(days=2), said - timedelta(days=2)))
        elif word == "tomorrow":
            found.append(Days(said + timedelta(days=1), said + timedelta(days=1)))
        elif word in ("the other day", "a few days ago", "recently"):
            found.append(Days(said - timedelta(days=7), said - timedelta(days=1)))
        else:
            found.append(Days(said, said))
    for match in _AGO.finditer(text):
        n, unit = _count(match.group(1)), match.group(2)
        found.append(_unit_days(said, unit, -n) if unit.lower() != "day" else Days(said - timedelta(days=n), said))
    for match in _LAST.finditer(text):
        which, unit = match.group(1).lower(), match.group(2)
        offset = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]
        found.append(_unit_days(said, unit, offset))
    for match in _LAST_WEEKDAY.finditer(text):
        which, weekday = match.group(1).lower(), _WEEKDAYS[match.group(2).lower()]
        back = (said.weekday() - weekday) % 7 or 7
        if which in ("last", "on"):
            day = said - timedelta(days=back)
        elif which == "next":
            day = said + timedelta(days=(weekday - said.weekday()) % 7 or 7)
        else:
            day = said + timedelta(days=(weekday - said.weekday()) % 7)
        found.append(Days(day, day))
    return found


def stated_times(text: str, said: date | None) -> tuple[list[Days], bool]:
    """The days a stored text speaks of (its own day included when it has one), and whether it states a time."""
    named = absolute_days(text)
    relative = relative_days(text, said) if said is not None else []
    own = [Days(said, said)] if said is not None else []
    return own + named + relative, bool(named or relative)


def said_on(ranked: Ranked) -> date:
    """The day a result was said or written: its memory's `date`, else the day it was added (UTC)."""
    memory = ranked.candidate.hit.memory
    if memory.date:
        return parse_iso8601(memory.date).date()
    return datetime.fromtimestamp(memory.created_at, UTC).date()


def favour_times(
    ranked: list[Ranked], question: QuestionTime, *, k: int, days_weight: float, when_weight: float
) -> list[Ranked]:
    """Fuse one more list into `ranked`: the results whose time answers the question, in their fused order.

    A question naming days ("in May 2023") lists the results that speak of a day among them; a question
    asking when ("When did ...") lists the results that state a time. A place in that list is worth
    `weight / (k + place)`, as a rank in any leg is; the order is otherwise kept.
    """
    weight = days_weight if question.days else when_weight
    if not question.any or weight <= 0.0:
        return ranked
    bonus: dict[str, float] = {}
    for item in ranked:
        days, states = stated_times(item.candidate.hit.text, said_on(item))
        answers = any(asked.meets(day) for asked in question.days for day in days) if question.days else states
        if answers:
            bonus[item.candidate.chunk_id] = weight / (k + len(bonus) + 1)
    if not bonus:
        return ranked
    scored = [replace(r, rank_score=r.rank_score + bonus.get(r.candidate.chunk_id, 0.0)) for r in ranked]
    return sorted(scored, key=lambda r: (-r.rank_score, -r.candidate.similarity, r.candidate.chunk_id))
