"""Turning free text into a safe query for FalkorDB's full-text (RediSearch) index.

RediSearch has a query language (`-` negates, `|` ors, `@field:`, `*`, `%fuzzy%`, quotes,
parentheses ...), so raw user text can change the meaning of a query or fail to parse. We keep
word tokens only, drop stopwords (they would match nearly every chunk), and OR the rest: a
keyword leg wants recall, and ranking sorts out the rest.
"""

from __future__ import annotations

import re

# Lucene's English stopword set plus a few very common words; the index is created with the
# same list so queries and documents agree.
STOPWORDS: frozenset[str] = frozenset(
    (
        "a an and are as at be but by for if in into is it no not of on or such that the their then "
        "there these they this to was will with i me my we our you your he him his she her its them "
        "what which who whom do does did have has had been being am were from so than too very can "
        "just should would could"
    ).split()
)
_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 64


def query_terms(text: str) -> list[str]:
    """Distinct lowercase word tokens of `text`, stopwords removed, in order of appearance."""
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(text.lower()):
        if token not in STOPWORDS and token not in seen:
            seen[token] = None
    return list(seen)[:MAX_TERMS]


def fulltext_query(text: str) -> str | None:
    """An OR-query over the terms of `text`, or None when nothing searchable is left.

    Tokens come from `\\w+`, so they hold letters, digits and `_` only; `_` is escaped because
    RediSearch treats it as a separator otherwise, which would split identifiers like
    ERR_CONN_RESET into three unrelated words.
    """
    terms = [term.replace("_", "\\_") for term in query_terms(text)]
    return " | ".join(terms) if terms else None
