"""Token-bounded chunking that keeps sentences whole.

The text is cut into units at the finest level needed (paragraph → line → sentence → word →
characters), each unit remembering how strong the boundary before it is. Units are then packed
greedily into chunks of at most `max_tokens`, preferring to close a chunk at a paragraph or line
break once it is reasonably full, and each chunk starts with the last ~`overlap_tokens` of the
previous one so a fact split across a boundary is still found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TokenCounter = Callable[[Sequence[str]], list[int]]

PARAGRAPH, LINE, SENTENCE, WORD, CHARACTER = 4, 3, 2, 1, 0
_SPLITTERS: list[tuple[int, re.Pattern[str]]] = [
    (PARAGRAPH, re.compile(r"(\n[ \t]*\n\s*)")),
    (LINE, re.compile(r"(\n)")),
    (SENTENCE, re.compile(r"(?<=[.!?;。！？])(\s+)")),
    (WORD, re.compile(r"(\s+)")),
]
# A chunk this full may close early at a line or paragraph break instead of mid-paragraph.
_SOFT_BREAK_FILL = 0.75
# WordPiece reads any "word" over 100 characters as one [UNK] token, so a base64 blob would pass
# a token budget whole; a character cap (English averages ~4.5 characters a token) keeps it honest.
_MAX_CHARS_PER_TOKEN = 6


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    boundary: int  # strength of the break before this unit


def _split_keep(text: str, pattern: re.Pattern[str]) -> list[str]:
    """Split after each separator match, keeping separators attached, so "".join(parts) == text."""
    parts = pattern.split(text)
    out = ["".join(parts[i : i + 2]) for i in range(0, len(parts), 2)]
    return [p for p in out if p]


class Chunker:
    def __init__(self, count_tokens: TokenCounter, *, max_tokens: int = 256, overlap_tokens: int = 38) -> None:
        if max_tokens < 8:
            raise ValueError("max_tokens must be at least 8")
        if not 0 <= overlap_tokens < max_tokens // 2:
            raise ValueError("overlap_tokens must be below half of max_tokens")
        self._count = count_tokens
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.max_chars = max_tokens * _MAX_CHARS_PER_TOKEN

    def fits(self, text: str) -> bool:
        """Whether `text` makes one chunk as it is (a whole function, a short section)."""
        return len(text) <= self.max_chars and self._count([text])[0] <= self.max_tokens

    def split(self, text: str) -> list[str]:
        units = self._units(text, level=0, boundary=PARAGRAPH)
        return [c for c in self._pack(units) if c]

    def _units(self, text: str, level: int, boundary: int) -> list[_Unit]:
        if level == len(_SPLITTERS):
            return self._character_units(text, boundary)
        strength, pattern = _SPLITTERS[level]
        parts = _split_keep(text, pattern)
        counts = self._count(parts)
        units: list[_Unit] = []
        for i, (part, tokens) in enumerate(zip(parts, counts, strict=True)):
            first_boundary = boundary if i == 0 else strength
            if tokens <= self.max_tokens and len(part) <= self.max_chars:
                units.append(_Unit(part, tokens, first_boundary))
            else:
                units.extend(self._units(part, level + 1, first_boundary))
        return units

    def _character_units(self, text: str, boundary: int) -> list[_Unit]:
        """Last resort for a single 'word' longer than a chunk (a hash, base64, minified code)."""
        units: list[_Unit] = []
        size = max(1, self.max_tokens)  # one token covers at least one character
        for start in range(0, len(text), size):
            piece = text[start : start + size]
            units.append(_Unit(piece, self._count([piece])[0], boundary if start == 0 else CHARACTER))
        return units

    def _pack(self, units: list[_Unit]) -> list[str]:
        chunks: list[str] = []
        current: list[_Unit] = []
        tokens = chars = 0
        fresh = 0  # units in `current` that no earlier chunk has emitted
        for unit in units:
            overflow = tokens + unit.tokens > self.max_tokens or chars + len(unit.text) > self.max_chars
            soft_break = unit.boundary >= LINE and tokens >= _SOFT_BREAK_FILL * self.max_tokens
            if current and fresh and (overflow or soft_break):
                chunks.append("".join(u.text for u in current).strip())
                current = self._overlap_tail(current, room=self.max_tokens - unit.tokens)
                tokens = sum(u.tokens for u in current)
                chars = sum(len(u.text) for u in current)
                fresh = 0
            current.append(unit)
            tokens += unit.tokens
            chars += len(unit.text)
            fresh += 1
        if fresh:
            chunks.append("".join(u.text for u in current).strip())
        return chunks

    def _overlap_tail(self, units: list[_Unit], room: int) -> list[_Unit]:
        """The trailing units worth at most `overlap_tokens` that still leave room for the next unit."""
        budget = min(self.overlap_tokens, room)
        tail: list[_Unit] = []
        used = 0
        for unit in reversed(units):
            if used + unit.tokens > budget:
                break
            tail.insert(0, unit)
            used += unit.tokens
        return tail
