"""Chunking: token bounds, whole sentences, overlap, preferred boundaries — with the real tokenizer."""

from __future__ import annotations

import itertools
import re

import pytest

from zapomni_core.content.chunking import Chunker
from zapomni_core.embedders.tokens import TokenCounter

COUNT = TokenCounter()


def sentences(n: int, start: int = 0) -> list[str]:
    return [
        f"Sentence number {i} talks about topic {i * 7 % 13} in a few plain words." for i in range(start, start + n)
    ]


def test_short_text_is_one_chunk_without_surrounding_whitespace() -> None:
    chunker = Chunker(COUNT, max_tokens=256, overlap_tokens=38)
    assert chunker.split("  Hello there, world.\n\n") == ["Hello there, world."]


def test_every_chunk_fits_the_token_budget() -> None:
    chunker = Chunker(COUNT, max_tokens=64, overlap_tokens=9)
    text = "\n\n".join(" ".join(sentences(9, p * 9)) for p in range(6))
    chunks = chunker.split(text)
    assert len(chunks) > 4
    assert max(COUNT(chunks)) <= 64


def test_sentences_are_never_cut_when_they_fit() -> None:
    chunker = Chunker(COUNT, max_tokens=64, overlap_tokens=9)
    parts = sentences(40)
    chunks = chunker.split(" ".join(parts))
    for chunk in chunks:
        pieces = re.split(r"(?<=\.)\s+", chunk)
        assert all(piece in parts for piece in pieces), chunk
    covered = {piece for chunk in chunks for piece in re.split(r"(?<=\.)\s+", chunk)}
    assert covered == set(parts)


def test_consecutive_chunks_overlap_by_at_most_the_budget() -> None:
    chunker = Chunker(COUNT, max_tokens=64, overlap_tokens=20)
    chunks = chunker.split(" ".join(sentences(30)))
    assert len(chunks) >= 3
    for previous, following in itertools.pairwise(chunks):
        last_sentence = re.split(r"(?<=\.)\s+", previous)[-1]
        assert following.startswith(last_sentence), (previous, following)
        assert COUNT([last_sentence])[0] <= 20


def test_no_overlap_when_budget_is_zero() -> None:
    chunker = Chunker(COUNT, max_tokens=64, overlap_tokens=0)
    parts = sentences(30)
    chunks = chunker.split(" ".join(parts))
    joined = [s for chunk in chunks for s in re.split(r"(?<=\.)\s+", chunk)]
    assert joined == parts


def test_a_full_chunk_closes_at_a_paragraph_break() -> None:
    chunker = Chunker(COUNT, max_tokens=100, overlap_tokens=0)
    first = " ".join(sentences(5))  # about 80 tokens: over the soft-break fill
    second = " ".join(sentences(5, 100))
    chunks = chunker.split(first + "\n\n" + second)
    assert chunks[0] == first
    assert chunks[1] == second


def test_unbroken_text_longer_than_a_chunk_is_split_by_characters() -> None:
    chunker = Chunker(COUNT, max_tokens=32, overlap_tokens=0)
    blob = "x" * 1000
    chunks = chunker.split(blob)
    assert len(chunks) > 1
    assert "".join(chunks) == blob
    assert max(len(c) for c in chunks) <= chunker.max_chars


def test_a_long_sentence_is_split_between_words() -> None:
    chunker = Chunker(COUNT, max_tokens=32, overlap_tokens=0)
    words = [f"w{i}" for i in range(200)]
    chunks = chunker.split(" ".join(words))
    assert [w for c in chunks for w in c.split()] == words


@pytest.mark.parametrize(("max_tokens", "overlap"), [(4, 0), (64, 32), (64, -1)])
def test_rejects_impossible_settings(max_tokens: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        Chunker(COUNT, max_tokens=max_tokens, overlap_tokens=overlap)
