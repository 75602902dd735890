"""ARE's notified tools of its standard apps, by verbosity level, and the text of each.

ARE's notification system knows its own apps by class name: which of their ENV tools
notify the agent at each :class:`VerbosityLevel`, and what the notification says
(``"Mail: New email received from ['a@b.c']"``). Each app also answers to the class names
of its aliases (``Mail`` is an ``EmailClientApp``). These tables follow ARE 1.2.0's, so
an ARE app run on our kernel notifies what it notifies on ARE, in the same words.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["APP_ALIASES", "VerbosityLevel", "are_notification_text", "notified_tools_at"]


class VerbosityLevel(enum.IntEnum):
    """How much of the environment agents are told about (ARE's levels and values).

    LOW: user messages and system notifications (due reminders, wait timeouts) only.
    MEDIUM: also the ENV events that are likely consequences of agent actions.
    HIGH: also most ENV events that happen independently of the agent.
    """

    LOW = 1
    MEDIUM = 2
    HIGH = 3


APP_ALIASES: Mapping[str, tuple[str, ...]] = {
    "EmailClientApp": ("EmailClientV2", "Mail", "Emails"),
    "ApartmentListingApp": ("RentAFlat",),
    "ContactsApp": ("Contacts",),
    "MessagingApp": (),
    "MessagingAppV2": ("Messages", "Chats"),
    "CalendarApp": ("Calendar",),
    "ShoppingApp": ("Shopping",),
    "CabApp": ("Cabs",),
    "SandboxLocalFileSystem": ("Files",),
}
"""ARE's app class name -> the class names of the same app under other names."""

# The app whose texts a class name gets: its own, or its alias's. ARE gives none to
# "Cabs": its tools are listed as notified but, without a text, notify nothing there.
_TEXT_APP = {
    name: app for app, aliases in APP_ALIASES.items() for name in (app, *aliases) if name != "Cabs"
}

_EMAIL = ("create_and_add_email", "send_email_to_user_only", "reply_to_email_from_user")
_CALENDAR = ("add_calendar_event_by_attendee", "delete_calendar_event_by_attendee")
_MESSAGES = ("create_and_add_message",)

_TOOLS_AT: Mapping[VerbosityLevel, Mapping[str, tuple[str, ...]]] = {
    VerbosityLevel.LOW: {},
    VerbosityLevel.MEDIUM: {
        "EmailClientApp": _EMAIL,
        "MessagingApp": _MESSAGES,
        "MessagingAppV2": _MESSAGES,
        "ShoppingApp": ("cancel_order", "update_order_status"),
        "CabApp": ("cancel_ride", "user_cancel_ride", "end_ride"),
        "CalendarApp": _CALENDAR,
    },
    VerbosityLevel.HIGH: {
        "EmailClientApp": _EMAIL,
        "MessagingApp": _MESSAGES,
        "MessagingAppV2": _MESSAGES,
        "ShoppingApp": (
            "add_product",
            "add_item_to_product",
            "cancel_order",
            "update_order_status",
            "add_discount_code",
        ),
        "ApartmentListingApp": ("add_new_apartment",),
        "CabApp": ("cancel_ride", "user_cancel_ride", "update_ride_status", "end_ride"),
        "CalendarApp": _CALENDAR,
    },
}


def notified_tools_at(verbosity_level: VerbosityLevel) -> dict[str, list[str]]:
    """ARE's notified tools at ``verbosity_level``: ``{app class name: [tool, ...]}``,
    with every alias of an app listed under its own name too (a fresh dict)."""
    tools: dict[str, list[str]] = {}
    for app, functions in _TOOLS_AT[VerbosityLevel(verbosity_level)].items():
        for name in (app, *APP_ALIASES.get(app, ())):
            tools[name] = list(functions)
    return tools


# The text after "<AppClass>: " for each (app, tool), from the call's args.
_Text = Callable[[Mapping[str, Any]], str]


def _received_from(args: Mapping[str, Any]) -> str:
    return f"New email received from {args.get('sender')}"


_TEXTS: Mapping[tuple[str, str], _Text] = {
    ("EmailClientApp", "create_and_add_email"): _received_from,
    ("EmailClientApp", "send_email_to_user_only"): _received_from,
    ("EmailClientApp", "reply_to_email_from_user"): lambda _: "New email received",
    ("MessagingApp", "create_and_add_message"): lambda args: (
        f"New message received in conversation ID: {args.get('conversation_id')}"
    ),
    ("ShoppingApp", "add_product"): lambda args: f"New product added: {args.get('name')}",
    ("ShoppingApp", "add_item_to_product"): lambda args: (
        f"New item added to product with Id {args.get('product_id')}"
    ),
    ("ShoppingApp", "cancel_order"): lambda args: f"Order cancelled with Id {args.get('order_id')}",
    ("ShoppingApp", "update_order_status"): lambda args: (
        f"Updated order with Id {args.get('order_id')}"
    ),
    ("ShoppingApp", "add_discount_code"): lambda args: (
        f"New discount code for item with Id {args.get('item_id')}"
    ),
    ("ApartmentListingApp", "add_new_apartment"): lambda args: (
        f"New apartment available with name {args.get('name')}"
    ),
    ("CabApp", "cancel_ride"): lambda _: "ride cancelled",
    ("CabApp", "user_cancel_ride"): lambda _: "ride cancelled",
    ("CabApp", "update_ride_status"): lambda _: "ride status updated",
    ("CabApp", "end_ride"): lambda _: "ride completed",
    ("CalendarApp", "add_calendar_event_by_attendee"): lambda args: (
        f"New calendar event added by {args.get('who_add')}"
    ),
    ("CalendarApp", "delete_calendar_event_by_attendee"): lambda args: (
        f"Calendar event deleted by {args.get('who_delete')}"
    ),
}


def are_notification_text(
    app_class_name: str | None, function_name: str, args: Mapping[str, Any]
) -> str | None:
    """ARE's notification text for a call of ``function_name`` with ``args`` on an app of
    class ``app_class_name``, prefixed with that class name; None if ARE has none.

    Both message apps share one text; an alias class gets its app's text under its own
    name, but for ``Cabs`` (none, as in ARE). An arg the text needs but the call lacks
    reads ``None`` (ARE raises KeyError).
    """
    if app_class_name is None:
        return None
    app = _TEXT_APP.get(app_class_name)
    if app == "MessagingAppV2":
        app = "MessagingApp"
    text = _TEXTS.get((app, function_name)) if app is not None else None
    return None if text is None else f"{app_class_name}: {text(args)}"
