"""A memory that knows which fact is current: update links made at add time, shown and used by every read, kept
consistent by updates and deletes, and undone by the user — over MCP, in process, on a real FalkorDB."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import ClientSession

from tests.helpers import local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

BAKER = "Our team's office is on Baker Street, second floor."
KINGS = "Update: we moved the office to 14 Kings Road last month, the Baker Street lease ended."
LUNCH = "Lunch on Fridays is at the Thai place next to the office."


async def add(session: ClientSession, text: str, date: str, **metadata: Any) -> dict[str, Any]:
    return await call(session, "add_memory", {"text": text, "metadata": {"date": date, **metadata}})


async def search(session: ClientSession, query: str, **arguments: Any) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = (await call(session, "search_memory", {"query": query, **arguments}))["results"]
    return results


async def test_a_newer_fact_replaces_the_older_and_search_puts_it_first(settings: Settings) -> None:
    async with local_session(settings) as session:
        baker = await add(session, BAKER, "2026-01-10")
        lunch = await add(session, LUNCH, "2026-02-01")
        kings = await add(session, KINGS, "2026-03-05")
        assert baker["supersedes"] == [] and lunch["superseded_by"] == []
        [replaced] = kings["supersedes"]  # the add says what it replaced, and why
        assert replaced["memory_id"] == baker["memory_id"] and replaced["date"].startswith("2026-01-10")
        assert replaced["attribute"] == "office" and "moved" in replaced["cues"] and replaced["confidence"] >= 0.55
        assert "Kings Road" in replaced["evidence"]

        hits = await search(session, "Where is the team's office?")
        order = [hit["memory_id"] for hit in hits]
        assert order.index(kings["memory_id"]) < order.index(baker["memory_id"])
        assert order[0] == kings["memory_id"]
        old = hits[order.index(baker["memory_id"])]
        assert [n["memory_id"] for n in old["superseded_by"]] == [kings["memory_id"]]
        assert old["superseded_by"][0]["preview"].startswith("Update: we moved the office")
        assert [o["memory_id"] for o in hits[0]["supersedes"]] == [baker["memory_id"]]

        # The text reply says it as plainly.
        reply = await session.call_tool("search_memory", {"query": "Where is the team's office?"})
        assert f"no longer current: replaced by memory {kings['memory_id']} (2026-03-05, office)" in text_of(reply)

        # A question about the past keeps the order of relevance: nothing is hidden.
        past = await search(session, "Where was the office before the move?")
        assert baker["memory_id"] in [hit["memory_id"] for hit in past]

        got = await call(session, "get_memory", {"memory_id": baker["memory_id"]})
        assert [n["memory_id"] for n in got["superseded_by"]] == [kings["memory_id"]] and got["supersedes"] == []
        current = await call(session, "list_memories", {"filters": {"current_only": True}})
        assert {m["memory_id"] for m in current["memories"]} == {lunch["memory_id"], kings["memory_id"]}
        everything = await call(session, "list_memories", {})
        listed = {m["memory_id"]: m for m in everything["memories"]}
        assert [n["memory_id"] for n in listed[baker["memory_id"]]["superseded_by"]] == [kings["memory_id"]]
        only_current = await search(session, "office", filters={"current_only": True}, include_unrelated=True)
        assert baker["memory_id"] not in {hit["memory_id"] for hit in only_current}


async def test_near_misses_stay_unlinked(settings: Settings) -> None:
    async with local_session(settings) as session:
        pairs = [
            (("Ana lives in Lyon.", {}), ("Bruno lives in Nice.", {})),  # two people
            (("My dog Rex is 3 years old.", {}), ("My cat Mochi is 5 years old.", {})),  # two pets
            (("I live in Leeds.", {}), ("I'm thinking about moving to Bristol next year.", {})),  # a plan
            (("I moved to Denver in 2019.", {}), ("Moving to Denver back in 2019 was the best thing I did.", {})),
            (("I live in Austin.", {"speaker": "Kim"}), ("I live in Reno.", {"speaker": "Lee"})),  # two speakers
            (("I play guitar.", {}), ("I've also started learning the piano.", {})),  # a second hobby
            (("I work at Stripe.", {}), ("Do you still work at Stripe?", {})),  # a question
            (("I won't quit my job at the bakery.", {}), ("Thanks, I won't quit, no matter what.", {})),
        ]
        for index, ((first, first_meta), (second, second_meta)) in enumerate(pairs):
            workspace = f"near-miss-{index}"
            older = await call(session, "add_memory", {
                "text": first, "workspace": workspace, "metadata": {"date": "2025-01-10", **first_meta},
            })  # fmt: skip
            newer = await call(session, "add_memory", {
                "text": second, "workspace": workspace, "metadata": {"date": "2025-06-10", **second_meta},
            })  # fmt: skip
            assert newer["supersedes"] == [] and newer["superseded_by"] == [], (first, second, newer)
            got = await call(session, "get_memory", {"memory_id": older["memory_id"], "workspace": workspace})
            assert got["superseded_by"] == [], (first, second)


async def test_a_memory_dated_earlier_is_the_one_replaced_whatever_the_order_of_adding(settings: Settings) -> None:
    async with local_session(settings) as session:
        newer = await add(session, "Priya's phone number is 555-0199.", "2025-06-01")
        older = await add(session, "Priya's phone number is 555-0134.", "2024-02-01")
        assert older["superseded_by"][0]["memory_id"] == newer["memory_id"] and older["supersedes"] == []
        hits = await search(session, "What is Priya's phone number?")
        assert hits[0]["memory_id"] == newer["memory_id"]


async def test_the_replacement_of_a_hit_comes_with_it_even_when_the_query_does_not_match_it(
    settings: Settings,
) -> None:
    async with local_session(settings) as session:
        oat = await add(session, "Usual coffee order: oat milk flat white, extra hot.", "2024-02-22")
        cortado = await add(session, "Actually I've gone off oat milk. These days it's just a cortado.", "2024-06-18")
        assert [o["memory_id"] for o in cortado["supersedes"]] == [oat["memory_id"]]

        # The question shares words only with the old order; the current one comes first, saying why it is there.
        hits = await search(session, "What's my usual coffee order?")
        assert [hit["memory_id"] for hit in hits] == [cortado["memory_id"], oat["memory_id"]]
        assert hits[0]["matched_by"] == ["update"] and hits[0]["supersedes"][0]["memory_id"] == oat["memory_id"]
        reply = await session.call_tool("search_memory", {"query": "What's my usual coffee order?"})
        assert "update) Actually I've gone off oat milk" in text_of(reply)

        # The past keeps the order of relevance, and the filters hold for what is brought along.
        past = await search(session, "What was my usual coffee order before?")
        assert past and all(hit["matched_by"] != ["update"] for hit in past)
        january = await search(session, "What's my usual coffee order?", filters={"date_to": "2024-03-01"})
        assert [hit["memory_id"] for hit in january] == [oat["memory_id"]]
        # With one place, it never takes the matched memory's place: that one names it.
        one = await search(session, "What's my usual coffee order?", limit=1)
        assert [hit["memory_id"] for hit in one] == [oat["memory_id"]]
        assert one[0]["superseded_by"][0]["memory_id"] == cortado["memory_id"]
        # With no room left, the first hit's replacement takes the last hit's place, and only the first hit's.
        other = await add(session, "The usual coffee order at the office café comes with a free cookie.", "2024-03-01")
        full = await search(session, "What's my usual coffee order?", limit=2)
        assert [hit["memory_id"] for hit in full] == [cortado["memory_id"], oat["memory_id"]], other


async def test_a_user_undoes_a_wrong_link_for_good(settings: Settings) -> None:
    async with local_session(settings) as session:
        baker = await add(session, BAKER, "2026-01-10")
        kings = await add(session, KINGS, "2026-03-05")
        assert kings["supersedes"]

        undone = await call(session, "update_memory", {
            "memory_id": baker["memory_id"], "not_replaced_by": [kings["memory_id"]],
        })  # fmt: skip
        assert undone["unlinked"] == [kings["memory_id"]] and undone["superseded_by"] == []
        assert undone["text_changed"] is False and undone["metadata_changed"] is False
        reply = await session.call_tool("update_memory", {
            "memory_id": baker["memory_id"], "not_replaced_by": [kings["memory_id"]],
        })  # fmt: skip
        assert not reply.is_error

        # Changing the newer memory finds its links again, but never the one the user undid.
        changed = await call(session, "update_memory", {
            "memory_id": kings["memory_id"], "text": KINGS + " Parking is in the yard.",
        })  # fmt: skip
        assert changed["text_changed"] and changed["supersedes"] == []
        hits = await search(session, "Where is the team's office?")
        assert all(hit["superseded_by"] == [] for hit in hits)

        current = await call(session, "list_memories", {"filters": {"current_only": True}})
        assert {m["memory_id"] for m in current["memories"]} == {baker["memory_id"], kings["memory_id"]}


async def test_updates_and_deletes_keep_the_links_true(settings: Settings) -> None:
    async with local_session(settings) as session:
        baker = await add(session, BAKER, "2026-01-10")
        kings = await add(session, KINGS, "2026-03-05")
        assert kings["supersedes"]

        # The newer memory no longer speaks of the office: the link goes with what it said.
        rewritten = await call(session, "update_memory", {
            "memory_id": kings["memory_id"], "text": "The quarterly review moved to Thursday afternoon.",
        })  # fmt: skip
        assert rewritten["supersedes"] == []
        assert (await call(session, "get_memory", {"memory_id": baker["memory_id"]}))["superseded_by"] == []

        # Written back, the link is found again; deleting the newer memory makes the older current again.
        back = await call(session, "update_memory", {"memory_id": kings["memory_id"], "text": KINGS})
        assert [o["memory_id"] for o in back["supersedes"]] == [baker["memory_id"]]
        await call(session, "delete_memory", {"memory_ids": [kings["memory_id"]]})
        got = await call(session, "get_memory", {"memory_id": baker["memory_id"]})
        assert got["superseded_by"] == []
        current = await call(session, "list_memories", {"filters": {"current_only": True}})
        assert [m["memory_id"] for m in current["memories"]] == [baker["memory_id"]]


async def test_bad_unlink_requests_name_the_field_and_change_nothing(settings: Settings) -> None:
    async with local_session(settings) as session:
        baker = await add(session, BAKER, "2026-01-10")
        kings = await add(session, KINGS, "2026-03-05")
        absent = "00000000-0000-4000-8000-000000000000"
        cases = [
            ({"not_replaced_by": [absent]}, f"not_replaced_by: no memory {absent}"),
            ({"not_replaced_by": [baker["memory_id"]]}, "not_replaced_by: a memory cannot replace itself"),
            ({"not_replaced_by": []}, "not_replaced_by"),
            ({"not_replaced_by": ["not-an-id"]}, "not_replaced_by.0"),
        ]
        for extra, expected in cases:
            reply = await session.call_tool("update_memory", {"memory_id": baker["memory_id"], **extra})
            assert reply.is_error and expected in text_of(reply), (extra, text_of(reply))
        got = await call(session, "get_memory", {"memory_id": baker["memory_id"]})
        assert [n["memory_id"] for n in got["superseded_by"]] == [kings["memory_id"]]


async def test_find_updates_links_a_store_filled_without_detection(settings: Settings) -> None:
    async with local_session(settings.model_copy(update={"update_detection": False})) as session:
        baker = await add(session, BAKER, "2026-01-10")
        await add(session, LUNCH, "2026-02-01")
        kings = await add(session, KINGS, "2026-03-05")
        assert kings["supersedes"] == []  # detection off: nothing linked at add time

        queued = await call(session, "find_updates", {})
        assert queued["queued"] is True and queued["memories"] == 3
        job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 30})
        assert job["state"] == "completed" and job["counts"]["links"] == 1 and job["counts"]["memories"] == 3, job
        got = await call(session, "get_memory", {"memory_id": baker["memory_id"]})
        assert [n["memory_id"] for n in got["superseded_by"]] == [kings["memory_id"]]

        again = await call(session, "find_updates", {})  # nothing twice
        job = await call(session, "job_status", {"job_id": again["job_id"], "wait_s": 30})
        assert job["state"] == "completed" and job["counts"].get("links", 0) == 0, job


async def test_a_turn_finds_the_turn_it_updates_among_many_greetings(settings: Settings) -> None:
    """A chat turn's vector is mostly its greeting: the turns nearest to it are other greetings, so the keyword leg
    brings the turn that spoke of the same internship; the outcome of an interview replaces the interview."""
    gina = {"speaker": "Gina", "thread": "chat"}
    async with local_session(settings) as session:
        interview = await add(
            session,
            "Oh, btw, I had an interview for a design internship yesterday! It was so cool.",
            "2026-01-05",
            **gina,
        )
        for day in range(10, 22):  # a dozen greetings, each nearer to the next greeting than the interview is
            greeting = f"Hey Jon! Long time no talk! So much has happened - I got a fashion magazine, issue {day}!"
            await add(session, greeting, f"2026-01-{day}", **gina)
        accepted = await add(
            session, "Hey Jon! Long time no talk! A lot's happened - I just got accepted for a fashion internship!",
            "2026-02-01", **gina,
        )  # fmt: skip
        [replaced] = accepted["supersedes"]
        assert replaced["memory_id"] == interview["memory_id"] and replaced["attribute"] == "outcome"
        assert "got accepted" in replaced["cues"]


# Two terse facts no rule reads as an update: no attribute of the rules' table, no word of change.
PIZZA = "Favourite pizza topping: anchovies."
PINEAPPLE = "Goes for pineapple on every pizza."


async def test_a_client_states_what_a_memory_replaces_when_the_rules_miss_it(settings: Settings) -> None:
    async with local_session(settings) as session:
        old = await add(session, PIZZA, "2026-01-10")
        unlinked = await add(session, PINEAPPLE, "2026-03-05")
        assert unlinked["supersedes"] == [], "the rules must miss this pair for the test to mean anything"
        by_relevance = await search(session, "What pizza topping do I like?")
        assert [hit["memory_id"] for hit in by_relevance][:2] == [old["memory_id"], unlinked["memory_id"]]
        await call(session, "delete_memory", {"memory_ids": [unlinked["memory_id"]]})

        new = await call(session, "add_memory", {
            "text": PINEAPPLE, "metadata": {"date": "2026-03-05"}, "replaces": [old["memory_id"]],
        })  # fmt: skip
        [replaced] = new["supersedes"]
        assert replaced["memory_id"] == old["memory_id"] and replaced["attribute"] == "stated"
        assert replaced["confidence"] == 1.0 and replaced["evidence"] == PINEAPPLE
        hits = await search(session, "What pizza topping do I like?")
        assert [hit["memory_id"] for hit in hits][:2] == [new["memory_id"], old["memory_id"]]
        reply = await session.call_tool("search_memory", {"query": "What pizza topping do I like?"})
        assert f"replaced by memory {new['memory_id']} (2026-03-05, stated)" in text_of(reply)

        # The client's word outlives a rewrite of either side (the rules' links are found again, it is kept)...
        await call(session, "update_memory", {"memory_id": new["memory_id"], "text": PINEAPPLE + " Extra cheese."})
        got = await call(session, "get_memory", {"memory_id": old["memory_id"]})
        assert [n["memory_id"] for n in got["superseded_by"]] == [new["memory_id"]]
        # ...is undone like any link, and stated again through update_memory, which overrides the undo.
        await call(session, "update_memory", {"memory_id": old["memory_id"], "not_replaced_by": [new["memory_id"]]})
        assert (await call(session, "get_memory", {"memory_id": old["memory_id"]}))["superseded_by"] == []
        again = await call(session, "update_memory", {"memory_id": new["memory_id"], "replaces": [old["memory_id"]]})
        assert again["stated"] == [old["memory_id"]] and not again["text_changed"]
        assert [o["memory_id"] for o in again["supersedes"]] == [old["memory_id"]]
        reply = await session.call_tool(
            "update_memory", {"memory_id": new["memory_id"], "replaces": [old["memory_id"]]}
        )
        assert f"now replaces {old['memory_id']}" in text_of(reply) and "nothing changed" not in text_of(reply)

        # Stated the other way round, the link turns: a memory never replaces and is replaced by the same one.
        turned = await call(session, "update_memory", {"memory_id": old["memory_id"], "replaces": [new["memory_id"]]})
        assert [o["memory_id"] for o in turned["supersedes"]] == [new["memory_id"]] and turned["superseded_by"] == []

        # A delete takes the link along.
        await call(session, "delete_memory", {"memory_ids": [old["memory_id"]]})
        assert (await call(session, "get_memory", {"memory_id": new["memory_id"]}))["superseded_by"] == []


async def test_bad_replaces_name_the_field_and_store_nothing(settings: Settings) -> None:
    async with local_session(settings) as session:
        old = await add(session, PIZZA, "2026-01-10")
        absent = "00000000-0000-4000-8000-000000000000"
        adds: list[tuple[dict[str, Any], str]] = [
            ({"replaces": [absent]}, f"replaces: no memory {absent}"),
            ({"replaces": []}, "replaces"),
            ({"replaces": ["not-an-id"]}, "replaces.0"),
            ({"replaces": [old["memory_id"]], "workspace": "elsewhere"}, "elsewhere"),
        ]
        for extra, expected in adds:
            reply = await session.call_tool("add_memory", {"text": PINEAPPLE, **extra})
            assert reply.is_error and expected in text_of(reply), (extra, text_of(reply))
        # The same text again is the same memory, which cannot replace itself.
        reply = await session.call_tool("add_memory", {"text": PIZZA, "replaces": [old["memory_id"]]})
        assert reply.is_error and "replaces: this text is memory" in text_of(reply), text_of(reply)
        updates = [
            ({"replaces": [old["memory_id"]]}, "replaces: a memory cannot replace itself"),
            ({"replaces": [absent]}, f"replaces: no memory {absent}"),
            ({"replaces": [absent], "not_replaced_by": [absent]}, "replaces and not_replaced_by both name"),
        ]
        for extra, expected in updates:
            reply = await session.call_tool("update_memory", {"memory_id": old["memory_id"], **extra})
            assert reply.is_error and expected in text_of(reply), (extra, text_of(reply))
        listed = await call(session, "list_memories", {})
        assert [m["memory_id"] for m in listed["memories"]] == [old["memory_id"]]
        workspaces = await call(session, "list_workspaces", {})
        assert "elsewhere" not in str(workspaces)


async def test_a_stated_link_holds_against_the_rules_finding_the_other_way(settings: Settings) -> None:
    async with local_session(settings) as session:
        baker = await add(session, BAKER, "2026-01-10")
        kings = await add(session, KINGS, "2026-03-05")
        assert [o["memory_id"] for o in kings["supersedes"]] == [baker["memory_id"]]  # the rules' link

        # The user knows better: the Baker Street note is the current one.
        stated = await call(
            session, "update_memory", {"memory_id": baker["memory_id"], "replaces": [kings["memory_id"]]}
        )
        assert [o["memory_id"] for o in stated["supersedes"]] == [kings["memory_id"]] and stated["superseded_by"] == []
        # A change of the other memory finds its links again, but none against the user's word.
        await call(
            session, "update_memory", {"memory_id": kings["memory_id"], "text": KINGS + " Parking is in the yard."}
        )
        got = await call(session, "get_memory", {"memory_id": baker["memory_id"]})
        assert got["superseded_by"] == [] and [o["memory_id"] for o in got["supersedes"]] == [kings["memory_id"]]
