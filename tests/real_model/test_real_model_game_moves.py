"""A real model's game moves, recorded once and read again offline (runs in CI).

``tests/data/real_model/game_move_qwen05.json`` holds what Qwen2.5-Coder-0.5B (llama.cpp,
constrained decoding under the schema sent) answered to LLMAgent game turns: a day vote, a
night kill and a bargaining offer. Each answer must still validate against the schema the
turn's moves give now and be read to the same legal move; a change to the schema or the
parser that would refuse or misread a real model's answer fails here. Record again with a
served model (see ``../shared/tools/real_model/README.md``)::

    python tests/real_model/test_real_model_game_moves.py http://127.0.0.1:8089/v1 qwen05
"""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sotopia_are.agents import LLMAgent, move_output_type, move_schema
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.llm.structured import parse_reply
from sotopia_are.messages import GameMove, Observation, ScriptBackground
from sotopia_are.social.protocol import AgentTurn, MoveOption

RECORDING = Path(__file__).parents[1] / "data" / "real_model" / "game_move_qwen05.json"
PLAYERS = ("Ann", "Bob", "Cid", "Dee", "Eve")


def turns() -> list[AgentTurn]:
    """The game turns asked of the model: a day vote, a night kill, a bargaining offer."""
    village = ScriptBackground(
        scenario="A village of five plays Werewolf: at night the werewolves kill, by day "
        "everyone votes to eliminate a suspect.",
        agent_names=list(PLAYERS),
        agent_backgrounds=["", "", "", "", ""],
        agent_goals=["Win for your team.", "Unknown", "Unknown", "Unknown", "Unknown"],
    )
    day = (
        MoveOption("say", "speak", "tell the village what you think"),
        MoveOption("vote", "target", "vote to eliminate a player", targets=("Bob", "Cid", "Eve")),
    )
    night = (
        MoveOption(
            "kill", "target", "choose the villager to kill", audience="team", targets=("Cid", "Eve")
        ),
    )
    market = ScriptBackground(
        scenario="Ann and Bob split 100 coins: one offers a share, the other accepts or not.",
        agent_names=["Ann", "Bob"],
        agent_backgrounds=["", ""],
        agent_goals=["Keep as much of the 100 coins as you can.", "Unknown"],
    )
    deal = (
        MoveOption(
            "offer", "offer", "offer Bob this many of the 100 coins", amount_min=0, amount_max=100
        ),
    )
    transcript = (
        "Turn #0\nEnvironment (private to Ann): You are a werewolf; Dee is your teammate.\n"
        'Turn #1\nBob said: "Cid was very quiet yesterday."\n'
        'Turn #2\nCid said: "I was thinking. Eve is the one I doubt."'
    )
    return [
        turn("Ann", village, 3, transcript, day, "day vote", PLAYERS),
        turn(
            "Ann",
            village,
            4,
            transcript + "\nTurn #3\nEnvironment: Night falls.",
            night,
            "night",
            PLAYERS,
        ),
        turn("Ann", market, 1, "", deal, "offer", ("Ann", "Bob")),
    ]


def turn(
    name: str,
    background: ScriptBackground,
    number: int,
    transcript: str,
    moves: tuple[MoveOption, ...],
    phase: str,
    participants: tuple[str, ...],
) -> AgentTurn:
    return AgentTurn(
        agent_name=name,
        turn_number=number,
        participants=participants,
        background=background,
        observation=Observation(last_turn="", turn_number=number, available_actions=["none"]),
        transcript=transcript,
        available_actions=("none",),
        moves=moves,
        phase=phase,
    )


def option_json(option: MoveOption) -> dict[str, Any]:
    return {
        "name": option.name,
        "kind": option.kind,
        "description": option.description,
        "audience": option.audience,
        "targets": list(option.targets),
        "amount_min": option.amount_min,
        "amount_max": option.amount_max,
    }


def option_from(data: dict[str, Any]) -> MoveOption:
    return MoveOption(**{**data, "targets": tuple(data["targets"])})


async def record(api_base: str, model: str) -> list[dict[str, Any]]:
    """Ask ``model`` at ``api_base`` for each turn's move; what it answered, per turn."""
    config = LLMConfig(api_base=api_base, api_key="none", timeout_s=900)
    recorded = []
    for asked in turns():
        agent = LLMAgent(asked.agent_name, f"openai/{model}", LLMSession(config))
        move = await agent.act(asked)
        [call] = agent.call_records()
        recorded.append(
            {
                "phase": asked.phase,
                "participants": list(asked.participants),
                "moves": [option_json(option) for option in asked.moves],
                "output_mode": call.output_mode,
                "sent_schema": call.params["response_format"]["json_schema"]["schema"],
                "attempts": [
                    {"raw_text": a.raw_text, "error": a.error, "normalized": a.normalized}
                    for a in call.attempts
                ],
                "move": move.model_dump(),
            }
        )
    return recorded


RECORDED: list[dict[str, Any]] = (
    json.loads(RECORDING.read_text("utf-8"))["turns"] if RECORDING.exists() else []
)


def test_there_is_a_recording() -> None:
    assert RECORDED, f"no recording at {RECORDING}"


@pytest.mark.parametrize("played", RECORDED, ids=[t["phase"] for t in RECORDED])
def test_a_real_models_game_move_reads_again_to_the_same_legal_move(
    played: dict[str, Any],
) -> None:
    moves = tuple(option_from(option) for option in played["moves"])
    participants = tuple(played["participants"])
    schema = move_schema(moves)
    assert played["sent_schema"] == schema  # else the recording is stale: record again
    output_type = move_output_type(moves, participants)
    *refused, last = played["attempts"]
    for attempt in refused:
        with pytest.raises(ValueError):
            parse_reply(attempt["raw_text"], output_type)
    jsonschema.validate(json.loads(last["raw_text"]), schema)  # the server kept to it
    parsed = parse_reply(last["raw_text"], output_type)
    assert list(parsed.normalizations) == last["normalized"]
    move = GameMove.model_validate(parsed.value.model_dump())
    assert move.model_dump() == played["move"]
    [option] = [o for o in moves if o.name == move.move]
    if option.kind == "target":
        assert move.target in option.targets
    if option.kind == "offer":
        assert move.amount is not None
        assert option.amount_min <= move.amount <= option.amount_max
    if option.kind == "speak":
        assert move.argument.strip()


if __name__ == "__main__":
    api_base, model = sys.argv[1], sys.argv[2]
    answered = asyncio.run(record(api_base, model))
    RECORDING.write_text(
        json.dumps(
            {"model": model, "served_by": "llama.cpp (xllamacpp)", "turns": answered},
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        "utf-8",
    )
    print(json.dumps([t["move"] for t in answered], indent=2))
