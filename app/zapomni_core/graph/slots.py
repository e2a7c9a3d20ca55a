"""Names typed by the slot they fill: "works for X", "X was founded by", "moved to X".

spaCy's small model, trained on news, types names it has never seen by their look: "Acme Robotics" came
out as a WORK_OF_ART, "Zalando" and "Farfetch" as people, "Lyon" after "moved to" as an ORG, and "Acme
Robotics was founded by Tom Becker" gave no "Acme Robotics" at all. The words around a name settle what
it is where the model guesses, so these rules add the name, or retype the model's span of exactly that
name (the same mechanism as the person rules in `ner.py`). Each rule is a phrase whose slot only an
organisation (or only a place) fills.
"""

from __future__ import annotations

import re

_WORD = r"[A-Z][\w&'’.-]*[\w&]"
_NAME = rf"(?P<name>{_WORD}(?:\s+(?:&\s+)?{_WORD}){{0,3}})"
_END = r"(?![\w'’-])"
_ROLE = (
    r"CEO|CTO|CFO|COO|founder|co-founder|cofounder|head|director|manager|president|chairman|chairwoman|"
    r"owner|intern|employee|engineer|developer|designer|spokesman|spokeswoman|spokesperson"
)

ORG_SLOTS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"\b(?:works|worked|working|work|interned|interning)\s+(?:for|at)\s+{_NAME}{_END}"),
    re.compile(rf"\b(?:hired|employed|recruited|acquired|bought)\s+by\s+{_NAME}{_END}"),
    re.compile(rf"\b(?:joined|joins|join|joining)\s+{_NAME}\s+as\s+(?:a|an|the|its|their)\b"),
    re.compile(rf"\b(?:{_ROLE})\s+(?:of|at)\s+{_NAME}{_END}"),
    # "Globex spokesman Ravi Menon", "Initech CEO Bill Lumbergh"
    re.compile(rf"{_NAME}\s+(?:spokesman|spokeswoman|spokesperson|CEO|CTO|CFO|chairman|chairwoman|founder)\s+[A-Z]"),
    # A wire story's byline, "(By ITAR-TASS diplomatic correspondent Yuriy Tyssovsky)": "By" is no part of the name.
    re.compile(rf"(?:\bBy\s+)?(?<![\w-]){_NAME}\s+(?:[a-z]+\s+)?correspondents?\s+[A-Z]"),
    re.compile(
        rf"(?:^|(?<=[.;:!?]\s)|(?<=\n)){_NAME}\s+(?:was|is|has been)\s+(?:co-?)?"
        r"(?:founded|headquartered|incorporated|acquired)\b"
    ),
    re.compile(
        rf"(?:^|(?<=[.;:!?]\s)|(?<=\n)){_NAME}\s+is\s+an?\s+(?:[\w-]+\s+){{0,3}}"
        r"(?:startup|company|firm|agency|bank|nonprofit|non-profit|charity|consultancy|studio|manufacturer|retailer)\b"
    ),
)
PLACE_SLOTS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"\b(?:moved|moves|moving|relocated|relocating|emigrated)\s+(?:back\s+)?to\s+{_NAME}{_END}"),
    re.compile(rf"\b(?:moved|moves|moving|relocated|emigrated)\s+from\s+{_NAME}\s+to\b"),
    re.compile(rf"\b(?:lives|lived|living|grew up|was born|were born)\s+in\s+{_NAME}{_END}"),
)
