"""Store an episode in Redis as it runs, then read it back: list, one agent's view, ARE JSON.

Uses the embedded Redis in a temporary data directory (no server to set up), replays the
three-agent garden-committee script (it has a private message) with the
``EpisodeRecorder`` sink streaming each event to the store, and then works only from the
store. Run: ``python examples/store_and_show.py``.
"""

import asyncio
import tempfile
from pathlib import Path

from sotopia_are.agents import ScriptedAgent
from sotopia_are.social import EpisodeSpec, run_episode, script_spec
from sotopia_are.storage import EpisodeRecorder, connect, export_episode_json

EXAMPLES = Path(__file__).parent


async def main() -> None:
    base = EpisodeSpec.model_validate_json(
        (EXAMPLES / "scenarios" / "garden_committee.json").read_text(encoding="utf-8")
    )
    script = (EXAMPLES / "scripts" / "garden_committee.txt").read_text(encoding="utf-8")
    spec = script_spec(base, script).for_run()  # a fresh id from the file's scenario name
    with tempfile.TemporaryDirectory() as data_dir, connect(data_dir=data_dir) as store:
        recorder = EpisodeRecorder(store, tag="example")
        await run_episode(
            spec, ScriptedAgent.from_script(script, spec.agent_names), sinks=[recorder]
        )

        for episode in store.list_episodes(tag="example"):
            print(f"{episode.pk}: {episode.status.value}, {episode.event_count} events")
        record = store.load(spec.episode_id)  # the EpisodeRecord, read back from Redis
        print(
            f"\n--- as Benedikt saw it (no private message)\n"
            f"{record.transcript('Benedikt Müller-Roth')}"
        )
        print(f"\n--- the evaluator's transcript\n{record.transcript()}")
        text = export_episode_json(store, spec.episode_id)
        print(f"\nARE JSON from the store: {len(text)} bytes")


if __name__ == "__main__":
    asyncio.run(main())
