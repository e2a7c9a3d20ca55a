"""How the document lane groups texts into inference batches (a pure function of their lengths)."""

from __future__ import annotations

import random

from zapomni_core.embedders.batching import plan_batches


def plan(lengths: list[int], max_tokens: int = 2048, max_count: int = 64, min_fill: float = 0.8) -> list[list[int]]:
    return plan_batches(lengths, max_tokens=max_tokens, max_count=max_count, min_fill=min_fill)


def test_every_text_lands_in_exactly_one_batch_longest_first() -> None:
    lengths = [random.Random(7).randint(3, 256) for _ in range(300)]
    batches = plan(lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(300))
    firsts = [lengths[batch[0]] for batch in batches]
    assert firsts == sorted(firsts, reverse=True)
    for batch in batches:
        assert lengths[batch[0]] == max(lengths[i] for i in batch), "a batch is padded to its first text"


def test_a_batch_holds_at_most_the_token_budget_of_padded_tokens() -> None:
    batches = plan([256] * 20)
    assert [len(b) for b in batches] == [8, 8, 4]


def test_a_short_text_does_not_ride_in_a_long_batch() -> None:
    # A 256-token chunk and its 60-token tail: padded together the tail would cost 256 tokens.
    assert plan([256, 60]) == [[0], [1]]
    assert plan([256, 230, 60, 55]) == [[0, 1], [2, 3]]


def test_the_count_cap_holds_for_short_texts() -> None:
    assert [len(b) for b in plan([10] * 100, max_count=64)] == [64, 36]


def test_equal_lengths_keep_their_input_order() -> None:
    assert plan([5, 9, 5, 9, 5]) == [[1, 3], [0, 2, 4]]


def test_nothing_to_plan() -> None:
    assert plan([]) == []
