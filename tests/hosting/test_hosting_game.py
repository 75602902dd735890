"""A person plays Werewolf through the API against stand-in agents: offered only the legal
moves, sent nothing the seat may not perceive (another's role, the wolves' night moves)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hosting_support import WEREWOLF, SeatClient, client_of, load, make_study, token_of

import sotopia_are as sa
from sotopia_are.games import outcome_of
from sotopia_are.llm import LLMSession
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer

PERSON = "Ada Brennan"


def ada(view: dict[str, Any]) -> dict[str, Any]:
    """Speak when she may, else aim at the first eligible player, else the first move."""
    moves = view["turn"]["legal"]["moves"]
    assert moves and "actions" not in view["turn"]["legal"]
    by_kind = {move["kind"]: move for move in moves}
    if "speak" in by_kind:
        return {"move": by_kind["speak"]["name"], "argument": "I trust nobody tonight."}
    if "target" in by_kind:
        move = by_kind["target"]
        assert PERSON not in move["targets"] or move["name"] != "vote"
        return {"move": move["name"], "target": move["targets"][0]}
    return {"move": moves[0]["name"]}


async def test_a_person_plays_werewolf_and_is_sent_only_what_the_seat_perceives(
    stand_in: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    store: EpisodeStore,
) -> None:
    spec = load(WEREWOLF)
    study = make_study(spec, [PERSON], make_session(), store=store, turn_timeout=30)
    async with client_of(study) as http:
        person = SeatClient(http, token_of(study, PERSON))
        # An illegal move is refused by the API with the reason, never by the game.
        await person.get()
        while not person.view["your_turn"]:
            await person.changes()
        refused = await person.act({"move": "fly"})
        assert refused.status_code == 422 and "fly" in refused.json()["error"]
        last = await person.play(ada)
    record = await study.sessions[0].finished()
    assert record is not None and record.status is sa.EpisodeStatus.COMPLETE, record.reason
    assert record.models[PERSON] == "human"
    # A hosted game is rated by its outcome like any game, from its log.
    verdict = record.verdict_of(sa.GameJudge().verdict_key)
    assert verdict is not None and verdict.rated
    outcome = outcome_of(record.spec, record.entries)
    assert {r.agent: r.scores()["payoff"] for r in verdict.evaluation.ratings} == {
        row.name: row.payoff for row in outcome.players
    }
    assert last["state"] == "finished"
    hidden = [
        entry.render()
        for entry in record.views.entries
        if not entry.visible_to(PERSON) and not entry.is_nothing
    ]
    assert hidden  # the others did things out of her sight (roles told, night moves)
    for body in person.bodies:
        for text in hidden:
            assert text not in body
    # Her own role was told to her alone, and she was sent it.
    own_role = f"{PERSON}, your role is"
    assert any(own_role in line["text"] for line in last["transcript"])
    assert not any(
        "your role is" in line["text"] and own_role not in line["text"]
        for line in last["transcript"]
    )
