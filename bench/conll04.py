"""CoNLL04 (Roth & Yih 2004, the SpERT JSON split in ../shared/data/conll04): sentences, gold entities and
relations, and how a graph's typed relations are scored against them.

The graph's relation types are mapped to CoNLL04's four: WORKS_FOR and MEMBER_OF -> Work_For, LIVES_IN ->
Live_In, LOCATED_IN -> OrgBased_In when the subject is an ORG, else Located_In (the mapping of issue 23).
Kill has no counterpart in the graph and is left out of the gold. A predicted relation is correct when its
mapped type is the gold one and its subject and object are the gold head and tail: names compared on
letters and digits only, case-folded, a leading "the" dropped ("U.S." = "US", "Allan Fitzmaurice." =
"Allan Fitzmaurice"), any of a merged entity's names (its aliases) counting. Each gold relation matches at
most once; a predicted relation stated twice in one sentence counts once. Entities are scored the same way,
Peop/Org/Loc against PERSON/ORG/PLACE (Other is left out: it has no one type in the graph).

Only the train and dev splits are read; the test split is held out (../shared/data/README.md).

Nothing here imports the application.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT

CONLL04 = (REPO_ROOT / ".." / "shared" / "data" / "conll04").resolve()
TYPES = ("Work_For", "Live_In", "OrgBased_In", "Located_In")
ENTITY_TYPES = {"Peop": "PERSON", "Org": "ORG", "Loc": "PLACE"}
_GRAPH_TO_CONLL = {"WORKS_FOR": "Work_For", "MEMBER_OF": "Work_For", "LIVES_IN": "Live_In"}
# Opening and closing quotes are written `` and '' in the corpus, each quote mark a token of its own.
_QUOTES = re.compile(r"(?:` `|``|' '|'')")


@dataclass(frozen=True)
class Sentence:
    text: str
    entities: tuple[tuple[str, str], ...]  # (normalised name, graph type) of Peop/Org/Loc spans
    relations: frozenset[tuple[str, str, str]]  # (normalised head, CoNLL type, normalised tail)
    # Gold places written as a chain, "Burchard, Neb." as one span: normalised whole -> (first place, the rest)
    chains: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Predicted:
    """A typed relation the graph holds for one sentence, with every name its two ends are known by."""

    subjects: tuple[str, ...]
    subject_type: str
    type: str  # the graph's type
    objects: tuple[str, ...]


def norm(name: str) -> str:
    words = re.sub(r"[^\w ]+", "", name.casefold().replace("_", " ")).split()
    if words and words[0] == "the":
        words = words[1:]
    return "".join(words)


def conll_type(graph_type: str, subject_type: str) -> str | None:
    if graph_type == "LOCATED_IN":
        return "OrgBased_In" if subject_type == "ORG" else "Located_In"
    return _GRAPH_TO_CONLL.get(graph_type)


def detokenize(tokens: Sequence[str]) -> str:
    """The sentence as a person would have written it: no space before punctuation or "'s", quotes glued."""
    text = " ".join(tokens)
    text = _QUOTES.sub('"', text)
    text = re.sub(r" ([,.;:!?%)\]}])", r"\1", text)
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    text = re.sub(r" (['’](?:s|re|ve|ll|d|m)\b|n['’]t\b)", r"\1", text)
    text = re.sub(r'" (.*?) "', r'"\1"', text)
    return text.strip()


def _spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    start = 0
    for i, tag in enumerate(tags):
        if tag.startswith("U-"):
            spans.append((i, i + 1, tag[2:]))
        elif tag.startswith("B-"):
            start = i
        elif tag.startswith("L-"):
            spans.append((start, i + 1, tag[2:]))
    return spans


def load(split: str, root: Path = CONLL04) -> list[Sentence]:
    if split not in ("train", "dev"):
        raise ValueError("only the train and dev splits are read: the test split is held out")
    items: list[dict[str, Any]] = json.loads((root / f"conll04_{split}.json").read_text(encoding="utf-8"))
    sentences = []
    for item in items:
        tokens = item["tokens"]
        spans = _spans(item["tags"])
        names = [norm(" ".join(tokens[a:b])) for a, b, _ in spans]
        entities = tuple((names[i], ENTITY_TYPES[t]) for i, (_, _, t) in enumerate(spans) if t in ENTITY_TYPES)
        relations = frozenset(
            (names[r["head"]], r["type"], names[r["tail"]]) for r in item["relations"] if r["type"] in TYPES
        )
        chains = tuple(
            (
                names[i],
                norm(" ".join(tokens[a : a + tokens[a:b].index(",")])),
                norm(" ".join(tokens[a:b]).split(",", 1)[1]),
            )
            for i, (a, b, t) in enumerate(spans)
            if t == "Loc" and "," in tokens[a:b]
        )
        sentences.append(Sentence(detokenize(tokens), entities, relations, chains))
    return sentences


@dataclass
class RelationScore:
    """True positives, predictions and gold relations per CoNLL04 type, with the misses kept for reading."""

    tp: Counter[str] = field(default_factory=Counter)
    predicted: Counter[str] = field(default_factory=Counter)
    gold: Counter[str] = field(default_factory=Counter)
    entity: Counter[str] = field(default_factory=Counter)  # "tp", "predicted", "gold"
    errors: list[str] = field(default_factory=list)
    chains: bool = False  # read a gold chain "A, B" as A, and leave relations to its B uncounted

    def add(self, sentence: Sentence, predicted: Iterable[Predicted], entities: Iterable[tuple[str, str]]) -> None:
        gold = set(sentence.relations)
        for _head, type_, _tail in gold:
            self.gold[type_] += 1
        seen: set[tuple[str, str, str]] = set()
        for p in predicted:
            found = conll_type(p.type, p.subject_type)
            if found is None:
                continue
            type_ = found
            subjects, objects = {norm(n) for n in p.subjects}, {norm(n) for n in p.objects}
            if self.chains and sentence.chains:
                if any(
                    first in subjects | objects and rest in subjects | objects for _, first, rest in sentence.chains
                ):
                    continue  # "Burchard LOCATED_IN Neb.": inside one gold place, neither right nor wrong
                if any(rest in objects for _, _, rest in sentence.chains):
                    continue  # "born in Burchard, Neb.": the gold names no place "Neb." to be right about
                subjects |= {whole for whole, first, _ in sentence.chains if first in subjects}
                objects |= {whole for whole, first, _ in sentence.chains if first in objects}
            hit = next((g for g in gold if g[1] == type_ and g[0] in subjects and g[2] in objects), None)
            key = hit or (min(subjects), type_, min(objects))
            if key in seen:
                continue
            seen.add(key)
            self.predicted[type_] += 1
            if hit is not None:
                self.tp[type_] += 1
                gold.discard(hit)
            else:
                self.errors.append(f"+ {p.subjects[0]} {type_} {p.objects[0]} | {sentence.text}")
        self.errors += [f"- {h} {t} {o} | {sentence.text}" for h, t, o in sorted(gold)]
        labelled = Counter(sentence.entities)
        self.entity["gold"] += sum(labelled.values())
        for name, type_ in {(norm(n), t) for n, t in entities if t in ENTITY_TYPES.values()}:
            self.entity["predicted"] += 1
            if labelled[(name, type_)] > 0:
                labelled[(name, type_)] -= 1
                self.entity["tp"] += 1

    def report(self) -> dict[str, Any]:
        rows: dict[str, Any] = {}
        for type_ in (*TYPES, "all"):
            tp = sum(self.tp.values()) if type_ == "all" else self.tp[type_]
            pred = sum(self.predicted.values()) if type_ == "all" else self.predicted[type_]
            gold = sum(self.gold.values()) if type_ == "all" else self.gold[type_]
            rows[type_] = _prf(tp, pred, gold)
        rows["entities (Peop/Org/Loc)"] = _prf(self.entity["tp"], self.entity["predicted"], self.entity["gold"])
        return rows


def _prf(tp: int, predicted: int, gold: int) -> dict[str, Any]:
    p = tp / predicted if predicted else None
    r = tp / gold if gold else None
    f = 2 * p * r / (p + r) if p and r else 0.0
    return {
        "tp": tp,
        "predicted": predicted,
        "gold": gold,
        "precision": None if p is None else round(p, 3),
        "recall": None if r is None else round(r, 3),
        "f1": round(f, 3),
    }
