"""Relations people write without a verb of their own (titles, appositions, origins, seats, passives), as a
client sees them through get_related with the default extractor (spaCy + rules, no LLM)."""

from __future__ import annotations

import pytest

from tests.helpers import configured, local_session
from tests.processes import call
from tests.tools.test_graph_tools import add_notes, graph_settled, related_names
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

NOTES: list[tuple[str, str | None]] = [
    ("Acme Robotics was founded by Tom Becker in 2015.", None),
    ("Maria Lopez works for Acme Robotics.", None),
    ("Globex spokesman Ravi Menon said the launch is delayed.", None),
    ("Priya Shah, a product manager at Initech, was born in Toronto.", None),
    ("Northwind is a Seattle-based logistics startup.", None),
    ("Lena Vogel was hired by Zalando in March.", None),
]


async def test_a_person_reaches_the_founder_of_her_company_and_titles_appositions_and_seats_are_typed(
    settings: Settings,
) -> None:
    async with local_session(configured(settings, ZAPOMNI_JOB_POLL_S="0.2", ZAPOMNI_GRAPH_AUTO="true")) as session:
        await add_notes(session, NOTES)
        await graph_settled(session)

        # Two memories, one chain: Maria -WORKS_FOR-> Acme Robotics <-CREATED- Tom Becker.
        maria = related_names(await call(session, "get_related", {"entity": "Maria Lopez", "depth": 2}))
        assert maria["Acme Robotics"]["relation"]["type"] == "WORKS_FOR"
        assert maria["Tom Becker"]["distance"] == 2 and maria["Tom Becker"]["path"] == ["WORKS_FOR", "CREATED"]
        acme = await call(session, "get_related", {"entity": "Acme Robotics"})
        assert acme["matched"]["type"] == "ORG"  # the news model alone called it a work of art, or missed it

        ravi = related_names(await call(session, "get_related", {"entity": "Ravi Menon"}))
        assert ravi["Globex"]["relation"]["type"] == "WORKS_FOR"
        assert ravi["Globex"]["relation"]["predicate"] == "spokesman"

        priya = related_names(await call(session, "get_related", {"entity": "Priya Shah"}))
        assert priya["Initech"]["relation"]["type"] == "WORKS_FOR"
        assert priya["Toronto"]["relation"]["type"] == "LIVES_IN"
        assert priya["Toronto"]["relation"]["predicate"] == "born in"  # the user sees how it was said

        northwind = related_names(await call(session, "get_related", {"entity": "Northwind"}))
        assert northwind["Seattle"]["relation"]["type"] == "LOCATED_IN"

        lena = related_names(await call(session, "get_related", {"entity": "Lena Vogel"}))
        assert lena["Zalando"]["relation"]["type"] == "WORKS_FOR"
        assert lena["Zalando"]["relation"]["method"] in ("pattern", "dependency")


async def test_a_relation_whose_ends_are_one_entity_is_counted_not_failed(settings: Settings) -> None:
    """ "Prince Norodom Sihanouk ... Sihanouk": the merge folds the two names into one person, so the relation
    between them is dropped. Nothing was lost that the user must act on: the job says how many, and ends
    `completed`, not `completed_with_errors`."""
    async with local_session(configured(settings, ZAPOMNI_GRAPH_AUTO="false", ZAPOMNI_JOB_POLL_S="0.2")) as session:
        [memory] = await add_notes(
            session, [("Prince Norodom Sihanouk met reporters in Beijing, where Sihanouk lives.", None)]
        )
        queued = await call(session, "build_graph", {"memory_ids": [memory]})
        job = (await call(session, "graph_status", {"job_id": queued["job_id"], "wait_s": 50}))["job"]
        assert job["state"] == "completed", job
        assert job["failed_items"] == 0 and job["failures"] == []
        assert job["counts"]["relations_dropped_one_entity"] >= 1
        assert job["counts"]["memories"] == 1
        sihanouk = await call(session, "get_related", {"entity": "Sihanouk"})
        assert sihanouk["matched"]["type"] == "PERSON"
        assert "Beijing" in related_names(sihanouk)
