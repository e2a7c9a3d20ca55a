"""OllamaExtractor against a real local HTTP server that speaks Ollama's /api/chat (tests/fakes).

The recorded answers in tests/fakes/chat_answers/ carry the mistakes small local models make;
every one must end in a usable graph plus problem lines, never in an exception.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import httpx
import pytest
import structlog
from structlog.testing import capture_logs

from tests.fakes.ollama_server import (
    ChatReply,
    FakeOllama,
    answer,
    chunks_in_prompt,
    http_error,
    load_recording,
    model_not_found,
    recorded,
    slow,
)
from zapomni_core.errors import ExtractorUnavailable
from zapomni_core.graph.extraction import ENTITY_TYPES, RELATION_TYPES, ChunkGraph, Extractor
from zapomni_core.graph.llm_extractor import OllamaExtractor, parse_lenient
from zapomni_core.graph.llm_schema import EXTRACTION_SCHEMA, RETRY_REMINDER, SYSTEM_PROMPT

pytestmark = pytest.mark.anyio

MODEL = "llama3.1:8b"


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama(models=["nomic-embed-text", MODEL]) as server:
        yield server


@pytest.fixture
async def extractor(fake: FakeOllama) -> AsyncIterator[OllamaExtractor]:
    instance = OllamaExtractor(host=fake.url, model=MODEL, retries=2, backoff_s=0.01)
    yield instance
    await instance.aclose()


@pytest.fixture
def debug_logs() -> Iterator[None]:
    """Let debug events through whatever level an earlier test configured, and restore it after."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(**saved)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def check(graphs: Sequence[ChunkGraph], texts: Sequence[str]) -> None:
    """What every graph from the LLM path guarantees, whatever the model answered."""
    assert len(graphs) == len(texts)
    for number, (graph, text) in enumerate(zip(graphs, texts, strict=True), 1):
        names = [m.name for m in graph.entities]
        assert len({n.casefold() for n in names}) == len(names), "one mention per entity"
        for mention in graph.entities:
            assert mention.type in ENTITY_TYPES
            assert 0.0 <= mention.confidence <= 1.0
            assert mention.count >= 1
            assert squash(mention.name) in squash(text), "entities are named in their chunk"
        for relation in graph.relations:
            assert relation.subject in names and relation.object in names
            assert relation.subject != relation.object
            assert relation.type in RELATION_TYPES and relation.type != "CO_OCCURS"
            assert relation.method == "llm"
            assert 0.0 <= relation.strength <= 1.0
            assert relation.predicate
            assert relation.evidence and relation.evidence in text, "evidence is a verbatim span"
        for problem in graph.problems:
            assert problem.startswith(f"chunk {number}: ")


def entities(graph: ChunkGraph) -> list[tuple[str, str]]:
    return [(m.name, m.type) for m in graph.entities]


def triples(graph: ChunkGraph) -> list[tuple[str, str, str]]:
    return [(r.subject, r.type, r.object) for r in graph.relations]


def prompt_chunks(request_body: dict[str, Any]) -> dict[int, str]:
    (user,) = [m["content"] for m in request_body["messages"] if m["role"] == "user"]
    return chunks_in_prompt(user)


# -- answers that are right --------------------------------------------------------------------------


async def test_a_valid_answer_becomes_entities_and_relations(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = load_recording("valid_two_chunks")["chunks"]
    fake.script_chat([recorded("valid_two_chunks")])

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    first, second = graphs
    assert entities(first) == [
        ("Maria Schmidt", "PERSON"),
        ("Berlin", "PLACE"),
        ("Lisbon", "PLACE"),
        ("March 2024", "DATE"),
        ("Acme Robotics", "ORG"),
    ]
    assert first.entities[0].description == "firmware engineer at Acme Robotics"
    assert triples(first) == [("Maria Schmidt", "LIVES_IN", "Lisbon"), ("Maria Schmidt", "WORKS_FOR", "Acme Robotics")]
    lives_in = first.relations[0]
    assert lives_in.predicate == "moved to"
    assert lives_in.strength == pytest.approx(0.95)  # the model's confidence
    assert lives_in.evidence == "Maria Schmidt moved from Berlin to Lisbon in March 2024."
    assert triples(second) == [
        ("Acme Robotics", "USES", "FalkorDB"),
        ("ingest service", "DEPENDS_ON", "Redis Streams"),
    ]
    assert first.problems == second.problems == ()

    # One call for both chunks, asking for Ollama's structured output with our schema.
    (request,) = fake.chat_requests
    body = request.body
    assert body["model"] == MODEL
    assert body["stream"] is False
    assert body["format"] == EXTRACTION_SCHEMA
    # Greedy decoding; a context that holds the prompt (Ollama's default would cut its start off); a cap on
    # the answer so a looping model stops long before the timeout.
    assert body["options"] == {"temperature": 0, "num_ctx": 8192, "num_predict": 4096}
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert prompt_chunks(body) == {1: texts[0], 2: texts[1]}


async def test_name_and_protocol(fake: FakeOllama) -> None:
    extractor: Extractor = OllamaExtractor(host=fake.url, model="qwen2.5:3b")
    assert extractor.name == "ollama:qwen2.5:3b"
    assert await extractor.extract([]) == []
    await extractor.aclose()


async def test_the_fake_model_runs_the_llm_path_end_to_end(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = ["Maria moved to Lisbon in May. Maria works for Acme Robotics.", "Zapomni uses FalkorDB."]
    graphs = await extractor.extract(texts)

    check(graphs, texts)
    assert triples(graphs[0]) == [("Maria", "LIVES_IN", "Lisbon"), ("Maria", "WORKS_FOR", "Acme Robotics")]
    assert graphs[0].relations[0].predicate == "moved to"
    assert graphs[0].relations[0].evidence == "Maria moved to Lisbon in May."
    assert ("Lisbon", "PLACE") in entities(graphs[0])
    assert triples(graphs[1]) == [("Zapomni", "USES", "FalkorDB")]
    assert all(g.problems == () for g in graphs)
    assert len(fake.chat_requests) == 1


# -- one call per chunk, or per batch of small chunks ----------------------------------------------


async def test_small_chunks_are_packed_into_batches_up_to_the_budget(fake: FakeOllama) -> None:
    people = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fatima", "Goran"]
    small = [f"{name} lives in Porto and likes Kotlin." for name in people]  # ~35 characters each
    big = "Hugo works for Nordwind Energy. " * 5  # 160 characters: over the budget, alone
    texts = [*small[:3], big, *small[3:]]
    extractor = OllamaExtractor(host=fake.url, model=MODEL, batch_chars=120, max_batch=3, backoff_s=0.01)
    try:
        graphs = await extractor.extract(texts)
    finally:
        await extractor.aclose()

    check(graphs, texts)
    sent = [prompt_chunks(r.body) for r in fake.chat_requests]
    assert [list(chunks.values()) for chunks in sent] == [texts[0:3], [big], texts[4:7], texts[7:8]]
    # Each chunk got its own answer back, not a neighbour's.
    for text, graph in zip(texts, graphs, strict=True):
        person = text.split()[0]
        assert entities(graph)[0][0] == person
        assert triples(graph)[0][0] == person


async def test_chunks_over_the_budget_get_one_call_each(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = [f"{name} uses FalkorDB. " + "The service keeps running. " * 60 for name in ("Ada", "Bo", "Cy")]
    assert all(len(t) > 1500 for t in texts)

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    assert [list(prompt_chunks(r.body).values()) for r in fake.chat_requests] == [[t] for t in texts]
    assert [triples(g) for g in graphs] == [[(name, "USES", "FalkorDB")] for name in ("Ada", "Bo", "Cy")]


async def test_blank_chunks_need_no_call(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    graphs = await extractor.extract(["", "   \n ", "Maria lives in Lisbon."])
    assert graphs[0] == graphs[1] == ChunkGraph()
    assert triples(graphs[2]) == [("Maria", "LIVES_IN", "Lisbon")]
    (request,) = fake.chat_requests
    assert prompt_chunks(request.body) == {1: "Maria lives in Lisbon."}


# -- answers that are wrong, each repaired or dropped with a problem line --------------------------


async def test_fenced_json_with_prose_around_it(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = load_recording("fenced_with_trailing_text")["chunks"]
    fake.script_chat([recorded("fenced_with_trailing_text")])

    (graph,) = await extractor.extract(texts)

    check([graph], texts)
    assert entities(graph) == [
        ("Tomás Álvarez", "PERSON"),
        ("Ferrocarril Labs", "ORG"),
        ("Valencia", "PLACE"),
        ("2019", "DATE"),
    ]
    assert triples(graph) == [
        ("Tomás Álvarez", "CREATED", "Ferrocarril Labs"),
        ("Ferrocarril Labs", "LOCATED_IN", "Valencia"),
    ]
    assert graph.problems == ()  # fences and chatter cost nothing
    assert len(fake.chat_requests) == 1


async def test_lower_case_types_and_missing_fields_are_repaired(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = load_recording("lowercase_types_missing_fields")["chunks"]
    fake.script_chat([recorded("lowercase_types_missing_fields")])

    (graph,) = await extractor.extract(texts)

    check([graph], texts)
    assert entities(graph) == [
        ("Priya Nair", "PERSON"),  # "person": case alone is not a problem
        ("Kubernetes SIG Storage", "ORG"),
        ("csi-driver-nfs", "PRODUCT"),
        ("Pune", "PLACE"),
    ]
    assert graph.entities[2].confidence == 0.5
    assert graph.entities[3].description is None
    assert [(r.subject, r.type, r.predicate, r.object) for r in graph.relations] == [
        ("Priya Nair", "MEMBER_OF", "joined", "Kubernetes SIG Storage"),
        ("Priya Nair", "OWNS", "maintains", "csi-driver-nfs"),
        ("Priya Nair", "LIVES_IN", "lives in", "Pune"),
    ]
    # No evidence, and no sentence names both ("She ... lives in Pune"): the passage, at half strength.
    lives_in = graph.relations[2]
    assert lives_in.evidence == texts[0]
    assert lives_in.strength == pytest.approx(0.45)
    assert list(graph.problems) == [
        "chunk 1: entity 'Kubernetes SIG Storage': type 'organization' read as ORG",
        "chunk 1: entity 'csi-driver-nfs': type 'software' read as PRODUCT",
        "chunk 1: entity 'csi-driver-nfs': confidence missing, 0.5 assumed",
        "chunk 1: entity 'Pune': type 'location' read as PLACE",
        "chunk 1: entity 5 dropped: no name",
        "chunk 1: relation 'Priya Nair'→'csi-driver-nfs': type missing, read from the predicate as OWNS",
        "chunk 1: relation 'Priya Nair'→'Pune': type missing, read from the predicate as LIVES_IN",
        "chunk 1: relation 'Priya Nair'→'Pune': evidence missing and no sentence names both; "
        "replaced by the passage from one to the other, strength ×0.5",
    ]


async def test_relations_to_entities_it_did_not_list(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = load_recording("relation_to_unlisted_entity")["chunks"]
    fake.script_chat([recorded("relation_to_unlisted_entity")])

    (graph,) = await extractor.extract(texts)

    check([graph], texts)
    assert entities(graph) == [
        ("billing API", "PRODUCT"),
        ("Stripe", "ORG"),
        ("Jonas Weber", "PERSON"),
        ("retry logic", "OTHER"),  # named in the text: added
        ("outage", "OTHER"),
        ("14 May", "OTHER"),
    ]
    assert triples(graph) == [
        ("billing API", "DEPENDS_ON", "Stripe"),
        ("Jonas Weber", "CREATED", "retry logic"),
        ("outage", "HAPPENED_ON", "14 May"),
        ("billing API", "USES", "Stripe"),
    ]
    paraphrased = graph.relations[3]
    assert paraphrased.evidence == "The billing API depends on Stripe for card payments."
    assert paraphrased.strength == pytest.approx(0.8 * 0.8)
    assert list(graph.problems) == [
        "chunk 1: relation 'Jonas Weber'→'retry logic': object 'retry logic' was not among the entities; "
        "added as OTHER",
        "chunk 1: relation 'outage'→'14 May': subject 'outage' was not among the entities; added as OTHER",
        "chunk 1: relation 'outage'→'14 May': object '14 May' was not among the entities; added as OTHER",
        "chunk 1: relation 'Jonas Weber'→'Stripe Inc.' dropped: object is not in the text",
        "chunk 1: relation 'billing API'→'Stripe': evidence not in the text; "
        "replaced by the sentence naming both, strength ×0.8",
    ]


async def test_wrong_types_and_shapes(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = load_recording("wrong_types_and_shapes")["chunks"]
    fake.script_chat([recorded("wrong_types_and_shapes")])

    (graph,) = await extractor.extract(texts)

    check([graph], texts)
    assert [(m.name, m.type, m.confidence) for m in graph.entities] == [
        ("Amara Okafor", "PERSON", 0.5),
        ("Lagos Genomics Lab", "ORG", 1.0),
        ("Nextflow", "PRODUCT", 0.9),
        ("AWS Batch", "OTHER", 0.0),
    ]
    assert [(r.subject, r.type, r.predicate, r.object, r.strength) for r in graph.relations] == [
        ("Amara Okafor", "OTHER", "leads", "Lagos Genomics Lab", 0.9),  # unknown type: OTHER, predicate kept
        ("Lagos Genomics Lab", "USES", "uses", "Nextflow", 0.9),
        ("Nextflow", "DEPENDS_ON", "runs on", "AWS Batch", 1.0),
        ("Amara Okafor", "OTHER", "co occurs", "Nextflow", 0.3),
    ]
    assert list(graph.problems) == [
        "chunk 1: entity 'Amara Okafor': confidence 'high' unreadable, 0.5 assumed",
        "chunk 1: entity 'Lagos Genomics Lab': confidence 1.5 clamped to 1",
        "chunk 1: entity 'Nextflow': type 'TECHNOLOGY' read as PRODUCT",
        "chunk 1: entity 'AWS Batch': unknown type 'CLOUD_SERVICE' replaced by OTHER",
        "chunk 1: entity 'AWS Batch': confidence -0.2 clamped to 0",
        "chunk 1: entity 5 dropped: not an object",
        "chunk 1: entity 'DNA sequencing' dropped: not in the text",
        "chunk 1: relation 'Amara Okafor'→'Lagos Genomics Lab': unknown type 'LEADS', kept as OTHER",
        "chunk 1: relation 'Nextflow'→'AWS Batch': confidence 2 clamped to 1",
        "chunk 1: relation 'Lagos Genomics Lab'→'Lagos Genomics Lab' dropped: subject and object are the same entity",
        "chunk 1: relation 'Amara Okafor'→'Nextflow': unknown type 'CO_OCCURS', kept as OTHER",
        "chunk 1: relation 6 dropped: not an object",
    ]


async def test_a_cut_off_batch_keeps_what_is_complete_and_asks_again_for_the_rest(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    texts = load_recording("truncated_batch")["chunks"]
    fake.script_chat([recorded("truncated_batch")])  # then the fake model answers the follow-up

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    first_call, follow_up = fake.chat_requests
    assert prompt_chunks(first_call.body) == {1: texts[0], 2: texts[1], 3: texts[2]}
    # Chunk 2 was cut inside a relation and chunk 3 never reached: asked again, together.
    assert prompt_chunks(follow_up.body) == {1: texts[1], 2: texts[2]}
    assert triples(graphs[0]) == [
        ("Lena Fischer", "LIVES_IN", "Hamburg"),
        ("Lena Fischer", "WORKS_FOR", "Nordwind Energy"),
    ]
    assert ("Cuxhaven", "OTHER") in entities(graphs[1])  # from the follow-up's answer
    assert ("Modbus TCP", "OTHER") in entities(graphs[2])
    assert all(g.problems == () for g in graphs)


async def test_a_cut_off_single_chunk_keeps_what_is_complete(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    recording = load_recording("truncated_batch")
    content = recording["response"]["message"]["content"]
    text = recording["chunks"][0]
    cut = content[: content.index('"works for Nordwind Energy"') + 8]  # inside chunk 1's second relation
    fake.script_chat([answer(cut, done_reason="length")])

    (graph,) = await extractor.extract([text])

    check([graph], [text])
    assert triples(graph) == [("Lena Fischer", "LIVES_IN", "Hamburg")]
    assert len(graph.entities) == 3
    assert graph.problems == (
        "chunk 1: the model's answer hit the output limit (num_predict); kept the items before the break",
    )
    assert len(fake.chat_requests) == 1  # nothing smaller to ask for


async def test_a_malformed_answer_keeps_the_items_before_the_break(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    text = "Maria lives in Lisbon. Jonas uses Kotlin."
    broken = (
        '{"chunks": [{"chunk": 1, "entities": [{"name": "Maria", "type": "PERSON", "confidence": 0.9}, '
        '{"name": "Lisbon", "type": "PLACE", "confidence": 0.9}, {"name": "Jonas", "type": PERSON}]}]}'
    )
    fake.script_chat([broken])

    (graph,) = await extractor.extract([text])

    check([graph], [text])
    assert entities(graph) == [("Maria", "PERSON"), ("Lisbon", "PLACE")]
    assert graph.problems == ("chunk 1: the model's answer was malformed; kept the items before the break",)


async def test_a_chunk_left_out_of_a_batch_is_asked_again_once(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = ["Olaf Berg knows Ingrid Dahl.", "Ingrid Dahl lives in Bergen.", "Nina Holm uses Kotlin."]
    skipped = {
        "chunks": [
            {"chunk": 1, "entities": [], "relations": []},
            {"chunk": 3, "entities": [{"name": "Nina Holm", "type": "PERSON", "confidence": 0.9}], "relations": []},
        ]
    }
    fake.script_chat([answer(skipped), answer({"chunks": []})])

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    _first_call, follow_up = fake.chat_requests
    assert prompt_chunks(follow_up.body) == {1: texts[1]}
    assert graphs[0] == ChunkGraph()
    assert graphs[1] == ChunkGraph(problems=("chunk 2: no graph: the model's answer had no item for it",))
    assert entities(graphs[2]) == [("Nina Holm", "PERSON")]


async def test_items_without_chunk_numbers_are_read_in_order(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    texts = load_recording("unnumbered_items")["chunks"]
    fake.script_chat([recorded("unnumbered_items")])

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    assert triples(graphs[0]) == [("Olaf Berg", "KNOWS", "Ingrid Dahl")]
    assert triples(graphs[1]) == [("Ingrid Dahl", "LIVES_IN", "Bergen")]
    assert len(fake.chat_requests) == 1


async def test_an_answer_that_is_not_json_is_retried_once_with_a_reminder(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    texts = load_recording("prose_not_json")["chunks"]
    fake.script_chat([recorded("prose_not_json")])  # then the fake model answers properly

    (graph,) = await extractor.extract(texts)

    check([graph], texts)
    assert triples(graph) == [("Maria", "LIVES_IN", "Lisbon")]
    first, retry = fake.chat_requests
    assert RETRY_REMINDER not in first.body["messages"][-1]["content"]
    assert retry.body["messages"][-1]["content"].endswith(RETRY_REMINDER)
    assert prompt_chunks(retry.body) == {1: texts[0]}


async def test_no_json_twice_costs_that_chunk_its_graph_not_the_job(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    texts = ["Maria lives in Lisbon. " * 70, "Jonas uses Kotlin. " * 80]  # two calls
    prose = load_recording("prose_not_json")["response"]["message"]["content"]
    fake.script_chat([prose, ChatReply(body={"unexpected": "shape"})])

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    assert graphs[0] == ChunkGraph(problems=("chunk 1: no graph: the model's answer was not JSON, twice",))
    assert triples(graphs[1]) == [("Jonas", "USES", "Kotlin")]
    assert len(fake.chat_requests) == 3


async def test_problem_lines_number_chunks_by_their_place_in_the_call(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    recording = load_recording("lowercase_types_missing_fields")
    texts = ["Hugo works for Nordwind Energy. " * 60, recording["chunks"][0]]
    fake.script_chat([ChatReply(), recorded("lowercase_types_missing_fields")])

    graphs = await extractor.extract(texts)

    check(graphs, texts)
    assert graphs[0].problems == ()
    assert len(graphs[1].problems) == 8
    assert all(p.startswith("chunk 2: ") for p in graphs[1].problems)


async def test_every_cut_of_an_answer_still_gives_a_graph(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    recording = load_recording("valid_two_chunks")
    texts, content = recording["chunks"], recording["response"]["message"]["content"]
    complete, _ = parse_lenient(content)

    for end in range(len(content) + 1):
        value, repaired = parse_lenient(content[:end])
        if value is not None:
            assert isinstance(value, dict)
            assert repaired == (end < len(content))
    assert parse_lenient(content) == (complete, False)

    # A sample of the cuts through the whole extractor: never an exception, always consistent graphs.
    for end in range(0, len(content), 97):
        fake.clear()
        fake.script_chat([answer(content[:end], done_reason="length")])
        graphs = await extractor.extract(texts)
        check(graphs, texts)


# -- the JSON reader on its own ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected", "repaired"),
    [
        ('{"a": 1}', {"a": 1}, False),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}, False),
        ('```\n{"a": "x"}\n```\nHope this helps!', {"a": "x"}, False),
        ('Sure! Here it is: {"a": 1} and {"b": 2}', {"a": 1}, False),
        ('Notes [1]:\n{"a": 1}', {"a": 1}, False),
        ('{"a": [{"b": 1}, {"b": 2}, {"b": "cut', {"a": [{"b": 1}, {"b": 2}]}, True),
        ('{"a": [{"b": 1}], "c": ', {"a": [{"b": 1}]}, True),
        ('{"a": [{"b": 1}], "c', {"a": [{"b": 1}]}, True),
        ('{"a": "quote \\" inside", "b": [1, 2', {"a": 'quote " inside', "b": [1]}, True),
        ('{"a": "brace } in a string", "b": [', {"a": "brace } in a string", "b": []}, True),
        ('```json\n{"chunks": [{"chunk": 1, "entities": [', {"chunks": [{"chunk": 1, "entities": []}]}, True),
        ("[]", [], False),
    ],
)
def test_parse_lenient_reads_what_can_be_read(content: str, expected: object, repaired: bool) -> None:
    assert parse_lenient(content) == (expected, repaired)


@pytest.mark.parametrize("content", ["", "no json here", "Entities: [1] Maria", "{{{{", "}{", "```json\n```"])
def test_parse_lenient_gives_up_on_what_is_not_json(content: str) -> None:
    assert parse_lenient(content) == (None, False)


# -- Ollama failing ----------------------------------------------------------------------------------


async def test_server_errors_are_retried_with_backoff_then_succeed(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    fake.script_chat([http_error(500), http_error(503, "server busy")])
    with capture_logs() as logs:
        (graph,) = await extractor.extract(["Maria lives in Lisbon."])

    assert triples(graph) == [("Maria", "LIVES_IN", "Lisbon")]
    requests = fake.chat_requests
    assert len(requests) == 3
    assert all(r.body == requests[0].body for r in requests)  # the same request each time
    retries = [e for e in logs if e["event"] == "llm.retry"]
    assert [e["attempt"] for e in retries] == [1, 2]
    assert [e["delay_s"] for e in retries] == [pytest.approx(0.01), pytest.approx(0.02)]
    assert "HTTP 500" in retries[0]["reason"] and "llama runner process has terminated" in retries[0]["reason"]


async def test_server_errors_that_persist_raise_extractor_unavailable(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    fake.script_chat([http_error(500)] * 3)
    with pytest.raises(ExtractorUnavailable) as caught:
        await extractor.extract(["Maria lives in Lisbon."])

    message = str(caught.value)
    assert f"OLLAMA_HOST={fake.url}" in message
    assert f"LLM_MODEL={MODEL}" in message
    assert "HTTP 500" in message
    assert "3 attempts" in message
    assert len(fake.chat_requests) == 3  # the first try plus retries=2


async def test_a_slow_answer_past_the_timeout_is_retried(fake: FakeOllama) -> None:
    extractor = OllamaExtractor(host=fake.url, model=MODEL, timeout_s=0.3, retries=1, backoff_s=0.01)
    fake.script_chat([slow(2.0)])  # then answered at once
    try:
        with capture_logs() as logs:
            (graph,) = await extractor.extract(["Maria lives in Lisbon."])
    finally:
        await extractor.aclose()

    assert triples(graph) == [("Maria", "LIVES_IN", "Lisbon")]
    assert len(fake.chat_requests) == 2
    (retry,) = [e for e in logs if e["event"] == "llm.retry"]
    assert "did not answer within 0.3 s" in retry["reason"]


async def test_a_model_too_slow_every_time_raises_with_advice(fake: FakeOllama) -> None:
    extractor = OllamaExtractor(host=fake.url, model=MODEL, timeout_s=0.3, retries=1, backoff_s=0.01)
    fake.script_chat([slow(2.0), slow(2.0)])
    started = time.perf_counter()
    try:
        with pytest.raises(ExtractorUnavailable) as caught:
            await extractor.extract(["Maria lives in Lisbon."])
    finally:
        await extractor.aclose()

    assert time.perf_counter() - started < 1.5  # the deadline held; the fake was still "thinking"
    message = str(caught.value)
    assert "did not answer within 0.3 s" in message
    assert "ZAPOMNI_LLM_TIMEOUT_S" in message
    assert f"OLLAMA_HOST={fake.url}" in message and MODEL in message


async def test_an_unreachable_host_raises_after_the_retries() -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    extractor = OllamaExtractor(host=host, model=MODEL, retries=1, backoff_s=0.01)
    try:
        with capture_logs() as logs, pytest.raises(ExtractorUnavailable) as caught:
            await extractor.extract(["Maria lives in Lisbon."])
    finally:
        await extractor.aclose()

    message = str(caught.value)
    assert f"OLLAMA_HOST={host}" in message
    assert "cannot reach" in message
    assert f"LLM_MODEL={MODEL}" in message
    assert [e["attempt"] for e in logs if e["event"] == "llm.retry"] == [1]


async def test_a_model_that_is_not_pulled_says_how_to_pull_it() -> None:
    with FakeOllama(models=["nomic-embed-text"]) as fake:
        extractor = OllamaExtractor(host=fake.url, model=MODEL, retries=2, backoff_s=0.01)
        try:
            with pytest.raises(ExtractorUnavailable) as caught:
                await extractor.extract(["Maria lives in Lisbon."])
        finally:
            await extractor.aclose()
        requests = fake.chat_requests

    message = str(caught.value)
    assert f"ollama pull {MODEL}" in message
    assert "OLLAMA_HOST" in message
    assert len(requests) == 1  # a missing model is not retried


async def test_a_scripted_model_not_found_answer(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    fake.script_chat([model_not_found()])
    with pytest.raises(ExtractorUnavailable, match=r"ollama pull llama3\.1:8b"):
        await extractor.extract(["Maria lives in Lisbon."])


async def test_a_request_ollama_refuses_is_not_retried(fake: FakeOllama, extractor: OllamaExtractor) -> None:
    fake.script_chat([http_error(400, 'invalid format: expected "json" or a JSON schema')])
    with pytest.raises(ExtractorUnavailable) as caught:
        await extractor.extract(["Maria lives in Lisbon."])

    assert "HTTP 400: invalid format" in str(caught.value)
    assert "Ollama 0.5 or later" in str(caught.value)
    assert len(fake.chat_requests) == 1


# -- wiring and logs ---------------------------------------------------------------------------------


async def test_a_given_client_is_used_and_left_open(fake: FakeOllama) -> None:
    async with httpx.AsyncClient() as client:
        extractor = OllamaExtractor(host=fake.url + "/", model=MODEL, http=client)
        (graph,) = await extractor.extract(["Maria lives in Lisbon."])
        await extractor.aclose()
        assert not client.is_closed
    assert triples(graph) == [("Maria", "LIVES_IN", "Lisbon")]


@pytest.mark.usefixtures("debug_logs")
async def test_each_call_is_logged_with_its_duration_and_never_the_text(
    fake: FakeOllama, extractor: OllamaExtractor
) -> None:
    secret = "Zofia Kowalczyk moved to Gdańsk"
    prose = load_recording("prose_not_json")["response"]["message"]["content"]
    fake.script_chat([prose])
    with capture_logs() as logs:
        await extractor.extract([f"{secret} last spring."])

    calls = [e for e in logs if e["event"] == "llm.call"]
    assert len(calls) == 2
    for call in calls:
        assert call["log_level"] == "debug"
        assert call["model"] == MODEL and call["chunks"] == 1 and call["status"] == 200
        assert call["duration_ms"] >= 0
    assert [e["event"] for e in logs if e["event"] == "llm.answer_not_json"] == ["llm.answer_not_json"]
    everything = json.dumps(logs, default=str)
    assert "Zofia" not in everything and "Gdańsk" not in everything


# -- the fake itself ---------------------------------------------------------------------------------


async def test_the_fake_speaks_ollamas_chat_shape(fake: FakeOllama) -> None:
    fake.script_chat(['{"chunks": []}', model_not_found()])
    request = {"model": MODEL, "messages": [{"role": "user", "content": "Maria lives in Lisbon."}], "stream": False}
    async with httpx.AsyncClient(base_url=fake.url) as client:
        scripted = (await client.post("/api/chat", json=request)).json()
        missing = await client.post("/api/chat", json=request)
        default = (await client.post("/api/chat", json=request)).json()
        unknown = await client.post("/api/chat", json={**request, "model": "mistral"})

    assert scripted["message"] == {"role": "assistant", "content": '{"chunks": []}'}
    assert scripted["done"] is True and scripted["done_reason"] == "stop"
    assert scripted["model"] == MODEL and scripted["created_at"].endswith("Z")
    for key in ("total_duration", "load_duration", "prompt_eval_count", "eval_count", "eval_duration"):
        assert isinstance(scripted[key], int)
    assert missing.status_code == 404
    assert missing.json() == {"error": f'model "{MODEL}" not found, try pulling it first'}
    # Without chunk markers the whole message is chunk 1.
    assert json.loads(default["message"]["content"])["chunks"][0]["relations"][0]["type"] == "LIVES_IN"
    assert unknown.status_code == 404
    assert len(fake.chat_requests) == 4 and fake.chat_script_left == 0
    assert fake.embed_requests == []
