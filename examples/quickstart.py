"""Use it from Python: two LLM agents with custom profiles, rated, stored, loaded and
rated again by a second judge. A stand-in server plays the models so this runs offline;
with a real model, drop the server and pass any litellm model (and api_base) instead.
Run: ``python examples/quickstart.py``."""

import sotopia_are as sa
from sotopia_are.testing import LocalLLMServer, schema_rule

mara = sa.AgentProfile(first_name="Mara", last_name="Quinn", age=47, occupation="Baker")
teo = sa.AgentProfile(first_name="Teo", last_name="Alvarez", age=31, occupation="Café owner")
bakery = sa.EnvironmentProfile(
    scenario="Ten minutes before closing, a café owner asks about the unsold bread.",
    agent_goals=["Sell the loaves for at least 60% of their price.", "Buy them at half price."],
)
with LocalLLMServer(schema_rule) as server, sa.connect() as store:
    models = sa.LLMConfig(api_base=server.url)  # e.g. http://localhost:8000/v1 for vLLM
    spec = sa.spec_from_profiles(bakery, [mara, teo], max_turns=4)
    judge = sa.LLMJudge("openai/judge", config=models)
    record = sa.run(spec, models="openai/agent", judge=judge, store=store, config=models)
    second = sa.LLMJudge("openai/other-judge", rubric=sa.GOAL_ONLY, config=models)
    again = sa.rate(store.load(record.episode_id), second, store=store)
print(again.transcript())
print(again.status, [v.judge_model for v in again.verdicts], again.scores)
