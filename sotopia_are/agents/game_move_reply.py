"""How a model's JSON answer becomes a game move: lenient in form, strict in content.

In a game turn an agent may make only the moves the rules offer now
(:class:`~sotopia_are.social.protocol.MoveOption`). :func:`move_output_type` is the
output type of that turn: its JSON schema (:func:`move_schema`) offers exactly those
moves — one ``anyOf`` variant per move, its name as a one-value ``enum``, a target move's
``target`` an ``enum`` of its eligible participants, an offer's ``amount`` an integer
within its bounds, speech a non-empty ``argument``, no other keys — so a server that
decodes under the schema (llama.cpp, vLLM) cannot write an illegal move. The schema
keeps to the keywords llama.cpp's grammar converter reads (``anyOf``, ``enum``,
``type``, ``properties``, ``required``, ``additionalProperties``, ``minimum``,
``maximum``, ``minLength``, ``maxLength``; no ``$ref``, no ``pattern``). An
``argument`` is at most :data:`~sotopia_are.agents.action_reply.ARGUMENT_MAX_CHARS`
long in the schema, so that an answer decoded under it fits its ``max_tokens``; a longer
one from a server that does not enforce the schema is accepted.

As with actions (:mod:`sotopia_are.agents.action_reply`), every instance of that schema
is accepted but one (below), and what a lenient parser or a server that does not enforce
the schema lets through is refused with the reason, which the LLM layer's retry sends back
to the model — never turned into an abstention.

Form, normalised (each change is noted on the call's record):

- the move is matched to an offered move ignoring case, spaces, ``_`` and ``-``, else
  to the one offered move of the kind it names (``"speak"`` for a speech move ``say``);
- the target is matched to a participant as a recipient is
  (:func:`~sotopia_are.messages.match_participant`: exactly, else ignoring case, else by
  a unique first name);
- an amount written as text (``"60"``) or as a whole float (``60.0``) is that integer;
- ``null`` for ``target``, ``amount`` or ``argument`` is the same as leaving it out (for
  ``argument``: ``""``);
- words on an ``accept``, ``reject`` or ``pass`` move are dropped (only speech, a target
  move or an offer carries words; the schema offers ``argument`` only there);
- speech whose lines would not read back from the transcript (a line that reads as
  ``Turn #3`` or as another action) is read as one line, its lines joined by spaces;
- keys are matched ignoring case (``"Move"``, ``"TARGET"``), ``action`` names the move
  and ``speech`` or ``text`` the argument; unknown keys are dropped; a move wrapped in one
  outer object (``{"move_choice": {...}}``) is unwrapped.

Content, refused with the reason: a move not offered now; a target move without a target,
or one not eligible for it; an offer without an amount, a non-whole amount or one out of
its bounds; a target or an amount on a move that takes none; speech that says nothing.
Speech of white space only is the one refusal the schema does not state: a ``pattern``
could, but llama.cpp's grammar converter refuses ``\\S`` and unanchored patterns, and a
schema it refuses would cost every game turn its constrained decoding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Self

from pydantic import GetJsonSchemaHandler, create_model, field_validator, model_validator
from pydantic_core import CoreSchema

from sotopia_are.messages import GameMove, match_participant
from sotopia_are.messages.parser import unreadable_speech
from sotopia_are.social.protocol import MoveOption

from .action_reply import ACTION_FORM_TOKENS, ARGUMENT_MAX_CHARS
from .reply_keys import ReplyKeys

__all__ = ["move_output_type", "move_schema", "normalize_move_reply", "playable_moves"]

_FIELDS = ("move", "target", "amount", "argument")
_WITH_REASON = ("target", "offer")
"""The kinds of move that may carry words (a reason for a vote or an offer)."""
_KEY_ALIASES = {"action": "move", "speech": "argument", "text": "argument"}


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


_KEYS = ReplyKeys(_FIELDS, "move", _KEY_ALIASES, _letters, "move")


def playable_moves(moves: Sequence[MoveOption]) -> tuple[MoveOption, ...]:
    """The moves of ``moves`` that some answer can make: a target move needs an eligible
    target, an offer a non-empty range (the others always can)."""
    return tuple(
        option
        for option in moves
        if (option.kind != "target" or option.targets)
        and (option.kind != "offer" or option.amount_min <= option.amount_max)
    )


def move_schema(moves: Sequence[MoveOption]) -> dict[str, Any]:
    """The JSON schema of an answer making one of ``moves`` (see the module): one
    ``anyOf`` variant per playable move, in the order given. ValueError when none of
    ``moves`` can be made (no answer would be legal)."""
    variants = [_variant(option) for option in playable_moves(moves)]
    if not variants:
        raise ValueError(
            f"none of the moves {[option.name for option in moves]} can be made "
            "(a target move without an eligible target, or an offer with an empty range)"
        )
    return {"anyOf": variants}


def _variant(option: MoveOption) -> dict[str, Any]:
    properties: dict[str, Any] = {"move": {"type": "string", "enum": [option.name]}}
    required = ["move"]
    if option.kind == "target":
        properties["target"] = {"type": "string", "enum": list(option.targets)}
        required.append("target")
    elif option.kind == "offer":
        properties["amount"] = {
            "type": "integer",
            "minimum": option.amount_min,
            "maximum": option.amount_max,
        }
        required.append("amount")
    if option.kind == "speak":
        properties["argument"] = {
            "type": "string",
            "minLength": 1,
            "maxLength": ARGUMENT_MAX_CHARS,
        }
        required.append("argument")
    elif option.kind in _WITH_REASON:
        properties["argument"] = {"type": "string", "maxLength": ARGUMENT_MAX_CHARS}
    variant: dict[str, Any] = {"title": option.name}
    if option.description:
        variant["description"] = option.description
    variant.update(
        type="object", properties=properties, required=required, additionalProperties=False
    )
    return variant


def normalize_move_reply(
    data: Any, moves: Sequence[MoveOption], participants: Sequence[str]
) -> tuple[Any, list[str]]:
    """``data`` (a model's parsed JSON) in canonical move form, and one note per change.

    Anything that is not a JSON object is returned as is, for validation to refuse.
    """
    if not isinstance(data, dict):
        return data, []
    notes: list[str] = []
    move = _KEYS.canonical(data, notes)
    _normalize_name(move, moves, notes)
    for field in ("target", "amount", "argument"):
        if field in move and move[field] is None:
            notes.append(f"read {field} null as no {field}")
            del move[field]
    _normalize_target(move, participants, notes)
    _normalize_amount(move, notes)
    _normalize_speech(move, moves, notes)
    return move, notes


def _normalize_name(move: dict[str, Any], moves: Sequence[MoveOption], notes: list[str]) -> None:
    written = move.get("move")
    if not isinstance(written, str) or any(option.name == written for option in moves):
        return
    same = [option.name for option in moves if _letters(option.name) == _letters(written)]
    if not same:
        # A model may name the kind of the move ("speak") rather than its name ("say").
        same = [option.name for option in moves if option.kind == _letters(written)]
    if len(same) == 1:
        notes.append(f"read move {written!r} as {same[0]!r}")
        move["move"] = same[0]


def _normalize_target(move: dict[str, Any], participants: Sequence[str], notes: list[str]) -> None:
    written = move.get("target")
    if not isinstance(written, str):
        return
    name = match_participant(written, participants)
    if name is not None and name != written:
        notes.append(f"read target {written!r} as {name!r}")
        move["target"] = name


def _normalize_amount(move: dict[str, Any], notes: list[str]) -> None:
    written = move.get("amount")
    if isinstance(written, bool):
        return  # true is not a number, whatever Python says
    whole: int | None = None
    if isinstance(written, float) and written.is_integer():
        whole = int(written)
    elif isinstance(written, str) and re.fullmatch(r"\s*-?\d+(\.0*)?\s*", written):
        whole = int(float(written))
    if whole is not None:
        notes.append(f"read amount {json.dumps(written)} as {whole}")
        move["amount"] = whole


def _normalize_speech(move: dict[str, Any], moves: Sequence[MoveOption], notes: list[str]) -> None:
    kind = next((option.kind for option in moves if option.name == move.get("move")), None)
    argument = move.get("argument")
    if kind is not None and kind != "speak" and kind not in _WITH_REASON and "argument" in move:
        # Words on an accept, reject or pass would read as speech in the transcript.
        notes.append(f"dropped the words of a {kind!r} move, which takes none")
        del move["argument"]
        return
    if kind != "speak" or not isinstance(argument, str):
        return
    # A transcript reads only `\n` as a line end, as the move's own check does: a `\r`
    # ends no line there but is text of the line it is on. Shown elsewhere, it may end
    # one. Speech that would not read back either way is read as one line.
    text = argument.replace("\r\n", "\n").replace("\r", "\n")
    reason = unreadable_speech(argument) or unreadable_speech(text)
    if not reason:
        return
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    notes.append(f"read the speech's {len(lines)} lines as one line (in the transcript {reason})")
    move["argument"] = " ".join(lines)


def _legal_problems(move: GameMove, options: Mapping[str, MoveOption]) -> list[str]:
    """What makes ``move`` illegal among ``options`` (empty: it is legal)."""
    option = options.get(move.move)
    if option is None:
        return [f"{move.move!r} is not a move you may make now; choose one of {list(options)}"]
    problems: list[str] = []
    if option.kind == "target":
        if move.target is None:
            problems.append(f"{option.name!r} needs a target: one of {list(option.targets)}")
        elif move.target not in option.targets:
            problems.append(
                f"{move.target!r} is not an eligible target of {option.name!r}; "
                f"choose one of {list(option.targets)}"
            )
    elif move.target is not None:
        problems.append(f"{option.name!r} takes no target (got {move.target!r})")
    bounds = f"a whole number from {option.amount_min} to {option.amount_max}"
    if option.kind == "offer":
        if move.amount is None:
            problems.append(f"{option.name!r} needs an amount: {bounds}")
        elif not option.amount_min <= move.amount <= option.amount_max:
            problems.append(f"the amount of {option.name!r} must be {bounds} (got {move.amount})")
    elif move.amount is not None:
        problems.append(f"{option.name!r} takes no amount (got {move.amount})")
    if option.kind == "speak":
        if not move.argument.strip():
            problems.append(f"{option.name!r} needs something said in 'argument'")
        elif reason := unreadable_speech(move.argument):
            problems.append(f"this speech cannot be written into the transcript: {reason}")
    return problems


class _MoveReply(GameMove):
    """A :class:`GameMove` answer of a model: normalised, then checked for this turn
    (its subclasses of :func:`move_output_type` set the class variables)."""

    moves: ClassVar[tuple[MoveOption, ...]] = ()
    options: ClassVar[dict[str, MoveOption]] = {}
    participants: ClassVar[tuple[str, ...]] = ()
    legal_schema: ClassVar[dict[str, Any]] = {}
    # Left aside when a smaller max_tokens cuts the argument's bound (llm.structured); an
    # amount's few digits are within it.
    answer_form_tokens: ClassVar[int] = ACTION_FORM_TOKENS

    @classmethod
    def normalize_reply(cls, data: Any) -> tuple[Any, list[str]]:
        return normalize_move_reply(data, cls.moves, cls.participants)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        # The model's fields allow any move; what a server may write is the legal moves.
        return cls.legal_schema

    @field_validator("amount", mode="before")
    @classmethod
    def _whole_amount(cls, value: Any) -> Any:
        # After normalisation an amount is an int; a direct model_validate may hold more.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"an amount is a whole number (got {json.dumps(value, default=str)})")
        return value

    @model_validator(mode="after")
    def _legal(self) -> Self:
        problems = _legal_problems(self, self.options)
        if problems:
            raise ValueError("; ".join(problems))
        return self


# Cached because building a pydantic model costs far more than a turn's framework budget,
# and the same moves recur turn after turn (every vote of a phase, every offer round).
@lru_cache(maxsize=1024)
def move_output_type(
    moves: tuple[MoveOption, ...], participants: tuple[str, ...]
) -> type[GameMove]:
    """A :class:`GameMove` subclass that only validates a legal move among ``moves``.

    Its JSON schema is :func:`move_schema` of ``moves``; its ``normalize_reply`` is
    :func:`normalize_move_reply` (targets matched among ``participants``); validation
    refuses what the module lists with a message naming what is allowed — what the model
    reads when asked to try again. ValueError when none of ``moves`` can be made.
    """
    schema = move_schema(moves)
    # Named like its base so the schema and the call records say "GameMove".
    model: type[_MoveReply] = create_model("GameMove", __base__=_MoveReply)
    model.moves = moves
    model.options = {option.name: option for option in playable_moves(moves)}
    model.participants = participants
    model.legal_schema = schema
    return model
