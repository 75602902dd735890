"""Plays Sotopia's own Werewolf games (their ``WerewolfEnv``), for ``sotopia_werewolf.py``.

Run by the Python of a SEPARATE virtualenv that has Sotopia installed (it imports
``sotopia``, never ``sotopia_are``). The game is theirs, unchanged: ``WerewolfEnv``,
``WerewolfGameEndEvaluator``, ``create_environment`` and ``create_agents`` are imported
from ``examples/experimental/werewolves/main.py`` of a Sotopia source tree (the class is
not in their package: it lives in that example), and their ``config.json`` is read from
beside it. Only their ``prepare_scenario`` is replaced, because it saves the profiles to
Redis through redis-om's ``JsonModel`` (RedisJSON and RediSearch modules, which a plain
``redis-server`` has not): here the same ``AgentProfile`` and ``EnvironmentProfile`` are
built and never saved, and ``arun_one_episode`` runs with ``push_to_db=False`` (their
example does the same), so no Redis is used at all.

Every model call goes to ``custom/bench-model@URL`` (Sotopia's way of naming an
OpenAI-compatible server), so litellm posts to ``URL/chat/completions``.

Prints one JSON line per game (the game's number, whether it ended by a win condition or
by their 40-turn cap, the message, steps, the living players) and a last summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import os
import time
from pathlib import Path
from typing import Any


def load_example(example_dir: Path) -> Any:
    """Their ``main.py`` as a module. Importing it opens its debug log beside it and adds
    rich console handlers, which are silenced here so that stdout carries only results."""
    spec = importlib.util.spec_from_file_location("werewolves_main", example_dir / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("sotopia.generation", "sotopia.envs.social_game", "sotopia"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).setLevel(logging.WARNING)
    return module


def with_players(config: dict[str, Any], players: int) -> dict[str, Any]:
    """Their config (6 players) or, for 7, the same with a third Villager, as in ours."""
    if players == 6:
        return config
    if players != 7:
        raise SystemExit("--players must be 6 (theirs) or 7 (a third villager added)")
    config = dict(config)
    third = {"name": "Gideon", "role": "Villager", "team": "Villagers"}
    config["agents"] = [*config["agents"], third]
    config["description"] = config["description"].replace(
        "This game contains six players: two villagers,",
        "This game contains seven players: three villagers,",
    )
    return config


def scenario(module: Any, config: dict[str, Any], model: str) -> tuple[Any, list[Any]]:
    """Their ``prepare_scenario`` without its ``.save()`` calls (see the module)."""
    from sotopia.database.persistent_profile import (
        AgentProfile,
        EnvironmentProfile,
        RelationshipType,
    )

    profiles, goals = [], []
    for entry in config["agents"]:
        role = entry.get("role", "")
        profiles.append(
            AgentProfile(
                first_name=entry["name"],
                last_name="",
                secret=config.get("role_secrets", {}).get(role, ""),
            )
        )
        goals.append(config.get("role_goals", {}).get(role, ""))
    names = ", ".join(entry["name"] for entry in config["agents"])
    env_profile = EnvironmentProfile(
        scenario=config["description"].format(agent_names=names),
        relationship=RelationshipType.acquaintance,
        agent_goals=goals,
        tag="werewolves",
    )
    env = module.create_environment(env_profile, model, config)
    agents = module.create_agents(profiles, env_profile, model, config)
    return env, agents


async def play(module: Any, config: dict[str, Any], model: str, number: int) -> dict[str, Any]:
    from sotopia.server import arun_one_episode

    env, agents = scenario(module, config, model)
    began = time.perf_counter()
    await arun_one_episode(
        env=env,
        agent_list=agents,
        omniscient=False,
        script_like=False,
        json_in_script=False,
        tag=None,
        push_to_db=False,
    )
    ending = ""
    for sender, message in reversed(env.inbox):
        text = message.to_natural_language()
        if sender == "Environment" and " win" in text:
            ending = text
            break
    return {
        "game": number,
        "ended": bool(ending),  # a win condition, not their 40-turn cap
        "ending": ending or "max turns reached",
        "steps": env.turn_number,
        "alive": sorted(name for name, alive in env.agent_alive.items() if alive),
        "wall_s": time.perf_counter() - began,
    }


async def main_async(args: argparse.Namespace) -> None:
    module = load_example(args.example_dir)
    config = with_players(module.load_config(args.example_dir / "config.json"), args.players)
    model = f"custom/bench-model@{args.api_base}"
    gate = asyncio.Semaphore(args.concurrency or args.games)

    async def gated(number: int) -> dict[str, Any]:
        async with gate:
            return await play(module, config, model, number)

    began = time.perf_counter()
    results = []
    for done in asyncio.as_completed([gated(n) for n in range(args.games)]):
        result = await done
        results.append(result)
        print(json.dumps(result), flush=True)
    print(
        json.dumps(
            {
                "summary": True,
                "games": args.games,
                "ended": sum(r["ended"] for r in results),
                "steps": sum(r["steps"] for r in results),
                "wall_s": time.perf_counter() - began,
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--example-dir", type=Path, required=True)
    parser.add_argument("--api-base", required=True, help="e.g. http://127.0.0.1:PORT/v1")
    parser.add_argument("--games", type=int, default=1)
    parser.add_argument("--players", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=0, help="games at once (0: all)")
    args = parser.parse_args()
    os.environ.setdefault("CUSTOM_API_KEY", "sk-bench")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
