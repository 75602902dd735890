"""Helpers of the viewer's tests: a store of real episodes, made on an embedded Redis:
the demo's two (the garden committee's whisper among them), then episodes played and
rated through the stand-in server, whose replies carry markup the pages must escape;
and a store of games played in-process (a werewolf game, one that failed, a deal)."""

import asyncio
import contextlib
import html
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import sotopia_are as sa
from sotopia_are import games
from sotopia_are.cli import app
from sotopia_are.evaluation import SOTOPIA_EVAL
from sotopia_are.messages import GameMove
from sotopia_are.record import record_of_result
from sotopia_are.social import AgentTurn, CallRecord, EpisodeResult
from sotopia_are.storage import EmbeddedRedis, EpisodeStore, connect
from sotopia_are.testing import LocalLLMServer, schema_rule

MODELS = ("openai/model-a", "openai/model-b")
JUDGES = ("openai/judge-one", "openai/judge-two")
TAG = "study"
SPEECH = "<script>document.title = 'pwned'</script>Let us meet <b>halfway</b>."
GARDEN_WHISPER = "Between us: the co-op could share the plot"


@dataclass(frozen=True)
class Seeded:
    """The seeded store's URL and what is in it."""

    url: str
    garden: str  # the demo's garden committee: a whisper, rated by both judges
    bakery: str  # the demo's bakery negotiation: scripted, unrated
    played: tuple[str, ...]  # played by MODELS against each other, tagged TAG
    failed: str  # a copy of a played episode stored as failed

    def store(self) -> EpisodeStore:
        return connect(self.url)


def agent_sections(page: str) -> dict[str, str]:
    """Each agent's view section of an episode page, by agent (its name unescaped)."""
    found = re.findall(
        r'<details class="agent-view" data-agent="([^"]*)">(.*?)</details>', page, re.S
    )
    return {html.unescape(name): body for name, body in found}


def _rule() -> Any:
    """Agents speak :data:`SPEECH`; a judge rates every dimension with a reasoning that
    names the agent, the dimension and the request (and carries markup), scores varying
    from request to request so the distributions have some spread."""
    requests = itertools.count()

    def answer(request: Mapping[str, Any]) -> Any:
        if "impartial expert judge" not in request["messages"][0]["content"]:
            if (request.get("response_format") or {}).get("json_schema"):
                return json.dumps({"action_type": "speak", "argument": SPEECH})
            return schema_rule(request)
        number = next(requests)
        names = [n for n in _names(request) if n]
        return json.dumps(
            {
                name: {
                    d.name: {
                        "reasoning": f"<i>{name}</i> on {d.name}, rating {number}",
                        "score": d.low + (number + index) % (d.high - d.low + 1),
                    }
                    for d in SOTOPIA_EVAL.dimensions
                }
                for index, name in enumerate(names)
            }
        )

    return answer


def _names(request: Mapping[str, Any]) -> list[str]:
    """The agents a judge request asks about: the top-level keys of its JSON schema."""
    schema = request["response_format"]["json_schema"]["schema"]
    return list(schema.get("required") or schema["properties"])


def _spec(number: int) -> sa.EpisodeSpec:
    return sa.EpisodeSpec(
        episode_id=f"played-{number}",
        scenario="A bakery before closing <em>time</em>.",
        agent_names=["Mara Quinn", "Teo Alvarez"],
        agent_backgrounds=["the baker", "a café owner"],
        agent_goals=["sell the bread", "buy it cheap"],
        max_turns=3,
    )


@contextlib.contextmanager
def seeded_store(directory: Path) -> Iterator[Seeded]:
    """The seeded store on an embedded Redis in ``directory``, stopped at the end."""
    with EmbeddedRedis(directory / "redis") as client:
        url = f"unix://{client.connection_pool.connection_kwargs['path']}"
        # The demo writes its ARE export to the working directory.
        with contextlib.chdir(_made(directory / "demo")):
            demo = CliRunner().invoke(app, ["demo"], env={"REDIS_OM_URL": url}, input="")
        assert demo.exit_code == 0, demo.output
        with LocalLLMServer() as server, connect(url) as store:
            server.rule = _rule()
            config = sa.LLMConfig(api_base=server.url)
            judges = [sa.LLMJudge(model, config=config) for model in JUDGES]
            garden, bakery = (
                next(s.episode_id for s in store.summaries(tag="demo") if name in s.episode_id)
                for name in ("garden", "bakery")
            )
            for judge in judges:
                sa.rate(store.load(garden), judge, store=store)
            played = [
                sa.run(
                    _spec(number),
                    models={"Mara Quinn": MODELS[number % 2], "Teo Alvarez": MODELS[1]},
                    judge=judges[0],
                    store=store,
                    config=config,
                    tag=TAG,
                ).episode_id
                for number in range(3)
            ]
            failed = store.load(played[0]).model_copy(
                update={
                    "episode_id": "played-failed",
                    "status": sa.EpisodeStatus.FAILED,
                    "reason": "Teo Alvarez's model failed: <timeout>",
                    "verdicts": (),
                }
            )
            store.save_record(failed)
        yield Seeded(url, garden, bakery, tuple(played), failed.episode_id)


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory


MARKUP = " <i>trust me</i>"
VOTE_REASON = "<script>document.title = 'pwned'</script>they <b>lied</b>"


@dataclass(frozen=True)
class Games:
    """The games store's URL and the games in it, all tagged ``games``."""

    url: str
    werewolf: str  # a finished werewolf game: night chat, a seer's inspection, eliminations
    failed: str  # a werewolf game that failed: a player's moves were refused
    bargain: str  # the bargaining game, ended by a deal at DEAL

    def store(self) -> EpisodeStore:
        return connect(self.url)


DEAL = 55
WEREWOLF_SEED = 3


class MarkupPlayer:
    """A :class:`RandomPlayer` whose speech ends with :data:`MARKUP` and whose votes give
    :data:`VOTE_REASON`: untrusted text the pages must escape."""

    def __init__(self, name: str, seed: int) -> None:
        self._player = games.RandomPlayer(name, seed)
        self.name = name

    async def act(self, turn: AgentTurn) -> GameMove:
        move = await self._player.act(turn)
        if move.is_speech:
            return move.model_copy(update={"argument": move.argument + MARKUP})
        if move.target is not None:
            return move.model_copy(update={"argument": VOTE_REASON})
        return move

    def call_records(self) -> Sequence[CallRecord]:
        return ()


def example(name: str, **changes: Any) -> games.GameSpec:
    path = Path(__file__).parents[2] / "examples" / "games" / f"{name}.json"
    return games.GameSpec.model_validate_json(path.read_text(encoding="utf-8")).replace(**changes)


def _stored(store: EpisodeStore, result: EpisodeResult) -> str:
    return store.save_record(record_of_result(result, tag="games")).episode_id


def _dealer(turn: AgentTurn) -> GameMove:
    """Accept a standing offer, else offer :data:`DEAL`."""
    if any(option.kind == "accept" for option in turn.moves):
        return GameMove(move="accept")
    return GameMove(move="offer", amount=DEAL)


@contextlib.contextmanager
def games_store(directory: Path) -> Iterator[Games]:
    """Games played in-process and stored on an embedded Redis in ``directory``."""
    with EmbeddedRedis(directory / "redis") as client:
        url = f"unix://{client.connection_pool.connection_kwargs['path']}"
        werewolf = example("werewolf", episode_id="werewolf-game", seed=WEREWOLF_SEED)
        failing = example("werewolf", episode_id="werewolf-failed", seed=WEREWOLF_SEED)
        bargain = example("bargaining", episode_id="bargain-deal", seed=1)

        async def play() -> list[EpisodeResult]:
            refused = failing.agent_names[1]
            return [
                await games.run_game(
                    werewolf, [MarkupPlayer(n, WEREWOLF_SEED) for n in werewolf.agent_names]
                ),
                await games.run_game(
                    failing,
                    [
                        games.ScriptedPlayer(n, lambda turn: GameMove(move="dance"))
                        if n == refused
                        else games.RandomPlayer(n, WEREWOLF_SEED)
                        for n in failing.agent_names
                    ],
                ),
                await games.run_game(
                    bargain, [games.ScriptedPlayer(n, _dealer) for n in bargain.agent_names]
                ),
            ]

        results = asyncio.run(play())
        with connect(url) as store:
            ids = [_stored(store, result) for result in results]
        yield Games(url, *ids)
