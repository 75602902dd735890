"""The LLM judge through litellm's real HTTP path against the local server."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _evaluation_support import DATA, follow_ups, judge_answer
from schema_support import free_texts

from sotopia_are.evaluation import (
    GOAL_ONLY,
    REASONING_MAX_CHARS,
    SOTOPIA_EVAL,
    LLMJudge,
    Rubric,
    RuleBasedTerminatedEvaluator,
    build_response,
)
from sotopia_are.evaluation.rubric import ANSWER_FRAME_TOKENS
from sotopia_are.llm import (
    CHARS_PER_TOKEN,
    LLMSession,
    PermanentLLMError,
    Recorder,
    Replayer,
    Sampling,
    Usage,
)
from sotopia_are.messages import AgentAction, ScriptBackground, ScriptEnvironmentResponse
from sotopia_are.testing import LocalLLMServer, Reply

MODEL = "openai/test-model"
TRANSCRIPT = 'Turn #1\nMara Quinn said: "Evening, Teo."\nTurn #2\nTeo Alvarez said: "Evening!"'
EPISODE = "he_01H7VM65KGGY7842XGE5A7PEK1"
DIMENSIONS = SOTOPIA_EVAL.dimension_names


def human_ratings(annotator: int) -> tuple[ScriptBackground, str, dict[str, dict[str, int]]]:
    """A real episode's background and transcript, and one annotator's ratings of it."""
    record = json.loads((DATA / f"{EPISODE}.json").read_text(encoding="utf-8"))
    names = [record["agent_1_name"], record["agent_2_name"]]
    annotation = record["human_annotations"][annotator]
    scores = {
        name: {d: annotation[f"{d}_{index}"] for d in DIMENSIONS}
        for index, name in enumerate(names, start=1)
    }
    text = (DATA / f"{EPISODE}.txt").read_text(encoding="utf-8")
    background = ScriptBackground(
        scenario="Two people in a romantic relationship are on a vacation",
        agent_names=names,
        agent_backgrounds=["(see transcript)", "(see transcript)"],
        agent_goals=["Share bed and sleep together", "Sleep in a separate bed"],
    )
    return background, text[text.index("Turn #1") :], scores


async def test_a_well_formed_answer_becomes_the_response(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    background, transcript, scores = human_ratings(0)
    llm_server.enqueue(judge_answer(scores))
    session = make_session()
    evaluation = await LLMJudge(MODEL, session=session).evaluate(background, transcript)

    assert evaluation.ok and evaluation.valid_samples == 1
    sasha = evaluation.rating("Sasha Ramirez")
    assert sasha.scores() == {
        "believability": 5.0,
        "relationship": 3.0,
        "knowledge": 3.0,
        "secret": 0.0,
        "social_rules": 0.0,
        "financial_and_material_benefits": 1.0,
        "goal": 7.0,
    }
    assert sasha.overall == pytest.approx(19 / 7)
    stale = [("Sasha Ramirez", AgentAction(action_type="none", argument=""))] * 3
    check = RuleBasedTerminatedEvaluator().check_actions(stale, background.agent_names)
    response = build_response(evaluation, check)
    assert isinstance(response, ScriptEnvironmentResponse)
    assert response.terminated
    assert response.p1_rate == (pytest.approx(19 / 7), sasha.scores())
    assert response.p2_rate == (
        pytest.approx(16 / 7),
        {
            "believability": 8.0,
            "relationship": 3.0,
            "knowledge": 0.0,
            "secret": 0.0,
            "social_rules": 0.0,
            "financial_and_material_benefits": 1.0,
            "goal": 4.0,
        },
    )
    text = response.to_natural_language()
    assert text.startswith(
        "Environment response:\n"
        "The conversation is terminated.\n"
        f"Rating of Sasha Ramirez: ({19 / 7}, {{'believability': 5.0, 'relationship': 3.0, "
        "'knowledge': 3.0, 'secret': 0.0, 'social_rules': 0.0, "
        "'financial_and_material_benefits': 1.0, 'goal': 7.0})\n"
        f"Rating of Hendrick Heinz: ({16 / 7}, {{'believability': 8.0, "
    )
    assert response.comments is not None
    assert response.comments.split("\n")[:3] == [
        "Environment comments: nobody did anything for 3 consecutive turns",
        "Sasha Ramirez comments:",
        "believability: Sasha Ramirez on believability",
    ]
    assert "Hendrick Heinz comments:\nbelievability: Hendrick Heinz on believability" in (
        response.comments
    )


async def test_the_prompt_carries_rubric_background_and_transcript(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    llm_server.enqueue(judge_answer({n: {"goal": 5} for n in bakery.agent_names}))
    await LLMJudge(MODEL, GOAL_ONLY, session=make_session()).evaluate(bakery, TRANSCRIPT)
    [request] = llm_server.chat_requests
    system, user = request.messages
    assert system["role"] == "system" and "impartial" in system["content"]
    prompt = user["content"]
    assert TRANSCRIPT in prompt
    assert bakery.scenario in prompt
    for goal in bakery.agent_goals:
        assert goal in prompt
    assert "### goal (an integer from 0 to 10)" in prompt
    assert GOAL_ONLY.dimensions[0].description in prompt
    assert "believability" not in prompt  # only the rubric's dimensions are asked for


@pytest.mark.parametrize(
    ("bad_answer", "error"),
    [
        ("I think both did well, 8 and 6.", "the reply contains no JSON object"),
        (
            judge_answer({"Mara Quinn": {"goal": 11}, "Teo Alvarez": {"goal": 4}}),
            "Mara Quinn.goal.score: Input should be less than or equal to 10",
        ),
        (
            judge_answer({"Mara Quinn": {"goal": 8}}),
            "Teo Alvarez: Field required",
        ),
    ],
    ids=["malformed", "out-of-range", "missing-agent"],
)
async def test_a_bad_answer_is_sent_back_with_the_error(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bakery: ScriptBackground,
    bad_answer: str,
    error: str,
) -> None:
    good = judge_answer({"Mara Quinn": {"goal": 8}, "Teo Alvarez": {"goal": 4}})
    llm_server.enqueue(bad_answer, good)
    judge = LLMJudge(MODEL, GOAL_ONLY, session=make_session())
    evaluation = await judge.evaluate(bakery, TRANSCRIPT)

    assert evaluation.ok
    assert evaluation.rating("Mara Quinn").scores() == {"goal": 8.0}
    first, retry = llm_server.chat_requests
    assert retry.messages[: len(first.messages)] == first.messages
    assert retry.messages[len(first.messages)] == {"role": "assistant", "content": bad_answer}
    assert error in follow_ups(retry.messages)
    [call] = evaluation.calls
    assert [a.error_kind for a in call.attempts] == ["invalid_output", None]


async def test_a_missing_dimension_is_sent_back(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    full = dict.fromkeys(DIMENSIONS, 0)
    without_secret = {d: 0 for d in DIMENSIONS if d != "secret"}
    llm_server.enqueue(
        judge_answer({"Mara Quinn": full, "Teo Alvarez": without_secret}),
        judge_answer({"Mara Quinn": full, "Teo Alvarez": full}),
    )
    evaluation = await LLMJudge(MODEL, session=make_session()).evaluate(bakery, TRANSCRIPT)
    assert evaluation.ok
    assert "Teo Alvarez.secret: Field required" in follow_ups(llm_server.chat_requests[1].messages)


async def test_a_judge_that_never_answers_well_is_a_recorded_failure(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    too_high = judge_answer({"Mara Quinn": {"goal": 12}, "Teo Alvarez": {"goal": 4}})
    llm_server.enqueue("no idea", too_high, too_high)
    session = make_session(output_attempts=3)
    evaluation = await LLMJudge(MODEL, GOAL_ONLY, session=session).evaluate(bakery, TRANSCRIPT)

    assert evaluation.failed and not evaluation.ok
    assert evaluation.ratings == [] and evaluation.valid_samples == 0
    [failure] = evaluation.failures
    assert failure.error_type == "GenerationError"
    assert failure.raw_outputs == ["no idea", too_high, too_high]
    assert "less than or equal to 10" in failure.error
    assert len(llm_server.chat_requests) == 3
    # The failed call is accounted like any other.
    assert evaluation.calls == session.calls
    assert not evaluation.calls[0].ok

    response = build_response(evaluation)
    assert response.rates == {"Mara Quinn": None, "Teo Alvarez": None}  # no rating, not 0
    assert response.comments is not None
    assert response.comments.startswith(
        "Judge failures: 1 of 1 samples gave no valid rating; there are no scores.\n"
        "sample 1: GenerationError: model 'openai/test-model' gave no valid "
    )


async def test_a_provider_that_never_answers_is_a_recorded_failure(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    llm_server.enqueue(Reply.server_error(), Reply.server_error())
    evaluation = await LLMJudge(MODEL, session=make_session()).evaluate(bakery, TRANSCRIPT)
    [failure] = evaluation.failures
    assert failure.error_type == "TransientLLMError"
    assert failure.raw_outputs == [] and len(failure.attempts) == 2
    assert evaluation.failed


async def test_a_configuration_error_is_raised_not_recorded(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    llm_server.enqueue(Reply.error(401, "invalid api key"))
    with pytest.raises(PermanentLLMError):
        await LLMJudge(MODEL, session=make_session()).evaluate(bakery, TRANSCRIPT)


async def test_samples_report_mean_and_spread(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    for mara, teo in [(6, 2), (8, 2), (10, 5)]:
        llm_server.enqueue(
            judge_answer({"Mara Quinn": {"goal": mara}, "Teo Alvarez": {"goal": teo}})
        )
    session = make_session()
    judge = LLMJudge(
        MODEL, GOAL_ONLY, samples=3, session=session, sampling=Sampling(temperature=1.0)
    )
    evaluation = await judge.evaluate(bakery, TRANSCRIPT)

    assert evaluation.ok and evaluation.valid_samples == 3 and len(evaluation.calls) == 3
    assert all(r.body["temperature"] == 1.0 for r in llm_server.chat_requests)
    goal = evaluation.rating("Mara Quinn").dimensions["goal"]
    # Concurrent samples may be answered in any order: compare as multisets.
    assert sorted(goal.scores) == [6, 8, 10]
    assert (goal.mean, goal.min, goal.max) == (8.0, 6, 10)
    assert goal.std == pytest.approx((8 / 3) ** 0.5)  # population standard deviation
    assert evaluation.rating("Teo Alvarez").overall == 3.0
    assert evaluation.usage() == Usage.of(session.calls)
    comments = build_response(evaluation).comments
    assert comments is not None and "goal [3/3]: " in comments


async def test_failed_samples_are_left_out_of_the_statistics(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    good = judge_answer({"Mara Quinn": {"goal": 9}, "Teo Alvarez": {"goal": 1}})
    llm_server.enqueue(good, "garbage")
    session = make_session(output_attempts=1)
    evaluation = await LLMJudge(MODEL, GOAL_ONLY, samples=2, session=session).evaluate(
        bakery, TRANSCRIPT
    )
    assert evaluation.valid_samples == 1 and len(evaluation.failures) == 1
    assert evaluation.rating("Mara Quinn").dimensions["goal"].scores == [9]
    comments = build_response(evaluation).comments
    assert comments is not None
    assert comments.startswith(
        "Judge failures: 1 of 2 samples gave no valid rating; scores use the others."
    )


async def test_a_custom_rubric_from_a_file(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    rubric = Rubric.load(DATA / "custom_rubric.json")
    llm_server.enqueue(
        judge_answer(
            {
                "Mara Quinn": {"deal_value": 2, "courtesy": 0},  # courtesy is 1..5
                "Teo Alvarez": {"deal_value": 3, "courtesy": 5},
            }
        ),
        judge_answer(
            {
                "Mara Quinn": {"deal_value": 2, "courtesy": 4},
                "Teo Alvarez": {"deal_value": 3, "courtesy": 5},
            }
        ),
    )
    evaluation = await LLMJudge(MODEL, rubric, session=make_session()).evaluate(bakery, TRANSCRIPT)
    assert "Mara Quinn.courtesy.score: Input should be greater than or equal to 1" in follow_ups(
        llm_server.chat_requests[1].messages
    )
    response = build_response(evaluation)
    assert response.p1_rate == (3.0, {"deal_value": 2.0, "courtesy": 4.0})
    assert response.p2_rate == (4.0, {"deal_value": 3.0, "courtesy": 5.0})
    assert (
        "### courtesy (an integer from 1 to 5)"
        in llm_server.chat_requests[0].messages[1]["content"]
    )


async def test_three_agents_are_all_rated(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession]
) -> None:
    background = ScriptBackground(
        scenario="A garden committee decides where the new beds go.",
        agent_names=["Ana", "Ben", "Cleo"],
        agent_backgrounds=["chair", "treasurer", "newcomer"],
        agent_goals=["keep the roses", "spend little", "get a vegetable bed"],
    )
    llm_server.enqueue(judge_answer({"Ana": {"goal": 9}, "Ben": {"goal": 5}, "Cleo": {"goal": 2}}))
    evaluation = await LLMJudge(MODEL, GOAL_ONLY, session=make_session()).evaluate(
        background, 'Turn #1\nAna said: "Roses stay."'
    )
    response = build_response(evaluation)
    assert response.rates == {
        "Ana": (9.0, {"goal": 9.0}),
        "Ben": (5.0, {"goal": 5.0}),
        "Cleo": (2.0, {"goal": 2.0}),
    }
    assert response.p1_rate == (9.0, {"goal": 9.0}) and response.p2_rate == (5.0, {"goal": 5.0})
    assert "Cleo comments:\ngoal: Cleo on goal" in (response.comments or "")
    schema_keys = json.loads(
        json.dumps(GOAL_ONLY.output_model(background.agent_names).model_json_schema())
    )["required"]
    assert schema_keys == ["Ana", "Ben", "Cleo"]


async def test_an_episode_session_accounts_the_judge_calls(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    llm_server.enqueue(judge_answer({n: {"goal": 5} for n in bakery.agent_names}))
    parent = make_session()
    judge = LLMJudge(MODEL, GOAL_ONLY, session=parent)
    episode = parent.scoped("episode-1")
    evaluation = await judge.evaluate(bakery, TRANSCRIPT, session=episode)
    assert episode.calls == evaluation.calls == parent.calls
    assert evaluation.calls[0].scope == "episode-1"
    assert evaluation.calls[0].template == "judge_sotopia_eval.j2"


def test_samples_must_be_positive() -> None:
    with pytest.raises(ValueError, match="samples must be at least 1"):
        LLMJudge(MODEL, samples=0)


def _goal_answer(mara: object, teo: object = 4, **extra: object) -> str:
    """A goal-only answer with the given raw score values, plus any extra entries."""
    answer: dict[str, object] = {
        "Mara Quinn": {"goal": {"reasoning": "r", "score": mara}},
        "Teo Alvarez": {"goal": {"reasoning": "r", "score": teo}},
    }
    return json.dumps({**answer, **extra})


@pytest.mark.parametrize(
    ("bad", "complaint"),
    [
        (_goal_answer(True), "Mara Quinn.goal.score: Input should be a valid integer"),
        (_goal_answer(7.5), "Mara Quinn.goal.score: Input should be a valid integer (got 7.5)"),
        (
            _goal_answer("high"),
            'Mara Quinn.goal.score: Input should be a valid integer (got "high")',
        ),
        (_goal_answer(11), "Mara Quinn.goal.score: Input should be less than or equal to 10"),
        (
            _goal_answer(7, Zed={"goal": {"reasoning": "r", "score": 1}}),
            "Zed: Extra inputs are not permitted",
        ),
        (
            json.dumps(
                {
                    "Mara Quinn": {
                        "goal": {"reasoning": "r", "score": 7},
                        "charm": {"reasoning": "r", "score": 9},
                    },
                    "Teo Alvarez": {"goal": {"reasoning": "r", "score": 4}},
                }
            ),
            "Mara Quinn.charm: Extra inputs are not permitted",
        ),
        (
            json.dumps(
                {
                    "Mara Quinn": {"goal": {"reasoning": "r", "score": 7, "confidence": 9}},
                    "Teo Alvarez": {"goal": {"reasoning": "r", "score": 4}},
                }
            ),
            "Mara Quinn.goal.confidence: Extra inputs are not permitted",
        ),
    ],
)
async def test_a_coercible_or_extra_answer_is_sent_back_not_accepted(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bakery: ScriptBackground,
    bad: str,
    complaint: str,
) -> None:
    llm_server.enqueue(bad, _goal_answer(7))
    evaluation = await LLMJudge(MODEL, GOAL_ONLY, session=make_session()).evaluate(
        bakery, TRANSCRIPT
    )
    assert evaluation.ok and evaluation.rating("Mara Quinn").scores() == {"goal": 7.0}
    assert len(llm_server.chat_requests) == 2
    assert complaint in follow_ups(llm_server.chat_requests[1].messages)
    [call] = evaluation.calls
    assert [a.error_kind for a in call.attempts] == ["invalid_output", None]


async def test_an_episode_is_judged_in_its_own_scope_and_samples_replay_in_order(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bakery: ScriptBackground,
    tmp_path: Path,
) -> None:
    """Concurrent samples send identical requests; each sample has its own scope, so a
    replay gives every sample the answer it had, whatever order the answers came in."""
    recording = tmp_path / "judge.jsonl"
    llm_server.enqueue(
        Reply.text(_goal_answer(2), delay=0.3), Reply.text(_goal_answer(6)), _goal_answer(9)
    )
    with Recorder(recording) as recorder:
        judge = LLMJudge(MODEL, GOAL_ONLY, samples=3, session=make_session({"recorder": recorder}))
        recorded = await judge.evaluate(bakery, TRANSCRIPT)
    assert sorted(recorded.rating("Mara Quinn").dimensions["goal"].scores) == [2, 6, 9]
    assert [c.scope for c in recorded.calls] == ["sample-1", "sample-2", "sample-3"]

    replay = LLMJudge(
        MODEL, GOAL_ONLY, samples=3, session=make_session({"replayer": Replayer(recording)})
    )
    replayed = await replay.evaluate(bakery, TRANSCRIPT)
    assert replayed.ratings == recorded.ratings


async def test_the_schema_sent_bounds_every_reasoning_so_an_answer_fits_max_tokens(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    scores = {name: dict.fromkeys(DIMENSIONS, 0) for name in bakery.agent_names}
    llm_server.enqueue(judge_answer(scores))
    judge = LLMJudge(MODEL, session=make_session(output_mode="json_schema"))
    assert (await judge.evaluate(bakery, TRANSCRIPT)).ok
    body = llm_server.chat_requests[0].body
    texts = free_texts(body["response_format"]["json_schema"]["schema"])
    # Every free text is bounded, so a server decoding under the schema (llama.cpp's
    # grammar) must close it: the reasoning of each dimension's rating (its definition is
    # shared by the participants).
    assert len(texts) == len(DIMENSIONS)
    assert all(text["maxLength"] == REASONING_MAX_CHARS for text in texts)
    # At 3 characters a token, 2 x 7 ratings at their longest fit the answer's budget.
    longest = 2 * len(DIMENSIONS) * (REASONING_MAX_CHARS / CHARS_PER_TOKEN + 40)
    assert longest <= body["max_tokens"] == judge.max_tokens(2)


@pytest.mark.parametrize("share", [0.4, 0.5, 0.9])
async def test_a_smaller_max_tokens_of_the_judge_cuts_every_reasoning_bound_to_fit(
    llm_server: LocalLLMServer,
    make_session: Callable[..., LLMSession],
    bakery: ScriptBackground,
    share: float,
) -> None:
    """A user's ``max_tokens`` below the judge's budget: the reasonings' bounds shrink so
    that an answer decoded under the schema, every rating at its longest, still closes
    its JSON within what was asked."""
    scores = {name: dict.fromkeys(DIMENSIONS, 0) for name in bakery.agent_names}
    llm_server.enqueue(judge_answer(scores))
    budget = LLMJudge(MODEL, session=make_session()).max_tokens(2)
    asked = int(budget * share)
    judge = LLMJudge(
        MODEL, session=make_session(output_mode="json_schema"), sampling=Sampling(max_tokens=asked)
    )
    assert (await judge.evaluate(bakery, TRANSCRIPT)).ok
    body = llm_server.chat_requests[0].body
    assert body["max_tokens"] == asked
    texts = free_texts(body["response_format"]["json_schema"]["schema"])
    assert len(texts) == len(DIMENSIONS)
    [bound] = {text["maxLength"] for text in texts}
    assert 0 < bound < REASONING_MAX_CHARS
    ratings = 2 * len(DIMENSIONS)
    longest = ANSWER_FRAME_TOKENS + ratings * (bound / CHARS_PER_TOKEN + 40)
    assert asked - ratings <= longest <= asked  # all that is left, less a token a rating


async def test_a_reasoning_longer_than_the_schema_bound_is_accepted(
    llm_server: LocalLLMServer, make_session: Callable[..., LLMSession], bakery: ScriptBackground
) -> None:
    """The bound is for servers that decode under the schema; one that does not enforce
    it may write more, and its answer is as good as before (lenient in form)."""
    long = "The baker held firm on price. " * 40
    assert len(long) > 3 * REASONING_MAX_CHARS
    answer = {
        name: {d: {"reasoning": long, "score": 0} for d in DIMENSIONS}
        for name in bakery.agent_names
    }
    llm_server.enqueue(json.dumps(answer))
    session = make_session(output_mode="json_schema")
    evaluation = await LLMJudge(MODEL, session=session).evaluate(bakery, TRANSCRIPT)
    assert evaluation.ok and len(llm_server.chat_requests) == 1
    [call] = evaluation.calls
    assert not call.repaired and not call.normalized
    mara = evaluation.rating("Mara Quinn")
    assert all(score.reasonings == [long] for score in mara.dimensions.values())
