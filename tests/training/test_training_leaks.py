"""The visibility law in training: in random three-agent episodes with whispers, no agent's
env observation and no exported training example of an agent holds a private action it
was not party to — while the recipients do see theirs."""

import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from training_support import MODEL, bakery

import sotopia_are as sa
from sotopia_are.agents import LLMAgent
from sotopia_are.llm import LLMSession
from sotopia_are.messages import AgentAction
from sotopia_are.storage import EpisodeStore
from sotopia_are.testing import LocalLLMServer, schema_rule
from sotopia_are.training import ParallelSocialEnv, TrainingFilters, training_examples

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
