"""User text → a safe OR-query for FalkorDB's full-text index (checked against FalkorDB in integration)."""

from __future__ import annotations

import pytest

from zapomni_db.fulltext import MAX_TERMS, fulltext_query, query_terms


def test_terms_are_lowercase_distinct_and_free_of_stopwords() -> None:
    assert query_terms("The Cat and the HAT, the cat!") == ["cat", "hat"]


def test_terms_are_or_ed_and_underscores_escaped() -> None:
    assert fulltext_query("ERR_CONN_RESET on db-01") == "err\\_conn\\_reset | db | 01"


@pytest.mark.parametrize("text", ["", "   ", "the and of", "%%% *** ---", "😀🎉", "(|)@:~"])
def test_nothing_searchable_gives_none(text: str) -> None:
    assert fulltext_query(text) is None


@pytest.mark.parametrize(
    "text",
    ['"quoted" @field:x', "reset -peer", "a|b", "hello) (world", "%fuzzy%", "conn*", "{tag} [1 TO 5]", "über straße"],
)
def test_operators_never_reach_the_query(text: str) -> None:
    query = fulltext_query(text)
    assert query is not None
    for operator in '"@:-()*%{}[]~':
        assert operator not in query.replace("\\_", "")
    assert all(part.strip() for part in query.split("|"))


def test_very_long_queries_are_capped() -> None:
    assert len(query_terms(" ".join(f"word{i}" for i in range(500)))) == MAX_TERMS
