"""A game seat that lets its turns pass: each timeout is the move `timed-out`, which the
game refuses (told to that seat alone) and asks again; the third in a row fails the game
naming the seat. And a game resumed after a restart re-makes its timeouts from the log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hosting_support import WEREWOLF, SeatClient, client_of, load, make_study, token_of
from test_hosting_game import ada

import sotopia_are as sa
from sotopia_are.games import MAX_ASKS
from sotopia_are.hosting import TIMEOUT_MOVE
from sotopia_are.llm import LLMSession
from sotopia_are.storage import EpisodeStore
from sotopia_are.storage.events import encode_event
from sotopia_are.testing import LocalLLMServer

PERSON = "Ada Brennan"
REFUSED = f"{PERSON}, your move was refused: '{TIMEOUT_MOVE}' is not a move you may make now"


async def test_a_game_seat_that_never_answers_fails_the_game_naming_it(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession], store: EpisodeStore
) -> None:
    study = make_study(load(WEREWOLF), [PERSON], make_session(), store=store, turn_timeout=0.2)
    async with client_of(study) as http:
        person = SeatClient(http, token_of(study, PERSON))
        await person.get()  # arrives, then never acts
        while person.view["state"] not in ("finished", "failed"):
            await person.changes()
    assert person.view["state"] == "failed"  # over, and told it could not be finished
    assert person.view["outcome"]["status"] == "failed"
    assert person.view["timeouts"] == MAX_ASKS
    record = store.load(study.sessions[0].episode_id)
    assert record.status is sa.EpisodeStatus.FAILED
    assert record.failed_agent == PERSON
    assert f"refused {MAX_ASKS} times" in record.reason and TIMEOUT_MOVE in record.reason
    refusals = [entry for entry in record.views.entries if entry.content.startswith(REFUSED)]
    # Told after the first and second timeouts (the third fails the game), to her alone.
    assert len(refusals) == MAX_ASKS - 1
    assert all(entry.to == (PERSON,) for entry in refusals)
    texts = [line["text"] for line in person.view["transcript"]]
    assert sum(REFUSED in text for text in texts) == MAX_ASKS - 1


async def test_a_resumed_game_re_makes_a_timeout_from_the_log(
    stand_in: LocalLLMServer, make_session: Callable[..., LLMSession], store: EpisodeStore
) -> None:
    spec = load(WEREWOLF)
    settings: dict[str, Any] = {"store": store, "tag": "wolves", "turn_timeout": 1.5}
    study = make_study(spec, [PERSON], make_session(), **settings)
    token = token_of(study, PERSON)
    async with client_of(study) as http:
        person = SeatClient(http, token)
        await person.get()
        while person.view["timeouts"] == 0:  # let the first ask pass
            await person.changes()
        answered = 0
        while answered < 2 and person.view["state"] == "running":
            if person.view["your_turn"]:
                assert (await person.act(ada(person.view))).status_code == 200
                answered += 1
            await person.changes()
    episode_id = study.sessions[0].episode_id
    await study.sessions[0].stop()
    before = [encode_event(event) for event in store.read_events(episode_id)]
    again = make_study(spec, [PERSON], make_session(), **settings)
    assert again.resumed == [1]
    again.start_resumed()
    async with client_of(again) as http:
        person = SeatClient(http, token)
        last = await person.play(ada)
    assert last["state"] == "finished", last
    assert last["timeouts"] >= 1  # the replayed timeout counts again
    record = store.load(episode_id)
    assert record.status is sa.EpisodeStatus.COMPLETE, record.reason
    after = [encode_event(event) for event in record.events]
    assert after[: len(before)] == before
    assert any(REFUSED in entry.content for entry in record.views.entries)
