"""ARE's apps notify the same messages, in the same words, on our kernel as on ARE.

Needs Meta ARE's wheel (see docs/are-compatibility.md); skips, saying so, without it.
One scenario runs on our kernel (a subprocess with ``compat.install()``) and on ARE
itself (a subprocess without it), at each verbosity level; the two message queues must
hold the same messages: user messages with their attachments, ARE's per-app texts, due
reminders and the stop message.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

HAS_ARE = importlib.util.find_spec("are") is not None
needs_are = pytest.mark.skipif(not HAS_ARE, reason="Meta ARE's wheel is not installed")

SCENARIO = textwrap.dedent(
    """
    import json, re, sys
    if sys.argv[1] == "ours":
        from sotopia_are.simulation import compat
        compat.install()
    from are.simulation.apps import (
        AgentUserInterface, CabApp, Calendar, Mail, MessagingAppV2, ReminderApp,
    )
    from are.simulation.environment import Environment, EnvironmentConfig
    from are.simulation.notification_system import VerboseNotificationSystem, VerbosityLevel
    from are.simulation.types import EventRegisterer

    level = VerbosityLevel[sys.argv[2]]
    env = Environment(
        EnvironmentConfig(start_time=0, duration=60, queue_based_loop=True, oracle_mode=True),
        notification_system=VerboseNotificationSystem(verbosity_level=level),
    )
    aui, mail, cabs, calendar = AgentUserInterface(), Mail(), CabApp(), Calendar()
    messaging = MessagingAppV2(
        current_user_id="u0", current_user_name="me",
        id_to_name={"u0": "me", "u1": "Ada", "u2": "Bo"},
        name_to_id={"me": "u0", "Ada": "u1", "Bo": "u2"},
    )
    reminders = ReminderApp(name="Todo")
    env.register_apps([aui, mail, cabs, calendar, messaging, reminders])
    picture = {"base64_data": "aGk=", "mime": "image/png", "name": "hi.png"}
    with EventRegisterer.capture_mode():
        hello = aui.send_message_to_agent(
            content="Hello", attachments=["hi.png"],
            base64_utf8_encoded_attachment_contents=[picture],
        ).with_id("hello").depends_on(None, delay_seconds=1)
        email = mail.send_email_to_user_only(sender="a@x.org", subject="Hi", content="Yo")
        email.with_id("email").depends_on(hello, delay_seconds=1)
        group = messaging.create_group_conversation(user_ids=["u1", "u2"], title="G")
        group.with_id("group").depends_on(hello, delay_seconds=2)
        chat = messaging.create_and_add_message(
            conversation_id="{{group}}", sender_id="u1", content="hey"
        ).with_id("chat").depends_on(group, delay_seconds=1)
        meet = calendar.add_calendar_event_by_attendee(
            who_add="Ada", title="Lunch", start_datetime="2024-01-01 12:00:00",
            end_datetime="2024-01-01 13:00:00", attendees=["Ada"],
        ).with_id("meet").depends_on(chat, delay_seconds=1)
        unmeet = calendar.delete_calendar_event_by_attendee(
            event_id="{{meet}}", who_delete="Ada"
        ).with_id("unmeet").depends_on(meet, delay_seconds=1)
        due = reminders.add_reminder(
            title="Call Bo", due_datetime="1970-01-01 00:00:05", description="about lunch"
        ).with_id("due").depends_on(hello, delay_seconds=2)
        later = aui.send_message_to_agent(content="Bye").with_id("later")
        later.depends_on(unmeet, delay_seconds=2)
    env.schedule([hello, email, group, chat, meet, unmeet, due, later])
    env.start()
    env.join()
    messages = []
    for m in env.notification_system.message_queue.list_view():
        text = re.sub(r"[0-9a-f]{32}", "<id>", m.message)
        messages.append([int(m.timestamp.timestamp()), m.message_type.value, text,
                         [a.model_dump() for a in m.attachments]])
    print(json.dumps(sorted(messages)))
    """
)


def messages_on(kernel: str, level: str) -> list[list[object]]:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, kernel, level],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: list[list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@needs_are
@pytest.mark.parametrize("level", ["LOW", "MEDIUM", "HIGH"])
def test_are_apps_notify_the_same_messages_on_our_kernel_as_on_are(level: str) -> None:
    ours = messages_on("ours", level)
    assert ours == messages_on("are", level)
    texts = [text for _, _, text, _ in ours]
    assert texts[0].startswith("Received at: 1970-01-01 00:00:01\nSender: User\nMessage: Hello")
    assert ours[0][3] == [{"base64_data": "aGk=", "mime": "image/png", "name": "hi.png"}]
    assert any(text.startswith("Todo: New due reminders:\nReminder: Call Bo") for text in texts)
    stop = ["ENVIRONMENT_STOP", "Environment stopped with state EnvironmentState.STOPPED"]
    assert [m[1:3] for m in ours].count(stop) == 1
    if level != "LOW":
        assert "Mail: New email received from a@x.org" in texts
        assert "MessagingAppV2: New message received in conversation ID: <id>" in texts
        assert "Calendar: New calendar event added by Ada" in texts
        assert "Calendar: Calendar event deleted by Ada" in texts
    else:
        assert len(ours) == 4  # two user messages, the reminder, the stop
