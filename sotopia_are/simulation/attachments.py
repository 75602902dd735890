"""A file sent along with a user message (ARE's ``agents.multimodal.Attachment`` fields).

ARE's user interface app passes a message's files to ``send_message_to_agent`` as
``base64_utf8_encoded_attachment_contents``: each one an attachment object or its dumped
dict. The notification system turns each into an :class:`Attachment` on the message.
Plain standard library, as the whole kernel: ARE's class is a pydantic model, so this
one answers ARE's ``model_dump`` / ``model_validate`` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["Attachment"]


@dataclass(frozen=True, slots=True)
class Attachment:
    """One file: its base64 text as bytes, its MIME type and, optionally, its name.

    ValueError if ``base64_data`` is empty or not bytes, ``mime`` is empty or not a
    string, or ``name`` is neither a string nor None.
    """

    base64_data: bytes
    mime: str
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.base64_data, bytes) or not self.base64_data:
            raise ValueError("base64_data must be non-empty bytes")
        if not isinstance(self.mime, str) or not self.mime:
            raise ValueError("mime must be a non-empty string")
        if self.name is not None and not isinstance(self.name, str):
            raise ValueError("name must be a string or None")

    def model_dump(self) -> dict[str, Any]:
        """The dumped dict, ``base64_data`` as a string (ARE's dump of the same file)."""
        return {
            "base64_data": self.base64_data.decode("utf-8"),
            "mime": self.mime,
            "name": self.name,
        }

    @classmethod
    def model_validate(cls, value: object) -> Attachment:
        """``value`` as an attachment: itself, one from its dumped dict (``base64_data``
        as a string or bytes), or one from the attributes of another attachment object
        (ARE's own class, say). ValueError if it is none of these."""
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            fields = dict(value)
        else:
            fields = {key: getattr(value, key, None) for key in ("base64_data", "mime", "name")}
        data = fields.get("base64_data")
        if isinstance(data, str):
            data = data.encode("utf-8")
        # The types are checked when the attachment is made (__post_init__).
        return cls(
            base64_data=cast(bytes, data),
            mime=cast(str, fields.get("mime")),
            name=cast("str | None", fields.get("name")),
        )

    @classmethod
    def all_of(cls, values: Any) -> list[Attachment]:
        """Each of ``values`` (a list, or None for none) as an attachment."""
        return [cls.model_validate(value) for value in values or ()]
