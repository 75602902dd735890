"""The sampling settings a record keeps: records written before they were kept still load,
saying nothing of them (their calls' params say what was sent), and kept ones read back."""

import json
from pathlib import Path

from sotopia_are.llm import Sampling
from sotopia_are.record import load_record

LEGACY = Path(__file__).parents[1] / "data" / "legacy" / "episodes-v0.jsonl"


def test_records_from_before_sampling_was_kept_load_without_it() -> None:
    rated = load_record(LEGACY.read_text(encoding="utf-8").splitlines()[2])
    assert rated.agent_sampling == {} and rated.verdicts[0].sampling is None
    # A version-1 document written before the fields existed.
    document = json.loads(rated.to_json())
    del document["agent_sampling"]
    del document["verdicts"][0]["sampling"]
    assert load_record(document) == rated


def test_kept_sampling_reads_back_from_the_records_json() -> None:
    rated = load_record(LEGACY.read_text(encoding="utf-8").splitlines()[2])
    agents = dict.fromkeys(rated.spec.agent_names, Sampling.parse("temperature=0.7,seed=3"))
    judged = rated.verdicts[0].model_copy(update={"sampling": Sampling(temperature=0.0)})
    record = rated.model_copy(update={"agent_sampling": agents, "verdicts": (judged,)})
    again = load_record(record.to_json())
    assert again == record and again.agent_sampling["Mara Quinn"].seed == 3
    assert again.verdicts[0].sampling == Sampling(temperature=0.0)
