"""`rate` / `arate`: a judge's verdict on an episode record or a human-written script.

A record is rated from its events (never played again): an LLM judge reads the omniscient
transcript derived from them, a rules judge (a game's
:class:`~sotopia_are.games.GameJudge`) computes its verdict from them, and the verdict is
added to the record — a second judge
adds a second verdict, it never replaces the first. A script is first played through the
engine by scripted agents (that is how a script becomes events), then rated the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from sotopia_are.agents import ScriptedAgent
from sotopia_are.evaluation import LLMJudge, RuleBasedTerminatedEvaluator
from sotopia_are.llm import apreflight
from sotopia_are.messages import ScriptBackground, parse_background
from sotopia_are.record import (
    EpisodeRecord,
    Judge,
    check_ratable,
    give_verdict,
    judge_key,
    record_of_result,
)
from sotopia_are.social import EpisodeSpec, run_episode, script_spec
from sotopia_are.storage import EpisodeStore

from .config import StudyConfig
from .errors import StudyInputError
from .preflight import judge_uses
from .twins import twin_of

__all__ = ["SCRIPT_TERMINATION", "arate", "arate_script", "rate", "rate_script", "script_record"]

SCRIPT_TERMINATION = RuleBasedTerminatedEvaluator()
"""The rule a script's verdict says whether its conversation had ended by: Sotopia's
defaults (20 turns, 2 stale turns). A script's own spec ends its replay with the script,
so its limits would say nothing."""


async def arate(
    record: EpisodeRecord,
    judge: Judge | None = None,
    *,
    store: EpisodeStore | None = None,
    termination: RuleBasedTerminatedEvaluator | None = None,
    replace: bool = False,
    preflight: bool = True,
    study: StudyConfig | None = None,
) -> EpisodeRecord:
    """``record`` with ``judge``'s verdict added (stored with it when ``store`` is given).

    The coroutine behind :func:`rate`. The episode is rated from its events, never
    played again: the judge reads the omniscient transcript derived from them, calling in
    scope ``<episode_id>/judge`` of its session. A second judge adds a second verdict
    next to the first.

    Args:
        record: A complete episode's record (from :func:`run`, ``store.load(id)``,
            :func:`~sotopia_are.record.load_record` or an import).
        judge: The judge: an :class:`~sotopia_are.evaluation.LLMJudge` (its model,
            rubric, samples and sampling; default: the ``study``'s,
            :meth:`~sotopia_are.studies.StudyConfig.judge`), or a rules judge such as a
            game's :class:`~sotopia_are.games.GameJudge` (no model call).
        store: Where to store the verdict with the episode; ``None`` only returns it.
        termination: The rule that says whether the conversation had ended (default:
            the spec's own turn and stale-turn limits).
        replace: Rate again with a judge (model, rubric, prompt) that already rated it,
            replacing its verdict.
        preflight: Check the judge's model before rating (default true).
        study: The study's configuration, for the judge when ``judge`` is not given
            (its one judge model, rubric, samples, sampling and LLM settings).

    Returns:
        The record with the new verdict last in ``verdicts``. A judge that could not
        rate gives a verdict without ratings (``verdict.rated`` is false), never scores
        of 0.

    Raises:
        sotopia_are.llm.ConfigurationError: Unless ``preflight`` is false, the judge's
            model cannot be called as configured (checked before anything else).
        ValueError: The episode is not complete, or this judge already rated it and
            ``replace`` is false (refused before any call is made), or no judge is
            given (neither ``judge`` nor a ``study`` naming one).
        sotopia_are.storage.StorageError: ``store`` cannot be reached, or no longer
            holds the episode as ``record`` has it.
        sotopia_are.llm.PermanentLLMError: The judge's model cannot be used at all (a
            missing or rejected key, an unknown model).

    Example:
        ```python
        second = sa.LLMJudge("claude-3-5-sonnet-latest", rubric=sa.GOAL_ONLY)
        record = await sa.arate(store.load(episode_id), second, store=store)
        ```
    """
    judge = _the_judge(judge, study)
    check_ratable(record)
    if not replace:
        # Refused before paying for the judge's calls.
        record.check_new_verdict(judge_key(judge))
    if preflight:
        await apreflight(judge_uses([judge]))
    verdict = await give_verdict(record, judge, termination=termination)
    if store is not None:
        return store.add_verdict(record.episode_id, verdict, replace=replace, stored=record)
    return record.with_verdict(verdict, replace=replace)


@twin_of(arate)
def rate(*args: Any, **kwargs: Any) -> EpisodeRecord:
    """Rate a stored or returned episode without playing it again: :func:`arate` on a
    new event loop.

    For scripts; inside a running event loop await :func:`arate`, which takes the same
    arguments.

    Args:
        record: A complete episode's record (from :func:`run`, ``store.load(id)``,
            :func:`~sotopia_are.record.load_record` or an import).
        judge: The judge: an LLM judge (default: the ``study``'s) or a rules judge (a
            game's :class:`~sotopia_are.games.GameJudge`).
        store: Where to store the verdict with the episode; ``None`` only returns it.
        termination: The rule that says whether the conversation had ended (default:
            the spec's own limits).
        replace: Rate again with a judge (model, rubric, prompt) that already rated it.
        preflight: Check the judge's model before rating (default true).
        study: The study's configuration, for the judge when ``judge`` is not given.

    Returns:
        The record with the judge's verdict added after any earlier ones; a judge that
        could not rate gives a verdict without ratings.

    Raises:
        sotopia_are.llm.ConfigurationError: Unless ``preflight`` is false, the judge's
            model cannot be called as configured (checked before anything else).
        ValueError: The episode is not complete, or this judge already rated it and
            ``replace`` is false, or no judge is given (nor a ``study`` naming one).
        sotopia_are.storage.StorageError: ``store`` cannot be reached or does not hold
            the episode as ``record`` has it.
        sotopia_are.llm.PermanentLLMError: The judge's model cannot be used at all.
        RuntimeError: Called from inside a running event loop (use :func:`arate`).

    Example:
        ```python
        with sa.connect() as store:
            record = store.load(episode_id)
            again = sa.rate(record, sa.LLMJudge("gpt-4o", rubric=sa.GOAL_ONLY), store=store)
        print([v.judge_model for v in again.verdicts], again.scores)
        ```
    """
    return asyncio.run(arate(*args, **kwargs))


def _the_judge(judge: Judge | None, study: StudyConfig | None) -> Judge:
    """``judge``, else the ``study``'s one judge; a :class:`StudyInputError` if neither."""
    if judge is not None:
        return judge
    if study is None:
        raise StudyInputError("no judge given: pass a judge, or a study naming its model")
    return study.judge()


async def script_record(
    script: str,
    context: EpisodeSpec | ScriptBackground | None = None,
    *,
    episode_id: str = "script",
) -> EpisodeRecord:
    """The record of a human-written script played through the engine: one turn per
    action, each by its speaker, as episode ``episode_id`` unless ``context`` is a spec
    with an ``episode_id`` of its own. ``context`` gives the scenario, participants,
    backgrounds and goals (default: the script's own context preamble, as in Sotopia's
    transcripts). :class:`~sotopia_are.messages.ScriptParseError` for an unreadable
    script or preamble."""
    if context is None:
        context = parse_background(script)
        if context is None:
            raise StudyInputError(
                "the script has no context preamble (scenario, backgrounds, goals); give "
                "its context as an EpisodeSpec or ScriptBackground"
            )
    if not isinstance(context, EpisodeSpec):
        base = EpisodeSpec.from_background(context, episode_id)
    elif context.id_given:
        base = context
    else:  # a scenario's spec (the example files): its name is kept as the scenario id
        base = context.replace(episode_id=episode_id)
    spec = script_spec(base, script)
    result = await run_episode(spec, ScriptedAgent.from_script(script, spec.agent_names))
    return record_of_result(result)


async def arate_script(
    script: str,
    judge: LLMJudge | Sequence[LLMJudge],
    context: EpisodeSpec | ScriptBackground | None = None,
    *,
    episode_id: str = "script",
    store: EpisodeStore | None = None,
    tag: str = "script",
    preflight: bool = True,
) -> EpisodeRecord:
    """A script's record (:func:`script_record`) with ``judge``'s verdict (or each of a
    panel's, in order), stored as an episode tagged ``tag`` when ``store`` is given
    (``EpisodeExistsError`` if its id is taken). Whether the conversation had ended is
    judged by Sotopia's rules (20 turns, 2 stale turns).

    Args:
        script: The script's text (``Turn #1`` headers, ``Name: …`` lines or a
            screenplay; see :func:`~sotopia_are.messages.parse_script`).
        judge: The judge that rates it, or several (a panel): each adds its verdict.
        context: The scenario, participants, backgrounds and goals: an episode spec or a
            ``ScriptBackground`` (default: the script's own context preamble).
        episode_id: The id of the episode the script becomes (unless ``context`` is a
            spec with an ``episode_id`` of its own).
        store: Where to store it; ``None`` only returns it.
        tag: The tag it is stored under.
        preflight: Check every judge's model first, before any rates (default true).

    Returns:
        The record of the script played through the engine, with the verdicts.

    Raises:
        sotopia_are.messages.ScriptParseError: A line of the script (or its preamble)
            cannot be read; the message names the line.
        ValueError: No ``context`` and no preamble in the script.
        sotopia_are.storage.EpisodeExistsError: ``store`` already holds ``episode_id``.
    """
    judges = [judge] if isinstance(judge, LLMJudge) else list(judge)
    if not judges:
        raise StudyInputError("no judge given")
    if preflight:
        await apreflight(judge_uses(judges))
    rated = await script_record(script, context, episode_id=episode_id)
    for each in judges:
        rated = await arate(rated, each, termination=SCRIPT_TERMINATION, preflight=False)
    if store is None:
        return rated
    return store.save_record(rated.model_copy(update={"tag": tag}))


def rate_script(
    script: str,
    judge: LLMJudge | Sequence[LLMJudge],
    context: EpisodeSpec | ScriptBackground | None = None,
    *,
    episode_id: str = "script",
    store: EpisodeStore | None = None,
    tag: str = "script",
    preflight: bool = True,
) -> EpisodeRecord:
    """Rate a human-written script: parse it, play it through the engine with scripted
    agents, rate it and (with ``store``) store it. :func:`arate_script` on a new event
    loop; it takes the same arguments, returns the same record and raises the same
    errors.

    Example:
        ```python
        script = Path("examples/scripts/bakery_negotiation.txt").read_text()
        context = Path("examples/scenarios/bakery_negotiation.json").read_text()
        spec = sa.EpisodeSpec.model_validate_json(context)
        record = sa.rate_script(script, sa.LLMJudge("gpt-4o"), spec)
        ```
    """
    return asyncio.run(
        arate_script(
            script,
            judge,
            context,
            episode_id=episode_id,
            store=store,
            tag=tag,
            preflight=preflight,
        )
    )
