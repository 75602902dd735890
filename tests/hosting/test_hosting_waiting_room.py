"""The waiting room: people arriving through the study's one link are seated in order of
arrival (the first to arrive fill session 1), a crowd-work id is kept only as a
pseudonym, seats still empty after the wait are filled with a model when the study allows
it, and the record says who waited how long and which seats were filled."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hosting_support import GARDEN, MODEL, SeatClient, client_of, load, make_study

import sotopia_are as sa
from sotopia_are.hosting import HUMAN, HostedStudy
from sotopia_are.llm import LLMSession
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer

HUMANS = ["Jo Ng", "Benedikt Müller-Roth"]


def entry_token(study: Any) -> str:
    (link,) = [link for link in study.links if link.session == 0]
    return str(link.token)


async def arrive(http: httpx.AsyncClient, token: str, participant: str = "") -> httpx.Response:
    return await http.post(
        "/api/arrive",
        json={"participant": participant} if participant else {},
        headers={"Authorization": f"Bearer {token}"},
    )


def talk(view: dict[str, Any]) -> dict[str, Any]:
    return {"action_type": "speak", "argument": "The herbs need the sunny half."}


async def test_people_are_seated_in_order_of_arrival(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession], store: EpisodeStore
) -> None:
    spec = load(GARDEN, max_turns=4)
    study = make_study(
        spec, HUMANS, make_session(), store=store, sessions=2, by_arrival=True, turn_timeout=30
    )
    assert [link.seat for link in study.links] == [None, None]  # the room and the monitor
    entry = entry_token(study)
    async with client_of(study) as http:
        # The consent text is read by the room's token before any seat is given; reading
        # it takes no seat.
        intro = await http.get("/api/seat/consent", headers={"Authorization": f"Bearer {entry}"})
        assert intro.status_code == 200, intro.text
        assert intro.json()["seat"] is None and intro.json()["arrived"] is False
        assert "research study" in intro.json()["consent"]
        assert study.sessions[0].arrivals == {}
        first = await arrive(http, entry, "PROLIFIC-AAA")
        assert first.status_code == 200, first.text
        seated = first.json()
        assert (seated["session"], seated["seat"], seated["state"]) == (1, "Jo Ng", "waiting")
        # The same person again (a reload): the same seat, not a second one.
        again = (await arrive(http, entry, "PROLIFIC-AAA")).json()
        assert (again["session"], again["seat"], again["token"]) == (1, "Jo Ng", seated["token"])
        second = (await arrive(http, entry, "PROLIFIC-BBB")).json()
        assert (second["session"], second["seat"]) == (1, "Benedikt Müller-Roth")
        assert study.sessions[0].state.value == "running"  # session 1 is full: it starts
        third = (await arrive(http, entry)).json()
        fourth = (await arrive(http, entry)).json()
        assert [(v["session"], v["seat"]) for v in (third, fourth)] == [(2, s) for s in HUMANS]
        full = await arrive(http, entry)
        assert full.status_code == 409 and "taken" in full.json()["error"]
        # The room's token opens no seat, and a seat's token is no way into the room.
        bad = await http.get("/api/seat", headers={"Authorization": f"Bearer {entry}"})
        assert bad.status_code == 404
        assert (await arrive(http, seated["token"])).status_code == 404
        players = [SeatClient(http, v["token"]) for v in (seated, second, third, fourth)]
        views = await asyncio.gather(*(player.play(talk) for player in players))
    assert [view["state"] for view in views] == ["finished"] * 4
    for session in study.sessions:
        record = store.load(session.episode_id)
        assert record.status is sa.EpisodeStatus.COMPLETE
        assert [record.models[name] for name in HUMANS] == [HUMAN, HUMAN]
    stored = store.get_episode(study.sessions[0].episode_id).metadata
    humans = stored["hosting"]["humans"]  # type: ignore[index,call-overload]
    assert set(humans) == set(HUMANS)
    assert humans["Jo Ng"]["waited_s"] >= humans["Benedikt Müller-Roth"]["waited_s"] >= 0
    pseudonyms = {humans[name]["participant"] for name in HUMANS}
    assert len(pseudonyms) == 2 and "" not in pseudonyms
    assert "PROLIFIC" not in json.dumps(stored)


async def test_a_seat_still_empty_after_the_wait_is_filled_with_a_model(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession], store: EpisodeStore
) -> None:
    spec = load(GARDEN, max_turns=4)
    study = make_study(spec, HUMANS, make_session(), store=store, by_arrival=True, fill_after=0.3)
    async with client_of(study) as http:
        seated = (await arrive(http, entry_token(study), "PROLIFIC-AAA")).json()
        assert seated["seat"] == "Jo Ng" and seated["state"] == "waiting"
        jo = SeatClient(http, seated["token"])
        view = await jo.play(talk)
        late = await arrive(http, entry_token(study))
        assert late.status_code == 409  # the filled seat is nobody's to take
        monitor = (
            await http.get(
                "/api/monitor", headers={"Authorization": f"Bearer {study.tokens.monitor}"}
            )
        ).json()
    assert view["state"] == "finished"
    session = study.sessions[0]
    assert session.filled == ["Benedikt Müller-Roth"]
    record = store.load(session.episode_id)
    assert record.status is sa.EpisodeStatus.COMPLETE
    assert record.models == {**record.models, "Jo Ng": HUMAN, "Benedikt Müller-Roth": MODEL}
    assert any(name == "Benedikt Müller-Roth" for name, _ in record.actions())
    hosting = store.get_episode(session.episode_id).metadata["hosting"]
    assert hosting["filled"] == ["Benedikt Müller-Roth"]  # type: ignore[index,call-overload]
    waited = hosting["humans"]["Jo Ng"]["waited_s"]  # type: ignore[index,call-overload]
    assert waited >= 0.3
    seats = {row["name"]: row for row in monitor["sessions"][0]["seats"]}
    assert (
        seats["Benedikt Müller-Roth"]["filled"] and seats["Benedikt Müller-Roth"]["player"] == MODEL
    )
    assert not seats["Jo Ng"]["filled"] and seats["Jo Ng"]["player"] == HUMAN


async def test_without_fill_in_a_session_waits_for_its_people(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    study = make_study(load(GARDEN, max_turns=4), HUMANS, make_session(), by_arrival=True)
    async with client_of(study) as http:
        seated = (await arrive(http, entry_token(study))).json()
        await asyncio.sleep(0.5)
        view = await SeatClient(http, seated["token"]).get()
    assert view["state"] == "waiting" and study.sessions[0].filled == []


async def test_a_study_without_a_waiting_room_has_no_entry_consent(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    study = make_study(load(GARDEN, max_turns=4), HUMANS, make_session())
    async with client_of(study) as http:
        for token in (study.tokens.entry, study.tokens.monitor, "made-up"):
            asked = await http.get(
                "/api/seat/consent", headers={"Authorization": f"Bearer {token}"}
            )
            assert asked.status_code == 404 and asked.json() == {"error": "not found"}


def test_a_study_that_fills_seats_needs_a_model_for_them() -> None:
    spec = load(GARDEN)
    with pytest.raises(ValueError, match="give models"):
        HostedStudy.build(spec, list(spec.agent_names), fill_after=5.0)
    with pytest.raises(ValueError, match="fill_after must be positive"):
        HostedStudy.build(spec, list(spec.agent_names), models=MODEL, fill_after=0)
