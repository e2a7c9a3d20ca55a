"""Entities and relations from a local LLM through Ollama's `/api/chat` with structured outputs.

One call per chunk, or per batch of small chunks packed up to a character budget; never a call per
entity. Small local models answer imperfectly, so the answer is read leniently (code fences,
trailing prose and cut-off JSON are tolerated) and then checked item by item against the chunk's
own text: whatever is repaired or dropped becomes a line in `ChunkGraph.problems`. A bad answer
costs that chunk its graph, never the job; only an Ollama that cannot be used at all (unreachable,
model not pulled, failing or too slow after the retries) raises `ExtractorUnavailable`.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import httpx
import structlog

from zapomni_core.errors import ExtractorUnavailable
from zapomni_core.graph import llm_schema
from zapomni_core.graph.extraction import ChunkGraph, Mention, Relation
from zapomni_core.graph.vocabulary import clean, entity_type_of, quote, relation_type_of

if TYPE_CHECKING:
    from zapomni_core.settings import Settings

log = structlog.get_logger(__name__)

# Budget for one call, in characters of chunk text (~375 tokens). The answer is several times longer
# than the text it describes (names, descriptions, evidence copied out), and a small model loses
# track of chunk numbers in long prompts, so batches stay small; a chunk over the budget goes alone.
DEFAULT_BATCH_CHARS = 1500
DEFAULT_MAX_BATCH = 6
# Ollama's default context (2048 or 4096 tokens, by version) silently drops the start of a longer
# prompt, i.e. the instructions. 8192 holds the prompt (~600 tokens), the largest chunk the chunker
# makes (512 tokens) and `num_predict`; the cap stops a model that loops from running to the timeout.
DEFAULT_NUM_CTX = 8192
DEFAULT_NUM_PREDICT = 4096

# A relation whose evidence had to be replaced is less certain than one the model quoted correctly.
SENTENCE_EVIDENCE_FACTOR = 0.8  # replaced by the sentence that names both entities
PASSAGE_EVIDENCE_FACTOR = 0.5  # no sentence names both: the passage from one mention to the other
DEFAULT_CONFIDENCE = 0.5  # when the model gave none (or an unreadable one)
_MAX_NAME_CHARS = 100  # longer "names" are sentences the model put in the wrong field
_MAX_REPAIR_TRIES = 200


# -- reading the answer ------------------------------------------------------------------------------


_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_FIRST_BRACKET = re.compile(r"[{\[]")
_LINE_BRACKET = re.compile(r"^[{\[]", re.M)


def parse_lenient(content: str) -> tuple[Any, bool]:
    """The JSON value in a model's answer, and whether it had to be repaired to get it.

    Tolerates prose around the value, code fences and trailing text (the first complete value
    wins), and an answer cut off mid-way (closed after its last complete item). Returns
    `(None, False)` when there is nothing JSON-like to recover.
    """
    sources = [content]
    fenced = _FENCE.search(content)
    if fenced:
        sources.insert(0, fenced.group(1))
    decoder = json.JSONDecoder()
    # Where the value may start: the first bracket, or a bracket opening a line (after prose that
    # used a bracket itself). Never an inner bracket: an inner object that happens to be complete
    # (one entity of a cut-off answer) is not the answer.
    starts: list[tuple[str, int]] = []
    for source in sources:
        first = _FIRST_BRACKET.search(source)
        positions = {first.start()} if first else set()
        positions.update(m.start() for m in _LINE_BRACKET.finditer(source))
        starts += [(source, position) for position in sorted(positions)[:10]]
    for source, start in starts:
        try:
            value, _end = decoder.raw_decode(source, start)
        except ValueError:
            continue
        if _answer_like(value):
            return value, False
    for source, start in starts[:5]:
        value = _close_truncated(source[start:])
        if value and _answer_like(value):  # a bare "{" closed to {} says nothing: not an answer
            return value, True
    return None, False


def _answer_like(value: Any) -> bool:
    """An object, or a list of objects: a "[1]" footnote in prose is not an answer."""
    return isinstance(value, dict) or (isinstance(value, list) and all(isinstance(v, dict) for v in value))


def _close_truncated(text: str) -> Any:
    """Close a cut-off JSON value after its last complete item.

    Walks the text tracking strings and open brackets, and notes every point where the prefix
    could end (after the outermost `{` or any `[`, before a comma between list items or top-level
    keys, after a closing bracket) with the brackets that would close it there; then tries those
    points from the last one back. A half-written item is dropped, never guessed at; an object
    holding a list that was cut (a chunk's relations) is closed after the list's last whole item.
    """
    stack: list[str] = []
    in_string = escaped = False
    cuts: list[tuple[int, str]] = []
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            if ch == "[" or len(stack) == 1:  # an empty list is fine; an empty item inside one is noise
                cuts.append((i + 1, "".join(reversed(stack))))
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                break  # a stray bracket: nothing after it can be trusted
            stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
            if not stack:
                break  # the outermost value is closed; what follows is not ours
        elif ch == "," and (stack[-1:] == ["]"] or len(stack) == 1):
            # Between the items of a list: an object is kept whole or not at all, never with the keys
            # it had before the break (an entity with no type, a relation with no object).
            cuts.append((i, "".join(reversed(stack))))
    for end, closers in reversed(cuts[-_MAX_REPAIR_TRIES:]):
        try:
            value = json.loads(text[:end] + closers)
        except ValueError:
            continue
        if isinstance(value, dict | list):
            return value
    return None


def _chunk_number(item: dict[str, Any]) -> int | None:
    for key in ("chunk", "chunk_id", "id", "number"):
        value = item.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and (digits := re.search(r"\d+", value)):
            return int(digits.group())
    return None


def _answer_items(value: Any, count: int) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """The answer's item for each chunk number 1..count (absent when the model gave none)."""
    notes: list[str] = []
    raw: list[Any]
    if isinstance(value, list):
        raw = value
    elif isinstance(value.get("chunks"), list):
        raw = value["chunks"]
    elif isinstance(value.get("chunks"), dict):
        raw = [{**v, "chunk": k} for k, v in value["chunks"].items() if isinstance(v, dict)]
    elif "entities" in value or "relations" in value:
        raw = [value]  # the model dropped the wrapper; usable when only one chunk was asked
    elif value and all(str(k).strip().isdigit() and isinstance(v, dict) for k, v in value.items()):
        raw = [{**v, "chunk": k} for k, v in value.items()]  # keyed by number instead of listed
    else:
        raw = []

    numbered: dict[int, dict[str, Any]] = {}
    unnumbered: list[dict[str, Any]] = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        number = _chunk_number(item)
        if number is None:
            unnumbered.append(item)
        elif not 1 <= number <= count:
            notes.append(f"the answer had an item for chunk number {number}, which was not asked; ignored")
        elif number in numbered:  # answered twice: keep both halves
            first = numbered[number]
            numbered[number] = {
                "entities": _as_list(first.get("entities")) + _as_list(item.get("entities")),
                "relations": _as_list(first.get("relations")) + _as_list(item.get("relations")),
            }
        else:
            numbered[number] = item
    missing = [n for n in range(1, count + 1) if n not in numbered]
    if unnumbered and len(unnumbered) == len(missing):
        # Items without numbers, exactly as many as the chunks left: the model listed them in order.
        numbered.update(zip(missing, unnumbered, strict=True))
    elif unnumbered:
        notes.append(f"{len(unnumbered)} answer item(s) without a chunk number could not be placed; ignored")
    return numbered, notes


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- checking an answer against the chunk ------------------------------------------------------------


def _words_pattern(words: str) -> re.Pattern[str] | None:
    """Matches `words` in a text regardless of case and of the whitespace between them, as whole words."""
    parts = words.split()
    if not parts:
        return None
    body = r"\s+".join(re.escape(part) for part in parts)
    before = r"(?<!\w)" if re.match(r"\w", parts[0]) else ""
    after = r"(?!\w)" if re.search(r"\w$", parts[-1]) else ""
    return re.compile(before + body + after, re.IGNORECASE)


def _confidence(value: Any) -> tuple[float, str | None]:
    if value is None or value == "":
        return DEFAULT_CONFIDENCE, f"confidence missing, {DEFAULT_CONFIDENCE} assumed"
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        return DEFAULT_CONFIDENCE, f"confidence {quote(str(value))} unreadable, {DEFAULT_CONFIDENCE} assumed"
    if not 0.0 <= number <= 1.0:
        clamped = min(1.0, max(0.0, number))
        return clamped, f"confidence {number:g} clamped to {clamped:g}"
    return number, None


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def _sentences(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _SENTENCE_BREAK.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


@dataclass
class _Entity:
    name: str  # as written in the text
    type: str
    confidence: float
    count: int
    pattern: re.Pattern[str]
    description: str | None = None


@dataclass
class _ChunkCheck:
    """Checks one chunk's answer against its text, collecting what it repairs and drops."""

    number: int  # 1-based position in the texts passed to `extract`
    text: str
    problems: list[str] = field(default_factory=list)
    entities: dict[str, _Entity] = field(default_factory=dict)  # by casefolded name
    relations: dict[tuple[str, str, str, str], Relation] = field(default_factory=dict)

    def note(self, line: str) -> None:
        self.problems.append(f"chunk {self.number}: {line}")

    def run(self, item: dict[str, Any]) -> ChunkGraph:
        raw_entities, raw_relations = item.get("entities", []), item.get("relations", [])
        if not isinstance(raw_entities, list):
            self.note("entities were not a list; ignored")
            raw_entities = []
        if not isinstance(raw_relations, list):
            self.note("relations were not a list; ignored")
            raw_relations = []
        for index, raw in enumerate(raw_entities, 1):
            self._entity(index, raw)
        for index, raw in enumerate(raw_relations, 1):
            self._relation(index, raw)
        return ChunkGraph(
            entities=tuple(
                Mention(name=e.name, type=e.type, confidence=e.confidence, count=e.count, description=e.description)
                for e in self.entities.values()
            ),
            relations=tuple(self.relations.values()),
            problems=tuple(self.problems),
        )

    def _find(self, name: str) -> tuple[str, int, re.Pattern[str]] | None:
        """The name as the text writes it, how often it does, and the pattern that finds it."""
        pattern = _words_pattern(name)
        if pattern is None:
            return None
        matches = list(pattern.finditer(self.text))
        if not matches:
            return None
        return " ".join(matches[0].group().split()), len(matches), pattern

    def _entity(self, index: int, raw: Any) -> None:
        if not isinstance(raw, dict):
            self.note(f"entity {index} dropped: not an object")
            return
        name = clean(raw.get("name"))
        if not name:
            self.note(f"entity {index} dropped: no name")
            return
        if len(name) > _MAX_NAME_CHARS:
            self.note(f"entity {quote(name)} dropped: too long to be a name")
            return
        found = self._find(name)
        if found is None:
            self.note(f"entity {quote(name)} dropped: not in the text")
            return
        written, count, pattern = found
        type_, type_note = entity_type_of(raw.get("type"))
        if type_note:
            self.note(f"entity {quote(written)}: {type_note}")
        confidence, confidence_note = _confidence(raw.get("confidence"))
        if confidence_note:
            self.note(f"entity {quote(written)}: {confidence_note}")
        description = clean(raw.get("description")) or None
        known = self.entities.get(written.casefold())
        if known is None:
            self.entities[written.casefold()] = _Entity(written, type_, confidence, count, pattern, description)
            return
        # Listed twice: one entity; a specific type beats OTHER, the higher confidence wins.
        if known.type == "OTHER":
            known.type = type_
        known.confidence = max(known.confidence, confidence)
        known.description = known.description or description

    def _endpoint(self, name: str, role: str, label: str, confidence: float) -> _Entity | None:
        known = self.entities.get(name.casefold())
        if known is not None:
            return known
        found = self._find(name) if len(name) <= _MAX_NAME_CHARS else None
        if found is None:
            self.note(f"relation {label} dropped: {role} is not in the text")
            return None
        written, count, pattern = found
        known = self.entities.get(written.casefold())
        if known is None:
            # The model related something it did not list; the text names it, so it is an entity.
            known = _Entity(written, "OTHER", confidence, count, pattern)
            self.entities[written.casefold()] = known
            self.note(f"relation {label}: {role} {quote(written)} was not among the entities; added as OTHER")
        return known

    def _relation(self, index: int, raw: Any) -> None:
        if not isinstance(raw, dict):
            self.note(f"relation {index} dropped: not an object")
            return
        subject_name, object_name = clean(raw.get("subject")), clean(raw.get("object"))
        label = f"{quote(subject_name)}→{quote(object_name)}"
        if not subject_name or not object_name:
            missing = " and ".join(r for r, n in (("subject", subject_name), ("object", object_name)) if not n)
            named = f" ({label})" if subject_name or object_name else ""
            self.note(f"relation {index}{named} dropped: no {missing}")
            return
        confidence, confidence_note = _confidence(raw.get("confidence"))
        subject = self._endpoint(subject_name, "subject", label, confidence)
        object_ = self._endpoint(object_name, "object", label, confidence) if subject else None
        if subject is None or object_ is None:
            return
        if subject is object_:
            self.note(f"relation {label} dropped: subject and object are the same entity")
            return
        if confidence_note:
            self.note(f"relation {label}: {confidence_note}")
        type_, predicate, type_note = relation_type_of(raw.get("type"), clean(raw.get("predicate")))
        if type_note:
            self.note(f"relation {label}: {type_note}")
        evidence, factor, evidence_note = self._evidence(clean(raw.get("evidence")), subject, object_)
        if evidence_note:
            self.note(f"relation {label}: {evidence_note}")
        relation = Relation(
            subject=subject.name,
            object=object_.name,
            type=type_,
            predicate=predicate,
            strength=round(confidence * factor, 4),
            evidence=evidence,
            method="llm",
        )
        key = (relation.subject.casefold(), type_, relation.object.casefold(), predicate.casefold())
        earlier = self.relations.get(key)
        if earlier is None or earlier.strength < relation.strength:
            self.relations[key] = relation

    def _evidence(self, quoted: str, subject: _Entity, object_: _Entity) -> tuple[str, float, str | None]:
        """The supporting span of the text, and how much of the confidence survives finding it."""
        quoted = quoted.strip("\"'“”‘’ ").removesuffix("...").removesuffix("…").strip()
        if quoted:
            if quoted in self.text:
                return quoted, 1.0, None
            pattern = _words_pattern(quoted)
            match = pattern.search(self.text) if pattern else None
            if match:  # the same words, with other spacing or case: quote the text itself
                return match.group(), 1.0, None
        problem = "evidence not in the text" if quoted else "evidence missing"
        sentences = _sentences(self.text)
        for start, end in sentences:
            sentence = self.text[start:end]
            if subject.pattern.search(sentence) and object_.pattern.search(sentence):
                factor = SENTENCE_EVIDENCE_FACTOR
                return sentence.strip(), factor, f"{problem}; replaced by the sentence naming both, strength ×{factor}"
        # No single sentence names both ("Maria joined Acme. She ..."): keep the passage between them.
        # Both names are in the text (entities are only kept when it names them).
        mentions = [m for m in (subject.pattern.search(self.text), object_.pattern.search(self.text)) if m]
        first = min((m.start() for m in mentions), default=0)
        last = max((m.end() for m in mentions), default=len(self.text))
        start = max((a for a, _ in sentences if a <= first), default=0)
        end = min((b for _, b in sentences if b >= last), default=len(self.text))
        factor = PASSAGE_EVIDENCE_FACTOR
        return (
            self.text[start:end].strip(),
            factor,
            f"{problem} and no sentence names both; replaced by the passage from one to the other, strength ×{factor}",
        )


# -- the extractor ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reply:
    content: str
    done_reason: str | None


class OllamaExtractor:
    """Extraction with a local LLM through Ollama. Built once at start-up; safe to call concurrently."""

    def __init__(
        self,
        *,
        host: str,
        model: str,
        timeout_s: float = 120.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        http: httpx.AsyncClient | None = None,
        batch_chars: int = DEFAULT_BATCH_CHARS,
        max_batch: int = DEFAULT_MAX_BATCH,
        num_ctx: int = DEFAULT_NUM_CTX,
        num_predict: int = DEFAULT_NUM_PREDICT,
    ) -> None:
        self._host = host.rstrip("/")
        self._model = model
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff_s = backoff_s
        self._batch_chars = batch_chars
        self._max_batch = max(1, max_batch)
        self._options = {"temperature": 0, "num_ctx": num_ctx, "num_predict": num_predict}
        # The per-request httpx timeout covers each network step; the overall deadline is
        # enforced around the whole call (Ollama sends nothing until the answer is complete).
        self._request_timeout = httpx.Timeout(timeout_s, connect=min(5.0, timeout_s))
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=self._request_timeout)
        self.name = f"ollama:{model}"

    @classmethod
    def from_settings(cls, settings: Settings, *, http: httpx.AsyncClient | None = None) -> OllamaExtractor:
        return cls(
            host=settings.ollama_host,
            model=settings.llm_model,
            timeout_s=settings.llm_timeout_s,
            retries=settings.llm_retries,
            http=http,
        )

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def extract(self, texts: Sequence[str]) -> list[ChunkGraph]:
        graphs: dict[int, ChunkGraph] = {i: ChunkGraph() for i, text in enumerate(texts) if not text.strip()}
        for batch in self._batches([i for i in range(len(texts)) if i not in graphs], texts):
            batch_graphs, _unanswered = await self._extract_batch(texts, batch, follow_up=True)
            graphs.update(batch_graphs)
        return [graphs[i] for i in range(len(texts))]

    def _batches(self, indices: list[int], texts: Sequence[str]) -> list[list[int]]:
        """Consecutive chunks packed greedily up to the character budget; a larger chunk goes alone."""
        batches: list[list[int]] = []
        current: list[int] = []
        size = 0
        for i in indices:
            length = len(texts[i])
            if current and (size + length > self._batch_chars or len(current) >= self._max_batch):
                batches.append(current)
                current, size = [], 0
            current.append(i)
            size += length
        if current:
            batches.append(current)
        return batches

    async def _extract_batch(
        self, texts: Sequence[str], indices: list[int], *, follow_up: bool
    ) -> tuple[dict[int, ChunkGraph], set[int]]:
        """A graph for every chunk of the batch, and the chunks the model's answer had no item for."""
        chunk_texts = [texts[i] for i in indices]
        reply = await self._chat(llm_schema.messages(chunk_texts), len(indices))
        value, repaired = parse_lenient(reply.content)
        if value is None:
            # Temperature 0 would repeat the same answer: the retry asks again with a reminder.
            log.info("llm.answer_not_json", model=self._model, chunks=len(indices), chars=len(reply.content))
            reply = await self._chat(llm_schema.messages(chunk_texts, reminder=True), len(indices))
            value, repaired = parse_lenient(reply.content)
        if value is None:
            line = "no graph: the model's answer was not JSON, twice"
            return {i: ChunkGraph(problems=(f"chunk {i + 1}: {line}",)) for i in indices}, set(indices)

        items, notes = _answer_items(value, len(indices))
        graphs: dict[int, ChunkGraph] = {}
        unanswered: set[int] = set()
        for pos, i in enumerate(indices, 1):
            if pos in items:
                graphs[i] = _ChunkCheck(i + 1, texts[i]).run(items[pos])
            else:
                unanswered.add(i)
                graphs[i] = ChunkGraph(problems=(f"chunk {i + 1}: no graph: the model's answer had no item for it",))
        incomplete = set(unanswered)
        if repaired and len(unanswered) < len(indices):
            # The break comes after everything kept: the last answered chunk may have lost items.
            cut = max(set(indices) - unanswered)
            why = "hit the output limit (num_predict)" if reply.done_reason == "length" else "was malformed"
            line = f"chunk {cut + 1}: the model's answer {why}; kept the items before the break"
            graphs[cut] = _with_problems(graphs[cut], line)
            incomplete.add(cut)

        if incomplete and follow_up and len(indices) > 1:
            # Usually the answer ran out of tokens, or a small model lost count: ask once more for those
            # chunks, together when they are fewer than before, else one by one.
            log.info("llm.follow_up", model=self._model, asked=len(indices), again=len(incomplete))
            again = sorted(incomplete)
            for group in [again] if len(again) < len(indices) else [[i] for i in again]:
                retried, still = await self._extract_batch(texts, group, follow_up=False)
                for i in group:
                    # The second answer wins, unless it has nothing where the first had part of a graph.
                    if i not in still or i in unanswered:
                        graphs[i] = retried[i]
                    if i not in still:
                        unanswered.discard(i)
        if notes:
            first = indices[0]
            graphs[first] = _with_problems(graphs[first], *(f"chunk {first + 1}: {note}" for note in notes))
        return graphs, unanswered

    async def _chat(self, messages: list[dict[str, str]], chunks: int) -> _Reply:
        payload = {
            "model": self._model,
            "messages": messages,
            "stream": False,
            "format": llm_schema.EXTRACTION_SCHEMA,
            "options": self._options,
        }
        where = f"Ollama at OLLAMA_HOST={self._host} (LLM_MODEL={self._model})"
        failure = ""
        for attempt in range(self._retries + 1):
            started = time.perf_counter()
            try:
                async with asyncio.timeout(self._timeout_s):
                    response = await self._http.post(
                        f"{self._host}/api/chat", json=payload, timeout=self._request_timeout
                    )
            except httpx.ConnectTimeout:
                failure = f"cannot reach {where} (ConnectTimeout)"
            except (TimeoutError, httpx.TimeoutException):
                failure = (
                    f"{where} did not answer within {self._timeout_s:g} s; "
                    "raise ZAPOMNI_LLM_TIMEOUT_S or use a smaller model"
                )
            except httpx.TransportError as exc:
                failure = f"cannot reach {where} ({type(exc).__name__})"
            else:
                body = _json_body(response)
                log.debug(
                    "llm.call",
                    model=self._model,
                    chunks=chunks,
                    attempt=attempt + 1,
                    status=response.status_code,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    prompt_tokens=body.get("prompt_eval_count"),
                    answer_tokens=body.get("eval_count"),
                    done_reason=body.get("done_reason"),
                )
                error = str(body.get("error") or "")[:200]
                if response.status_code == 404:
                    if "not found" in error and "model" in error:
                        raise ExtractorUnavailable(
                            f"{where} does not have the model {self._model!r}: run `ollama pull {self._model}`",
                            hosts=(self._host,),
                        )
                    raise ExtractorUnavailable(
                        f"{where} has no /api/chat (HTTP 404): is OLLAMA_HOST an Ollama server?", hosts=(self._host,)
                    )
                if 400 <= response.status_code < 500:
                    reason = f"HTTP {response.status_code}: {error or 'no reason given'}"
                    raise ExtractorUnavailable(
                        f"{where} refused the extraction request ({reason}); "
                        "structured outputs need Ollama 0.5 or later",
                        hosts=(self._host,),
                    )
                if response.status_code < 400:
                    message = body.get("message")
                    content = message.get("content") if isinstance(message, dict) else None
                    # A body that is not Ollama's shape is a bad answer (retried once), not an outage.
                    return _Reply(content if isinstance(content, str) else "", body.get("done_reason"))
                failure = f"{where} answered HTTP {response.status_code}" + (f" ({error})" if error else "")
            if attempt < self._retries:
                delay = self._backoff_s * 2**attempt
                log.warning("llm.retry", attempt=attempt + 1, delay_s=delay, reason=failure)
                await asyncio.sleep(delay)
        raise ExtractorUnavailable(f"{failure} (gave up after {self._retries + 1} attempts)", hosts=(self._host,))


def _with_problems(graph: ChunkGraph, *lines: str) -> ChunkGraph:
    return replace(graph, problems=(*graph.problems, *lines))


def _json_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
