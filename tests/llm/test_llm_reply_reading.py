"""A reply's body is read in one pass of pydantic-core when it has the common shape, and
the general way otherwise: both ways give the same answer, or the same error, for any
body (``http_reply.completion`` against ``http_reply._completion``, which reads every
body the general way)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sotopia_are.llm.config import Endpoint
from sotopia_are.llm.http_reply import _completion, completion

ENDPOINTS = [
    Endpoint("openai/gpt-4o-mini", "http://127.0.0.1:9/v1", transport="http"),  # priced
    Endpoint("openai/local-model", "http://127.0.0.1:9/v1", transport="http"),  # not priced
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
anything = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
counts = st.one_of(
    st.sampled_from([0, 5, 5.0, -1.0, True, False, "5", None, 2**70]),
    st.integers(min_value=-5, max_value=2**70),
    st.floats(),
)


@st.composite
def replies(draw: st.DrawFn) -> object:
    """Reply-like JSON values: mostly the common shape, each part sometimes another."""

    def often(common: object) -> object:  # ``common`` seven times in eight
        return common if draw(st.integers(0, 7)) else draw(anything)

    content = often(draw(st.text(max_size=12)))
    message = often({"role": "assistant", "content": content})
    choice = often({"index": 0, "message": message})
    reply = {"id": "chatcmpl-1", "choices": often([choice, *draw(st.lists(anything, max_size=2))])}
    if draw(st.booleans()):
        reply["usage"] = often(
            {name: draw(counts) for name in ("prompt_tokens", "completion_tokens", "total_tokens")}
        )
    if draw(st.booleans()):
        reply["timings"] = often({"prompt_ms": draw(counts), "predicted_ms": draw(counts)})
    return often(reply)


def outcome(read: object, endpoint: Endpoint, raw: bytes) -> tuple[object, ...]:
    try:
        answer = read(endpoint, endpoint.model, raw)  # type: ignore[operator]
    except Exception as error:
        return ("error", type(error).__name__, str(error))
    return ("answer", answer.model_dump())


@settings(max_examples=400, deadline=None)
@given(
    reply=replies(),
    endpoint=st.sampled_from(ENDPOINTS),
    ascii_only=st.booleans(),
    change=st.sampled_from(
        ["none", "cut", "garbage after", "lone surrogate", "not utf-8", "space"]
    ),
)
def test_both_ways_of_reading_a_reply_agree(
    reply: object, endpoint: Endpoint, ascii_only: bool, change: str
) -> None:
    raw = json.dumps(reply, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if change == "cut":
        raw = raw[: len(raw) // 2]
    elif change == "garbage after":
        raw += b" }x"
    elif change == "lone surrogate":
        raw = raw.replace(b'"assistant"', b'"assi\\ud800stant"').replace(b'": "', b'": "\\udc00', 1)
    elif change == "not utf-8":
        raw = raw.replace(b'"chatcmpl-1"', b'"chat\xffcmpl"')
    elif change == "space":
        raw = b" \n" + raw + b"\n"
    assert outcome(completion, endpoint, raw) == outcome(_completion, endpoint, raw)


def test_the_common_reply_is_read_as_the_general_way_reads_it() -> None:
    raw = json.dumps(
        {
            "id": "chatcmpl-1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hé"}}, {}],
            "usage": {"prompt_tokens": 812, "completion_tokens": 12, "total_tokens": 824},
            "timings": {"prompt_ms": 1.5, "predicted_ms": 2},
        }
    ).encode()
    answer = completion(ENDPOINTS[0], ENDPOINTS[0].model, raw)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ("hé", 812, 12)
    assert answer.service_s == 0.0035 and answer.cost_usd is not None
    assert outcome(completion, ENDPOINTS[0], raw) == outcome(_completion, ENDPOINTS[0], raw)
