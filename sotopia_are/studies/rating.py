"""`rate` / `arate`: a judge's verdict on an episode record or a human-written script.

A record is rated from its events (never played again): the judge reads the omniscient
transcript derived from them, and the verdict is added to the record — a second judge
adds a second verdict, it never replaces the first. A script is first played through the
engine by scripted agents (that is how a script becomes events), then rated the same way.
"""

from __future__ import annotations

import asyncio

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import (
    LLMJudge,
    RuleBasedTerminatedEvaluator,
    episode_judge_warnings,
)
from sotopia_are.messages import ScriptBackground, parse_background
from sotopia_are.record import EpisodeRecord, Verdict, record_of_result
from sotopia_are.social import EpisodeSpec, EpisodeStatus, run_episode, script_spec
from sotopia_are.storage import EpisodeStore

__all__ = ["arate", "arate_script", "rate", "rate_script", "script_record"]


async def arate(
    record: EpisodeRecord,
    judge: LLMJudge,
    *,
    store: EpisodeStore | None = None,
    termination: RuleBasedTerminatedEvaluator | None = None,
    replace: bool = False,
) -> EpisodeRecord:
    """``record`` with ``judge``'s verdict added (stored with it when ``store`` is given).

    The judge calls in scope ``<episode_id>/judge`` of its session. ``termination``
    defaults to the spec's own limits. ``ValueError`` for an episode that is not complete,
    or one this judge (model, rubric, prompt) already rated, unless ``replace``.
    """
    if record.status is not EpisodeStatus.COMPLETE:
        raise ValueError(
            f"episode {record.episode_id} is {record.status.value}, not complete: only a "
            "finished episode can be rated"
        )
    if not replace:
        # Refused before paying for the judge's calls.
        record.check_new_verdict(Verdict.key_for(judge))
    evaluation = await judge.evaluate(
        record.spec.background(),
        record.transcript(),
        session=judge.session.scoped(f"{record.episode_id}/judge"),
        episode_seed=record.spec.seed,
    )
    warnings = episode_judge_warnings(evaluation, record)
    rule = termination or RuleBasedTerminatedEvaluator(
        record.spec.max_turns, record.spec.max_stale_turns
    )
    verdict = Verdict(
        judge_model=judge.model,
        rubric=judge.rubric.name,
        prompt=judge.prompt_version,
        evaluation=evaluation.model_copy(update={"warnings": warnings}),
        termination_reason=rule.check_episode(record).reason,
        sampling=judge.sampling,
    )
    if store is not None:
        return store.add_verdict(record.episode_id, verdict, replace=replace, stored=record)
    return record.with_verdict(verdict, replace=replace)


def rate(
    record: EpisodeRecord,
    judge: LLMJudge,
    *,
    store: EpisodeStore | None = None,
    termination: RuleBasedTerminatedEvaluator | None = None,
    replace: bool = False,
) -> EpisodeRecord:
    """:func:`arate` on a new event loop (for scripts; inside asyncio, await ``arate``)."""
    return asyncio.run(arate(record, judge, store=store, termination=termination, replace=replace))


async def script_record(
    script: str,
    context: EpisodeSpec | ScriptBackground | None = None,
    *,
    episode_id: str = "script",
) -> EpisodeRecord:
    """The record of a human-written script played through the engine: one turn per
    action, each by its speaker. ``context`` gives the scenario, participants,
    backgrounds and goals (default: the script's own context preamble, as in Sotopia's
    transcripts). :class:`~sotopia_are.messages.ScriptParseError` for an unreadable
    script or preamble."""
    if context is None:
        context = parse_background(script)
        if context is None:
            raise ValueError(
                "the script has no context preamble (scenario, backgrounds, goals); give "
                "its context as an EpisodeSpec or ScriptBackground"
            )
    base = (
        context
        if isinstance(context, EpisodeSpec)
        else EpisodeSpec.from_background(context, episode_id)
    )
    spec = script_spec(base, script)
    result = await run_episode(spec, ScriptedAgent.from_script(script, spec.agent_names))
    return record_of_result(result)


async def arate_script(
    script: str,
    judge: LLMJudge,
    context: EpisodeSpec | ScriptBackground | None = None,
    *,
    episode_id: str = "script",
    store: EpisodeStore | None = None,
    tag: str = "script",
) -> EpisodeRecord:
    """A script's record (:func:`script_record`) with ``judge``'s verdict, stored as an
    episode tagged ``tag`` when ``store`` is given (``EpisodeExistsError`` if its id is
    taken). Whether the conversation had ended is judged by Sotopia's rules (20 turns, 2
    stale turns)."""
    record = await script_record(script, context, episode_id=episode_id)
    rated = await arate(record, judge, termination=RuleBasedTerminatedEvaluator())
    if store is None:
        return rated
    return store.save_record(rated.model_copy(update={"tag": tag}))


def rate_script(
    script: str,
    judge: LLMJudge,
    context: EpisodeSpec | ScriptBackground | None = None,
    *,
    episode_id: str = "script",
    store: EpisodeStore | None = None,
    tag: str = "script",
) -> EpisodeRecord:
    """:func:`arate_script` on a new event loop."""
    return asyncio.run(
        arate_script(script, judge, context, episode_id=episode_id, store=store, tag=tag)
    )
