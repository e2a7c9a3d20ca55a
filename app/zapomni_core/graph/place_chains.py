"""A person's home named as a chain, "Burchard, Neb.", is one place: the town as its state qualifies it.

News and notes give where someone lives or comes from as "City, State" ("Leslie Kota of Troy, Mich.", "born
in Springfield, Ill."). Read as two places, the graph says the person lives in "Burchard" (one of several
towns of that name, which a name-keyed graph would fold into one node) and, separately, that Burchard is in
Neb. Read as one, the home keeps the qualifier that tells the towns apart. CoNLL04's annotators read it the
same way: on its training split a "City, State" that is a person's home is one span 69 times and two 12 times,
while a "City, State" that is not anyone's home is two places (Located_In) 150 times and one span 15 times
(docs/decisions/0021-relations-by-measurement.md). So only a chain that is the object of a LIVES_IN becomes
one place; every other "Stockholm, Sweden" stays a LOCATED_IN between two places.
"""

from __future__ import annotations

from dataclasses import replace

from zapomni_core.graph.ner import Spot
from zapomni_core.graph.relations import Found, gap_text, is_place_pair


def joined_homes(text: str, spots: list[Spot], found: list[Found]) -> list[Spot] | None:
    """The spots with each home "A, B" (A the object of a LIVES_IN) made one PLACE, or None if there is none."""
    homes = {id(f.object) for f in found if f.type == "LIVES_IN" and f.object.type == "PLACE"}
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
