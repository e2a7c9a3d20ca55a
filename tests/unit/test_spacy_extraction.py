"""The no-LLM extractor with the real spaCy model on real sentences: types, identifiers, relations, limits.

The model loads once per module (about a second each, with and without the parser).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from zapomni_core.graph.extraction import ENTITY_TYPES, RELATION_TYPES, ChunkGraph, Extractor
from zapomni_core.graph.relations import COOCCURRENCE_STRENGTH
from zapomni_core.graph.spacy_extractor import MAX_COOCCURRENCES, SpacyExtractor, split_text

pytestmark = pytest.mark.anyio

METHODS = {"llm", "pattern", "dependency", "cooccurrence"}


@pytest.fixture(scope="module")
def extractor() -> Iterator[SpacyExtractor]:
    built = SpacyExtractor()
    yield built
    built.close()


@pytest.fixture(scope="module")
def fast() -> Iterator[SpacyExtractor]:
    built = SpacyExtractor(parse=False)
    yield built
    built.close()


def entities(graph: ChunkGraph) -> dict[str, str]:
    return {m.name: m.type for m in graph.entities}


def typed(graph: ChunkGraph) -> set[tuple[str, str, str]]:
    return {(r.subject, r.type, r.object) for r in graph.relations if r.method != "cooccurrence"}


def assert_well_formed(graph: ChunkGraph) -> None:
    names = [m.name for m in graph.entities]
    assert len({n.casefold() for n in names}) == len(names), f"one mention per name: {names}"
    for mention in graph.entities:
        assert mention.type in ENTITY_TYPES and mention.name.strip() == mention.name and mention.name
        assert 0 < mention.confidence <= 1 and mention.count >= 1
    for relation in graph.relations:
        assert relation.subject in names and relation.object in names, relation
        assert relation.subject != relation.object
        assert relation.type in RELATION_TYPES and relation.method in METHODS
        assert 0 < relation.strength <= 1 and relation.evidence and relation.predicate
        assert (relation.type == "CO_OCCURS") == (relation.method == "cooccurrence")


def test_it_is_an_extractor(extractor: SpacyExtractor) -> None:
    assert isinstance(extractor, SpacyExtractor) and extractor.name == "spacy"
    assert extractor.parse and extractor.load_seconds > 0
    checked: Extractor = extractor  # the protocol, as the graph job sees it
    assert checked.name == "spacy"


async def test_named_entities_map_to_our_types_and_values_are_dropped(extractor: SpacyExtractor) -> None:
    (graph,) = await extractor.extract(
        [
            "Lena Fischer lives in Hamburg and works for Airbus. In March 2022 she flew to Tokyo with two "
            "colleagues from the Mozilla Foundation. The ticket cost $300, 20 % more than planned, and the "
            "flight left at 9 am. The General Data Protection Regulation applies to Airbus too."
        ]
    )
    found = entities(graph)
    assert found["Lena Fischer"] == "PERSON"
    assert found["Hamburg"] == found["Tokyo"] == "PLACE"  # GPE -> PLACE
    assert found["Airbus"] == found["Mozilla Foundation"] == "ORG"  # "the" is not part of the name
    assert found["March 2022"] == "DATE"
    assert found["General Data Protection Regulation"] == "LAW"
    # CARDINAL, MONEY, PERCENT, TIME are values, not entities
    assert not any(any(c.isdigit() for c in name) for name, type_ in found.items() if type_ != "DATE"), found
    assert not {"two", "$300", "20 %", "9 am"} & set(found)
    assert next(m for m in graph.entities if m.name == "Airbus").count == 2
    assert_well_formed(graph)


async def test_rules_fix_what_the_news_model_misses(extractor: SpacyExtractor) -> None:
    texts = [
        "Maria moved to Lisbon in 2023.",  # the model alone calls Maria an ORG
        "Zapomni is written in Python and stores its data in FalkorDB.",  # software names
        "The Battle of Hastings took place in 1066.",  # head word: an EVENT, not a WORK_OF_ART
        "Arjun speaks Tamil and English.",  # languages after "speaks"
    ]
    maria, software, battle, languages = await extractor.extract(texts)
    assert entities(maria)["Maria"] == "PERSON"
    assert entities(software)["Python"] == entities(software)["FalkorDB"] == "PRODUCT"
    assert entities(battle)["Battle of Hastings"] == "EVENT"
    assert entities(languages)["Tamil"] == entities(languages)["English"] == "LANGUAGE"


async def test_code_identifiers_are_found_by_their_shape(extractor: SpacyExtractor) -> None:
    (graph,) = await extractor.extract(
        [
            "Set DATABASE_URL, then call parse_config() and np.linalg.norm(x). On ERR_CONN_RESET the HttpClient "
            "retries through retry_with_backoff, configured in settings.toml; see `max_retries` and "
            "functools.lru_cache. Catch TimeoutError around fetch_page()."
        ]
    )
    found = entities(graph)
    for name in (
        "DATABASE_URL", "parse_config()", "np.linalg.norm", "ERR_CONN_RESET", "HttpClient", "retry_with_backoff",
        "settings.toml", "max_retries", "functools.lru_cache", "TimeoutError", "fetch_page()",
    ):  # fmt: skip
        assert found.get(name) == "IDENTIFIER", (name, found)
    assert "e.g" not in found


async def test_prose_is_not_read_as_code(extractor: SpacyExtractor) -> None:
    (graph,) = await extractor.extract(
        ["We met McDonald at the lab, e.g. to discuss NaCl samples (see the report) at example.com on Friday."]
    )
    found = entities(graph)
    assert "IDENTIFIER" not in found.values(), found


async def test_typed_relations_are_found_with_their_evidence(extractor: SpacyExtractor) -> None:
    texts = [
        "Maria moved to Lisbon in 2023.",
        "Kubernetes was originally designed by Google.",
        "Microsoft bought GitHub in 2018.",
        "Redis is an in-memory data store.",
        "Lena Fischer lives in Hamburg and works for Airbus.",
        "Bruno is a software engineer at Siemens.",
        "Django depends on asgiref and sqlparse. The billing service uses PostgreSQL.",
        "Hannah's brother Lukas studies at ETH Zurich.",
        "Spotify is headquartered in Stockholm, Sweden.",
        "Volkswagen owns Audi, Porsche and Lamborghini.",
    ]
    graphs = await extractor.extract(texts)
    relations = [typed(g) for g in graphs]
    assert ("Maria", "LIVES_IN", "Lisbon") in relations[0]  # "moved to" means living there now
    assert ("Google", "CREATED", "Kubernetes") in relations[1]  # passive: the agent created it
    assert ("Microsoft", "OWNS", "GitHub") in relations[2]
    assert ("Redis", "IS_A", "in-memory data store") in relations[3]
    assert entities(graphs[3])["in-memory data store"] == "CONCEPT"
    assert {("Lena Fischer", "LIVES_IN", "Hamburg"), ("Lena Fischer", "WORKS_FOR", "Airbus")} <= relations[4]
    assert ("Bruno", "WORKS_FOR", "Siemens") in relations[5]
    assert ("billing service", "USES", "PostgreSQL") in relations[6]
    assert ("Lukas", "FAMILY_OF", "Hannah") in relations[7] or ("Hannah", "FAMILY_OF", "Lukas") in relations[7]
    assert ("Spotify", "LOCATED_IN", "Stockholm") in relations[8]
    assert ("Spotify", "LOCATED_IN", "Sweden") not in relations[8], "'Stockholm, Sweden' is one place, not a list"
    assert {("Volkswagen", "OWNS", brand) for brand in ("Audi", "Porsche", "Lamborghini")} <= relations[9]
    maria = next(r for r in graphs[0].relations if r.type == "LIVES_IN")
    assert maria.method == "pattern" and maria.predicate == "moved to"
    assert maria.evidence == "Maria moved to Lisbon in 2023."
    for graph in graphs:
        assert_well_formed(graph)


async def test_a_relation_must_fit_the_types_of_its_ends(extractor: SpacyExtractor) -> None:
    (graph,) = await extractor.extract(["Sara likes Italian food. The report moved to page 4."])
    assert not typed(graph), "'Italian' describes the food; a report does not live anywhere"


async def test_co_occurrence_is_weaker_than_every_typed_relation(extractor: SpacyExtractor) -> None:
    (graph,) = await extractor.extract(
        [
            "Maria moved to Lisbon in 2023. Jonas, Priya Nair and Tom Becker discussed Hamburg, Airbus and "
            "Siemens over lunch."
        ]
    )
    co = [r for r in graph.relations if r.method == "cooccurrence"]
    known = [r for r in graph.relations if r.method != "cooccurrence"]
    assert co and known
    assert all(r.type == "CO_OCCURS" and r.strength == COOCCURRENCE_STRENGTH <= 0.3 for r in co)
    assert max(r.strength for r in co) < min(r.strength for r in known)
    assert all(r.evidence.startswith("Jonas") for r in co), "the evidence is the sentence of the pair"
    typed_pairs = {frozenset((r.subject, r.object)) for r in known}
    assert not any(frozenset((r.subject, r.object)) in typed_pairs for r in co), "a typed pair is not repeated"
    assert not any("2023" in (r.subject, r.object) for r in co), "dates do not co-occur with everything"
    assert_well_formed(graph)


async def test_co_occurrence_pairs_are_capped_per_chunk(extractor: SpacyExtractor) -> None:
    cities = ", ".join(["Berlin", "Paris", "Madrid", "Rome", "Vienna", "Prague", "Warsaw", "Lisbon", "Dublin"])
    (graph,) = await extractor.extract([f"Anna visited {cities} and Oslo with Jonas and Sofia last summer."])
    co = [r for r in graph.relations if r.method == "cooccurrence"]
    assert len(co) == MAX_COOCCURRENCES, "12 entities give 66 pairs; the nearest are kept"


async def test_relation_ends_are_always_mentions_of_the_same_chunk(extractor: SpacyExtractor) -> None:
    texts = [
        "Hannah's brother Lukas studies physics at ETH Zurich. Anna works at Siemens in Munich.",
        "OpenAI was founded in December 2015 by Sam Altman and Elon Musk, among others.",
        "The outage was caused by a memory leak in the cache layer; ERR_CONN_RESET followed.",
        "Oliver and Emma got married in Edinburgh last spring. Carlos met his wife Sofia in Madrid.",
        "Pixar is a subsidiary of Disney. Munich is the capital of Bavaria. Kai's favourite band is Radiohead.",
        "The Louvre Museum houses the Mona Lisa. Netflix runs on Amazon Web Services.",
    ]
    for text, graph in zip(texts, await extractor.extract(texts), strict=True):
        assert graph.entities
        assert_well_formed(graph)
        for relation in graph.relations:
            assert relation.evidence in text, "evidence is a span of the chunk's own text"
            assert relation.subject in relation.evidence and relation.object in relation.evidence


async def test_mentions_are_counted_per_chunk_under_their_first_form(extractor: SpacyExtractor) -> None:
    (graph,) = await extractor.extract(["Maria called Jonas. Later Maria met Jonas in Berlin. MARIA was happy."])
    maria = next(m for m in graph.entities if m.name.casefold() == "maria")
    assert maria.name == "Maria" and maria.count >= 2


async def test_empty_and_blank_texts_give_empty_graphs(extractor: SpacyExtractor) -> None:
    assert await extractor.extract([]) == []
    empty, blank, real = await extractor.extract(["", "  \n\t  ", "Maria moved to Lisbon."])
    assert empty == blank == ChunkGraph()
    assert real.entities


async def test_a_very_long_text_is_read_whole_in_pieces(extractor: SpacyExtractor) -> None:
    paragraph = "Maria moved to Lisbon in 2023 and works for Siemens with Jonas. " * 6 + "\n\n"
    text = paragraph * 160  # ~62,000 characters: four pieces
    assert len(split_text(text)) >= 3
    started = time.perf_counter()
    (graph,) = await extractor.extract([text])
    assert time.perf_counter() - started < 120
    maria = next(m for m in graph.entities if m.name == "Maria")
    assert maria.count == 6 * 160, "every piece was analysed"
    assert ("Maria", "LIVES_IN", "Lisbon") in typed(graph)
    assert sum(r.method == "cooccurrence" for r in graph.relations) <= MAX_COOCCURRENCES
    assert_well_formed(graph)


def test_split_text_cuts_at_boundaries_and_loses_nothing() -> None:
    text = ("word " * 3000 + "end of a sentence. ") * 5 + "x" * 50_000
    pieces = split_text(text, limit=10_000)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= 10_000 for p in pieces)
    assert pieces[0].endswith("sentence. ") or pieces[0].endswith(" ")
    assert split_text("   ") == [] and split_text("short") == ["short"]


async def test_noise_and_other_languages_do_not_break_it(extractor: SpacyExtractor) -> None:
    texts = [
        "北京是中国的首都。张伟在阿里巴巴工作。",
        "مرحبا بالعالم، أحمد يعيش في القاهرة",
        "Москва — столица России. Иван работает в Яндексе.",
        "🙂🚀🔥 ✨✨✨ ¯\\_(ツ)_/¯ ",
        "\x00\x01\x02 binary\x7f junk \ufffd\ufffd",
        "aGVsbG8gd29ybGQ=" * 500,  # one 8,000-character token
        "<div class='x'><a href=\"https://example.com/a_b?c=d\">Link</a></div>" * 20,
        ";;;;,,,,....!!!!????" * 100,
        "A" * 30_000,
        "Ünïcödé Ñame lives in Zürich, Österreich; Ærøskøbing.",
    ]
    graphs = await extractor.extract(texts)
    assert len(graphs) == len(texts)
    for graph in graphs:
        assert_well_formed(graph)


async def test_a_run_of_characters_without_a_space_is_skipped_and_the_rest_is_read(extractor: SpacyExtractor) -> None:
    """Such a run (a pasted key, base64, a line of dashes) is no entity; read whole it cost seconds per 10,000
    characters (the tokenizer is quadratic in a token's length)."""
    (graph,) = await extractor.extract(["=" * 30_000 + " Maria Garcia lives in Lisbon and works for Siemens."])
    assert {"Maria Garcia", "Lisbon", "Siemens"} <= set(entities(graph))
    assert_well_formed(graph)


async def test_concurrent_calls_are_served_in_order_without_blocking_the_loop(extractor: SpacyExtractor) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    beat = asyncio.create_task(ticker())
    batches = [
        [f"Maria moved to Lisbon in {2000 + i}.", f"Kubernetes was designed by Google in {2000 + i}."] for i in range(6)
    ]
    results = await asyncio.gather(*(extractor.extract(batch) for batch in batches))
    beat.cancel()
    assert ticks > 0, "the event loop kept running while spaCy worked"
    for i, (first, second) in enumerate(results):
        assert entities(first).get(str(2000 + i)) == "DATE" and ("Google", "CREATED", "Kubernetes") in typed(second)


async def test_without_the_parser_only_worded_patterns_remain(fast: SpacyExtractor) -> None:
    assert not fast.parse
    moved, lives, redis = await fast.extract(
        [
            "Maria moved to Lisbon in 2023.",
            "Lena Fischer lives in Hamburg and works for Airbus.",
            "Redis is an in-memory data store.",
        ]
    )
    assert ("Maria", "LIVES_IN", "Lisbon") in typed(moved)
    assert ("Lena Fischer", "LIVES_IN", "Hamburg") in typed(lives)
    assert ("Lena Fischer", "WORKS_FOR", "Airbus") not in typed(lives), "a conjunction needs the parse"
    assert "CONCEPT" not in entities(redis).values(), "concepts need noun phrases, i.e. the parse"
    for graph in (moved, lives, redis):
        assert {r.method for r in graph.relations} <= {"pattern", "cooccurrence"}
        assert_well_formed(graph)
