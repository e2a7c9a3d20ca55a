"""Entity identity: canonical names and keys, the workspace index, folding one chunk's graph, supersession."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from zapomni_core.graph.extraction import ENTITY_TYPES, ChunkGraph, Mention, Relation
from zapomni_core.graph.merge import (
    EntityIndex,
    Resolution,
    canonical,
    entity_key,
    merge_chunk_entities,
    superseding,
    type_family,
)
from zapomni_core.settings import Settings
from zapomni_db import KnownEntity, RelationRow

# The shipped default (not the environment's): the behaviour below is what users get out of the box.
THRESHOLD = float(Settings.model_fields["entity_match_threshold"].default)


def index(*known: tuple[str, str] | KnownEntity) -> EntityIndex:
    built = EntityIndex(threshold=THRESHOLD)
    for item in known:
        if isinstance(item, KnownEntity):
            built.add(item)
        else:
            built.observe(Mention(*item, confidence=0.8))
    return built


def resolve(built: EntityIndex, name: str, entity_type: str, confidence: float = 0.8) -> Resolution:
    return built.resolve(Mention(name, entity_type, confidence))


def same(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Does b, arriving after a, resolve to a's entity?"""
    built = index(a)
    return resolve(built, *b).key == entity_key(*a)


# -- canonical names, families, keys -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "entity_type", "expected"),
    [
        ("Apple Inc.", "ORG", "apple"),
        ("APPLE INC.", "ORG", "apple"),
        ("apple inc", "ORG", "apple"),
        ("Apple, Inc.", "ORG", "apple"),
        ("Microsoft Corporation", "ORG", "microsoft"),
        ("Siemens GmbH", "ORG", "siemens"),
        ("Barclays plc", "ORG", "barclays"),
        ("Acme Co.", "ORG", "acme"),
        ("Acme Ltd", "ORG", "acme"),
        ("Acme LLC", "ORG", "acme"),
        ("Acme Corp", "ORG", "acme"),
        ("Acme Inc", "PRODUCT", "acme inc"),  # company suffixes only for the ORG family
        ("Inc", "ORG", "inc"),  # never down to nothing
        ("\u201cApple\u2019s\u201d", "ORG", "apple"),  # curly quotes, possessive
        ("Obama's", "PERSON", "obama"),
        ("The Beatles", "GROUP", "beatles"),
        ("the   New  York Times", "ORG", "new york times"),
        ("The", "OTHER", "the"),
        ("Stra\u00dfe", "PLACE", "strasse"),  # casefold
        ("\uff21\uff50\uff50\uff4c\uff45", "ORG", "apple"),  # NFKC: full-width letters
        ("Redis.", "PRODUCT", "redis"),
        ("(Redis)", "PRODUCT", "redis"),
        ("Redis)", "PRODUCT", "redis"),
        ("C++", "LANGUAGE", "c++"),
        ("C#", "LANGUAGE", "c#"),
        (".NET", "PRODUCT", ".net"),
        ("U.S.A.", "PLACE", "usa"),
        ("Dr. Jane Goodall", "PERSON", "jane goodall"),
        ("Dr. Pepper", "PRODUCT", "dr. pepper"),  # honorifics only for people
        ("GPT\u20114", "PRODUCT", "gpt-4"),  # a non-breaking hyphen is a hyphen
        ("`parse_config()`", "IDENTIFIER", "parse_config()"),
        ("ERR_CONN_RESET", "IDENTIFIER", "ERR_CONN_RESET"),  # identifiers keep their case
        ("...", "ORG", ""),
    ],
)
def test_canonical(name: str, entity_type: str, expected: str) -> None:
    assert canonical(name, entity_type) == expected


def test_every_type_has_a_family_and_people_places_and_languages_stay_apart() -> None:
    families = {entity_type: type_family(entity_type) for entity_type in ENTITY_TYPES}
    assert families["ORG"] == families["GROUP"]
    assert families["PRODUCT"] == families["LANGUAGE"]
    assert families["CONCEPT"] == families["OTHER"]
    assert len({families["PERSON"], families["PLACE"], families["ORG"], families["PRODUCT"]}) == 4
    assert families["IDENTIFIER"] not in {families["PRODUCT"], families["CONCEPT"]}
    with pytest.raises(ValueError, match="not one of"):
        type_family("COMPANY")


def test_the_key_makes_exact_duplicates_one_entity() -> None:
    assert entity_key("Apple Inc.", "ORG") == entity_key("apple", "ORG") == "apple|ORG"
    assert entity_key("Beatles", "GROUP") == entity_key("The Beatles", "ORG")
    assert entity_key("Java", "PLACE") != entity_key("Java", "LANGUAGE")
    with pytest.raises(ValueError, match="empty"):
        entity_key(" \u201c\u201d ", "ORG")


# -- the required behaviours ---------------------------------------------------------------------------


def test_apple_in_four_spellings_is_one_entity() -> None:
    built = index(("Apple", "ORG"))
    for name in ("Apple Inc.", "apple inc", "APPLE INC."):
        resolution = built.observe(Mention(name, "ORG", 0.8))
        assert (resolution.key, resolution.how) == ("apple|ORG", "exact")
    assert len(built) == 1
    assert built.get("apple|ORG") == KnownEntity("apple|ORG", "Apple", "ORG", ("Apple Inc.",), 0.8)


def test_java_the_language_and_java_the_island_are_two() -> None:
    built = index(("Java", "LANGUAGE"))
    assert resolve(built, "Java", "PRODUCT").key == "java|PRODUCT"
    assert resolve(built, "Java", "PLACE").is_new
    assert not same(("Java", "PLACE"), ("Java", "PRODUCT"))


def test_accents_do_not_make_another_person() -> None:
    resolution = resolve(index(("Maria Garcia", "PERSON")), "Mar\u00eda Garc\u00eda", "PERSON")
    assert (resolution.key, resolution.how) == ("maria garcia|PERSON", "folded")
    assert resolution.aliases == ("Mar\u00eda Garc\u00eda",), "the accented spelling is kept as an alias"


def test_a_product_of_a_company_is_not_the_company() -> None:
    assert not same(("Microsoft", "ORG"), ("Microsoft Azure", "ORG"))
    assert not same(("Microsoft", "ORG"), ("Microsoft Azure", "PRODUCT"))
    assert not same(("Visual Studio", "PRODUCT"), ("Visual Studio Code", "PRODUCT"))


def test_a_bare_surname_joins_the_one_known_person_who_has_it() -> None:
    built = index(("Barack Obama", "PERSON"))
    resolution = resolve(built, "Obama", "PERSON", confidence=0.99)
    assert (resolution.key, resolution.how) == ("barack obama|PERSON", "surname")
    assert resolution.name == "Barack Obama", "a surname never becomes the display name"
    assert resolution.aliases == ("Obama",)


def test_a_surname_two_known_people_share_is_a_new_entity() -> None:
    built = index(("Barack Obama", "PERSON"), ("Michelle Obama", "PERSON"))
    assert resolve(built, "Obama", "PERSON").is_new
    assert resolve(built, "Barack", "PERSON").is_new, "first names are not matched"


def test_a_full_name_after_a_bare_surname_is_a_new_entity() -> None:
    # The known "Obama" may be anyone called Obama; the surname rule only runs from short to full.
    assert not same(("Obama", "PERSON"), ("Barack Obama", "PERSON"))


def test_new_york_and_new_york_city_are_two() -> None:
    # "New York" is the state as often as the city: a name plus a word is a more specific thing.
    assert not same(("New York", "PLACE"), ("New York City", "PLACE"))


def test_versions_are_different_products() -> None:
    assert not same(("GPT-4", "PRODUCT"), ("GPT-4o", "PRODUCT"))
    assert not same(("Python 3.11", "LANGUAGE"), ("Python 3.12", "LANGUAGE"))
    assert not same(("Llama 3 8B", "PRODUCT"), ("Llama 3 70B", "PRODUCT"))
    assert not same(("World War I", "EVENT"), ("World War II", "EVENT"))
    assert not same(("Vitamin C", "CONCEPT"), ("Vitamin D", "CONCEPT"))
    assert same(("GPT-4", "PRODUCT"), ("GPT4", "PRODUCT"))
    assert same(("Llama 3 8B", "PRODUCT"), ("Llama-3-8B", "PRODUCT"))


def test_a_typo_is_the_same_entity() -> None:
    resolution = resolve(index(("Postgres", "PRODUCT")), "Postgress", "PRODUCT", confidence=0.99)
    assert (resolution.key, resolution.how) == ("postgres|PRODUCT", "fuzzy")
    assert resolution.score >= THRESHOLD
    assert resolution.name == "Postgres", "a misspelling never becomes the display name"
    assert same(("Kubernetes", "PRODUCT"), ("Kubernets", "PRODUCT"))


def test_people_who_share_a_surname_are_different() -> None:
    assert not same(("John Smith", "PERSON"), ("Jane Smith", "PERSON"))
    assert not same(("Maria Garcia", "PERSON"), ("Mario Garcia", "PERSON")), "people never fuzzy-merge"


def test_short_names_and_acronyms_never_fuzzy_merge() -> None:
    assert not same(("Java", "PRODUCT"), ("Jav", "PRODUCT"))
    assert not same(("IBM", "ORG"), ("IBN", "ORG"))
    assert not same(("AMD", "ORG"), ("AMC", "ORG"))
    assert not same(("C", "LANGUAGE"), ("C++", "LANGUAGE"))
    assert same(("NASA", "ORG"), ("N.A.S.A.", "ORG"))


def test_opposed_prefixes_and_directions_are_different_things() -> None:
    assert not same(("supervised learning", "CONCEPT"), ("unsupervised learning", "CONCEPT"))
    assert not same(("microeconomics", "CONCEPT"), ("macroeconomics", "CONCEPT"))
    assert not same(("South Korea", "PLACE"), ("North Korea", "PLACE"))
    assert same(("neural network", "CONCEPT"), ("neural networks", "CONCEPT"))


def test_abbreviations_and_spacing_fold_together() -> None:
    assert same(("Saint Louis", "PLACE"), ("St. Louis", "PLACE"))
    assert same(("Department of Energy", "ORG"), ("Dept. of Energy", "ORG"))
    assert same(("Node.js", "PRODUCT"), ("NodeJS", "PRODUCT"))
    assert same(("Johnson & Johnson", "ORG"), ("Johnson and Johnson", "ORG"))


def test_identifiers_match_only_as_written() -> None:
    assert same(("`parse_config()`", "IDENTIFIER"), ("parse_config()", "IDENTIFIER"))
    assert not same(("get_user", "IDENTIFIER"), ("get_users", "IDENTIFIER"))
    assert not same(("Config", "IDENTIFIER"), ("config", "IDENTIFIER"))


# -- display name, aliases, the index ----------------------------------------------------------------------


def test_higher_confidence_wins_the_display_name_and_the_old_one_becomes_an_alias() -> None:
    built = index(KnownEntity("apple|ORG", "Apple", "ORG", (), 0.6))
    resolution = built.observe(Mention("Apple Inc.", "ORG", 0.9))
    assert (resolution.name, resolution.confidence, resolution.aliases) == ("Apple Inc.", 0.9, ("Apple",))
    assert built.get("apple|ORG") == KnownEntity("apple|ORG", "Apple Inc.", "ORG", ("Apple",), 0.9)


def test_a_tie_keeps_the_older_name() -> None:
    built = index(KnownEntity("apple|ORG", "Apple", "ORG", (), 0.8))
    resolution = built.observe(Mention("Apple Inc.", "ORG", 0.8))
    assert (resolution.name, resolution.aliases) == ("Apple", ("Apple Inc.",))


def test_a_spelling_differing_only_in_case_and_punctuation_is_not_a_new_alias() -> None:
    built = index(KnownEntity("apple|ORG", "Apple Inc.", "ORG", (), 0.8))
    assert resolve(built, "APPLE INC", "ORG").aliases == ()


def test_aliases_known_to_the_database_match() -> None:
    built = index(KnownEntity("postgresql|PRODUCT", "PostgreSQL", "PRODUCT", ("Postgres",), 0.9))
    resolution = resolve(built, "postgres", "PRODUCT")
    assert (resolution.key, resolution.how, resolution.aliases) == ("postgresql|PRODUCT", "alias", ())


def test_entities_created_during_a_job_are_matched_by_later_chunks() -> None:
    built = EntityIndex(threshold=THRESHOLD)
    first = built.observe(Mention("Kubernetes", "PRODUCT", 0.7))
    assert first.is_new and "kubernetes|PRODUCT" in built
    later = built.observe(Mention("Kubernets", "PRODUCT", 0.7))
    assert (later.key, later.how) == ("kubernetes|PRODUCT", "fuzzy")
    # the entity was just built:
    assert built.get("kubernetes|PRODUCT").aliases == ("Kubernets",)  # type: ignore[union-attr]


def test_resolve_changes_nothing_and_commit_records_rows_of_the_database() -> None:
    @dataclass(frozen=True)
    class Row:  # the database's own row type: same fields, a list of aliases
        key: str
        name: str
        type: str
        aliases: list[str] = field(default_factory=list)
        confidence: float = 1.0

    built = EntityIndex([Row("redis|PRODUCT", "Redis", "PRODUCT", ["redis-server"])], threshold=THRESHOLD)
    resolve(built, "Valkey", "PRODUCT")
    assert len(built) == 1
    built.commit([Row("valkey|PRODUCT", "Valkey", "PRODUCT")])
    assert resolve(built, "valkey", "PRODUCT").how == "exact"
    assert resolve(built, "Redis Server", "PRODUCT").how == "alias"


def test_lookup_without_a_type_offers_the_other_meanings() -> None:
    built = index(("Java", "LANGUAGE"), ("Java", "PLACE"), ("Barack Obama", "PERSON"), ("Michelle Obama", "PERSON"))
    found = built.lookup("java")
    assert found.entity is not None and found.score == 100.0
    assert {found.entity.key, *(c.key for c in found.candidates)} == {"java|PRODUCT", "java|PLACE"}
    ambiguous = built.lookup("Obama")
    assert ambiguous.entity is None
    assert {c.key for c in ambiguous.candidates} == {"barack obama|PERSON", "michelle obama|PERSON"}
    assert built.lookup("Kotlin").entity is None


def test_the_index_rejects_an_unknown_scorer_and_a_key_without_family() -> None:
    with pytest.raises(ValueError, match="scorer"):
        EntityIndex(threshold=THRESHOLD, scorer="jaro")
    with pytest.raises(ValueError, match="type family"):
        EntityIndex([KnownEntity("apple", "Apple", "ORG", (), 1.0)], threshold=THRESHOLD)


# -- one chunk's graph ---------------------------------------------------------------------------------------


def relation(subject: str, obj: str, rel_type: str = "WORKS_FOR", strength: float = 0.8, **kw: str) -> Relation:
    return Relation(
        subject, obj, rel_type, kw.get("predicate", rel_type.lower()), strength, "…", kw.get("method", "llm")
    )


def test_mentions_of_one_entity_fold_together() -> None:
    built = index(KnownEntity("apple|ORG", "Apple", "ORG", (), 0.5))
    graph = ChunkGraph(
        entities=(
            Mention("Apple Inc.", "ORG", 0.7, count=2, description="maker of the iPhone"),
            Mention("APPLE", "ORG", 0.9, count=1),
            Mention("Tim Cook", "PERSON", 0.8),
            Mention("Cook", "PERSON", 0.6, count=3),
        )
    )
    merged = merge_chunk_entities(graph, built)
    by_key = {entity.key: entity for entity in merged.entities}
    assert set(by_key) == {"apple|ORG", "tim cook|PERSON"}
    apple = by_key["apple|ORG"]
    assert (apple.count, apple.confidence, apple.created) == (3, 0.9, False)
    assert apple.name == "APPLE", "the most confident mention names it"
    assert apple.aliases == ("Apple", "Apple Inc."), "each name it lost to became an alias"
    assert apple.description == "maker of the iPhone"
    cook = by_key["tim cook|PERSON"]
    assert (cook.count, cook.confidence, cook.created, cook.aliases) == (4, 0.8, True, ("Cook",))
    assert merged.problems == ()


def test_relations_point_at_resolved_keys_and_self_loops_are_dropped() -> None:
    graph = ChunkGraph(
        entities=(Mention("Apple", "ORG", 0.9), Mention("Apple Inc.", "ORG", 0.8), Mention("Tim Cook", "PERSON", 0.9)),
        relations=(
            relation("Tim Cook", "Apple Inc."),
            relation("Apple Inc.", "Apple", "IS_A"),
            relation("Tim Cook", "Steve Jobs", "KNOWS"),
        ),
    )
    merged = merge_chunk_entities(graph, index())
    assert [(r.subject_key, r.type, r.object_key) for r in merged.relations] == [
        ("tim cook|PERSON", "WORKS_FOR", "apple|ORG")
    ]
    # A self-loop is the merge doing its job, not a problem to report as a failure; a missing end is.
    assert len(merged.self_loops) == 1 and "are one entity (apple|ORG)" in merged.self_loops[0]
    assert len(merged.problems) == 1
    assert "'Steve Jobs' is not an entity of the chunk" in merged.problems[0]


def test_duplicate_relations_keep_the_strongest() -> None:
    graph = ChunkGraph(
        entities=(Mention("Maria", "PERSON", 0.9), Mention("Lisbon", "PLACE", 0.9), Mention("Porto", "PLACE", 0.9)),
        relations=(
            relation("Maria", "Lisbon", "LIVES_IN", 0.6, predicate="lives in"),
            relation("Maria", "Lisbon", "LIVES_IN", 0.9, predicate="moved to"),
            relation("Maria", "Lisbon", "OTHER", 0.5, predicate="visited"),
            relation("Maria", "Lisbon", "OTHER", 0.5, predicate="was born in"),
            relation("Lisbon", "Porto", "CO_OCCURS", 0.2, method="cooccurrence"),
            relation("Porto", "Lisbon", "CO_OCCURS", 0.3, method="cooccurrence"),
        ),
    )
    merged = merge_chunk_entities(graph, index())
    kept = [(r.type, r.predicate, r.strength) for r in merged.relations]
    assert kept == [("LIVES_IN", "moved to", 0.9), ("OTHER", "visited", 0.5), ("OTHER", "was born in", 0.5),
                    ("CO_OCCURS", "co_occurs", 0.3)]  # fmt: skip


def test_an_entity_that_cannot_be_keyed_is_a_problem_not_a_crash() -> None:
    graph = ChunkGraph(entities=(Mention("...", "ORG", 0.9), Mention("Apple", "COMPANY", 0.9)))
    merged = merge_chunk_entities(graph, index())
    assert merged.entities == () and len(merged.problems) == 2


# -- supersession ------------------------------------------------------------------------------------------------


def fact(ident: str, obj: str, year: int | None, **kw: str | None) -> RelationRow:
    relation_type = kw.get("type") or "LIVES_IN"
    return RelationRow(
        id=ident,
        subject_key=kw.get("subject") or "maria|PERSON",
        type=relation_type,
        object_key=obj,
        predicate=relation_type,
        strength=0.9,
        evidence="",
        method=kw.get("method") or "llm",
        chunk_id="chunk",
        valid_from=None if year is None else f"{year}-01-01",
        valid_from_ts=None if year is None else datetime(year, 1, 1, tzinfo=UTC).timestamp(),
        superseded_by=kw.get("superseded_by"),
    )


def test_a_newer_fact_supersedes_the_older_one() -> None:
    result = superseding(fact("lisbon", "lisbon|PLACE", 2023), [fact("berlin", "berlin|PLACE", 2020)])
    assert (result.supersedes, result.superseded_by) == (("berlin",), None)


def test_an_older_fact_arriving_later_is_superseded_by_the_existing_newer_one() -> None:
    result = superseding(fact("berlin", "berlin|PLACE", 2020), [fact("lisbon", "lisbon|PLACE", 2023)])
    assert (result.supersedes, result.superseded_by) == ((), "lisbon")


def test_a_fact_arriving_between_two_takes_its_place_in_the_chain() -> None:
    existing = [fact("berlin", "berlin|PLACE", 2020, superseded_by="lisbon"), fact("lisbon", "lisbon|PLACE", 2023)]
    result = superseding(fact("madrid", "madrid|PLACE", 2021), existing)
    assert (result.supersedes, result.superseded_by) == (("berlin",), "lisbon")


def test_the_same_object_again_supersedes_nothing() -> None:
    result = superseding(fact("again", "berlin|PLACE", 2023), [fact("berlin", "berlin|PLACE", 2020)])
    assert (result.supersedes, result.superseded_by) == ((), None)


def test_equal_dates_supersede_neither() -> None:
    result = superseding(fact("lisbon", "lisbon|PLACE", 2023), [fact("berlin", "berlin|PLACE", 2023)])
    assert (result.supersedes, result.superseded_by) == ((), None)


def test_undated_facts_supersede_nothing() -> None:
    assert superseding(fact("lisbon", "lisbon|PLACE", None), [fact("berlin", "berlin|PLACE", 2020)]).supersedes == ()
    assert superseding(fact("lisbon", "lisbon|PLACE", 2023), [fact("berlin", "berlin|PLACE", None)]).supersedes == ()


def test_non_exclusive_types_never_supersede() -> None:
    new = fact("likes-tea", "tea|CONCEPT", 2023, type="LIKES")
    assert superseding(new, [fact("likes-coffee", "coffee|CONCEPT", 2020, type="LIKES")]).supersedes == ()


def test_the_no_llm_path_never_supersedes() -> None:
    for method in ("cooccurrence", "pattern", "dependency"):
        new = fact("lisbon", "lisbon|PLACE", 2023, method=method)
        assert superseding(new, [fact("berlin", "berlin|PLACE", 2020)]).supersedes == ()
    # ...and a pattern-found fact is not replaced by an LLM one either: both sides must be LLM facts.
    result = superseding(fact("lisbon", "lisbon|PLACE", 2023), [fact("berlin", "berlin|PLACE", 2020, method="pattern")])
    assert result.supersedes == ()


def test_only_facts_of_the_same_subject_and_type_compete() -> None:
    existing = [
        fact("other-person", "berlin|PLACE", 2020, subject="jane|PERSON"),
        fact("job", "acme|ORG", 2020, type="WORKS_FOR"),
    ]
    assert superseding(fact("lisbon", "lisbon|PLACE", 2023), existing).supersedes == ()
