"""The visibility law in training: in random three-agent episodes with whispers, no agent's
env observation and no exported training example of an agent holds a private action it
was not party to — while the recipients do see theirs; in random werewolf games, no
agent's exported examples hold team chat or private notices of others."""

import itertools
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from training_support import MODEL, bakery

import sotopia_are as sa
from sotopia_are.agents import LLMAgent
from sotopia_are.games import GameSpec, deal_roles
from sotopia_are.llm import LLMSession
from sotopia_are.messages import AgentAction
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, play_rule, schema_rule
from sotopia_are.training import (
    ParallelSocialEnv,
    TrainingFilters,
    export_sft,
    training_examples,
)

NAMES = ["Mara Quinn", "Teo Alvarez", "Ines Roy"]
CALLERS = NAMES[:2]
EPISODES = itertools.count()

# Per action: private or not, and which of the actor's two others it goes to.
plays = st.lists(
    st.tuples(st.booleans(), st.sampled_from([(1, 0), (0, 1), (1, 1)])), min_size=1, max_size=6
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plays=plays)
def test_no_private_action_reaches_an_outsider(
    plays: list[tuple[bool, tuple[int, int]]],
    llm_server: LocalLLMServer,
    store: EpisodeStore,
    tmp_path: Path,
) -> None:
    llm_server.rule = schema_rule
    session = LLMSession(sa.LLMConfig(api_base=llm_server.url))
    spec = bakery(
        "leak",
        9,
        agent_names=NAMES,
        agent_backgrounds=["the baker", "a café owner", "a neighbour"],
        agent_goals=["sell", "buy", "watch"],
    )
    tag = f"leak{next(EPISODES)}"
    env = ParallelSocialEnv(
        spec,
        others={"Ines Roy": lambda s: LLMAgent("Ines Roy", MODEL, session.scoped(s.episode_id))},
        store=store,
        tag=tag,
    )
    whispers: list[tuple[str, set[str], str]] = []  # (sender, recipients, marker)
    seen: dict[str, list[str]] = {name: [] for name in CALLERS}
    observations, infos = env.reset()
    for index in itertools.count():
        for name, observation in observations.items():
            seen[name].append(observation["transcript"] + observation["last_turn"])
        if not env.agents:
            break
        actor = next(name for name in env.agents if infos[name]["turn"] is not None)
        private, mask = plays[index % len(plays)]
        marker = f"<w{index}>"
        to = (
            [n for n, bit in zip(env.recipients(actor), mask, strict=True) if bit]
            if private
            else None
        )
        if to:
            whispers.append((actor, set(to), marker))
        action = AgentAction(action_type="speak", argument=f"{marker} psst", to=to)
        observations, _, _, _, infos = env.step({actor: action})
    env.close()

    def outsiders(sender: str, recipients: set[str]) -> set[str]:
        return set(NAMES) - recipients - {sender}

    for sender, recipients, marker in whispers:
        for name in outsiders(sender, recipients) & set(CALLERS):
            assert not any(marker in text for text in seen[name]), (name, marker)
        for name in recipients & set(CALLERS):
            assert any(marker in text for text in seen[name]), (name, marker)
    examples = list(training_examples(store, TrainingFilters(tag=tag)))
    assert examples and {e.agent for e in examples} == {"Ines Roy"}
    prompts = "\n".join(m["content"] for e in examples for m in e.prompt)
    for sender, recipients, marker in whispers:
        if "Ines Roy" in outsiders(sender, recipients):
            assert marker not in prompts, marker


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000))
def test_a_games_training_examples_hold_nothing_their_agent_could_not_see(
    seed: int, llm_server: LocalLLMServer, store: EpisodeStore, tmp_path: Path
) -> None:
    """Werewolf with the wolves played through the env (their night chat carries unique
    markers) and everyone else an LLM agent on the stand-in: each agent's exported SFT
    examples hold no team chat, private reveal or role notice it was not party to — and
    do hold what was told to it alone."""
    llm_server.rule = play_rule
    session = LLMSession(sa.LLMConfig(api_base=llm_server.url))
    spec = GameSpec.model_validate_json(
        (Path(__file__).parents[2] / "examples" / "games" / "werewolf.json").read_text()
    ).replace(seed=seed)
    wolves = [name for name, role in deal_roles(spec).items() if role == "werewolf"]
    others = {
        name: (lambda s, n=name: LLMAgent(n, MODEL, session.scoped(s.episode_id)))
        for name in spec.agent_names
        if name not in wolves
    }
    tag = f"game-leak{next(EPISODES)}"
    env = ParallelSocialEnv(spec, others=others, store=store, tag=tag)
    assert env.possible_agents == wolves
    observations, infos = env.reset(seed=seed)
    step = 0
    while env.agents:
        actions: dict[str, object] = {}
        for name in env.agents:
            mask = observations[name]["action_mask"]
            if not mask.any():
                continue
            index = int(env.action_space(name).sample(mask=mask))
            choice = env.move_choices[index]
            phase = infos[name]["turn"].phase
            words = f"<{phase}:{name}:{step}>" if choice.kind == "speak" else ""
            actions[name] = {"choice": index, "argument": words}
        observations, _, _, _, infos = env.step(actions)
        step += 1
    env.close()
    record = env.record
    assert record is not None and record.status is sa.EpisodeStatus.COMPLETE
    manifest = export_sft(store, tmp_path / "sft.jsonl", tag=tag)
    rows = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert manifest.examples == len(rows) > 0
    prompts: dict[str, str] = {}
    for row in rows:
        prompt = "\n".join(m["content"] for m in row["messages"][:-1])
        prompts[row["agent"]] = prompts.get(row["agent"], "") + prompt
    entries = record.entries
    chat = [e for e in entries if e.move is not None and "<night-chat:" in e.move.argument]
    assert chat and all(e.to is not None and set(e.to) <= set(wolves) for e in chat)
    # The wolves' day speech does reach the others' prompts.
    assert any("<day-discussion:" in text for text in prompts.values())
    for agent, text in prompts.items():
        assert agent not in wolves
        assert "<night-chat:" not in text, agent  # the wolves' team chat
        visible = [e for e in entries if e.visible_to(agent)]
        said = {e.content or e.render() for e in visible}
        for entry in entries:
            if entry.visible_to(agent):
                continue
            secret = entry.content or entry.render()
            if secret not in said:
                assert secret not in text, (agent, secret)
        # What it was told alone (its role) it was shown.
        told = [e.content for e in visible if e.to == (agent,) and "your role is" in e.content]
        assert told and told[0] in text, agent
