"""A person's home named as a chain, "Burchard, Neb.", is one place: the town as its state qualifies it.

News and notes give where someone lives or comes from as "City, State" ("Leslie Kota of Troy, Mich.", "born
in Springfield, Ill."). Read as two places, the graph says the person lives in "Burchard" (one of several
towns of that name, which a name-keyed graph would fold into one node) and, separately, that Burchard is in
Neb. Read as one, the home keeps the qualifier that tells the towns apart. CoNLL04's annotators read it the
same way: on its training split a "City, State" that is a person's home is one span 69 times and two 12 times,
while a "City, State" that is not anyone's home is two places (Located_In) 150 times and one span 15 times
(docs/decisions/0021-news-relations-by-measurement.md). So only a chain that is the object of a LIVES_IN becomes
one place, and only when the second part is a US state: in US usage (AP style) the state is how a town is
named apart from its namesakes, while "Bergen, Norway" names a city and the country it is in (the everyday
set's reading, kept). Every other "Stockholm, Sweden" stays a LOCATED_IN between two places.
"""

from __future__ import annotations

import re
from dataclasses import replace

from zapomni_core.graph.ner import Spot
from zapomni_core.graph.relations import Found, gap_text, is_place_pair

# US states, their AP abbreviations and postal codes, compared without dots and spaces ("N. Y." = "NY").
US_STATES = frozenset(
    """
    alabama ala al alaska ak arizona ariz az arkansas ark ar california calif cal ca colorado colo co connecticut
    conn ct delaware del de florida fla fl georgia ga hawaii hi idaho id illinois ill il indiana ind in iowa ia
    kansas kan kans ks kentucky ky louisiana la maine me maryland md massachusetts mass ma michigan mich mi
    minnesota minn mn mississippi miss ms missouri mo montana mont mt nebraska neb nebr ne nevada nev nv
    newhampshire nh newjersey nj newmexico nm newyork ny northcarolina nc northdakota nd ohio oh oklahoma okla ok
    oregon ore or pennsylvania penn pa rhodeisland ri southcarolina sc southdakota sd tennessee tenn tn texas
    tex tx utah ut vermont vt virginia va washington wash wa westvirginia wva wv wisconsin wis wi wyoming wyo wy
    dc districtofcolumbia
    """.split()
)


_HOME_CUE = re.compile(r"\b(?:born(?:\s+(?:in|near|at))?|native\s+of|hometown\s+of|home\s+in|is\s+from|was\s+from)\s+$")


def _state(name: str) -> bool:
    return "".join(c for c in name.casefold() if c.isalpha()) in US_STATES


def joined_homes(text: str, spots: list[Spot], found: list[Found]) -> list[Spot] | None:
    """The spots with each home "A, B" (A the object of a LIVES_IN) made one PLACE, or None if there is none."""
    homes = {id(f.object) for f in found if f.type == "LIVES_IN" and f.object.type == "PLACE"}
    # A birthplace or a hometown is a home even where the person was not found ("the 13th president ...
    # Millard Fillmore, was born in Summerhill, N.Y.", "his hometown of Russell, Kan.").
    homes |= {id(s) for s in spots if s.type == "PLACE" and _HOME_CUE.search(text[max(0, s.start - 40) : s.start])}
    if not homes:
        return None
    out: list[Spot] = []
    joined = False
    i = 0
    while i < len(spots):
        a = spots[i]
        b = spots[i + 1] if i + 1 < len(spots) else None
        if (
            b is not None
            and id(a) in homes
            and b.type == "PLACE"
            and _state(b.name)
            and gap_text(text[a.end : b.start]) == ","
            and is_place_pair(a, b, spots, i, text)
        ):
            out.append(
                replace(
                    a, end=b.end, last=b.last, name=text[a.start : b.end], confidence=min(a.confidence, b.confidence)
                )
            )
            joined = True
            i += 2
            continue
        out.append(a)
        i += 1
    return out if joined else None
