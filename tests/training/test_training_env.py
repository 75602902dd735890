"""ParallelSocialEnv: PettingZoo's own API test, an episode driven by the caller's actions
beside an LLM agent, rated and stored like any other; actions in every form the env takes,
refused actions that play nothing, abandoned episodes left incomplete, asyncio use."""

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from training_support import MODEL, NAMES, bakery

import sotopia_are as sa
from sotopia_are.agents import LLMAgent
from sotopia_are.llm import LLMSession
from sotopia_are.messages import AgentAction
from sotopia_are.social import AgentTurn
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, schema_rule
from sotopia_are.training import ParallelSocialEnv

THREE = ["Mara Quinn", "Teo Alvarez", "Ines Roy"]


def three(turns: int = 6, **changes: Any) -> sa.EpisodeSpec:
    return bakery(
        "market",
        turns,
        agent_names=THREE,
        agent_backgrounds=["the baker", "a café owner", "a neighbour"],
        agent_goals=["sell the bread", "buy it cheap", "get a loaf"],
        **changes,
    )


def with_llm_ines(
    server: LocalLLMServer, store: EpisodeStore | None = None, **kwargs: Any
) -> ParallelSocialEnv:
    config = sa.LLMConfig(api_base=server.url)
    session = LLMSession(config)
    return ParallelSocialEnv(
        three(),
        others={
            "Ines Roy": lambda spec: LLMAgent("Ines Roy", MODEL, session.scoped(spec.episode_id))
        },
        judge=sa.LLMJudge("openai/judge", config=config),
        store=store,
        **kwargs,
    )


def speak(text: str, to: list[str] | None = None) -> AgentAction:
    return AgentAction(action_type="speak", argument=text, to=to)


def test_pettingzoo_parallel_api_test_passes(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    env = with_llm_ines(llm_server, store)
    parallel_api_test(env, num_cycles=30)
    env.close()
    statuses = {s.status for s in store.summaries(tag="env")}
    # The test resets mid-episode once: that episode is left incomplete, the others complete.
    assert sa.EpisodeStatus.INCOMPLETE in statuses and sa.EpisodeStatus.COMPLETE in statuses


def test_an_env_episode_is_rated_and_stored_like_any_other(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    env = with_llm_ines(
        llm_server,
        store,
        reward_weights={"goal": 1.0, "believability": 0.5},
        models={"Mara Quinn": "my-policy"},
    )
    observations, infos = env.reset(seed=3, options={"episode_id": "market-1"})
    assert env.agents == env.possible_agents == ["Mara Quinn", "Teo Alvarez"]
    assert list(observations["Mara Quinn"]["available_actions"]) == [1] * 5
    assert list(observations["Teo Alvarez"]["available_actions"]) == [0] * 5
    assert (
        isinstance(infos["Mara Quinn"]["turn"], AgentTurn) and infos["Teo Alvarez"]["turn"] is None
    )
    assert "sell the bread" in observations["Mara Quinn"]["last_turn"]
    steps = 0
    while env.agents:
        observations, rewards, terminations, truncations, infos = env.step(
            {name: speak(f"{name} speaks in step {steps}") for name in env.agents}
        )
        steps += 1
    # Round-robin over three for six turns: the caller's two act four times, Ines twice.
    assert steps == 4 and all(truncations.values()) and not any(terminations.values())
    record = env.record
    assert record is not None and store.load("market-1") == record
    assert record.status is sa.EpisodeStatus.COMPLETE and record.spec.seed == 3
    assert record.models == {"Mara Quinn": "my-policy", "Teo Alvarez": "", "Ines Roy": MODEL}
    assert [a.argument for n, a in record.actions() if n == "Ines Roy"] == ["…", "…"]
    scores = record.scores["Mara Quinn"]
    assert rewards["Mara Quinn"] == scores["goal"] + 0.5 * scores["believability"]
    assert infos["Mara Quinn"]["scores"] == scores and infos["Mara Quinn"]["record"] == record
    assert (
        'Teo Alvarez said: "Teo Alvarez speaks in step 3"'
        in observations["Mara Quinn"]["transcript"]
    )


def test_actions_come_as_objects_json_or_space_samples(llm_server: LocalLLMServer) -> None:
    llm_server.rule = schema_rule
    env = with_llm_ines(llm_server)
    env.reset()
    env.step({"Mara Quinn": json.dumps({"action_type": "speak", "argument": "JSON text"})})
    # Teo whispers to Ines (the mask follows env.recipients("Teo Alvarez")).
    assert env.recipients("Teo Alvarez") == ["Mara Quinn", "Ines Roy"]
    observations, *_ = env.step(
        {
            "Teo Alvarez": {
                "action_type": 1,
                "argument": "psst",
                "to": np.array([0, 1], dtype=np.int8),
            }
        }
    )
    assert "psst" not in observations["Mara Quinn"]["transcript"]
    assert "JSON text" in observations["Teo Alvarez"]["transcript"]
    env.step({"Mara Quinn": env.action_space("Mara Quinn").sample()})
    env.close()


def test_a_refused_action_plays_nothing_and_can_be_given_again(llm_server: LocalLLMServer) -> None:
    llm_server.rule = schema_rule
    env = with_llm_ines(llm_server)
    env.reset()
    with pytest.raises(ValueError, match="no action for \\['Mara Quinn'\\]"):
        env.step({"Teo Alvarez": speak("not my turn")})
    with pytest.raises(ValueError, match="unknown recipient 'Nobody'"):
        env.step({"Mara Quinn": speak("hi", to=["Nobody"])})
    with pytest.raises(ValueError, match="index 9"):
        env.step({"Mara Quinn": {"action_type": 9, "argument": "x", "to": [0, 0]}})
    observations, *_ = env.step({"Mara Quinn": speak("Good evening")})
    assert observations["Teo Alvarez"]["transcript"] == 'Turn #0: Mara Quinn said: "Good evening"'
    env.close()


def test_leaving_terminates_and_the_turn_reward_is_added(llm_server: LocalLLMServer) -> None:
    llm_server.rule = schema_rule
    seen: list[tuple[str, int, str]] = []

    def per_turn(agent: str, turn: AgentTurn, action: AgentAction) -> float:
        seen.append((agent, turn.turn_number, action.action_type))
        return 0.25

    env = ParallelSocialEnv(
        bakery(turns=10),
        turn_reward=per_turn,
        reward_weights={"goal": 1.0},
        judge=sa.LLMJudge("openai/judge", config=sa.LLMConfig(api_base=llm_server.url)),
    )
    env.reset()
    _, rewards, *_ = env.step({"Mara Quinn": speak("Bread?"), "Teo Alvarez": speak("ignored")})
    assert rewards == {"Mara Quinn": 0.25, "Teo Alvarez": 0.0}
    _, rewards, terminations, truncations, infos = env.step(
        {"Teo Alvarez": AgentAction(action_type="leave", argument="")}
    )
    assert seen == [("Mara Quinn", 0, "speak"), ("Teo Alvarez", 1, "leave")]
    assert all(terminations.values()) and not any(truncations.values()) and env.agents == []
    assert rewards["Teo Alvarez"] == 0.25 + infos["Teo Alvarez"]["scores"]["goal"]
    assert infos["Teo Alvarez"]["reason"].startswith("fewer than two agents remain")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({})
    env.close()


async def test_areset_and_astep_run_on_the_callers_loop(llm_server: LocalLLMServer) -> None:
    llm_server.rule = schema_rule
    env = ParallelSocialEnv(bakery(turns=2, turn_policy="simultaneous"))
    with pytest.raises(RuntimeError, match="await areset/astep"):
        env.reset()
    observations, _ = await env.areset()
    assert all(list(o["available_actions"]) == [1] * 5 for o in observations.values())
    _, rewards, _, truncations, _ = await env.astep({name: speak("together") for name in NAMES})
    _, rewards, _, truncations, infos = await env.astep({name: speak("again") for name in NAMES})
    assert env.agents == [] and all(truncations.values()) and rewards == dict.fromkeys(NAMES, 0.0)
    assert env.record is not None and len(env.record.actions()) == 4
    assert infos[NAMES[0]]["rated"] is False  # no judge: no scores


def test_weights_must_name_what_the_judge_scores(llm_server: LocalLLMServer) -> None:
    judge = sa.LLMJudge("openai/judge", config=sa.LLMConfig(api_base=llm_server.url))
    with pytest.raises(ValueError, match="charm"):
        ParallelSocialEnv(bakery(), judge=judge, reward_weights={"charm": 1.0})
    with pytest.raises(ValueError, match="not participants"):
        ParallelSocialEnv(bakery(), others={"Nobody": lambda spec: None})  # type: ignore[arg-type,return-value]


class Broken:
    """An agent whose model is down: it raises when asked to act."""

    name = "Teo Alvarez"

    async def act(self, turn: AgentTurn) -> AgentAction:
        raise ConnectionError("the model server is down")

    def call_records(self) -> list[Any]:
        return []


def test_an_other_agent_that_fails_ends_the_episode_as_failed_unrated(
    llm_server: LocalLLMServer, store: EpisodeStore
) -> None:
    llm_server.rule = schema_rule
    judge = sa.LLMJudge("openai/judge", config=sa.LLMConfig(api_base=llm_server.url))
    env = ParallelSocialEnv(
        bakery(), others={"Teo Alvarez": lambda spec: Broken()}, judge=judge, store=store
    )
    env.reset(options={"episode_id": "broken"})
    _, rewards, terminations, truncations, infos = env.step({"Mara Quinn": speak("Hello?")})
    assert terminations == {"Mara Quinn": True} and truncations == {"Mara Quinn": False}
    assert rewards == {"Mara Quinn": 0.0} and infos["Mara Quinn"]["rated"] is False
    assert infos["Mara Quinn"]["status"] == "failed"
    assert "ConnectionError" in infos["Mara Quinn"]["reason"]
    stored = store.load("broken")
    assert stored.status is sa.EpisodeStatus.FAILED and stored.failed_agent == "Teo Alvarez"
    assert not stored.verdicts and not llm_server.chat_requests  # a failed episode is not rated
    env.close()


def test_the_seed_fixes_a_random_turn_order(llm_server: LocalLLMServer) -> None:
    def play(seed: int) -> list[str]:
        env = ParallelSocialEnv(bakery(turns=8, turn_policy="random"))
        _, infos = env.reset(seed=seed)
        while env.agents:
            actor = next(name for name in env.agents if infos[name]["turn"] is not None)
            _, _, _, _, infos = env.step({actor: speak(f"{actor} here")})
        env.close()
        assert env.record is not None and env.record.spec.seed == seed
        return [name for name, _ in env.record.actions()]

    orders = {seed: play(seed) for seed in (1, 2, 3)}
    assert play(1) == orders[1]
    assert len({tuple(order) for order in orders.values()}) > 1


def test_the_training_data_needs_no_rl_extra() -> None:
    code = (
        "import sys; sys.modules['pettingzoo'] = None; sys.modules['gymnasium'] = None\n"
        "import sotopia_are.training as training\n"
        "from sotopia_are.cli import app\n"
        "assert callable(training.export_sft)\n"
        "try:\n"
        "    training.ParallelSocialEnv\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "needs the 'rl' extra: pip install 'sotopia-are[rl]'" in done.stdout


def test_each_reset_of_a_named_spec_is_a_new_episode_of_its_scenario(store: EpisodeStore) -> None:
    named = sa.EpisodeSpec.model_validate(
        bakery(turns=2).model_dump(exclude={"episode_id"}) | {"name": "stall"}
    )
    env = ParallelSocialEnv(named, store=store, tag="named")
    played = []
    for seed in (1, 2):
        env.reset(seed=seed)
        while env.agents:
            env.step({name: speak("fresh bread") for name in env.agents})
        assert env.record is not None
        played.append(env.record)
    env.close()
    assert played[0].episode_id != played[1].episode_id
    for record in played:
        assert record.episode_id.startswith("stall-") and record.scenario_id == "stall"
        assert store.load(record.episode_id).scenario_id == "stall"
