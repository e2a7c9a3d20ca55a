"""Relations stated by nouns rather than by a verb: titles, appositions, origins and seats.

News and notes say who works where and what is where mostly without a verb of their own: "XBT spokesman
Allan Fitzmaurice", "Bruno Pusterla, a top official of the Italian Agricultural Confederation", "Modesto
native George Lucas", "Tennessee Tech in Cookville", "the Phnom Penh government", "Pepperell, based in
West Point", "a Berlin-based startup", "Betsy Ross was born in Philadelphia". In the parse each of these is
a short path between the two names that runs through nouns and prepositions only (a few participles such
as "born" and "based" aside). So: for two named entities of a sentence whose types fit one of the pairs
below, walk the parse from one to the other; if the path is short, crosses no other verb, no list
("A and B") and no clause, the pair's relation holds:

- PERSON and ORG: WORKS_FOR, when a role noun is on the path ("spokesman", "chairman of", "attorney for");
- PERSON and PLACE: LIVES_IN (origin or residence: "native", "of", "from", "born in", "mayor of");
- ORG and PLACE: LOCATED_IN (where the organisation is: "in", "of", "based in", a place named before it);
- PLACE and PLACE: LOCATED_IN, the first in the second, for "in" only ("Gosforth in England").

The words, lengths
and pairs were chosen by measurement on the CoNLL04 training split (bench/graph_extraction.py,
docs/decisions/0020-relations-without-a-verb.md), never on its dev or test split.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from zapomni_core.graph.ner import Spot

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

# Words on the path, at most: "a top official of the Agency" is official -> of -> Agency (3 with the ends).
MAX_INNER = 3
# Participles that state an origin or a seat; every other verb on the path ends it.
_PATH_VERBS = frozenset({"born", "based", "headquartered", "located", "situated", "native"})
_PATH_DEPS = frozenset({"compound", "appos", "poss", "prep", "pobj", "nmod", "npadvmod", "acl", "nsubjpass", "amod"})
_PREPOSITIONS = {
    ("PERSON", "ORG"): frozenset({"of", "for", "at", "with", "from"}),
    ("PERSON", "PLACE"): frozenset({"of", "from", "in"}),
    ("ORG", "PLACE"): frozenset({"in", "of", "at"}),
    ("PLACE", "PLACE"): frozenset({"in"}),
}
_TYPES = {("PERSON", "ORG"): "WORKS_FOR", ("PERSON", "PLACE"): "LIVES_IN", ("ORG", "PLACE"): "LOCATED_IN"}
_TYPES[("PLACE", "PLACE")] = "LOCATED_IN"
# The predicate shown when the names are joined with no word between ("Cambodia's Prince Ranariddh").
_UNWORDED = {("PERSON", "ORG"): "of", ("PERSON", "PLACE"): "from", ("ORG", "PLACE"): "in", ("PLACE", "PLACE"): "in"}


def head(spot: Spot, sent: Span) -> Token:
    """The token of the spot that the parse hangs the rest of the name on."""
    doc = sent.doc
    for i in range(spot.first, spot.last):
        token = doc[i]
        if not (spot.first <= token.head.i < spot.last) or token.head.i == token.i:
            return token
    return doc[spot.last - 1]


def _path(a: Token, b: Token) -> list[Token] | None:
    """The tokens from a to b through their nearest common ancestor, both ends included."""
    up_a = [a, *a.ancestors]
    up_b = [b, *b.ancestors]
    in_b = {t.i: n for n, t in enumerate(up_b)}
    for n, token in enumerate(up_a):
        if token.i in in_b:
            return up_a[: n + 1] + list(reversed(up_b[: in_b[token.i]]))
    return None


def noun_path_relations(sent: Span, spots: list[Spot]) -> Iterator[tuple[Spot, Spot, str, str]]:
    """(subject, object, type, predicate) for each pair of the sentence's spots linked by a noun path."""
    inside = [s for s in spots if s.first >= sent.start and s.last <= sent.end]
    heads = {id(s): head(s, sent) for s in inside}
    owner = {i: s for s in inside for i in range(s.first, s.last)}
    for a in inside:
        for b in inside:
            pair = (a.type, b.type)
            if pair not in _TYPES or a is b:
                continue
            if pair == ("PLACE", "PLACE") and a.start > b.start:
                continue  # the first named is the one inside the other
            words = _linking_words(heads[id(a)], heads[id(b)], owner, a, b, _PREPOSITIONS[pair])
            if words is None and pair == ("PERSON", "PLACE"):
                words = _through_apposition(heads[id(a)], heads[id(b)], owner, a, b)
            if words is None:
                continue
            if pair == ("PERSON", "ORG") and not (_names_a_role(words) or _only_preposition(words)):
                continue
            if pair == ("PLACE", "PLACE") and not any(w.lower_ == "in" for w in words):
                continue
            if pair == ("ORG", "PLACE") and not words and b.start > a.start:
                continue  # "SPACE CENTER, Houston (AP)", "ROYAL OAK, Mich.": mostly places and datelines
            if pair == ("PERSON", "PLACE") and not words and heads[id(b)].dep_ != "poss":
                continue  # "U.S. Sen. X": a home 4 times in 24 on CoNLL04 train; the possessive "Ohio's X" is kept
            if pair == ("PERSON", "PLACE") and _names_a_role(words) and any(w.lower_ == "of" for w in words):
                continue  # "the ambassador of France", "the president of X": a post there, not a home
            predicate = " ".join(w.lower_ for w in words) or _UNWORDED[pair]
            yield a, b, _TYPES[pair], predicate


def _linking_words(
    a: Token, b: Token, owner: dict[int, Spot], first: Spot, second: Spot, prepositions: frozenset[str]
) -> list[Token] | None:
    """The words between the two names on the parse path, or None when the path is not a noun path."""
    path = _path(a, b)
    if path is None:
        return None
    inner = [t for t in path[1:-1] if owner.get(t.i) not in (first, second)]
    if len(inner) > MAX_INNER:
        return None
    top = min(path, key=lambda t: len(list(t.ancestors)))
    for token in path[1:]:
        # The top of the path hangs on the rest of the sentence, not on either name: its own link does not
        # count ("poet Emily Dickinson was born in Amherst": "born" is a clause of "poet" misread as a verb).
        if token is not top and token.dep_ in ("conj", "cc", "relcl", "ccomp", "advcl", "xcomp", "parataxis"):
            return None
    for token in inner:
        if token.i in owner:
            return None  # another name in between: its relation, not this pair's
        if token.pos_ in ("VERB", "AUX") and token.lower_ not in _PATH_VERBS:
            return None
        if token.pos_ == "ADP" and token.lower_ not in prepositions:
            return None
        if token.pos_ not in ("NOUN", "ADP", "VERB", "AUX", "ADJ", "PROPN"):
            return None
        if token is not top and token.dep_ not in _PATH_DEPS:
            return None
    if any(t.pos_ in ("VERB", "AUX") for t in inner) and any(t.pos_ not in ("VERB", "AUX", "ADP") for t in inner):
        return None  # "the 18th president of X, Y, was born in Z": "born in" must hang on the name itself
    return inner


def _through_apposition(a: Token, b: Token, owner: dict[int, Spot], first: Spot, second: Spot) -> list[Token] | None:
    """ "the 30th president of the United States, Calvin Coolidge, was born in Plymouth": the noun the name
    stands beside is the subject of "born", so the path starts there (only for a birth or a seat)."""
    if a.dep_ != "appos" or a.head.pos_ != "NOUN":
        return None
    words = _linking_words(a.head, b, owner, first, second, _PREPOSITIONS[("PERSON", "PLACE")])
    if words is None or not any(w.lower_ in _PATH_VERBS for w in words):
        return None
    return words


def _names_a_role(words: list[Token]) -> bool:
    return any(w.lower_.rstrip(".") in ROLES and w.pos_ in ("NOUN", "PROPN") for w in words)


def _only_preposition(words: list[Token]) -> bool:
    """ "David Welch of Harvard University", "Tom from Acme": a person named with an organisation."""
    return len(words) == 1 and words[0].lower_ in ("of", "from", "at")


# Nouns naming a post, a job or a membership: what makes "X spokesman Y" or "Y, chairman of X" employment.
# Not "judge": 0 right of 4 on CoNLL04 train ("Lee County Circuit Judge X" is cut into wrong names).
ROLES = frozenset(
    """
    spokesman spokeswoman spokesperson official officials president chairman chairwoman chair director
    manager head chief leader secretary minister attorney lawyer correspondent reporter editor publisher
    writer columnist analyst economist scientist researcher professor lecturer teacher student engineer
    employee worker staff member founder cofounder co-founder owner partner executive officer vice
    commander general admiral captain colonel governor senator representative deputy ambassador envoy
    adviser advisor counsel consultant aide assistant coordinator administrator commissioner inspector
    agent detective justice prosecutor candidate nominee delegate chancellor premier
    anchorman anchorwoman newsman newswoman commentator lobbyist
    treasurer controller auditor accountant developer designer architect programmer nurse doctor physician
    surgeon pilot driver coach player captain trainer curator librarian principal dean provost rector
    lt capt col sgt gen adm cmdr sen rep gov supt insp det prof
    """.split()
)
