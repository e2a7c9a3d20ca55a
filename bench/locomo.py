"""The LoCoMo development half (../shared/data/locomo-dev): one loader for every bench that reads it.

Nothing here imports the application, so a broken `app/` cannot break data loading.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from bench.common import REPO_ROOT

LOCOMO = (REPO_ROOT / ".." / "shared" / "data" / "locomo-dev" / "locomo-dev.json").resolve()
# Category 5 (adversarial) asks about what was never said: it has no evidence turn to find.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]  # dia_ids, as given (a few malformed ones can never be found)
    category: int


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    said: str  # the turn's words alone
    caption: str | None  # the photo it shares, if any
    date: str | None  # the session's date and time, ISO 8601

    @property
    def text(self) -> str:
        """The turn's text, with " [shares a photo: caption]" when it shares one."""
        return f"{self.said} [shares a photo: {self.caption}]" if self.caption else self.said

    @property
    def line(self) -> str:
        """`speaker: text`, as a transcript shows it."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[Turn]  # in session order
    questions: list[Question]  # of CATEGORIES, with evidence

    def limited(self, turns: int | None, questions: int | None) -> Conversation:
        """The first `turns` turns (with only the questions whose evidence lies within them), then the
        first `questions` questions."""
        kept_turns = self.turns if turns is None else self.turns[:turns]
        known = {t.dia_id for t in kept_turns}
        kept = [q for q in self.questions if turns is None or q.evidence <= known]
        return replace(self, turns=kept_turns, questions=kept if questions is None else kept[:questions])


def session_date(text: str | None) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00' (None when absent or unreadable)."""
    if not text:
        return None
    for pattern in ("%I:%M %p on %d %B, %Y", "%d %B %Y", "%d %B, %Y"):
        try:
            return datetime.strptime(text.strip(), pattern).isoformat()
        except ValueError:
            continue
    return None


def load_locomo(path: Path) -> list[Conversation]:
    conversations: list[Conversation] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        chat = sample["conversation"]
        sessions = sorted(
            (int(m[1]), key)
            for key, value in chat.items()
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(value, list)
        )
        turns = [
            Turn(
                str(turn["dia_id"]),
                number,
                str(turn["speaker"]),
                str(turn["text"]),
                turn.get("blip_caption") or None,
                session_date(chat.get(f"{key}_date_time")),
            )
            for number, key in sessions
            for turn in chat[key]
        ]
        questions = [
            Question(str(qa["question"]), frozenset(str(e) for e in qa["evidence"]), int(qa["category"]))
            for qa in sample["qa"]
            if qa.get("category") in CATEGORIES and qa.get("evidence")
        ]
        conversations.append(Conversation(str(sample.get("sample_id", len(conversations))), turns, questions))
    return conversations
