"""A small study from Python: the same two characters in three versions of a negotiation,
each episode played by LLM agents, rated by a judge and stored; then the scores. A
stand-in server plays the models so this runs offline; with a real model, drop the server
and pass any litellm model (and api_base) instead. Run: ``python examples/quickstart.py``."""

import sotopia_are as sa
from sotopia_are.testing import LocalLLMServer, play_rule

mara = sa.AgentProfile(first_name="Mara", last_name="Quinn", age=47, occupation="Baker")
teo = sa.AgentProfile(first_name="Teo", last_name="Alvarez", age=31, occupation="Café owner")
with LocalLLMServer(play_rule) as server, sa.connect() as store:
    models = sa.LLMConfig(api_base=server.url)  # e.g. http://localhost:8000/v1 for vLLM
    judge = sa.LLMJudge("openai/judge", config=models)
    for floor in (40, 60, 80):  # the least the baker will take, in % of the shelf price
        bakery = sa.EnvironmentProfile(
            scenario="Ten minutes before closing, a café owner asks about the unsold bread.",
            agent_goals=[f"Sell the loaves for at least {floor}% of the price.", "Pay half."],
        )
        spec = sa.spec_from_profiles(bakery, [mara, teo], max_turns=6)
        record = sa.run(spec, models="openai/agent", judge=judge, store=store, config=models)
        overall = {name: round(s["overall_score"], 2) for name, s in record.scores.items()}
        print(f"floor {floor}%: {record.status.value}, {record.turns_played} turns, {overall}")
