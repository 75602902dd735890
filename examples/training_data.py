"""Train on it: collect rated episodes, export SFT examples and DPO pairs, load them with
Hugging Face ``datasets``, and drive ``ParallelSocialEnv`` (PettingZoo) with a trivial
policy. A stand-in server plays the models offline, varying its answers and ratings so
that some pairs differ; with a real model, drop the server and pass any litellm model.
Needs the rl extra (``pip install -e '.[rl]'``). Run: ``python examples/training_data.py``.
"""

import copy
import itertools
import json
import tempfile
from pathlib import Path

import datasets

import sotopia_are as sa
from sotopia_are.agents import LLMAgent
from sotopia_are.llm import LLMSession
from sotopia_are.testing import LocalLLMServer, schema_rule
from sotopia_are.testing.replies import schema_instance
from sotopia_are.training import ParallelSocialEnv, export_preferences, export_sft

LINES = itertools.cycle(["Could we split the difference?", "Full price.", "Half, and I take all."])
RATINGS = itertools.count()


def varied(request: dict) -> str:
    """schema_rule, but agents say different lines and the judge gives different scores."""
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return str(schema_rule(request))
    if "action_type" in schema["properties"]:
        return json.dumps({"action_type": "speak", "argument": next(LINES)})
    n, definitions = next(RATINGS), copy.deepcopy(schema["$defs"])
    for score in (d["properties"].get("score") for d in definitions.values()):
        if score and "minimum" in score:  # pin each score to a value that varies by episode
            span = score["maximum"] - score["minimum"] + 1
            score["minimum"] = score["maximum"] = score["minimum"] + (3 * n) % span
    return json.dumps(schema_instance({**schema, "$defs": definitions}, definitions))


spec = sa.EpisodeSpec(
    name="bakery",  # the scenario's: each run gets a fresh episode id, its records this name
    scenario="Ten minutes before closing, a café owner asks about the unsold bread.",
    agent_names=["Mara Quinn", "Teo Alvarez"],
    agent_backgrounds=["Mara is the baker.", "Teo runs the café next door."],
    agent_goals=["Sell the loaves for at least 60% of their price.", "Buy them at half price."],
    max_turns=4,
)
with LocalLLMServer(varied) as server, sa.connect() as store, tempfile.TemporaryDirectory() as out:
    config = sa.LLMConfig(api_base=server.url)
    judge = sa.LLMJudge("openai/judge", config=config)
    for _ in range(4):  # collect: four rated episodes of one scenario (each a fresh id)
        sa.run(
            spec,
            models="openai/agent",
            judge=judge,
            store=store,
            config=config,
            tag="training-example",
        )

    datasets.disable_progress_bars()
    sft = export_sft(store, Path(out, "sft.jsonl"), tag="training-example", min_scores={"goal": 3})
    pairs = export_preferences(store, Path(out, "pairs.jsonl"), tag="training-example")
    print(
        f"SFT: {sft.examples} examples from {sft.episodes_used} of {sft.episodes_read} "
        f"episodes (goal >= 3); DPO: {pairs.examples} pairs"
    )
    for name in ("sft", "pairs"):
        files = str(Path(out, f"{name}.jsonl"))
        data = datasets.load_dataset("json", data_files=files, cache_dir=str(Path(out, "cache")))
        print(name, data["train"].column_names, len(data["train"]))

    session = LLMSession(config)
    env = ParallelSocialEnv(
        spec,  # the caller plays Mara; the env plays Teo with a model
        others={
            "Teo Alvarez": lambda s: LLMAgent(
                "Teo Alvarez", "openai/agent", session.scoped(s.episode_id)
            )
        },
        judge=judge,
        reward_weights={"goal": 1.0},
        store=store,
        tag="training-env",
        models={"Mara Quinn": "trivial-policy"},
    )
    for episode in range(3):
        observations, infos = env.reset(seed=episode)
        total = 0.0
        while env.agents:
            action = sa.AgentAction(action_type="speak", argument="I can do 60%, no less.")
            observations, rewards, terminations, truncations, infos = env.step(
                {"Mara Quinn": action}
            )
            total += rewards["Mara Quinn"]
        record = env.record
        print(
            f"env episode {episode + 1}: {record.turns_played} turns, stored as "
            f"{record.episode_id} ({record.status}), Mara's return {total:.1f}"
        )
    env.close()
