"""A file sent along with a user message (ARE's ``agents.multimodal.Attachment`` fields).

ARE's user interface app passes a message's files to ``send_message_to_agent`` as
``base64_utf8_encoded_attachment_contents``: each one an attachment object or its dumped
dict. The notification system turns each into an :class:`Attachment` on the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator

__all__ = ["Attachment"]


class Attachment(BaseModel):
    """One file: its base64 text as bytes, its MIME type and, optionally, its name.

    ``model_dump()`` gives ``base64_data`` as a string, as ARE dumps it, so a dump is
    JSON-ready and equal to ARE's dump of the same file. Neither field may be empty.
    """

    model_config = ConfigDict(frozen=True)

    base64_data: bytes
    mime: str
    name: str | None = None

    @field_validator("base64_data", mode="before")
    @classmethod
    def _as_bytes(cls, value: object) -> bytes:
        # A dump carries the base64 text as a string; anything else is a mistake.
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not isinstance(value, bytes):
            raise ValueError(f"base64_data must be str or bytes, not {type(value).__name__}")
        if not value:
            raise ValueError("base64_data must not be empty")
        return value

    @field_validator("mime")
    @classmethod
    def _mime_given(cls, value: str) -> str:
        if not value:
            raise ValueError("mime must not be empty")
        return value

    @field_serializer("base64_data")
    def _dump_base64(self, value: bytes) -> str:
        return value.decode("utf-8")

    @classmethod
    def of(cls, value: object) -> Attachment:
        """``value`` as an attachment: itself, one from its dumped dict, or one from the
        attributes of another attachment object (ARE's own class, say)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(dict(value))
        return cls.model_validate(value, from_attributes=True)

    @classmethod
    def all_of(cls, values: Any) -> list[Attachment]:
        """Each of ``values`` (a list, or None for none) as an attachment."""
        return [cls.of(value) for value in values or ()]
