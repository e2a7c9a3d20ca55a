"""Entities without an LLM: spaCy's NER mapped to our types, corrected and completed by cheap rules.

spaCy's small English model is trained on news (OntoNotes): on notes, chat and code it misses tech names,
types single first names as ORG and reads identifiers as people. The rules below fix the commonest of
those mistakes; every rule is a shape or a word list anyone can check, never a guess from context:

- identifiers by shape (`ERR_CONN_RESET`, `foo.bar()`, `snake_case`, `HttpClient`, `settings.toml`, `code`);
- well-known software names (a fixed list) as PRODUCT, whatever the model said;
- the head word of a capitalised name decides its type where it is unambiguous ("... Act" is a LAW,
  "Battle of ..." an EVENT, "... University" an ORG, "... Bridge" a PLACE);
- a capitalised name followed by a verb only people do ("Maria moved", "Sara likes") or standing in a
  family relation ("Hannah's brother Lukas") is a PERSON;
- names the model found in lower case ("urllib3" as PERSON) are dropped: English proper names are
  capitalised, and the model's guesses on lower-case tokens are mostly wrong.

Noun-phrase concepts (CONCEPT) are not found here: `relations.py` adds one only where a typed relation
names it ("Redis is an in-memory data store", "the billing service uses PostgreSQL"), which keeps them
few and useful.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from zapomni_core.graph.datelines import source_lines, wire_datelines
from zapomni_core.graph.slots import ORG_SLOTS, PLACE_SLOTS

if TYPE_CHECKING:  # spaCy itself is imported when the extractor is built, off the event loop (a second or more)
    from spacy.tokens import Doc

# spaCy (OntoNotes) label -> our type. CARDINAL, ORDINAL, QUANTITY, MONEY, PERCENT and TIME are dropped:
# "three", "second", "5 km", "$10", "20 %" and "9 am" are values, not things a graph should link.
NER_TYPES: dict[str, str] = {
    "PERSON": "PERSON",
    "ORG": "ORG",
    "GPE": "PLACE",
    "LOC": "PLACE",
    "FAC": "PLACE",
    "NORP": "GROUP",
    "PRODUCT": "PRODUCT",
    "EVENT": "EVENT",
    "WORK_OF_ART": "WORK_OF_ART",
    "LAW": "LAW",
    "LANGUAGE": "LANGUAGE",
    "DATE": "DATE",
}

# Confidence by source. The sm model gives no scores; an NER mention gets the model's own published
# precision for its label (meta.json, OntoNotes dev set: PERSON 0.86, GPE 0.91, ORG 0.79, PRODUCT 0.53, FAC
# 0.39, ...), read at load time, so a weak label is never presented as certain. Rules get fixed values:
# an identifier's shape is nearly unambiguous, the software list is curated, the others are heuristics.
NER_FALLBACK_CONFIDENCE = 0.5  # a label the model's meta has no figure for
IDENTIFIER_CONFIDENCE = 0.9
SOFTWARE_CONFIDENCE = 0.85
NAME_RULE_CONFIDENCE = 0.7  # head-word and person rules
CONCEPT_CONFIDENCE = 0.5  # set by relations.py, stated here with the others

MAX_NAME_CHARS = 120  # longer "names" are runs of capitalised words, not names


@dataclass(frozen=True)
class Spot:
    """One mention of an entity in a doc: character and token offsets, the name as written, its type."""

    start: int  # character offsets in doc.text
    end: int
    first: int  # token offsets, [first, last)
    last: int
    name: str
    type: str
    confidence: float
    source: str  # "ner" | "identifier" | "software" | "rule" | "concept": what found it


# --- identifiers by shape -----------------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"`([^`\s]{1,80})`")
# foo(), parse_config(), np.linalg.norm(), JobQueue.claim_next(); arguments are left out of the name.
_CALL = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\((?:\))?")
# functools.lru_cache, os.path.join, settings.toml, config.local.yaml: every part 2+ characters (not "e.g"),
# the last one starting in lower case (not "Dr.Smith"). Node.js is one too; the software list retypes it.
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]+)*\.[a-z_][A-Za-z0-9_]+(?![\w(])")
# ERR_CONN_RESET, DATABASE_URL, retry_with_backoff, _private
_SNAKE = re.compile(r"(?<![\w.])_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*(?![\w(])")
# HttpClient, ConfigError, getUserName: two or more humps. "iPhone"/"eBay" (one-letter first hump) and
# "PostgreSQL"/"FalkorDB" (an all-caps hump) do not match.
_CAMEL = re.compile(r"(?<![\w.])(?:[A-Z][a-z0-9]+|[a-z][a-z0-9]+)(?:[A-Z][a-z0-9]+)+(?![\w(])")
# Suffixes that mark a CamelCase word as a code symbol even when the NER model calls it an ORG.
_CODE_SUFFIXES = (
    "Error", "Exception", "Warning", "Client", "Server", "Manager", "Handler", "Factory", "Config",
    "Queue", "Pool", "Core", "Service", "Builder", "Provider", "Adapter", "Controller", "Store", "Cache",
    "Loader", "Parser", "Reader", "Writer", "Base", "Mixin", "Request", "Response", "Session", "Context",
    "Settings", "Extractor", "Embedder", "Index", "Worker", "Job", "Interface", "Protocol", "Type", "Model",
)  # fmt: skip
_NAME_PREFIX = re.compile(r"(?:Mc|Mac|De|Di|Da|Du|Le|La|Van|Von|Del|Della)[A-Z][a-z]+$")
_NOT_DOTTED_ENDINGS = {"com", "org", "net", "io", "de", "uk", "eu", "gov", "edu"}  # web addresses read as places


# --- well-known software, always PRODUCT ------------------------------------------------------------------
# Curated, general list (languages, databases, frameworks, tools, platforms). Matched case-sensitively and
# whole-word; names that are also common words, first names or headings (Go, Swift, Julia, Spring, Express,
# Notion, Safari, Windows, Eclipse, Outlook, Gemini) are left out on purpose, and so are GitHub and GitLab,
# named as companies as often as products ("Microsoft bought GitHub"): the NER model knows both.
SOFTWARE: frozenset[str] = frozenset(
    [
        *"""
    Python JavaScript TypeScript Java Kotlin Rust Ruby PHP Perl Scala Haskell Elixir Erlang Clojure Dart Lua
    Fortran COBOL Bash PowerShell WebAssembly SQL GraphQL gRPC HTML CSS JSON YAML TOML Markdown LaTeX C++ C#
    PostgreSQL Postgres MySQL MariaDB SQLite MongoDB Redis Valkey Memcached Cassandra Elasticsearch OpenSearch
    Neo4j FalkorDB DynamoDB ClickHouse InfluxDB CouchDB Kafka RabbitMQ ZooKeeper etcd
    React Vue Angular Svelte jQuery Django Flask FastAPI Starlette Rails Laravel Symfony Next.js Nuxt Node.js
    Deno NumPy SciPy pandas Polars PyTorch TensorFlow Keras spaCy scikit-learn Pydantic SQLAlchemy Celery
    Airflow Spark Hadoop Pytest Jupyter Tailwind Webpack Vite npm pip Poetry Conda Homebrew
    Docker Kubernetes Terraform Ansible Git Jenkins Nginx Grafana Kibana Prometheus
    Vim Neovim Emacs IntelliJ PyCharm Xcode
    Linux Ubuntu Debian Fedora CentOS macOS iOS Android ChromeOS FreeBSD
    Chrome Firefox Chromium Slack Jira Confluence Trello Figma Photoshop WordPress Excel PowerPoint
    Firebase Supabase Heroku Vercel Netlify AWS Azure BigQuery S3 EC2 Cloudflare
    ChatGPT Ollama Copilot Bitcoin Ethereum Wikipedia
    """.split(),
        "VS Code", "Visual Studio Code", "Visual Studio", "Google Cloud", "Amazon Web Services", "Google Chrome",
    ]
)  # fmt: skip
# A software name may carry its version ("Python 3.12", "Postgres 16"); the version belongs to the name.
_VERSION = r"(?:\s+v?\d+(?:\.\d+)*)?"
_SOFTWARE = re.compile(
    r"(?<![\w.@/-])(?:"
    + "|".join(re.escape(name) for name in sorted(SOFTWARE, key=len, reverse=True))
    + r")"
    + _VERSION
    + r"(?![\w@/-]|\.[A-Za-z])"
)


# --- head words and people ---------------------------------------------------------------------------------

_CAP = r"[A-Z][\w'’-]*"
# The head word of a capitalised name and the type it implies. Checked on NER spans (to retype) and on
# capitalised phrases the model missed ("Treaty of Lisbon" came out as just "Lisbon" GPE).
_HEAD_TYPES: dict[str, str] = {
    **dict.fromkeys(
        "Act Treaty Regulation Directive Agreement Accord Convention Constitution Amendment Charter Bill Code".split(),
        "LAW",
    ),
    **dict.fromkeys(
        "Battle War Olympics Games Marathon Festival Summit Conference Election Revolution Championship "
        "Championships Cup Expo Strike Uprising Crisis Pandemic Earthquake Hurricane Flood Siege".split(),
        "EVENT",
    ),
    **dict.fromkeys(
        "University College School Institute Foundation Hospital Bank Corporation Corp Inc Ltd GmbH Labs "
        "Party Club Association Society Council Committee Museum Agency Ministry Department Court Congress "
        "Parliament Senate Army Navy Police Church Orchestra Academy Union Commission Organization "
        "Organisation".split(),
        "ORG",
    ),
    **dict.fromkeys(
        "Bridge Tower Airport Station River Mountain Mount Lake Park Street Avenue Square Palace Cathedral "
        "Castle Island Islands Valley Desert Sea Ocean Bay Canyon Forest Rainforest".split(),
        "PLACE",
    ),
}
# Words that, as a name's LAST word, do not decide alone: "Code" of "VS Code" is software; "Games" of a
# company name. Only these first-word heads are used for them ("Battle of X", "Treaty of X", "Mount X").
_LEADING_HEADS = {"Battle", "Siege", "Treaty", "University", "Bank", "Museum", "Church", "Council", "Congress"}
_PLACE_PREFIXES = {"Mount", "Lake", "Lac", "Cape", "Isle"}  # "Mount Kilimanjaro", "Lake Geneva"
_AMBIGUOUS_TRAILING = {"Code", "Games", "Union", "Bill", "Cup", "Park", "Street", "Square"}
# Three shapes, searched separately so that one cannot hide another ("The Treaty" before "Treaty of Lisbon").
_HEADED_PHRASES = (
    re.compile(
        rf"(?<![\w-])(?:\d{{4}}\s+)?{_CAP}(?:\s+{_CAP}){{0,6}}\s+(?:{'|'.join(_HEAD_TYPES)})(?:\s+(?:[IVX]+|\d+))?(?![\w-])"
    ),
    re.compile(rf"(?<![\w-])(?:{'|'.join(_LEADING_HEADS)})\s+of\s+(?:the\s+)?{_CAP}(?:\s+{_CAP}){{0,5}}(?![\w-])"),
    re.compile(r"(?<![\w-])World\s+War\s+(?:I{1,3}|One|Two|1|2)(?![\w-])"),
    re.compile(rf"(?<![\w-])(?:{'|'.join(_PLACE_PREFIXES)})\s+{_CAP}(?:\s+{_CAP}){{0,2}}(?![\w-])"),
)

# Verbs whose subject is a person in notes and chat ("Maria moved to Lisbon", "Ravi prefers Vim").
_PERSON_VERBS = (
    "moved|moves|lives|lived|works|worked|studies|studied|likes|liked|loves|loved|prefers|preferred|knows|knew|"
    "met|married|marries|grew|speaks|spoke|teaches|taught|adopted|visited|visits|wants|wanted|thinks|thought|"
    "feels|felt|enjoys|enjoyed|hates|hated|learned|learnt|is learning|was born|got married|retired|graduated|"
    "is allergic|is friends|is a vegetarian|is vegan|is a vegan|said|says|told|asked|called|emailed|texted"
)
_KIN = (
    "sister|brother|mother|father|mom|mum|dad|son|daughter|wife|husband|cousin|aunt|uncle|niece|nephew|"
    "grandmother|grandfather|grandma|grandpa|granddaughter|grandson|sibling|stepmother|stepfather|stepson|"
    "stepdaughter|fiancée|fiancé|fiance|boyfriend|girlfriend|partner|friend|colleague|neighbour|neighbor|"
    "boss|roommate|flatmate"
)
_ROLES = (
    "nurse|doctor|physician|surgeon|cardiologist|dentist|pharmacist|teacher|professor|lecturer|student|engineer|"
    "developer|programmer|scientist|researcher|designer|lawyer|architect|accountant|writer|author|journalist|"
    "artist|painter|musician|singer|actor|actress|chef|cook|baker|farmer|pilot|manager|CEO|CTO|CFO|founder|"
    "co-founder|director|consultant|analyst|vegetarian|vegan|nanny|plumber|electrician|mechanic|politician|athlete"
)
_PERSON_NAME = r"(?P<name>[A-Z][a-zà-ÿ'’-]+(?:\s+[A-Z][a-zà-ÿ'’-]+)?)"
# "call Jonas", "lunch with Ines": in notes, a capitalised word after these is a person
_PERSON_AFTER_VERBS = re.compile(
    rf"\b(?:call|email|text|ask|tell|meet|met|remind|(?:lunch|dinner|coffee|friends|married)\s+(?:with|to))"
    rf"\s+{_PERSON_NAME}(?![\w'’])"
)
# These rules may also correct the model's type for the same name (Maria: ORG -> PERSON);
# `_PERSON_AFTER_VERBS` only adds a name the model missed ("call Google" stays an ORG).
_RETYPING_PERSON_RULES = (
    # "Maria moved", "Lena Fischer lives": at the start of a sentence or clause.
    re.compile(rf"(?:^|(?<=\n)|(?<=[.;:!?,]\s)|(?<=\band\s)|(?<=\bbut\s)){_PERSON_NAME}\s+(?:{_PERSON_VERBS})\b"),
    # "Hannah's brother", "Pedro's daughter"
    re.compile(rf"\b{_PERSON_NAME}['’]s\s+(?:{_KIN})\b"),
    # "my sister Anna", "his wife Sofia", "grandmother Rosa"
    re.compile(rf"\b(?:{_KIN})\s+{_PERSON_NAME}(?![\w'’])"),
    # "Ana is Pedro's daughter", "Hugo is Marc's cousin": the subject too
    re.compile(rf"(?:^|(?<=[.;:!?,]\s)){_PERSON_NAME}\s+is\s+[A-Z][a-z]+['’]s\s+(?:{_KIN})\b"),
    # "Oliver and Emma got married", "Carlos and Sofia met"
    re.compile(rf"\b{_PERSON_NAME}\s+and\s+[A-Z][a-z]+\s+(?:got married|married|met|are friends)\b"),
    re.compile(rf"\b[A-Z][a-z]+\s+and\s+{_PERSON_NAME}\s+(?:got married|married|met|are friends)\b"),
    # "Bruno is a software engineer", "Olga is a nurse"
    re.compile(rf"(?:^|(?<=[.;:!?,]\s)){_PERSON_NAME}\s+(?:is|was)\s+(?:a|an|the)\s+(?:[a-z-]+\s+)?(?:{_ROLES})\b"),
    # "Victor knows Isabel", "Carlos married Sofia"
    re.compile(rf"\b(?:knows|knew|met|married|marries|befriended|is dating|was dating)\s+{_PERSON_NAME}(?![\w'’])"),
)
_PERSON_RULES: tuple[tuple[re.Pattern[str], bool], ...] = (
    *((rule, True) for rule in _RETYPING_PERSON_RULES),
    (_PERSON_AFTER_VERBS, False),
)
# "speaks Tamil and English", "is learning Portuguese": human languages (the model reads them as places or
# groups; "French" alone is as often a group as a language, so only these verbs decide).
_LANGUAGE_RULE = re.compile(
    r"\b(?:speaks|speak|spoke|speaking|learning|learns|learn|learned|learnt|fluent in|translated into)\s+"
    r"(?P<names>[A-Z][a-z]+(?:(?:,\s*|\s+and\s+|\s+or\s+)[A-Z][a-z]+)*)"
)
# "Galaxy S24", "iPhone 15", "Boeing 747": a name ending in a model number is a product (not a year).
_MODEL_NUMBER = re.compile(r"(?:[A-Z]{1,3}\d{1,4}[a-z]?|\d{1,4}[A-Za-z]{0,2})")
_YEAR = re.compile(r"(?:1[5-9]|20)\d\d")
# A DATE must name a point in time: a month or weekday, a year or decade, or a relative day or period
# ("yesterday", "last spring"). Durations and stray numbers the model calls dates ("36 months", "16-week",
# "as early as 28", "10.9 +") are not things to link.
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun"
_PERIODS = r"week|weekend|month|year|decade|century|spring|summer|autumn|fall|winter|quarter|semester|term|\w+day"
_POINT_IN_TIME = re.compile(
    rf"\b(?:{_MONTHS}|{_DAYS})\b|\b(?:1[0-9]|20)\d\d(?:s|'s)?\b|\b(?:today|yesterday|tomorrow|tonight)\b"
    rf"|\b(?:last|next|this|past|coming|previous|following|early|late|mid)[\s-]+(?:{_PERIODS})\b|\bago\b"
    rf"|\b(?:spring|summer|autumn|fall|winter|christmas|easter|new year)\b",
    re.IGNORECASE,
)
# Headings that open sections of notes and abstracts; the model glues them to the next name ("BACKGROUND X").
_HEADINGS = frozenset(
    "ABSTRACT BACKGROUND INTRODUCTION OBJECTIVE OBJECTIVES PURPOSE AIM AIMS METHOD METHODS DESIGN SETTING SETTINGS "
    "PARTICIPANTS PATIENTS RESULTS RESULT FINDINGS CONCLUSION CONCLUSIONS INTERPRETATION DISCUSSION SUMMARY "
    "CONTEXT IMPORTANCE MEASUREMENTS INTERVENTIONS NOTE NOTES TODO FIXME WARNING IMPORTANT UPDATE".split()
)
# Capitalised words that start sentences and are never people.
_NOT_NAMES = frozenset(
    """I We You They He She It This That These Those There Here Everyone Everybody Someone Somebody Nobody
    People Users Customers Developers Engineers Everything Nothing Something Our My Your Their His Her Its The
    A An Please Remind Call Email Text Ask Tell Meet Today Tomorrow Yesterday Who What When Where Why How
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July
    August September October November December Also Then Now Later Still Just Maybe Dear Hi Hello Thanks""".split()
)
# Job titles the model reads as organisations ("the CTO of Brightline"): a role, never a name.
_TITLES = frozenset("CEO CTO CFO COO CIO CMO VP".split())
_NAME_PARTICLES = frozenset({"de", "da", "di", "du", "von", "van", "der", "den", "la", "le", "bin", "al"})
_LEADING_ARTICLE = re.compile(r"^(?:the|The|THE)\s+")
_TRAILING_JUNK = re.compile(r"(?:['’]s|['’]|[\s.,;:!?\"“”()\[\]-])+$")
_LEADING_JUNK = re.compile(r"^[\s\"“”'‘(\[-]+")


def clean_name(text: str) -> str:
    """The name as written, without a leading "the", a possessive or surrounding punctuation."""
    name = _LEADING_JUNK.sub("", text.strip())
    name = _LEADING_ARTICLE.sub("", name)
    return _TRAILING_JUNK.sub("", name)


def ner_confidences(meta: Mapping[str, object]) -> dict[str, float]:
    """The model's published precision per NER label (see the comment on the confidences above)."""
    performance = meta.get("performance")
    per_type = performance.get("ents_per_type", {}) if isinstance(performance, dict) else {}
    out: dict[str, float] = {}
    for label in NER_TYPES:
        figures = per_type.get(label) if isinstance(per_type, dict) else None
        precision = figures.get("p") if isinstance(figures, dict) else None
        out[label] = round(float(precision), 2) if isinstance(precision, int | float) else NER_FALLBACK_CONFIDENCE
    return out


def find_spots(doc: Doc, confidences: Mapping[str, float]) -> list[Spot]:
    """Every entity mention of the doc, non-overlapping, in text order."""
    text = doc.text  # built anew on every access: once per doc
    candidates: list[tuple[int, Spot]] = []  # (priority, spot): higher priority wins an overlap
    for spot in _identifier_spots(doc, text):
        candidates.append((4, spot))
    for spot in _software_spots(doc, text):
        candidates.append((5, spot))  # over the dotted-name shape: Node.js is software, not a file
    ner = list(_ner_spots(doc, confidences))
    for spot in _headed_spots(doc, text):
        # A headed phrase wins over the NER spans it overlaps ("Treaty of Lisbon" over "Lisbon" GPE).
        candidates.append((2, spot))
    for spot in ner:
        candidates.append((1, spot))
    named = [*_person_spots(doc, text), *_language_spots(doc, text), *_slot_spots(doc, text)]
    chosen = _resolve(candidates)
    return _source_line_spots(doc, text, _apply_names(chosen, named))


def _span(doc: Doc, start: int, end: int, name: str, type_: str, confidence: float, source: str) -> Spot | None:
    span = doc.char_span(start, end, alignment_mode="expand")
    if span is None or not name or len(name) > MAX_NAME_CHARS:
        return None
    return Spot(start, end, span.start, span.end, name, type_, confidence, source)


def _identifier_spots(doc: Doc, text: str) -> Iterable[Spot]:
    for match in _CODE_SPAN.finditer(text):
        spot = _span(
            doc, match.start(1), match.end(1), match.group(1), "IDENTIFIER", IDENTIFIER_CONFIDENCE, "identifier"
        )
        if spot:
            yield spot
    for pattern in (_CALL, _DOTTED, _SNAKE):
        for match in pattern.finditer(text):
            name = match.group(0)
            if pattern is _CALL and not name.endswith("()"):
                name = name[:-1]  # "foo(" of "foo(x, y)": the name without its arguments
                if "." not in name and "_" not in name:
                    continue  # "word(" in prose ("the parser (spaCy)"), not a call
            if pattern is _DOTTED and name.rsplit(".", 1)[1].lower() in _NOT_DOTTED_ENDINGS:
                continue
            spot = _span(
                doc, match.start(), match.start() + len(name), name, "IDENTIFIER", IDENTIFIER_CONFIDENCE, "identifier"
            )
            if spot:
                yield spot
    for match in _CAMEL.finditer(text):
        name = match.group(0)
        if (len(name) < 6 and name[0].isupper()) or _NAME_PREFIX.match(name):
            continue  # "NaCl", "McDonald", "DiCaprio": chemistry and surnames, not code
        # Brand-like CamelCase (GitHub, YouTube) is left to the NER model unless it ends like a code symbol.
        coded = name.endswith(_CODE_SUFFIXES) or name[0].islower()
        spot = _span(
            doc,
            match.start(),
            match.end(),
            name,
            "IDENTIFIER",
            IDENTIFIER_CONFIDENCE,
            "identifier" if coded else "camel",
        )
        if spot:
            yield spot


def _software_spots(doc: Doc, text: str) -> Iterable[Spot]:
    for match in _SOFTWARE.finditer(text):
        spot = _span(doc, match.start(), match.end(), match.group(0), "PRODUCT", SOFTWARE_CONFIDENCE, "software")
        if spot:
            yield spot


def _ner_spots(doc: Doc, confidences: Mapping[str, float]) -> Iterable[Spot]:
    for ent in doc.ents:
        type_ = NER_TYPES.get(ent.label_)
        if type_ is None:
            continue
        name = clean_name(ent.text)
        words = name.split()
        while words and words[0].rstrip(":") in _HEADINGS:
            words = words[1:]
        name = " ".join(words)
        if not name or name in _TITLES:
            continue
        if type_ == "DATE" and not _POINT_IN_TIME.search(name):
            continue
        if type_ != "DATE":
            # A name ends in a capitalised word or a number: "Paramecium tetraurelia" -> "Paramecium".
            while len(words) > 1 and words[-1][:1].islower() and words[-1] not in _NAME_PARTICLES:
                words = words[:-1]
            name = " ".join(words)
        if type_ != "DATE" and not any(c.isupper() for c in name):
            continue  # lower-case "names" are the model's guesses on ordinary or code words
        if type_ != "DATE":
            type_ = _head_type(name) or type_
        words = name.split()
        if (
            ent.label_ in ("ORG", "PERSON", "GPE", "LOC")
            and len(words) > 1
            and _MODEL_NUMBER.fullmatch(words[-1])
            and not _YEAR.fullmatch(words[-1])
        ):
            type_ = "PRODUCT"
        offset = ent.text.find(name)
        if offset < 0:
            continue  # the heading strip changed the spacing inside the name: rare, and not worth a guess
        start = ent.start_char + offset
        confidence = confidences.get(ent.label_, NER_FALLBACK_CONFIDENCE)
        # "Oliver and Emma" as one PERSON: two people.
        parts = name.split(" and ") if type_ == "PERSON" else [name]
        for part in parts:
            at = start + name.find(part)
            spot = _span(doc, at, at + len(part), part, type_, confidence, "ner")
            if spot:
                yield spot


def _head_type(name: str) -> str | None:
    words = name.split()
    if len(words) < 2:
        return None
    if words[0] in _LEADING_HEADS and len(words) > 2 and words[1] == "of":
        return _HEAD_TYPES[words[0]]
    if words[0] in _PLACE_PREFIXES:
        return "PLACE"
    last = words[-1] if not re.fullmatch(r"[IVX]+|\d+", words[-1]) else words[-2]
    if last in _AMBIGUOUS_TRAILING:
        return None
    return _HEAD_TYPES.get(last)


def _headed_spots(doc: Doc, text: str) -> Iterable[Spot]:
    for match in (m for pattern in _HEADED_PHRASES for m in pattern.finditer(text)):
        name = clean_name(match.group(0))
        words = name.split()
        if words and words[0] in _NOT_NAMES:
            name = " ".join(words[1:])
        type_ = _head_type(name) if name else None
        if name.startswith("World War"):
            type_ = "EVENT"
        if type_ is None:
            continue
        start = match.start() + match.group(0).find(name)
        spot = _span(doc, start, start + len(name), name, type_, NAME_RULE_CONFIDENCE, "rule")
        if spot:
            yield spot


def _person_spots(doc: Doc, text: str) -> Iterable[tuple[Spot, bool]]:
    for rule, may_retype in _PERSON_RULES:
        for match in rule.finditer(text):
            name = match.group("name")
            words = name.split()
            while words and words[0] in _NOT_NAMES:
                words = words[1:]
            if not words or words[-1] in _NOT_NAMES:
                continue
            name = " ".join(words)
            start = match.start("name") + match.group("name").find(name)
            spot = _span(doc, start, start + len(name), name, "PERSON", NAME_RULE_CONFIDENCE, "rule")
            if spot:
                yield spot, may_retype


def _slot_spots(doc: Doc, text: str) -> Iterable[tuple[Spot, bool]]:
    for type_, rules in (("ORG", ORG_SLOTS), ("PLACE", PLACE_SLOTS)):
        for rule in rules:
            for match in rule.finditer(text):
                name = clean_name(match.group("name"))
                if not name or name.split()[0] in _NOT_NAMES:
                    continue
                start = match.start("name") + match.group("name").find(name)
                spot = _span(doc, start, start + len(name), name, type_, NAME_RULE_CONFIDENCE, "rule")
                if spot:
                    yield spot, True


def _language_spots(doc: Doc, text: str) -> Iterable[tuple[Spot, bool]]:
    for match in _LANGUAGE_RULE.finditer(text):
        offset = match.start("names")
        for word in re.finditer(r"[A-Z][a-z]+", match.group("names")):
            start = offset + word.start()
            spot = _span(
                doc, start, start + len(word.group(0)), word.group(0), "LANGUAGE", NAME_RULE_CONFIDENCE, "rule"
            )
            if spot:
                yield spot, True


def _resolve(candidates: list[tuple[int, Spot]]) -> list[Spot]:
    """Non-overlapping spots: the higher priority first, then the longer; CamelCase brands yield to NER."""
    ranked = sorted(candidates, key=lambda c: (-_priority(c), -(c[1].end - c[1].start), c[1].start))
    taken: list[Spot] = []
    for _rank, spot in ranked:
        if any(spot.start < other.end and other.start < spot.end for other in taken):
            continue
        taken.append(spot)
    taken = [replace(s, source="identifier") if s.source == "camel" else s for s in taken]
    return sorted(taken, key=lambda s: s.start)


def _priority(candidate: tuple[int, Spot]) -> int:
    priority, spot = candidate
    if spot.source == "camel":
        return 0  # a CamelCase word the NER model also found (GitHub as ORG) keeps the model's type
    return priority


def _source_line_spots(doc: Doc, text: str, spots: list[Spot]) -> list[Spot]:
    """A clipping's source line ("Kiev PRAVDA UKRAINY") is a city and a paper, whatever spans the model made."""
    out = spots
    for (place_start, place_end), (org_start, org_end) in source_lines(text):
        place = _span(
            doc, place_start, place_end, text[place_start:place_end], "PLACE", NAME_RULE_CONFIDENCE, "dateline"
        )
        org = _span(doc, org_start, org_end, text[org_start:org_end], "ORG", NAME_RULE_CONFIDENCE, "dateline")
        if place is not None and org is not None:
            out = [s for s in out if not (s.start < org_end and place_start < s.end)] + [place, org]
    for start, end in wire_datelines(text):
        place = _span(doc, start, end, text[start:end], "PLACE", NAME_RULE_CONFIDENCE, "rule")
        if place is not None:
            out = [s for s in out if not (s.start < end and start < s.end)] + [place]
    return out if out is spots else sorted(out, key=lambda s: s.start)


def _apply_names(spots: list[Spot], named: list[tuple[Spot, bool]]) -> list[Spot]:
    """A person or language rule retypes the model's span of the same text (Maria: ORG -> PERSON) or adds
    the name where nothing was found; it never overrides an identifier, software or head-word match."""
    out = list(spots)
    for rule_spot, may_retype in named:
        overlapping = [i for i, s in enumerate(out) if s.start < rule_spot.end and rule_spot.start < s.end]
        if not overlapping:
            out.append(rule_spot)
            continue
        for i in overlapping if may_retype else ():
            spot = out[i]
            if spot.source == "ner" and spot.type != rule_spot.type and spot.name == rule_spot.name:
                out[i] = replace(spot, type=rule_spot.type, confidence=NAME_RULE_CONFIDENCE, source="rule")
    return sorted(out, key=lambda s: s.start)
