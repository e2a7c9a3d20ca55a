"""Text → index terms for the keyword leg: lowercase words, English stopwords out, Snowball stems.

The same analysis runs when the keyword index reads a chunk (`KeywordIndex`) and when a query
arrives, so both sides agree on what a "word" is.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import Stemmer

# Lucene's classic English stopword set (the one BM25 baselines on BEIR use), plus the pronouns,
# auxiliaries and question words agents put in their queries ("when do we ...?"): on their own
# they would let the keyword leg rank any chunk containing "when" above a real answer.
STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with i me my we our us you your he him his she her its them what which "
    "who whom whose when where why how do does did have has had been being am were from so than too very "
    "can could should would just about".split()
)
# Words of two or more letters/digits/underscores: keeps ERR_CONN_RESET, E1053, 7231 whole.
_WORD = re.compile(r"\b\w\w+\b", re.UNICODE)
MAX_QUERY_TERMS = 64


@dataclass(frozen=True)
class TermCounts:
    terms: list[str]
    counts: list[int]
    length: int  # tokens after stopword removal: the document length BM25 normalises by


class Analyzer:
    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("english")

    def terms(self, text: str) -> list[str]:
        words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
        stems: list[str] = self._stemmer.stemWords(words)  # PyStemmer ships no types
        return stems

    def count(self, text: str) -> TermCounts:
        terms = self.terms(text)
        counts = Counter(terms)
        return TermCounts(terms=list(counts), counts=list(counts.values()), length=len(terms))

    def query_terms(self, text: str) -> list[str]:
        """Distinct terms of a query, in order, capped so a pasted essay stays cheap."""
        return list(dict.fromkeys(self.terms(text)))[:MAX_QUERY_TERMS]
