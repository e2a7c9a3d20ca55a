"""Relations without an LLM: explicit wording, the dependency parse, and co-occurrence as a last resort.

Three sources, most to least certain, each with its own `method` and a fixed strength:

- "pattern": the words between two adjacent entities of a sentence are exactly a known phrasing
  ("Maria | moved to | Lisbon", "Kubernetes | was designed by | Google"). Works with or without the parser.
- "dependency": the parse links a subject and an object through a known verb or noun ("Lena Fischer lives in
  Hamburg and works for Airbus": `works` inherits its subject across the conjunction; "Bruno is a software
  engineer at Spotify"; "Hannah's brother Lukas"). Needs the parser.
- "cooccurrence": two entities of the same sentence with no typed relation (type CO_OCCURS): a hint,
  never a fact, so it stays weaker than every typed relation.

Every typed relation must also fit the types of its ends (LIVES_IN links a PERSON to a PLACE, ...): a rule
that fires on a mistyped entity is dropped rather than trusted. Noun-phrase concepts (CONCEPT) are created
here, and only as an end of a typed relation: the class of an "is a" ("Redis is an in-memory data store"),
or what uses, depends on or causes something named ("the billing service uses PostgreSQL").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # spaCy itself is imported when the extractor is built, off the event loop
    from spacy.tokens import Doc, Span, Token

from zapomni_core.graph.extraction import ENTITY_TYPES
from zapomni_core.graph.ner import CONCEPT_CONFIDENCE, Spot
from zapomni_core.graph.noun_paths import noun_path_relations

# Strengths, fixed per method. On the dev half of bench/data/graph_sentences.jsonl patterns were right 100 % of
# the time and the parse 95 % (bench/results/graph_extraction.md); those are short, clean sentences and real
# chunks are harder, so both stay inside 0.6-0.8, the parse (which reaches further) below the exact wording,
# and co-occurrence (a labelled relation in 1 pair of 7) far below both.
PATTERN_STRENGTH = 0.75
DEPENDENCY_STRENGTH = 0.65
COOCCURRENCE_STRENGTH = 0.2
MAX_EVIDENCE_CHARS = 400

_ANY = frozenset(ENTITY_TYPES) - {"DATE"}
_THINGS = _ANY - {"PERSON", "PLACE", "GROUP", "LANGUAGE"}
# Which entity types each relation type may link (subject types, object types). DATE only ends HAPPENED_ON.
ALLOWED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "LIVES_IN": (frozenset({"PERSON", "GROUP"}), frozenset({"PLACE"})),
    "WORKS_FOR": (frozenset({"PERSON"}), frozenset({"ORG"})),
    "MEMBER_OF": (frozenset({"PERSON", "ORG", "PLACE"}), frozenset({"ORG", "GROUP"})),
    "LOCATED_IN": (_ANY - {"PERSON", "GROUP", "LANGUAGE", "CONCEPT"}, frozenset({"PLACE", "ORG"})),
    "CREATED": (frozenset({"PERSON", "ORG", "GROUP"}), _THINGS),
    "OWNS": (frozenset({"PERSON", "ORG"}), _ANY - {"GROUP", "LANGUAGE"}),
    "USES": (_ANY - {"PLACE", "LANGUAGE", "WORK_OF_ART"}, _THINGS),
    "DEPENDS_ON": (_ANY - {"PLACE", "LANGUAGE", "WORK_OF_ART"}, _THINGS),
    "PART_OF": (_ANY - {"PERSON", "GROUP", "LANGUAGE"}, _ANY - {"PERSON", "GROUP", "LANGUAGE"}),
    "IS_A": (_ANY, frozenset({"CONCEPT"})),
    "FAMILY_OF": (frozenset({"PERSON"}), frozenset({"PERSON"})),
    "KNOWS": (frozenset({"PERSON"}), frozenset({"PERSON"})),
    "LIKES": (frozenset({"PERSON", "GROUP"}), _ANY),
    "CAUSES": (_ANY - {"PERSON", "PLACE", "GROUP", "LANGUAGE"}, _ANY - {"PERSON", "PLACE", "GROUP", "LANGUAGE"}),
    "HAPPENED_ON": (frozenset({"EVENT"}), frozenset({"DATE"})),
}
SYMMETRIC = frozenset({"FAMILY_OF", "KNOWS"})
# Joining one of these is membership, joining anything else is employment ("joined Bosch").
_MEMBERSHIP_HEADS = re.compile(r"\b(?:Party|Club|Union|Association|Society|Team|Band|Committee|Council|Guild|Choir)\b")


@dataclass(frozen=True)
class Found:
    subject: Spot
    object: Spot
    type: str
    predicate: str
    method: str  # "pattern" | "dependency" | "cooccurrence"
    strength: float
    evidence: str
    distance: int = 0  # tokens between the two mentions (co-occurrence: nearer pairs are kept first)


def allowed(type_: str, subject: Spot, obj: Spot) -> bool:
    if subject is obj or subject.name.casefold() == obj.name.casefold():
        return False
    subjects, objects = ALLOWED[type_]
    return subject.type in subjects and obj.type in objects


def evidence(text: str, sent: Span, a: Spot, b: Spot) -> str:
    """The sentence, verbatim; in an over-long sentence, the stretch around the two mentions."""
    whole = text[sent.start_char : sent.end_char].strip()
    if len(whole) <= MAX_EVIDENCE_CHARS:
        return whole
    lo, hi = min(a.start, b.start), max(a.end, b.end)
    pad = max(0, (MAX_EVIDENCE_CHARS - (hi - lo)) // 2)
    return text[max(sent.start_char, lo - pad) : min(sent.end_char, hi + pad)].strip()


def _typed(type_: str, obj: Spot) -> str:
    if type_ == "WORKS_FOR" and _MEMBERSHIP_HEADS.search(obj.name):
        return "MEMBER_OF"
    return type_


# --- patterns: the exact wording between two adjacent entities ---------------------------------------------

_ADV = r"(?:(?:also|now|still|currently|recently|mainly|mostly|heavily|just|already|originally|officially|finally|later|then|primarily|only|actually|eventually|first)\s+)?"  # noqa: E501
_BE = r"(?:is|are|was|were|has been|have been|had been|will be)"
_CREATED = (
    r"(?:co-?)?founded|created|designed|invented|developed|wrote|built|composed|painted|launched|released|"
    r"published|established|authored|directed|produced|manufactures|manufactured|makes|made"
)
_CREATED_PASSIVE = (
    r"(?:co-?)?founded|created|designed|invented|developed|written|built|composed|painted|launched|released|"
    r"published|established|authored|directed|produced|manufactured|made|started|passed|coined"
)
_KIN = (
    r"sister|brother|mother|father|mom|mum|dad|son|daughter|wife|husband|cousin|aunt|uncle|niece|nephew|"
    r"grandmother|grandfather|grandma|grandpa|granddaughter|grandson|sibling|twin|stepmother|stepfather|"
    r"stepson|stepdaughter|fiancée|fiancé|fiance|mother-in-law|father-in-law"
)
_PART = r"part|subsidiary|division|unit|module|component|branch|department|piece|section|chapter|submodule|plugin"


@dataclass(frozen=True)
class _Pattern:
    type: str
    gap: re.Pattern[str]  # full match of the normalised words between the two entities
    reverse: bool = False  # the second entity is the subject ("X was founded by Y": Y CREATED X)
    tail: re.Pattern[str] | None = None  # must follow the second entity ("Ana is Pedro|'s daughter")


def _p(type_: str, gap: str, *, reverse: bool = False, tail: str | None = None) -> _Pattern:
    return _Pattern(type_, re.compile(gap), reverse, re.compile(tail) if tail else None)


PATTERNS: tuple[_Pattern, ...] = (
    _p("USES", rf"{_ADV}(?:{_BE} )?{_ADV}(?:uses|use|used|using|runs on|run on|ran on|running on)"),
    _p("USES", rf"(?:{_BE} )?{_ADV}(?:built|written|implemented|made) (?:with|in|on|using)"),
    _p("USES", rf"{_ADV}(?:stores|stored|keeps|kept) (?:its|their|his|her|the|all) (?:data|files|state|records) in"),
    _p("DEPENDS_ON", rf"{_ADV}(?:{_BE} )?{_ADV}(?:depends|depend|depended|depending|relies|rely|relied|relying) on"),
    _p("DEPENDS_ON", rf"{_ADV}(?:requires|required|require|{_BE} dependent on)"),
    _p("CREATED", rf"{_ADV}(?:{_CREATED})"),
    _p("CREATED", rf"{_BE} {_ADV}(?:{_CREATED_PASSIVE}) by", reverse=True),
    _p("CREATED", rf"{_BE} (?:the |a |an )?(?:co-?)?(?:founder|creator|inventor|author|designer) of"),
    _p("OWNS", rf"{_ADV}(?:owns|own|owned|acquired|acquires|bought|buys|purchased|purchases|has acquired|has bought)"),
    _p("OWNS", rf"{_BE} {_ADV}(?:owned|acquired|bought|purchased) by", reverse=True),
    _p("OWNS", rf"{_BE} (?:the |a |an )?owner of"),
    _p("MEMBER_OF", rf"{_BE} (?:a |an |the )?(?:\w+ )?member of|{_ADV}(?:studies|studied|is studying) (?:\w+ )?at"),
    _p("PART_OF", rf"{_BE} (?:a |an |the )?(?:\w+ )?(?:{_PART}) of|{_ADV}(?:belongs|belong|belonged) to"),
    _p("LOCATED_IN", rf"{_BE} (?:the )?capital(?: city)? of"),
    _p("FAMILY_OF", rf"{_BE} (?:the |a )?(?:{_KIN}) of|'s? (?:{_KIN})|{_BE} married to|{_ADV}married|and"),
    _p("FAMILY_OF", r"is|was", tail=rf"['’]s (?:{_KIN})\b"),  # "Ana is Pedro|'s daughter"
    _p("KNOWS", rf"{_ADV}(?:knows|knew|met|has met|befriended|{_BE} friends with|{_BE} (?:a )?friend of)"),
    _p("LIKES", rf"{_ADV}(?:likes|liked|loves|loved|enjoys|enjoyed|prefers|preferred|adores)"),
    _p("LIKES", rf"{_BE} (?:a |an )?(?:big |huge )?fan of"),
    _p("LIKES", r"'s? (?:favou?rite|preferred) [\w ]{1,30} (?:is|was|are|were)"),
    _p("CAUSES", rf"{_ADV}(?:causes|caused|cause|triggers|triggered|led to|leads to|results in|resulted in)"),
    _p("CAUSES", rf"{_BE} {_ADV}(?:caused|triggered) by", reverse=True),
    _p("WORKS_FOR", rf"{_ADV}(?:works|worked|work|is working|was working|has worked|has been working) (?:for|at)"),
    _p("WORKS_FOR", rf"{_ADV}(?:joined|has joined|joins|{_BE} employed (?:by|at)|{_BE} {_ADV}(?:hired|recruited) by)"),
    _p(
        "WORKS_FOR",
        rf"{_ADV}(?:drives|drove|plays|played|has played) for|{_ADV}(?:teaches|taught|lectures) (?:\w+ )?at",
    ),
    _p("WORKS_FOR", rf"{_BE} (?:a |an |the )?(?:[\w-]+ ){{1,2}}(?:at|of|for)"),
    _p("LIVES_IN", rf"{_ADV}(?:lives|lived|is living|was living|has lived|resides|resided|settled|has settled) in"),
    _p(
        "LIVES_IN",
        rf"{_ADV}(?:moved|moves|has moved|is moving|will move|relocated|has relocated|emigrated)(?: back)? to",
    ),
    _p("LOCATED_IN", rf"{_BE} {_ADV}(?:located|based|headquartered|situated) in|(?:is|are|lies|lie) in|,"),
    _p("LOCATED_IN", r"(?:took|takes|will take) place in|(?:was|were|is|are) held in"),
    _p("HAPPENED_ON", r"(?:took|takes|will take) place (?:in|on)|(?:ended|began|started|happened|occurred) (?:in|on)"),
    _p("HAPPENED_ON", r"(?:was|were|is|are|will be) held (?:in|on)"),
)
# "and" between two people needs what follows to say how they are linked.
_FAMILY_AND_TAIL = re.compile(r"\s+(?:got |are |were )?married\b")
_LIST_GAP = re.compile(r"(?:,|, and|,and|and|or|, or|&)")
_TRAILING_DETERMINER = re.compile(r"\s*\b(?:the|a|an|its|his|her|their|our|my|your|every|each|all|some|any|this|that)$")
_ADJECTIVE_USE = re.compile(r"\s+(?!and\b|or\b|in\b|on\b|at\b|for\b|with\b|from\b|to\b|as\b|by\b)[a-z]")


def gap_text(text: str) -> str:
    gap = " ".join(text.lower().replace("’", "'").split())
    return _TRAILING_DETERMINER.sub("", gap).strip()


def pattern_relations(text: str, spots: list[Spot], sent: Span) -> Iterator[Found]:
    inside = [s for s in spots if s.first >= sent.start and s.last <= sent.end]
    for i, (a, b) in enumerate(pairwise(inside)):
        gap = gap_text(text[a.end : b.start])
        for pattern in PATTERNS:
            if not pattern.gap.fullmatch(gap) or (pattern.tail and not pattern.tail.match(text[b.end : sent.end_char])):
                continue
            if gap == "and" and not (
                pattern.type == "FAMILY_OF" and _FAMILY_AND_TAIL.match(text[b.end : sent.end_char])
            ):
                continue
            if gap == "," and not is_place_pair(a, b, inside, i, text):
                continue
            if b.type == "GROUP" and _ADJECTIVE_USE.match(text[b.end : sent.end_char]):
                break  # "likes Italian food": the group names the food's kind, it is not the object
            subject, obj = (b, a) if pattern.reverse else (a, b)
            type_ = _typed(pattern.type, obj)
            if not allowed(type_, subject, obj):
                continue
            found = Found(subject, obj, type_, gap or type_, "pattern", PATTERN_STRENGTH, evidence(text, sent, a, b))
            yield found
            # "Volkswagen owns Audi, Porsche and Lamborghini": the relation holds for each listed object.
            if not pattern.reverse:
                yield from _listed(found, inside[i + 2 :], b, text, sent)
            break


def is_place_pair(a: Spot, b: Spot, inside: list[Spot], i: int, text: str) -> bool:
    """ "Stockholm, Sweden" is LOCATED_IN; "Brazil, Peru and Colombia" is a list."""
    if not (a.type == b.type == "PLACE"):
        return False
    after = inside[i + 2] if i + 2 < len(inside) else None
    if after is not None and _LIST_GAP.fullmatch(gap_text(text[b.end : after.start])):
        return False
    before = inside[i - 1] if i > 0 else None
    return before is None or not _LIST_GAP.fullmatch(gap_text(text[before.end : a.start]))


def _listed(found: Found, rest: list[Spot], previous: Spot, text: str, sent: Span) -> Iterator[Found]:
    """The other members of a list the object heads: "A, B and C". Without "and"/"or" it is no list
    ("Stockholm, Sweden" names one place, and the company is not in Sweden's list of places)."""
    members: list[Spot] = []
    closed = False
    for spot in rest:
        gap = gap_text(text[previous.end : spot.start])
        if not _LIST_GAP.fullmatch(gap) or spot.type != found.object.type:
            break
        members.append(spot)
        previous = spot
        if gap != ",":
            closed = True
            break  # "and"/"or" comes before the last member
    if not closed:
        return
    for spot in members:
        if allowed(found.type, found.subject, spot):
            proof = evidence(text, sent, found.subject, spot)
            yield Found(found.subject, spot, found.type, found.predicate, "pattern", PATTERN_STRENGTH, proof)


# --- the dependency parse ------------------------------------------------------------------------------------


def _forms(words: str) -> frozenset[str]:
    return frozenset(words.split())


# (verb forms, preposition or None for the direct object, voice, relation type, reverse)
_VERB_RULES: tuple[tuple[frozenset[str], str | None, str, str, bool], ...] = (
    (_forms("use uses used using"), None, "active", "USES", False),
    (_forms("run runs ran running"), "on", "any", "USES", False),
    (_forms("built written implemented made"), "with", "passive", "USES", False),
    (_forms("built written implemented"), "in", "passive", "USES", False),
    (_forms("built"), "on", "passive", "USES", False),
    (_forms("store stores stored keep keeps kept"), "in", "active", "USES", False),
    (_forms("depend depends depended depending rely relies relied relying"), "on", "any", "DEPENDS_ON", False),
    (_forms("require requires required requiring"), None, "active", "DEPENDS_ON", False),
    (
        _forms(
            "found founded co-founded cofounded create creates created design designs designed invent invents "
            "invented develop develops developed write writes wrote build builds built compose composes composed "
            "paint paints painted launch launches launched release releases released publish publishes published "
            "establish establishes established author authored direct directed produce produces produced "
            "manufacture manufactures manufactured start started starts"
        ),
        None,
        "active",
        "CREATED",
        False,
    ),
    (
        _forms(
            "founded co-founded cofounded created designed invented developed written built composed painted "
            "launched released published established authored directed produced manufactured made started passed"
        ),
        "by",
        "passive",
        "CREATED",
        True,
    ),
    (
        _forms("own owns owned acquire acquires acquired buy buys bought purchase purchases purchased"),
        None,
        "active",
        "OWNS",
        False,
    ),
    (_forms("owned acquired bought purchased"), "by", "passive", "OWNS", True),
    (_forms("work works worked working"), "for", "any", "WORKS_FOR", False),
    (_forms("work works worked working"), "at", "any", "WORKS_FOR", False),
    (_forms("employed hired recruited"), "by", "passive", "WORKS_FOR", False),
    (_forms("join joins joined joining"), None, "active", "WORKS_FOR", False),
    (_forms("drive drives drove driving play plays played playing"), "for", "active", "WORKS_FOR", False),
    (_forms("teach teaches taught teaching lecture lectures lectured"), "at", "active", "WORKS_FOR", False),
    # "W. Dale Nelson covers the White House for The Associated Press", "she writes for the Guardian"
    (_forms("cover covers covered covering write writes wrote writing"), "for", "active", "WORKS_FOR", False),
    (_forms("study studies studied studying"), "at", "active", "MEMBER_OF", False),
    (
        _forms("live lives lived living reside resides resided settle settles settled"),
        "in",
        "active",
        "LIVES_IN",
        False,
    ),
    (_forms("born"), "in", "passive", "LIVES_IN", False),
    (
        _forms("move moves moved moving relocate relocates relocated emigrate emigrated"),
        "to",
        "active",
        "LIVES_IN",
        False,
    ),
    (_forms("located headquartered based situated"), "in", "any", "LOCATED_IN", False),
    (_forms("lie lies lay"), "in", "active", "LOCATED_IN", False),
    (_forms("house houses housed"), None, "active", "LOCATED_IN", True),
    (_forms("held"), "in", "passive", "LOCATED_IN", False),
    (_forms("know knows knew meet meets met befriend befriended"), None, "active", "KNOWS", False),
    (
        _forms("like likes liked love loves loved enjoy enjoys enjoyed prefer prefers preferred adore adores adored"),
        None,
        "active",
        "LIKES",
        False,
    ),
    (_forms("marry marries married"), None, "active", "FAMILY_OF", False),
    (_forms("cause causes caused trigger triggers triggered"), None, "active", "CAUSES", False),
    (_forms("caused triggered"), "by", "passive", "CAUSES", True),
    (_forms("lead leads led"), "to", "active", "CAUSES", False),
    (_forms("result results resulted"), "in", "active", "CAUSES", False),
    (_forms("belong belongs belonged"), "to", "active", "PART_OF", False),
)
_BE_FORMS = _forms("is are was were be been being 's ’s am 're")
_TAKE_PLACE = _forms("take takes took taken taking")
# Nouns that state a relation to the entity after "of" (or before "'s") rather than a class to belong to.
_RELATIONAL_NOUNS: dict[str, str] = {
    **dict.fromkeys(_KIN.split("|"), "FAMILY_OF"),
    **dict.fromkeys("friend friends colleague colleagues neighbour neighbor classmate roommate".split(), "KNOWS"),
    **dict.fromkeys("fan fans admirer".split(), "LIKES"),
    **dict.fromkeys(["member", "members"], "MEMBER_OF"),
    **dict.fromkeys(_PART.split("|"), "PART_OF"),
    **dict.fromkeys("founder co-founder cofounder creator inventor author designer".split(), "CREATED"),
    **dict.fromkeys(["owner"], "OWNS"),
    **dict.fromkeys(["capital"], "LOCATED_IN"),
}
# Single words too vague to be a concept of their own ("Maria is a person", "it uses a thing"); the second
# half are the nominalisations of scientific and business prose ("exposure caused an increase").
_GENERIC = _forms(
    "thing things one ones lot lots way ways kind type sort part member fan friend person people place time "
    "times day days year years home example number question problem problems issue issues idea result results "
    "reason fact case point end side group team company organisation organization name word words bit piece "
    "stuff something everything nothing anything someone everyone data information system tool tools version "
    "use user users service services app application project work job list set value values "
    "increase decrease increases decreases expression exposure effect effects role level levels rate rates change "
    "changes development activity function response responses process analysis study studies method methods "
    "approach model models alteration alterations difference differences factor factors feature features "
    "outcome outcomes finding findings evidence mechanism mechanisms pathway pathways treatment patients cells "
    "cell protein proteins gene genes knockdown loss gain presence absence ability need"
)
# Opinion, size and quantity words say nothing about what a thing is: "a small bakery" IS_A "bakery".
_EVALUATIVE = _forms(
    "new old good great big small large little nice famous popular well-known best worst main own other various "
    "several many few different certain specific significant striking important key major novel potential "
    "possible particular similar such same whole entire additional further previous recent current overall "
    "total numerous multiple real true based"
)
# A concept name is words of letters (hyphens inside words allowed), each of two letters or more.
_CONCEPT_NAME = re.compile(r"[^\W\d_]{2,}(?:-[^\W\d_]+)*(?: [^\W\d_]{2,}(?:-[^\W\d_]+)*)*")
# Cause between two unnamed things only when said in so many words: "results in", "leads to" join too
# many loose phrases in scientific and business prose.
_CAUSE_VERBS = _forms("cause causes caused trigger triggers triggered")
_CONCEPT_MODIFIERS = frozenset({"compound", "amod", "nmod", "npadvmod", "nummod"})
_CONCEPT_RELATIONS = frozenset({"USES", "DEPENDS_ON", "CAUSES", "IS_A"})


class _Sentence:
    """The parse of one sentence with its entity spots; makes concept spots on demand."""

    def __init__(self, doc: Doc, sent: Span, at: dict[int, Spot]) -> None:
        self.doc, self.sent, self.at = doc, sent, at
        self.concepts: dict[int, Spot] = {}

    def spot(self, token: Token) -> Spot | None:
        return self.at.get(token.i) or self.concepts.get(token.i)

    def concept(self, token: Token) -> Spot | None:
        """The noun phrase headed by `token` as a CONCEPT, or None when it is not a likely useful one."""
        if token.i in self.at:
            return self.at[token.i]
        if token.i in self.concepts:
            return self.concepts[token.i]
        # "uses the V8 engine", "depends on the Stripe API": the phrase is about the named thing in it.
        named = [self.at[c.i] for c in token.lefts if c.dep_ == "compound" and c.i in self.at]
        if named:
            return named[-1]
        if token.pos_ != "NOUN" or token.lower_ in _RELATIONAL_NOUNS or (not token.is_alpha and "-" not in token.text):
            return None
        start = token.i
        for child in token.lefts:
            if child.dep_ in _CONCEPT_MODIFIERS or (child.dep_ == "punct" and child.text == "-"):
                start = min(start, child.left_edge.i)
        doc = self.doc
        while start < token.i and (
            doc[start].dep_ in {"det", "poss", "predet", "nummod", "case"}
            or (doc[start].pos_ in {"DET", "PRON", "NUM", "PUNCT", "ADP", "ADV", "CCONJ"} and doc[start].text != "in")
            or doc[start].lower_ in _EVALUATIVE
            or start in self.at
        ):
            start += 1
        if any(i in self.at for i in range(start, token.i)):
            return None
        while len(doc[start : token.i + 1].text.split()) > 4:  # words, not tokens: "in-memory" is three tokens
            start += 1
        span = doc[start : token.i + 1]
        if (len(span) == 1 and token.lower_ in _GENERIC) or not _CONCEPT_NAME.fullmatch(span.text):
            return None
        spot = Spot(
            span.start_char, span.end_char, span.start, span.end, span.text, "CONCEPT", CONCEPT_CONFIDENCE, "concept"
        )
        for i in range(span.start, span.end):
            self.concepts[i] = spot
        return spot


def _conjuncts(token: Token) -> list[Token]:
    return [token, *(t for t in token.conjuncts if t.i > token.i)]


def _subjects(verb: Token, depth: int = 0) -> list[Token]:
    found = [t for c in verb.children if c.dep_ in ("nsubj", "nsubjpass") for t in _conjuncts(c)]
    if verb.dep_ == "relcl":  # "his sister Mary, who lives in Rock Hill": "who" stands for the noun described
        found = [verb.head if t.lower_ in _RELATIVE_PRONOUNS else t for t in found]
    if found or depth > 3:
        return found
    # "Lena lives in Hamburg and works for Airbus", "Kenji moved to Seattle to work for Amazon"
    if verb.dep_ in ("conj", "xcomp", "advcl") and verb.head.pos_ in ("VERB", "AUX") and verb.head is not verb:
        return _subjects(verb.head, depth + 1)
    return []


def _objects(verb: Token, at: dict[int, Spot]) -> Iterator[tuple[str | None, Token, bool]]:
    """(preposition or None, object token, is a later conjunct) of a verb."""
    for child in verb.children:
        if child.dep_ in ("dobj", "obj"):
            for n, obj in enumerate(_conjuncts(child)):
                yield None, obj, n > 0
        elif child.dep_ in ("prep", "agent"):
            for pobj in (c for c in child.children if c.dep_ == "pobj"):
                for n, obj in enumerate(_conjuncts(pobj)):
                    yield child.lower_, obj, n > 0
        elif child.dep_ in ("advmod", "npadvmod", "dep", "oprd") and child.i in at:
            # The tagger misreads code ("uses asyncio.to_thread() for ..." as an adverb): a named thing hanging
            # straight off the verb is its object.
            yield None, child, False


_RELATIVE_PRONOUNS = frozenset({"who", "which", "that"})


def _passive(verb: Token) -> bool:
    return any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children)


def dependency_relations(
    doc: Doc, text: str, sent: Span, at: dict[int, Spot], concepts: dict[int, Spot]
) -> Iterator[Found]:
    state = _Sentence(doc, sent, at)
    state.concepts = concepts

    def emit(type_: str, subject: Spot | None, obj: Spot | None, predicate: str) -> Iterator[Found]:
        if subject is None or obj is None:
            return
        type_ = _typed(type_, obj)
        if type_ not in _CONCEPT_RELATIONS and "CONCEPT" in (subject.type, obj.type):
            return
        if type_ in ("USES", "DEPENDS_ON") and subject.type == obj.type == "CONCEPT":
            return  # two unnamed things: too vague to state ("the app uses a library")
        if type_ == "CAUSES" and subject.type == obj.type == "CONCEPT" and predicate.split()[0] not in _CAUSE_VERBS:
            return
        if allowed(type_, subject, obj):
            proof = evidence(text, sent, subject, obj)
            yield Found(subject, obj, type_, predicate, "dependency", DEPENDENCY_STRENGTH, proof)

    for token in sent:
        if token.pos_ in ("VERB", "AUX"):
            yield from _verb(state, token, emit)
        if token.i in at:
            yield from _noun_links(state, token, emit)


Emit = Callable[[str, Spot | None, Spot | None, str], Iterator[Found]]


def _verb(state: _Sentence, verb: Token, emit: Emit) -> Iterator[Found]:
    subjects = _subjects(verb)
    if not subjects:
        return
    form = verb.lower_
    passive = _passive(verb)
    if form in _BE_FORMS:
        yield from _copula(state, verb, subjects, emit)
        return
    for prep, obj_token, later in _objects(verb, state.at):
        if later and obj_token.i not in state.at:
            continue  # "built with React and talks to ...": a misparsed verb joined to a named object
        for subject_token in subjects:
            subject_spot = state.spot(subject_token) or _named_beside(state, subject_token)
            # "X took place in 1066", "the Olympics were held in Paris"
            if subject_spot is not None and subject_spot.type == "EVENT" and prep in ("in", "on"):
                obj_spot = state.spot(obj_token)
                if obj_spot is not None and obj_spot.type == "DATE":
                    yield from emit("HAPPENED_ON", subject_spot, obj_spot, f"{form} {prep}")
                    continue
                if form in _TAKE_PLACE and any(c.lower_ == "place" for c in verb.children):
                    yield from emit("LOCATED_IN", subject_spot, obj_spot, f"{form} place {prep}")
                    continue
            if prep == "as":  # "works as a nurse", "joined Bosch as a data scientist"
                if any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in obj_token.children):
                    yield from emit("IS_A", subject_spot, state.concept(obj_token), f"{form} as")
                continue
            for forms, rule_prep, voice, type_, reverse in _VERB_RULES:
                if form not in forms or prep != rule_prep or (voice == "active" and passive and prep is None):
                    continue
                if voice == "passive" and not passive:
                    continue
                concepts_ok = type_ in _CONCEPT_RELATIONS
                subject = state.concept(subject_token) if concepts_ok else subject_spot
                obj = state.concept(obj_token) if concepts_ok else state.spot(obj_token)
                if type_ == "LOCATED_IN" and form == "based" and subject is not None and subject.type == "PERSON":
                    type_ = "LIVES_IN"
                pair = (obj, subject) if reverse else (subject, obj)
                yield from emit(type_, *pair, f"{form} {prep}" if prep else form)
                break
    # "Oliver and Emma got married"
    if verb.lower_ == "married" and len(subjects) > 1:
        spots = [state.spot(s) for s in subjects]
        for a, b in pairwise(spots):
            yield from emit("FAMILY_OF", a, b, "married")


def _named_beside(state: _Sentence, noun: Token) -> Spot | None:
    """ "the 28th President of the United States, Thomas Woodrow Wilson, was born in Staunton": the person an
    unnamed subject is put beside. The parser hangs the apposition on the noun or, as often, on the last name of
    its "of" phrase ("the United States, Calvin Coolidge"): either way it stays inside the subject's phrase."""
    if noun.pos_ not in ("NOUN", "PROPN"):
        return None
    of_names = [t for p in noun.children if p.lower_ == "of" for t in p.children if t.dep_ == "pobj"]
    for owner in (noun, *of_names):
        for token in owner.children:
            spot = state.at.get(token.i)
            if token.dep_ == "appos" and spot is not None and spot.type == "PERSON":
                return spot
    return None


def _copula(state: _Sentence, be: Token, subjects: list[Token], emit: Emit) -> Iterator[Found]:
    for child in be.children:
        if child.dep_ == "attr":
            for subject_token in subjects:
                subject = state.spot(subject_token)
                if subject is None:  # "Kai's favourite band is Radiohead"
                    owner = next((state.spot(c) for c in subject_token.children if c.dep_ == "poss"), None)
                    favourite = any(c.lower_ in ("favourite", "favorite", "preferred") for c in subject_token.children)
                    if owner is not None and favourite:
                        yield from emit("LIKES", owner, state.spot(child), f"favourite {subject_token.lower_} is")
                    continue
                yield from _described(state, subject, child, emit)
        elif child.dep_ == "prep" and child.lower_ in ("in", "inside", "within"):  # "Kilimanjaro is in Tanzania"
            for pobj in (c for c in child.children if c.dep_ == "pobj"):
                for subject_token in subjects:
                    yield from emit(
                        "LOCATED_IN", state.spot(subject_token), state.spot(pobj), f"{be.lower_} {child.lower_}"
                    )


def _described(state: _Sentence, subject: Spot, noun: Token, emit: Emit) -> Iterator[Found]:
    """`subject` is (a/the) `noun` ...: a class (IS_A), or a relation the noun states ("the CEO of Y")."""
    if state.spot(noun) is not None and noun.i in state.at:
        return  # "X is Y" between two named entities: an alias or an opinion, not stated as a type here
    word = noun.lower_
    relational = _RELATIONAL_NOUNS.get(word)
    owner = next((c for c in noun.children if c.dep_ == "poss"), None)
    if relational and owner is not None:  # "Ana is Pedro's daughter"
        yield from emit(relational, subject, state.spot(owner), f"is {owner.text}'s {word}")
    for prep in (c for c in noun.children if c.dep_ == "prep"):
        for pobj in (c for c in prep.children if c.dep_ == "pobj"):
            target = state.spot(pobj)
            if target is None:
                continue
            if relational and prep.lower_ in ("of", "to"):
                yield from emit(relational, subject, target, f"is {word} of")
            elif prep.lower_ in ("at", "for", "of") and target.type == "ORG" and subject.type == "PERSON":
                yield from emit("WORKS_FOR", subject, target, f"is {word} {prep.lower_}")
            elif prep.lower_ == "in" and target.type == "PLACE":
                yield from emit("LOCATED_IN", subject, target, f"is {word} in")
    # "Anthropic is an AI safety company based in San Francisco"
    for clause in (c for c in noun.children if c.dep_ == "acl" and c.lower_ in ("based", "located", "headquartered")):
        for prep in (c for c in clause.children if c.dep_ == "prep" and c.lower_ == "in"):
            for pobj in (c for c in prep.children if c.dep_ == "pobj"):
                located = "LIVES_IN" if subject.type == "PERSON" else "LOCATED_IN"
                yield from emit(located, subject, state.spot(pobj), f"{clause.lower_} in")
    # "Northwind is a Seattle-based startup": the place is the seat ("based" hangs on the noun, the place on it)
    for based in (c for c in noun.children if c.lower_ == "based"):
        for place in (c for c in based.children if c.dep_ in ("npadvmod", "compound", "nmod")):
            located = "LIVES_IN" if subject.type == "PERSON" else "LOCATED_IN"
            yield from emit(located, subject, state.spot(place), "based in")
    indefinite = any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in noun.children)
    if indefinite and not relational:
        yield from emit("IS_A", subject, state.concept(noun), f"is {'an' if noun.text[0] in 'aeiou' else 'a'}")


def _noun_links(state: _Sentence, token: Token, emit: Emit) -> Iterator[Found]:
    """Relations stated by a noun next to an entity: "Hannah's brother Lukas", "his wife Sofia", "Maria, a nurse"."""
    spot = state.at[token.i]
    if token.i != spot.last - 1:
        return  # once per entity, at its last token (the head of a name)
    linked = [c for c in token.children if c.dep_ in ("compound", "appos", "nmod")]
    if token.dep_ == "appos":
        linked.append(token.head)
    for noun in linked:
        if noun.i in state.at or noun.pos_ != "NOUN":
            continue
        relational = _RELATIONAL_NOUNS.get(noun.lower_)
        if relational == "FAMILY_OF" or relational == "KNOWS":
            owner = next((c for c in noun.children if c.dep_ == "poss"), None)
            if owner is None:
                continue
            other = state.spot(owner)
            if other is None and owner.lower_ in ("his", "her", "their"):
                other = _clause_subject(state, noun)
            yield from emit(relational, spot, other, f"{owner.text} {noun.lower_}")
        elif noun.dep_ == "appos" or token.dep_ == "appos":
            yield from _described(state, spot, noun, emit)


def _clause_subject(state: _Sentence, token: Token) -> Spot | None:
    head = token
    for _ in range(6):
        if head.pos_ in ("VERB", "AUX"):
            for subject in _subjects(head):
                spot = state.spot(subject)
                if spot is not None and spot.type == "PERSON":
                    return spot
            return None
        if head.head is head:
            return None
        head = head.head
    return None


# --- co-occurrence ---------------------------------------------------------------------------------------------


def cooccurrences(text: str, spots: list[Spot], sent: Span) -> Iterator[Found]:
    """Every pair of entities of the sentence (dates left out: they would link everything said on a day)."""
    inside = [s for s in spots if s.first >= sent.start and s.last <= sent.end and s.type != "DATE"]
    for i, a in enumerate(inside):
        for b in inside[i + 1 :]:
            if a.name.casefold() != b.name.casefold():
                proof = evidence(text, sent, a, b)
                yield Found(
                    a, b, "CO_OCCURS", "CO_OCCURS", "cooccurrence", COOCCURRENCE_STRENGTH, proof, b.first - a.last
                )


def sentence_relations(doc: Doc, spots: list[Spot], *, parsed: bool) -> tuple[list[Found], list[Spot]]:
    """Typed relations and co-occurrences of one doc, and the concept spots the typed ones created."""
    at = {i: spot for spot in spots for i in range(spot.first, spot.last)}
    concepts: dict[int, Spot] = {}
    found: list[Found] = []
    text = doc.text  # built anew on every access: once per doc
    sentences = list(_sentences(doc))
    for sent in sentences:
        found += pattern_relations(text, spots, sent)
        found += _source_line_relations(text, spots, sent)
        if parsed:
            found += dependency_relations(doc, text, sent, at, concepts)
            found += _noun_path_found(text, sent, spots)
    typed = {_pair(f.subject, f.object) for f in found}
    # Only the concepts a kept relation names: others were looked at and rejected along the way.
    linked = {id(s): s for f in found for s in (f.subject, f.object) if s.source == "concept"}
    concept_spots = sorted(linked.values(), key=lambda s: s.start)
    # Concepts join the co-occurrence pool only through their typed relation: they exist because of it.
    for sent in sentences:
        found += (f for f in cooccurrences(text, spots, sent) if _pair(f.subject, f.object) not in typed)
    return found, concept_spots


def _source_line_relations(text: str, spots: list[Spot], sent: Span) -> Iterator[Found]:
    """ "Moscow PRAVDA": the paper is based in the city its source line names (ner.py found both)."""
    inside = [s for s in spots if s.first >= sent.start and s.last <= sent.end]
    for place, org in pairwise(inside):
        if place.source == org.source == "dateline" and place.type == "PLACE" and org.type == "ORG":
            yield Found(org, place, "LOCATED_IN", "in", "pattern", PATTERN_STRENGTH, evidence(text, sent, org, place))


def _noun_path_found(text: str, sent: Span, spots: list[Spot]) -> Iterator[Found]:
    for subject, obj, type_, predicate in noun_path_relations(sent, spots):
        type_ = _typed(type_, obj)
        if allowed(type_, subject, obj):
            proof = evidence(text, sent, subject, obj)
            yield Found(subject, obj, type_, predicate, "dependency", DEPENDENCY_STRENGTH, proof)


def _pair(a: Spot, b: Spot) -> frozenset[str]:
    return frozenset((a.name.casefold(), b.name.casefold()))


def _sentences(doc: Doc) -> Iterable[Span]:
    if doc.has_annotation("SENT_START") or doc.has_annotation("DEP"):
        return doc.sents
    return [doc[:]]
