"""Entity identity for the knowledge graph: one real-world thing, one node, however it is written.

Matching runs from the surest and cheapest test to the loosest (decision 0012, "Merging and
deduplication"):

1. The key. `entity_key(name, type)` is the canonical name plus the type family; the database MERGEs
   entities on it, so two mentions with one key can never become two nodes ("Apple Inc." = "APPLE").
2. The folded form: accents, separators and spacing removed ("María García" = "Maria Garcia",
   "GPT-4" = "GPT4", "Node.js" = "NodeJS"), looked up among every name and alias already known.
3. One rule for people: a bare surname joins the one known person it can be ("Obama").
4. Fuzzy: a rapidfuzz score at or above the threshold among entities of the same family, behind
   guards for the pairs a string score gets wrong: versions and single letters ("GPT-4o",
   "Vitamin D"), short names ("Jav"), added words ("Microsoft Azure"), opposed prefixes
   ("unsupervised learning").

Everything here is pure: the database layer loads a workspace's entities into an `EntityIndex`,
`merge_chunk_entities` turns each chunk's `ChunkGraph` into rows to write, and `superseding` says which
dated facts a new one replaces.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from rapidfuzz import fuzz, process

from zapomni_core.graph.extraction import ENTITY_TYPES, EXCLUSIVE_RELATIONS, ChunkGraph, Mention
from zapomni_db import KnownEntity, RelationFact, RelationRow

# ---------------------------------------------------------------------------------------------------
# Canonical names and keys

# Types that may name the same thing share a family; the key carries the family, not the type, so an
# extractor calling "the Beatles" ORG in one chunk and GROUP in the next still makes one node.
# - ORG + GROUP: bands, teams, parties and movements are typed either way by spaCy (NORP) and LLMs.
# - PRODUCT + LANGUAGE: "Python" the language and "Python" the product are one thing; a natural
#   language never shares a name with a product in practice.
# - CONCEPT + OTHER: both are catch-alls for noun phrases ("climate change").
# - Everything else stands alone: PERSON never merges with PLACE ("Jordan", "Georgia"), PLACE never
#   with LANGUAGE ("Java"), IDENTIFIER never with PRODUCT (`requests` the module name lives in the
#   code's namespace, where near-identical names are different symbols).
TYPE_FAMILIES: dict[str, str] = {
    "PERSON": "PERSON",
    "ORG": "ORG",
    "GROUP": "ORG",
    "PLACE": "PLACE",
    "PRODUCT": "PRODUCT",
    "LANGUAGE": "PRODUCT",
    "EVENT": "EVENT",
    "WORK_OF_ART": "WORK_OF_ART",
    "DATE": "DATE",
    "LAW": "LAW",
    "CONCEPT": "CONCEPT",
    "OTHER": "CONCEPT",
    "IDENTIFIER": "IDENTIFIER",
}
assert set(TYPE_FAMILIES) == set(ENTITY_TYPES), "every entity type needs a family"
FAMILIES: frozenset[str] = frozenset(TYPE_FAMILIES.values())

# Families where a fuzzy score may merge. Not PERSON: one letter makes another person (Maria/Mario,
# Daniel/Daniela, Smith/Smyth). Not DATE ("May 2023"/"May 2024") nor IDENTIFIER (`get_user`/`get_users`).
FUZZY_FAMILIES: frozenset[str] = frozenset({"ORG", "PLACE", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "CONCEPT"})

# Dropped from the end of an ORG's name (compared without dots): "Apple, Inc." is Apple.
COMPANY_SUFFIXES: frozenset[str] = frozenset(
    {"inc", "incorporated", "ltd", "limited", "llc", "llp", "corp", "corporation", "gmbh", "plc", "co", "ag", "sa",
     "nv", "bv", "ab", "oyj", "pty"}
)  # fmt: skip
# Dropped from the start of a PERSON's name: "Dr. Jane Goodall" is Jane Goodall.
HONORIFICS: frozenset[str] = frozenset({"mr", "mrs", "ms", "mx", "dr", "prof", "sir", "dame"})
_ARTICLES = frozenset({"the"})  # not "a": "A Tribe Called Quest", "A4"

# Typographic variants NFKC leaves alone: curly quotes and the dash family.
_CHARACTERS = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"',
     "\u201e": '"', "\u00ab": '"', "\u00bb": '"', "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-",
     "\u2014": "-", "\u2015": "-", "\u2212": "-"}
)  # fmt: skip
_QUOTES = "'\"`"
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
# Sentence punctuation glued to a name ("... from Redis."); '+' and '#' are kept: C++ and C# are names.
_TRAILING = ".,;:!?&"
_ACRONYM = re.compile(r"(?:[^\W_]\.)+[^\W_]")  # u.s.a, n.a.s.a (the last dot is already gone)


def type_family(entity_type: str) -> str:
    """The family of an entity type (see TYPE_FAMILIES); raises ValueError for an unknown type."""
    try:
        return TYPE_FAMILIES[entity_type]
    except KeyError:
        raise ValueError(f"entity type {entity_type!r} is not one of {', '.join(ENTITY_TYPES)}") from None


def canonical(name: str, entity_type: str | None = None) -> str:
    """The normalised name used for exact identity.

    NFKC, casefold, whitespace collapsed, surrounding quotes, brackets and sentence punctuation and a
    possessive 's stripped, a leading "the" dropped, dotted acronyms closed up ("U.S." -> "us"); company
    suffixes go for the ORG family only (ORG, GROUP), honorifics for PERSON only. IDENTIFIERs keep their
    case and inner punctuation (`Config` and `config` are different symbols): only quotes and a trailing
    , ; or . go. Returns "" for a name with nothing left. Idempotent: canonical(canonical(x)) == canonical(x).
    """
    text = " ".join(unicodedata.normalize("NFKC", name).translate(_CHARACTERS).split())
    if entity_type == "IDENTIFIER":
        return _strip_identifier(text)
    text = text.casefold()
    before = None
    while text != before:
        before = text
        text = _strip_surrounding(text)
        text = text.removesuffix("'s")
        text = _drop_first_word(text, _ARTICLES)
        if entity_type == "PERSON":
            text = _drop_first_word(text, HONORIFICS)
        elif entity_type in ("ORG", "GROUP"):  # the ORG family: one key for "Foo Inc." typed either way
            text = _drop_company_suffix(text)
    if _ACRONYM.fullmatch(text):
        text = text.replace(".", "")
    return text


def entity_key(name: str, entity_type: str) -> str:
    """canonical + "|" + family: the database MERGEs entities on this key."""
    family = type_family(entity_type)
    canon = canonical(name, entity_type)
    if not canon:
        raise ValueError(f"entity name {name!r} is empty once normalised")
    return f"{canon}|{family}"


def _strip_identifier(text: str) -> str:
    before = None
    while text != before:
        before = text
        text = text.strip(_QUOTES + " ").rstrip(",;")
        if text.endswith(".") and not text.endswith(".."):
            text = text[:-1]
    return text


def _strip_surrounding(text: str) -> str:
    text = text.strip(_QUOTES + " •*").rstrip(_TRAILING + " ")
    if len(text) >= 2 and text[0] in _BRACKETS and _closing_index(text) == len(text) - 1:
        return text[1:-1]
    for opening, closing in _BRACKETS.items():
        # An unmatched bracket at an end is debris from the sentence; a matched one ("foo()") stays.
        if text.endswith(closing) and text.count(closing) > text.count(opening):
            text = text[:-1]
        if text.startswith(opening) and text.count(opening) > text.count(closing):
            text = text[1:]
    return text


def _closing_index(text: str) -> int:
    """Where the bracket opening `text` closes, or -1."""
    opening, closing, depth = text[0], _BRACKETS[text[0]], 0
    for index, char in enumerate(text):
        depth += (char == opening) - (char == closing)
        if depth == 0:
            return index
    return -1


def _drop_first_word(text: str, words: frozenset[str]) -> str:
    head, _, rest = text.partition(" ")
    return rest if rest and head.rstrip(".") in words else text


def _drop_company_suffix(text: str) -> str:
    head, _, last = text.rpartition(" ")
    if head and last.replace(".", "") in COMPANY_SUFFIXES:
        return head.rstrip(" ,&")
    return text


# ---------------------------------------------------------------------------------------------------
# Folded forms and the guards of fuzzy matching

# Letters NFKD does not decompose into a base letter and a mark.
_TRANSLITERATION = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i"})
_SEPARATORS = re.compile(r"[\s\-_./,:;'\"()\[\]{}|\\]+")
_NUMBER = re.compile(r"\d+[^\W\d_]*")  # 4, 4o, 70b, 3 (of 3.11), 11
_ROMAN = re.compile(r"x{0,3}(?:ix|iv|v?i{0,3})")  # i .. xxxix
# Names shorter than this (folded, without spaces) never fuzzy-merge: "Jav" is not "Java", "IBN" not "IBM".
MIN_FUZZY_LENGTH = 5
# Prefix pairs that turn a word into its opposite or its counterpart; a fuzzy score sees one small edit.
_OPPOSED_PREFIXES: tuple[tuple[str, str], ...] = (
    ("", "un"), ("", "non"), ("", "in"), ("", "im"), ("", "il"), ("", "ir"), ("", "dis"), ("", "de"), ("", "anti"),
    ("", "a"), ("en", "de"), ("micro", "macro"), ("hyper", "hypo"), ("intra", "inter"), ("over", "under"),
    ("pre", "post"), ("in", "out"), ("up", "down"), ("homo", "hetero"), ("north", "south"), ("east", "west"),
    ("upper", "lower"), ("min", "max"),
)  # fmt: skip


# Abbreviations written out, so "Dept. of Energy" folds to "Department of Energy" exactly: a fuzzy score
# only sees missing letters ("Mt. Everest" scores 87 against "Mount Everest", no better than "Austria"
# against "Australia"). "St" is Saint before a name and Street after one.
ABBREVIATIONS: dict[str, str] = {
    "&": "and", "dept": "department", "univ": "university", "intl": "international", "natl": "national",
    "govt": "government", "inst": "institute", "assn": "association", "assoc": "association", "mt": "mount",
    "ft": "fort", "bros": "brothers", "ave": "avenue", "blvd": "boulevard",
}  # fmt: skip


def folded(canon: str) -> str:
    """The comparison form: accents removed, every separator a single space, abbreviations written out
    ("node js", "gpt 4o", "saint louis")."""
    text = canon
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text.translate(_TRANSLITERATION))
        text = "".join(char for char in text if not unicodedata.combining(char))
    words = [ABBREVIATIONS.get(word, word) for word in _SEPARATORS.sub(" ", text).split()]
    if len(words) > 1:
        words = ["saint" if word == "st" and at == 0 else "street" if word == "st" and at == len(words) - 1 else word
                 for at, word in enumerate(words)]  # fmt: skip
    return " ".join(words)


def marks(spaced: str) -> tuple[str, ...]:
    """What must be equal for a fuzzy merge: numbers with their suffix letters (versions, sizes),
    single letters and roman numerals. "gpt 4o" -> ("4o",), "vitamin d" -> ("d",), "world war ii" -> ("ii",)."""
    numbers = _NUMBER.findall(spaced)
    letters = [token for token in spaced.split() if token.isalpha() and (len(token) == 1 or _ROMAN.fullmatch(token))]
    return (*numbers, *letters)


def adds_words(a: Sequence[str], b: Sequence[str]) -> bool:
    """One token list is the other plus whole words at the start or end: a more specific thing
    ("microsoft azure", "new york city", "visual studio code"), not another spelling."""
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if not short or len(short) == len(long):
        return False
    return list(long[: len(short)]) == list(short) or list(long[-len(short) :]) == list(short)


def opposed(a: Sequence[str], b: Sequence[str]) -> bool:
    """Some word of one is the other's word behind an opposed prefix ("supervised"/"unsupervised",
    "microeconomics"/"macroeconomics", "north korea"/"south korea")."""
    if len(a) != len(b):
        return False
    for left, right in zip(a, b, strict=True):
        if left == right:
            continue
        for one, other in _OPPOSED_PREFIXES:
            for x, y in ((left, right), (right, left)):
                if x.startswith(one) and y.startswith(other):
                    rest = x[len(one) :]
                    if rest == y[len(other) :] and (len(rest) >= 3 or (not rest and one and other)):
                        return True
    return False


# ---------------------------------------------------------------------------------------------------
# The index of a workspace's entities

Scorer = Callable[..., float]
# The candidates, measured in bench/entity_dedup.py (bench/results/entity_dedup.md).
SCORERS: dict[str, Scorer] = {"ratio": fuzz.ratio, "token_sort_ratio": fuzz.token_sort_ratio, "WRatio": fuzz.WRatio}
DEFAULT_SCORER = "token_sort_ratio"


def _sorted_words(spaced: str) -> str:
    return " ".join(sorted(spaced.split()))


# How the index computes each: token_sort_ratio is fuzz.ratio of the token-sorted strings, so the
# candidates are stored sorted once rather than re-sorted at every comparison (4x faster, same scores).
_SCORING: dict[str, tuple[Scorer, Callable[[str], str]]] = {
    "ratio": (fuzz.ratio, str),
    "token_sort_ratio": (fuzz.ratio, _sorted_words),
    "WRatio": (fuzz.WRatio, str),
}
# Indel similarity cannot reach t unless 2·min(la, lb)/(la + lb) >= t/100: with these, only the length
# buckets that can reach the threshold are scanned (a token-sorted string keeps its length).
_LENGTH_BOUNDED = frozenset({"ratio", "token_sort_ratio"})
MAX_ALIASES = 32  # a popular entity seen in many spellings keeps its first 32

How = Literal["exact", "alias", "folded", "surname", "fuzzy", "new"]


class EntityFields(Protocol):
    """What the index reads from an entity: a KnownEntity, or an EntityRow a write stored."""

    @property
    def key(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def aliases(self) -> Sequence[str]: ...
    @property
    def confidence(self) -> float: ...


@dataclass(frozen=True)
class Resolution:
    """Which entity a mention is, and what writing it changes."""

    key: str  # the existing entity's key, or the new one's
    how: How
    score: float  # the fuzzy score; 100 for the other matches and for a new entity
    name: str  # the display name after this mention (higher confidence wins; a tie keeps the older)
    type: str  # the type that goes with the display name
    confidence: float  # max of the entity's and the mention's
    aliases: tuple[str, ...]  # names to add to the entity's aliases (the surface form when it differs)

    @property
    def is_new(self) -> bool:
        return self.how == "new"


@dataclass(frozen=True)
class Lookup:
    """A name looked up without a type (a tool's argument): the best entity and the other close ones."""

    entity: KnownEntity | None
    score: float  # 0-100; 0 when nothing matched
    candidates: tuple[KnownEntity, ...]  # other entities the name may mean, best first


@dataclass(slots=True)
class _Entry:
    name: str
    type: str
    family: str
    confidence: float
    aliases: list[str]
    order: int  # insertion order: the older entity wins ties
    # Lists, not sets: a few items each, and 100K entries of empty sets cost 40 MB.
    seen: list[str] = field(default_factory=list)  # names already registered in the lookups
    forms: list[str] = field(default_factory=list)  # their folded forms


@dataclass(slots=True)
class _Bucket:
    """Fuzzy candidates of one family, one set of marks and one length."""

    scored: list[str] = field(default_factory=list)  # the form the scorer compares (token-sorted for token_sort)
    spaced: list[str] = field(default_factory=list)  # the folded form, for the guards
    keys: list[str] = field(default_factory=list)


class EntityIndex:
    """One workspace's known entities, in memory, for resolving mentions during an extraction job.

    Build it from the database's rows (oldest first, so ties go to the older entity), then `observe`
    each mention in order: entities created by earlier chunks are matched by later ones.
    """

    def __init__(self, known: Iterable[EntityFields] = (), *, threshold: float, scorer: str = DEFAULT_SCORER) -> None:
        if scorer not in SCORERS:
            raise ValueError(f"scorer {scorer!r} is not one of {', '.join(SCORERS)}")
        self.threshold = threshold
        self.scorer = scorer
        self._score, self._prepare = _SCORING[scorer]
        self._entries: dict[str, _Entry] = {}
        self._by_form: dict[str, str] = {}  # family + "|" + compact form -> key (the first registered)
        self._alias_forms: set[str] = set()  # the _by_form entries an alias registered
        self._surnames: dict[str, set[str]] = {}  # last word of a known multi-word person -> keys
        # (family, marks) -> length of the folded form -> candidates
        self._buckets: dict[tuple[str, tuple[str, ...]], dict[int, _Bucket]] = {}
        for entity in known:
            self.add(entity)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> KnownEntity | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        return KnownEntity(key, entry.name, entry.type, tuple(entry.aliases), entry.confidence)

    def add(self, entity: EntityFields) -> None:
        """Insert an entity, or update one: the name, type and confidence are replaced, aliases added."""
        family = entity.key.rpartition("|")[2]
        if family not in FAMILIES:
            raise ValueError(f"entity key {entity.key!r} does not end in |<type family>")
        entry = self._entries.get(entity.key)
        if entry is None:
            entry = _Entry(entity.name, entity.type, family, entity.confidence, [], len(self._entries))
            self._entries[entity.key] = entry
            self._register(entity.key, entry, entity.key.rpartition("|")[0], via_alias=False, raw=False)
        entry.name, entry.type, entry.confidence = entity.name, entity.type, entity.confidence
        known = {_loose(alias) for alias in entry.aliases}
        for alias in entity.aliases:
            if _loose(alias) not in known:
                entry.aliases.append(alias)
                known.add(_loose(alias))
        self._register(entity.key, entry, entity.name, via_alias=False)
        for alias in entity.aliases:
            self._register(entity.key, entry, alias, via_alias=True)

    def resolve(self, mention: Mention) -> Resolution:
        """The entity `mention` is (an existing key, or a new one) and the changes it brings. Pure."""
        family = type_family(mention.type)
        key = entity_key(mention.name, mention.type)
        if key in self._entries:
            return self._joined(key, mention, "exact", 100.0)
        spaced, compact = _forms(canonical(mention.name, mention.type), family)
        form = f"{family}|{compact}"
        hit = self._by_form.get(form)
        if hit is not None:
            return self._joined(hit, mention, "alias" if form in self._alias_forms else "folded", 100.0)
        if family == "PERSON" and spaced and " " not in spaced:
            people = self._surnames.get(spaced, set())
            if len(people) == 1:
                return self._joined(next(iter(people)), mention, "surname", 100.0)
        if family in FUZZY_FAMILIES and len(compact) >= MIN_FUZZY_LENGTH:
            found = self._fuzzy(family, spaced)
            if found is not None:
                return self._joined(found[0], mention, "fuzzy", found[1])
        return Resolution(key, "new", 100.0, mention.name, mention.type, mention.confidence, ())

    def commit(self, entities: Iterable[EntityFields]) -> None:
        """`add` each (e.g. the rows a write stored); an entity already recorded is only updated."""
        for entity in entities:
            self.add(entity)

    def lookup(self, name: str, limit: int = 5) -> Lookup:
        """Resolve a name of unknown type: every type is tried, and a bare surname offers every person
        who has it. The best match (highest score, then confidence, then the older) is `entity`."""
        scores: dict[str, float] = {}
        for entity_type in ENTITY_TYPES:
            try:
                resolution = self.resolve(Mention(name, entity_type, 0.0))
            except ValueError:
                continue
            if not resolution.is_new:
                scores[resolution.key] = max(scores.get(resolution.key, 0.0), resolution.score)
        spaced, _ = _forms(canonical(name, "PERSON"), "PERSON")
        for key in sorted(self._surnames.get(spaced, ())) if spaced and " " not in spaced else ():
            scores.setdefault(key, 0.0)  # an ambiguous surname: a candidate, not a match
        ranked = sorted(scores, key=lambda k: (-scores[k], -self._entries[k].confidence, self._entries[k].order))
        found = [entity for entity in map(self.get, ranked[: limit + 1]) if entity is not None]
        if not found or scores[ranked[0]] == 0.0:
            return Lookup(None, 0.0, tuple(found[:limit]))
        return Lookup(found[0], scores[ranked[0]], tuple(found[1:]))

    def observe(self, mention: Mention) -> Resolution:
        """`resolve`, then record the outcome, so later mentions of the job see it."""
        resolution = self.resolve(mention)
        entry = self._entries.get(resolution.key)
        state = (resolution.name, resolution.type, resolution.confidence)
        if entry is None or resolution.aliases or (entry.name, entry.type, entry.confidence) != state:
            self.add(KnownEntity(resolution.key, resolution.name, resolution.type, resolution.aliases, state[2]))
        return resolution

    def _joined(self, key: str, mention: Mention, how: How, score: float) -> Resolution:
        entry = self._entries[key]
        # A surname or a misspelling is a worse display name whatever the extractor's confidence.
        renames = how in ("exact", "alias", "folded") and mention.confidence > entry.confidence
        name, entity_type, other = (mention.name, mention.type, entry.name) if renames else (
            entry.name, entry.type, mention.name
        )  # fmt: skip
        new_alias = (
            _loose(other) != _loose(name)
            and _loose(other) not in {_loose(alias) for alias in entry.aliases}
            and len(entry.aliases) < MAX_ALIASES
        )
        confidence = max(entry.confidence, mention.confidence)
        return Resolution(key, how, score, name, entity_type, confidence, (other,) if new_alias else ())

    def _register(self, key: str, entry: _Entry, name: str, *, via_alias: bool, raw: bool = True) -> None:
        if name in entry.seen:
            return
        entry.seen.append(name)
        canon = canonical(name, entry.type) if raw else name
        if canon != name:
            # canonical() is idempotent, so a canonical form already registered brings nothing new.
            if canon in entry.seen:
                return
            entry.seen.append(canon)
        spaced, compact = _forms(canon, entry.family)
        if not compact or spaced in entry.forms:
            return
        entry.forms.append(spaced)
        form = f"{entry.family}|{compact}"
        if form not in self._by_form:
            self._by_form[form] = key
            if via_alias:
                self._alias_forms.add(form)
        tokens = spaced.split()
        if entry.family == "PERSON" and len(tokens) >= 2:
            self._surnames.setdefault(tokens[-1], set()).add(key)
        if entry.family in FUZZY_FAMILIES and len(compact) >= MIN_FUZZY_LENGTH:
            scored = self._prepare(spaced)
            by_length = self._buckets.get((entry.family, marks(spaced)))
            if by_length is None:
                by_length = self._buckets[(entry.family, marks(spaced))] = {}
            bucket = by_length.get(len(scored))
            if bucket is None:
                bucket = by_length[len(scored)] = _Bucket()
            bucket.scored.append(scored)
            bucket.spaced.append(spaced)
            bucket.keys.append(key)

    def _fuzzy(self, family: str, spaced: str) -> tuple[str, float] | None:
        """The best-scoring known entity at or above the threshold that passes the guards."""
        by_length = self._buckets.get((family, marks(spaced)))
        if not by_length:
            return None
        query = self._prepare(spaced)
        lengths: Iterable[int] = by_length
        if self.scorer in _LENGTH_BOUNDED:
            size, t = len(query), self.threshold
            low, high = math.ceil(size * t / (200 - t) - 1e-9), math.floor(size * (200 - t) / max(t, 1e-9) + 1e-9)
            lengths = [length for length in range(low, high + 1) if length in by_length]
        found: list[tuple[float, int, str, str]] = []
        for length in lengths:
            bucket = by_length[length]
            for _, score, position in process.extract(
                query, bucket.scored, scorer=self._score, score_cutoff=self.threshold, limit=3
            ):
                key = bucket.keys[position]
                found.append((score, self._entries[key].order, key, bucket.spaced[position]))
        tokens = spaced.split()
        for score, _, key, form in sorted(found, key=lambda item: (-item[0], item[1])):
            other = form.split()
            if not adds_words(tokens, other) and not opposed(tokens, other):
                return key, float(score)
        return None


def _forms(canon: str, family: str) -> tuple[str, str]:
    """The folded form (words split by single spaces) and the compact one (no spaces) that the lookups
    use. Identifiers are matched as written: case and separators mean something in code."""
    if family == "IDENTIFIER":
        return canon, canon
    spaced = folded(canon)
    return spaced, spaced.replace(" ", "")


def _loose(name: str) -> str:
    """Two surface forms differing only in case, spacing and punctuation are one alias ("Apple Inc." and
    "apple inc"); accents count ("María García" is worth keeping beside "Maria Garcia")."""
    return _SEPARATORS.sub("", unicodedata.normalize("NFKC", name).translate(_CHARACTERS).casefold())


# ---------------------------------------------------------------------------------------------------
# One chunk's graph, resolved


@dataclass(frozen=True)
class ResolvedEntity:
    """An entity row for the database to MERGE on `key` (one per key per chunk)."""

    key: str
    name: str  # display name after this chunk
    type: str
    aliases: tuple[str, ...]  # to add to the stored aliases
    description: str | None  # of the most confident mention that gave one
    confidence: float  # max of the stored entity's and this chunk's mentions
    count: int  # mentions in this chunk, summed over the forms that folded into this entity
    created: bool  # the key was not known before this chunk


@dataclass(frozen=True)
class MergedChunk:
    entities: tuple[ResolvedEntity, ...]
    relations: tuple[RelationFact, ...]
    # What merging dropped, for the job's record (the ChunkGraph's own problems are not repeated).
    problems: tuple[str, ...]
    # Relations whose two ends merged into one entity ("Prince Norodom Sihanouk" and "Sihanouk"): the merge
    # did its job and the graph lost nothing, so they are counted on the job, never a failed item.
    self_loops: tuple[str, ...] = ()


@dataclass(slots=True)
class _Fold:
    count: int = 0
    aliases: list[str] = field(default_factory=list)
    description: str | None = None
    description_confidence: float = -1.0
    created: bool = False


# Relation types where (a, b) and (b, a) state the same thing.
SYMMETRIC_RELATIONS: frozenset[str] = frozenset({"CO_OCCURS"})


def merge_chunk_entities(graph: ChunkGraph, index: EntityIndex) -> MergedChunk:
    """Resolve one chunk's mentions against (and into) `index`, fold those that are one entity, and
    point the relations at the resolved keys. Self-loops (both ends folded into one entity) and exact
    duplicates (same subject, type and object; for OTHER also the predicate) are dropped, keeping the
    strongest duplicate."""
    problems: list[str] = []
    self_loops: list[str] = []
    folds: dict[str, _Fold] = {}
    key_of: dict[str, str] = {}  # mention name -> key; a name typed twice keeps its first mention's
    for position, mention in enumerate(graph.entities):
        try:
            resolution = index.observe(mention)
        except ValueError as error:
            problems.append(f"entity {position} ({mention.name!r}) dropped: {error}")
            continue
        key_of.setdefault(mention.name, resolution.key)
        fold = folds.setdefault(resolution.key, _Fold())
        fold.count += mention.count
        fold.created |= resolution.is_new
        fold.aliases.extend(alias for alias in resolution.aliases if alias not in fold.aliases)
        if mention.description and mention.confidence > fold.description_confidence:
            fold.description, fold.description_confidence = mention.description, mention.confidence
    entities = []
    for key, fold in folds.items():
        entry = index.get(key)
        assert entry is not None  # observe() recorded it
        entities.append(
            ResolvedEntity(key, entry.name, entry.type, tuple(fold.aliases), fold.description, entry.confidence,
                           fold.count, fold.created)
        )  # fmt: skip
    loose_key_of = {_loose(name): key for name, key in reversed(key_of.items())}
    best: dict[tuple[str, ...], RelationFact] = {}
    for position, relation in enumerate(graph.relations):
        ends = [key_of.get(name) or loose_key_of.get(_loose(name)) for name in (relation.subject, relation.object)]
        subject, obj = ends
        if subject is None or obj is None:
            missing = relation.subject if subject is None else relation.object
            problems.append(f"relation {position} dropped: {missing!r} is not an entity of the chunk")
            continue
        if subject == obj:
            self_loops.append(
                f"relation {position} dropped: {relation.subject!r} and {relation.object!r} are one entity ({subject})"
            )
            continue
        resolved = RelationFact(
            subject, obj, relation.type, relation.predicate, relation.strength, relation.evidence, relation.method
        )
        identity = _identity(resolved)
        if identity not in best or resolved.strength > best[identity].strength:
            best[identity] = resolved
    return MergedChunk(tuple(entities), tuple(best.values()), tuple(problems), tuple(self_loops))


def _identity(relation: RelationFact) -> tuple[str, ...]:
    ends = (relation.subject_key, relation.object_key)
    if relation.type in SYMMETRIC_RELATIONS:
        ends = (min(ends), max(ends))
    # OTHER carries its meaning in the predicate: "founded" and "sued" are two facts.
    predicate = " ".join(relation.predicate.split()).casefold() if relation.type == "OTHER" else ""
    return (*ends, relation.type, predicate)


# ---------------------------------------------------------------------------------------------------
# Supersession of exclusive facts


@dataclass(frozen=True)
class Supersession:
    """What the database sets when `new` is written: each id in `supersedes` gets superseded_by =
    new.id (its validity ends at new.valid_from), and `new` gets superseded_by when set."""

    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None


def superseding(new: RelationRow, existing: Sequence[RelationRow]) -> Supersession:
    """Which stored facts a new exclusive fact replaces, and which stored fact replaces it.

    A subject holds one object of an EXCLUSIVE_RELATIONS type at a time, so for two such facts with
    different objects the later `valid_from` wins: "lives in Berlin" (2020) is superseded by "lives in
    Lisbon" (2023), whichever of the two was written first. Only LLM facts take part, on both sides:
    patterns and dependency parses miss negation and tense ("no longer lives in Berlin"), so the no-LLM
    path never supersedes. Undated facts and facts with equal dates supersede nothing: the order is
    unknown, and both stay current. A stored fact already superseded by one newer than `new` is
    re-pointed to `new` (Berlin 2020 -> Madrid 2021 -> Lisbon 2023 when Madrid arrives last).
    """
    if new.type not in EXCLUSIVE_RELATIONS or new.method != "llm" or new.valid_from_ts is None:
        return Supersession()
    start = new.valid_from_ts
    dated = {
        relation.id: (relation, relation.valid_from_ts)
        for relation in existing
        if relation.id != new.id
        and relation.subject_key == new.subject_key
        and relation.type == new.type
        and relation.method == "llm"
        and relation.valid_from_ts is not None
    }
    superseded_by = None
    later = [(when, relation.id, relation) for relation, when in dated.values() if when > start]
    if later:
        nearest_date = min(when for when, _, _ in later)
        nearest = sorted((ident, relation) for when, ident, relation in later if when == nearest_date)
        # The next fact names the same object: the state continued, nothing replaced this one.
        if all(relation.object_key != new.object_key for _, relation in nearest):
            superseded_by = nearest[0][0]
    supersedes = []
    for relation, when in dated.values():
        if when >= start or relation.object_key == new.object_key:
            continue
        if relation.superseded_by is None:
            supersedes.append(relation.id)
        elif relation.superseded_by in dated and dated[relation.superseded_by][1] > start:
            supersedes.append(relation.id)  # re-pointed: `new` comes between it and its successor
    return Supersession(tuple(sorted(supersedes)), superseded_by)
