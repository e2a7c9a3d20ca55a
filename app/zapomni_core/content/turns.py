"""Who said a turn and which conversation it belongs to, when the agent did not say.

Most agents store a chat as `Caroline: I went to the support group yesterday`, one turn per
memory, with no `speaker` or `thread`. A person reading those turns would take the name before
the colon as the speaker, and would take turns that one client sent close together in time as
one conversation. That is what is inferred here (docs/decisions/0023-threads-without-being-told.md):

- a speaker from a leading `Name:` (one to three capitalised words, not a label such as `Note:`), unless
  that line is a heading: a paragraph of its own follows it (`HTRF: a technology for ...` + newline + an
  abstract is a document's title, not a turn; decision 0030);
- a thread, for a turn (a speaker given or inferred) without one, from the client that sent it
  (its MCP session or access token) and the time since that client's previous turn in the
  workspace: a gap over `THREAD_GAP_S` starts a new thread. The time is the turn's `date` when
  it has one (an agent replaying a chat), else the time it arrived.

A text without a speaker is a note, not a turn, and gets no thread: a note added hours later is
never read as part of yesterday's chat. The inferred values are stored apart from what the agent
sent (`Inferred`), so the memory's text and metadata stay exactly as given.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

from zapomni_core.content.metadata import MemoryMetadata
from zapomni_core.validation import parse_iso8601

# Idle time that ends a conversation: the customary session timeout of web analytics (30 min). On
# LoCoMo any value under 28 hours splits dated turns into its sessions (decision 0023).
THREAD_GAP_S = 30 * 60

# One to three capitalised words (a name like "Dr. Mei-Ling O'Hara" too), then a colon and text.
_LEAD = re.compile(r"^\s*([A-Z][\w.'\-]*(?: [A-Z][\w.'\-]*){0,2}):\s+\S")
# Leading words that label a note rather than name a speaker.
_LABELS = frozenset(
    "note notes todo to-do re fwd fw subject summary update updated warning error info tip important reminder "
    "decision question answer q a title date source ps nb example step task idea fact status result "
    "problem solution fix bug issue edit edited http https file path url correction clarification addendum fyi "
    "btw news context background agenda conclusion takeaway takeaways caveat tldr hint heads-up followup follow-up "
    "address phone email e-mail password pin wifi price budget deadline location birthday name "
    # a record of the owner's a memory tool writes as `Key: value` ("Salary: £42,000")
    "salary income rent job occupation employer role age height weight diet allergies allergy hobbies hobby pets "
    "car laptop computer tablet timezone languages nickname pronouns goal goals medication medications".split()
)
# Characters on the lines after a `Name:` line that make it a heading rather than a turn. A chat turn is one
# message: LoCoMo's longest is 434 characters, and where one has a second line it holds at most a photo's
# caption (51 characters); the shortest abstract under a SciFact title that reads as `Name:` has 260.
HEADING_BODY_CHARS = 200


def leading_speaker(text: str) -> str | None:
    """`Caroline` for `Caroline: I went ...`; None when the text does not start with a name and a colon."""
    match = _LEAD.match(text)
    if match is None or match.group(1).lower().rstrip(".") in _LABELS:
        return None
    _first, _newline, body = text.strip().partition("\n")
    if len(body.strip()) >= HEADING_BODY_CHARS:  # a title over a paragraph: a document, not a turn
        return None
    return match.group(1)


@dataclass(frozen=True)
class Inferred:
    """What the server read into a memory that the agent did not send; stored apart from its metadata."""

    speaker: str | None = None
    thread: str | None = None

    def to_json(self) -> str | None:
        fields = {k: v for k, v in (("speaker", self.speaker), ("thread", self.thread)) if v is not None}
        return json.dumps(fields, sort_keys=True) if fields else None

    @classmethod
    def from_json(cls, text: str | None) -> Inferred:
        fields = json.loads(text) if text else {}
        return cls(speaker=fields.get("speaker"), thread=fields.get("thread"))


NOTHING = Inferred()


def inferred_speaker(text: str, metadata: MemoryMetadata | None) -> Inferred:
    """The speaker read from a `Name:` lead when the metadata gives none; no thread, which needs the client and
    the time (`ThreadTracker.infer`). What an import infers, and what an update reads again from an edited text."""
    return Inferred(speaker=None if metadata and metadata.speaker else leading_speaker(text))


def speaker_of(given: str | None, inferred: Inferred) -> str | None:
    """Who said a turn, as stored (`Memory.speaker`) and filtered on: the speaker the agent sent, else the one
    inferred from a `Name:` lead. The agent's wins, as for the thread and the reading context: it is what the
    agent knows, and the inferred one is only a reading of the text (decision 0025)."""
    return given or inferred.speaker


def stored_speaker(metadata_json: str, inferred_json: str | None) -> str | None:
    """`speaker_of` a memory as stored: its metadata JSON (what the agent sent) and its `inferred` JSON."""
    given = json.loads(metadata_json or "{}").get("speaker")
    return speaker_of(given if isinstance(given, str) else None, Inferred.from_json(inferred_json))


@dataclass
class _Open:
    thread: str
    last: float  # the time of the client's latest turn in it


class ThreadTracker:
    """Each client's open conversation per workspace, in this process's memory.

    Lost at a restart, which ends the conversations, as a new client session would.
    """

    def __init__(self, gap_s: float = THREAD_GAP_S) -> None:
        self._gap_s = gap_s
        self._open: dict[tuple[str, str], _Open] = {}

    def thread(self, client: str, workspace: str, when: float) -> str:
        """The thread of a turn `client` sent at `when`: its open one, or a new one after a gap."""
        key = (client, workspace)
        current = self._open.get(key)
        # A date earlier than the previous turn's by more than the gap is another conversation too.
        if current is None or abs(when - current.last) > self._gap_s:
            current = self._open[key] = _Open(thread=f"inferred-{uuid.uuid4().hex[:16]}", last=when)
        current.last = when
        return current.thread

    def infer(
        self, text: str, metadata: MemoryMetadata | None, client: str | None, workspace: str, now: float
    ) -> Inferred:
        """What to infer for a new memory: a speaker if none was given, a thread if a turn has none."""
        given_speaker = metadata.speaker if metadata else None
        speaker = inferred_speaker(text, metadata).speaker
        thread = None
        if client is not None and (given_speaker or speaker) and not (metadata and metadata.thread):
            date = metadata.date if metadata else None
            thread = self.thread(client, workspace, parse_iso8601(date).timestamp() if date else now)
        return Inferred(speaker=speaker, thread=thread)
