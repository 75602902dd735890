"""Does the judge agree with people? Rate human-rated Sotopia episodes with a real model.

Rates each labelled episode with the judge at ``--api-base``, one at a time, then prints
the per-dimension agreement with the human ratings (``studies.agreement``). Labels are
``.json`` ratings of transcripts (the transcript is ``--transcripts/<stem>.txt``, its own
preamble giving the context) or SOTOPIA-π's human-evaluation ``.csv`` (its conversations
are rated, see ``studies.labelled_scripts``). With ``--record FILE`` every judge answer is
recorded (``LLMSession.recording``) for offline replays. Run::

    python benchmarks/judge_agreement.py --model openai/qwen15 \\
        --api-base http://127.0.0.1:8093/v1 --transcripts tests/data/transcripts \\
        tests/data/sotopia_human/he_*.json [--record tests/data/sotopia_human/FILE.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sotopia_are.evaluation import LLMJudge, Rubric
from sotopia_are.llm import LLMConfig, LLMSession
from sotopia_are.messages import ScriptBackground
from sotopia_are.record import EpisodeRecord
from sotopia_are.studies import (
    agreement,
    arate_script,
    labelled_scripts,
    read_human_ratings,
    script_context,
)

Item = tuple[str, str, ScriptBackground | None]
"""An episode to rate: its id, its script, its context (None: the script's preamble)."""


def labelled_items(labels: list[Path], transcripts: Path) -> list[Item]:
    """Every labelled episode with a script: CSV conversations, then .json transcripts."""
    items: list[Item] = []
    for path in labels:
        if path.suffix.lower() == ".csv":
            items += [(pk, s, c) for pk, (s, c) in labelled_scripts(path).items()]
        elif (transcripts / f"{path.stem}.txt").exists():
            text = (transcripts / f"{path.stem}.txt").read_text(encoding="utf-8")
            items.append((path.stem, text, None))
    return items


async def rate_all(items: list[Item], judge: LLMJudge) -> list[EpisodeRecord]:
    """Each episode's record with the judge's verdict, rated one after another."""
    records = []
    for episode_id, script, context in items:
        started = time.monotonic()
        spec = context or script_context(script, episode_id=episode_id)
        record = await arate_script(script, judge, spec, episode_id=episode_id)
        records.append(record)
        seconds = time.monotonic() - started
        print(f"{episode_id}: {seconds:.0f} s, {json.dumps(record.scores)}", flush=True)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("labels", type=Path, nargs="+", help="human ratings (.json, .csv)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-base")
    parser.add_argument("--transcripts", type=Path, default=Path("tests/data/transcripts"))
    parser.add_argument("--rubric", default="sotopia_eval")
    parser.add_argument("--record", type=Path)
    parser.add_argument("--timeout", type=float, default=1200.0)
    args = parser.parse_args()

    ratings = read_human_ratings(args.labels)
    config = LLMConfig(api_base=args.api_base, timeout_s=args.timeout, max_concurrency=1)
    session = LLMSession.recording(args.record, config) if args.record else LLMSession(config)
    judge = LLMJudge(args.model, Rubric.load(args.rubric), session=session)
    records = asyncio.run(rate_all(labelled_items(args.labels, args.transcripts), judge))
    if session.recorder is not None:
        session.recorder.close()
    for report in agreement(records, ratings):
        print(f"judge {report.judge}: {len(report.episodes)} episodes")
        for d in report.dimensions:
            print(
                f"  {d.dimension:32} n={d.n:3} r={d.pearson} CI={d.pearson_ci} "
                f"rho={d.spearman} CI={d.spearman_ci}"
            )


if __name__ == "__main__":
    main()
