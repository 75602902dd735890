"""How a model's JSON answer becomes an action: lenient in form, strict in content.

The rule: every answer that satisfies the JSON schema we send is accepted. A server that
decodes under the schema (llama.cpp, vLLM, OpenAI's strict mode) promises nothing
beyond it, so each constraint we care about is either in the schema
(:func:`action_output_type`) or not a reason to refuse: the answer is normalised
instead, and the change noted on the call's record (whose raw text keeps what was
written). Refused, and sent back to the model, is only what the schema already excludes.

Real models write the same action in many shapes. :func:`normalize_action_reply` is the
one step, run before validation, that puts the shape into canonical form and says what it
changed; :func:`action_output_type` is the model the result must then validate against.

Form, normalised (each change is noted on the call's record):

- the argument of ``none`` or ``leave`` is ``""``: ``null``, a missing one or any text
  written there is dropped (these actions take no argument, and the schema cannot say
  so per action type);
- speech whose lines would not read back from the transcript (a line that reads as
  ``Turn #3`` or as another action, ``Bob said: "…"``) is read as one line, its lines
  joined by spaces; so is a multi-line description of an ``action`` or a
  ``non-verbal communication`` (the script form of those is a single line);
- ``"to": []`` or ``null`` means public (no ``to``); a single name as a string is a list
  of that name; a recipient listed twice counts once;
- a recipient is matched to a participant exactly, else case-insensitively, else by a
  unique first name (``"bob"`` → ``"Bob Lee"`` when no one else is called Bob);
- the action type is matched ignoring case, spaces, ``_`` and ``-``
  (``"Non_Verbal_Communication"``), and ``"nonverbal"`` names non-verbal communication;
- keys are matched ignoring case (``"Action_Type"``, ``"actionType"``); unknown keys are
  dropped; an action wrapped in one outer object (``{"action": {...}}``) is unwrapped.

Content, refused and sent back to the model with the problem (all outside the schema):
an action type that is not available now, a recipient who is not another participant,
a missing or non-text argument of ``speak``, ``action`` or ``non-verbal communication``.

The schema also bounds the argument's length (:data:`ARGUMENT_MAX_CHARS`), so that an
answer decoded under it closes its JSON within :data:`ACTION_MAX_TOKENS`; a longer
argument from a server that does not enforce the schema is accepted all the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any, ClassVar

from pydantic import (
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    field_validator,
)

from sotopia_are.llm import text_max_chars
from sotopia_are.messages import AgentAction, match_participant, validate_recipients
from sotopia_are.messages.action import ActionType
from sotopia_are.messages.parser import unreadable_speech

from .reply_keys import ReplyKeys

__all__ = [
    "ACTION_FORM_TOKENS",
    "ACTION_MAX_TOKENS",
    "ARGUMENT_MAX_CHARS",
    "action_output_type",
    "match_participant",
    "normalize_action_reply",
]

ACTION_MAX_TOKENS = 400
"""The answer budget of one action unless the agent's sampling or the session's config give
one: a turn's utterance with its JSON fits, a model that rambles is cut off."""

ACTION_FORM_TOKENS = 60
"""What an action's JSON takes beside its argument: the keys, the longest action type,
two recipients' names, and the line breaks and indentation a model writes around them."""

ARGUMENT_MAX_CHARS = text_max_chars(ACTION_MAX_TOKENS - ACTION_FORM_TOKENS)
"""The ``maxLength`` of an action's or a game move's argument in the schema sent (1,020
characters): an answer at its longest still fits :data:`ACTION_MAX_TOKENS`. In the schema
only: a longer argument from a server that does not enforce it is accepted."""

_ACTION_TYPES: tuple[ActionType, ...] = (
    "none",
    "speak",
    "non-verbal communication",
    "action",
    "leave",
)
_SILENT: tuple[ActionType, ...] = ("none", "leave")
_ONE_LINE: tuple[ActionType, ...] = ("action", "non-verbal communication")
_FIELDS = ("action_type", "argument", "to")
_KEY_ALIASES = {"type": "action_type", "actiontype": "action_type", "recipients": "to"}


_NOT_A_LETTER = re.compile(r"[^a-z]")


def _letters(text: str) -> str:
    return _NOT_A_LETTER.sub("", text.lower())


_KEYS = ReplyKeys(_FIELDS, "action_type", _KEY_ALIASES, _letters, "action")

_TYPE_BY_LETTERS: dict[str, ActionType] = {
    **{_letters(kind): kind for kind in _ACTION_TYPES},
    "nonverbal": "non-verbal communication",
}


def normalize_action_reply(data: Any, participants: Sequence[str]) -> tuple[Any, list[str]]:
    """``data`` (a model's parsed JSON) in canonical action form, and one note per change.

    Anything that is not a JSON object is returned as is, for validation to refuse.
    """
    if not isinstance(data, dict):
        return data, []
    notes: list[str] = []
    action = _KEYS.canonical(data, notes)
    _normalize_type(action, notes)
    _normalize_argument(action, notes)
    _normalize_recipients(action, participants, notes)
    return action, notes


def _normalize_type(action: dict[str, Any], notes: list[str]) -> None:
    written = action.get("action_type")
    if not isinstance(written, str) or written in _ACTION_TYPES:
        return
    kind = _TYPE_BY_LETTERS.get(_letters(written))
    if kind is not None:
        notes.append(f"read action_type {written!r} as {kind!r}")
        action["action_type"] = kind


def _normalize_argument(action: dict[str, Any], notes: list[str]) -> None:
    kind = action.get("action_type")
    argument = action.get("argument")
    if kind in _SILENT:
        if "argument" not in action:
            notes.append(f'read the missing argument of {kind!r} as ""')
        elif argument != "":
            notes.append(f"dropped the argument {json.dumps(argument)} of {kind!r}: it takes none")
        action["argument"] = ""
        return
    if not isinstance(argument, str):
        return
    # A script reads only `\n` as a line end, and so does every check below.
    text = argument.replace("\r\n", "\n").replace("\r", "\n")
    if kind == "speak" and (reason := unreadable_speech(text)):
        why = f"in the transcript {reason}"
    elif kind in _ONE_LINE and "\n" in text.strip():
        why = f"a {kind!r} is written on one line"
    else:
        return
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    notes.append(f"read the argument's {len(lines)} lines as one line ({why})")
    action["argument"] = " ".join(lines)


def _normalize_recipients(
    action: dict[str, Any], participants: Sequence[str], notes: list[str]
) -> None:
    if "to" not in action:
        return
    to = action["to"]
    if to is None:
        return
    if to == [] or to == "":
        notes.append(f"read to {json.dumps(to)} as public")
        action["to"] = None
        return
    if isinstance(to, str):
        notes.append(f"read to {to!r} as [{to!r}]")
        to = [to]
    if not isinstance(to, list):
        return
    matched: list[Any] = []
    for written in to:
        name = match_participant(written, participants) if isinstance(written, str) else None
        if name is not None and name != written:
            notes.append(f"read recipient {written!r} as {name!r}")
        recipient = name if name is not None else written
        if recipient in matched:
            notes.append(f"read recipient {recipient!r}, listed again, once")
        else:
            matched.append(recipient)
    action["to"] = matched


class _ActionReply(AgentAction):
    """An :class:`AgentAction` answer of a model: normalised, then checked for this turn."""

    # The schema allows no other keys, so that an instance never carries one that the
    # normaliser would read as a real key ("To", "to_"); validation still drops them.
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    # Left aside when a smaller max_tokens cuts the argument's bound (llm.structured).
    answer_form_tokens: ClassVar[int] = ACTION_FORM_TOKENS

    participants: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def normalize_reply(cls, data: Any) -> tuple[Any, list[str]]:
        return normalize_action_reply(data, cls.participants)


# The base's argument field (its description, its check of a one-line description) with
# the bound in the schema only.
_BOUNDED_ARGUMENT = Field(
    description=AgentAction.model_fields["argument"].description,
    json_schema_extra={"maxLength": ARGUMENT_MAX_CHARS},
)


# Cached because building a pydantic model costs far more than a turn's framework budget,
# and the same (sender, participants, actions) recur in every turn of every episode.
@lru_cache(maxsize=1024)
def action_output_type(
    sender: str, participants: tuple[str, ...], available_actions: tuple[ActionType, ...]
) -> type[AgentAction]:
    """An :class:`AgentAction` subclass that only validates what ``sender`` may do now.

    Its JSON schema states every constraint a server can enforce while decoding: the
    available action types and the allowed recipients (participants other than
    ``sender``) as enums, and no other keys. Validation refuses the content errors listed
    in this module's docstring with a message naming what is allowed — it is what the
    model reads when asked to try again. Its ``normalize_reply`` is
    :func:`normalize_action_reply` with these participants; after it, every instance of
    the schema validates. The checks of an argument below guard a direct
    ``model_validate``, which skips that step.
    """
    recipients = [name for name in participants if name != sender]

    # Validators that do not read the other fields take no ValidationInfo: pydantic makes
    # one for every call of a validator that asks for it.
    def check_action_type(value: ActionType) -> ActionType:
        if value not in available_actions:
            raise ValueError(
                f"{value!r} is not available now; choose one of {list(available_actions)}"
            )
        return value

    def check_argument(value: str, info: ValidationInfo) -> str:
        kind = info.data.get("action_type")
        # Every transcript is script text that must read back as the same actions.
        if kind == "speak" and (reason := unreadable_speech(value)):
            raise ValueError(f"this speech cannot be written into the transcript: {reason}")
        if kind in _SILENT and value.strip():
            raise ValueError(
                f"{kind!r} takes no argument (use \"\"); to say something, use 'speak'"
                + (" first, and leave at a later turn" if kind == "leave" else "")
            )
        return value

    def check_recipients(value: list[str] | None) -> list[str] | None:
        return validate_recipients(value, participants, sender) if value else None

    # The schema states the enums a server enforces while decoding; validation keeps the
    # wider types so that a violation gets the message naming what is allowed.
    type_schema = {"type": "string", "enum": list(available_actions)}
    to_schema: dict[str, Any] = {
        "anyOf": [
            {"type": "array", "items": {"type": "string", "enum": recipients}},
            {"type": "null"},
        ]
    }
    to_type: Any = Annotated[
        list[str] | None, WithJsonSchema(to_schema if recipients else {"type": "null"})
    ]
    type_type: Any = Annotated[ActionType, WithJsonSchema(type_schema)]
    model: type[_ActionReply] = create_model(
        # Named like its base so the schema and the call records say "AgentAction".
        "AgentAction",
        __base__=_ActionReply,
        action_type=(type_type, Field(description="what to do at this turn")),
        argument=(str, _BOUNDED_ARGUMENT),
        to=(
            to_type,
            Field(
                default=None, description="the recipients of a private action; null for everyone"
            ),
        ),
        __validators__={
            "check_action_type": field_validator("action_type")(check_action_type),
            "check_argument": field_validator("argument")(check_argument),
            "check_recipients": field_validator("to")(check_recipients),
        },
    )
    model.participants = participants
    return model
