"""ARE's own apps run on our kernel through the import mapping, and log what ARE logs.

Needs Meta ARE's wheel (``meta-agents-research-environments``, see
docs/are-compatibility.md); the tests that need it skip, saying so, where it is missing.
Each scenario runs twice: on our kernel, in a subprocess with ``compat.install()``, and
on ARE itself, in a subprocess without it; the two event logs must be equal.
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

# One scenario against ARE's standard apps: data loaded through their env tools,
# scheduled calls with dependencies and delays, a condition check, an oracle event.
SCENARIO = textwrap.dedent(
    """
    import json, sys
    if sys.argv[1] == "ours":
        from sotopia_are.simulation import compat
        compat.install()
    from are.simulation.apps.calendar import CalendarApp
    from are.simulation.apps.contacts import Contact, ContactsApp
    from are.simulation.apps.email_client import Email, EmailClientApp
    from are.simulation.apps.messaging import MessagingApp
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem
    from are.simulation.environment import Environment, EnvironmentConfig
    from are.simulation.types import ConditionCheckEvent, EventRegisterer

    email, calendar, contacts = EmailClientApp(), CalendarApp(), ContactsApp()
    messaging, files = MessagingApp(), SandboxLocalFileSystem(sandbox_dir=sys.argv[2])
    env = Environment(EnvironmentConfig(start_time=0, duration=60, queue_based_loop=True,
                                        oracle_mode=True))
    env.register_apps([email, calendar, contacts, messaging, files])
    with EventRegisterer.capture_mode():
        e1 = email.send_email_to_user(email=Email(sender="a@x.org", recipients=["u@x.org"],
                 subject="Lunch", content="At noon?", email_id="m1")).with_id("e1")
        e2 = calendar.add_calendar_event(title="Lunch", start_datetime="2024-01-01 12:00:00",
                 end_datetime="2024-01-01 13:00:00").with_id("e2")
        e3 = contacts.add_new_contact(first_name="Ada", last_name="Lovelace").with_id("e3")
        e4 = messaging.create_conversation(participants=["Ada"], title="Lunch").with_id("e4")
        e5 = files.mkdir(path="notes").with_id("e5")
        e6 = email.list_emails(folder_name="INBOX").with_id("e6")
    check = ConditionCheckEvent.from_condition(
        lambda env: len(env.get_app("CalendarApp").events) > 0).with_id("c1")
    # e2 lands between two checks (at 5.5): at a time both kernels run, ARE runs a check
    # before an action of the same time, ours after it (docs/are-compatibility.md).
    e1.depends_on(None, delay_seconds=2.5)
    e2.depends_on(e1, delay_seconds=3)
    e3.depends_on(None, delay_seconds=1)
    check.depends_on(None, delay_seconds=1)
    e4.depends_on(check, delay_seconds=1)
    e5.depends_on(e4, delay_seconds=0)
    e6.depends_on(e2, delay_seconds=4)
    env.schedule([e1, e2, e3, check, e4, e5, e6])
    env.start()
    env.join()
    log = []
    for e in env.event_log.list_view():
        value = e.metadata.return_value
        if isinstance(value, str) and len(value) == 32:
            value = "<id>"  # generated uuid hex
        if not isinstance(value, (bool, int, str, type(None))):
            value = type(value).__name__
        log.append([e.event_id, e.event_type.value, float(e.event_time), e.function_name(),
                    e.metadata.exception is None, value])
    print(json.dumps({"state": env.state.value, "log": log}))
    """
)


def run_scenario(kernel: str, tmp_path: object) -> dict[str, object]:
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, kernel, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@needs_are
def test_are_standard_apps_give_the_same_log_on_our_kernel_as_on_are(tmp_path: object) -> None:
    ours = run_scenario("ours", tmp_path)
    theirs = run_scenario("are", tmp_path)
    assert ours["state"] == "STOPPED"
    assert len(ours["log"]) >= 7  # type: ignore[arg-type]
    assert ours["state"] == theirs["state"]
    # Same records at the same times. Within one time the order differs by design: ours
    # runs a time's actions before its checks (so a check sees them); ARE's follows its
    # queue's order.
    assert [r[2] for r in ours["log"]] == [r[2] for r in theirs["log"]]  # type: ignore[index,union-attr]
    assert sorted(map(repr, ours["log"])) == sorted(map(repr, theirs["log"]))  # type: ignore[call-overload]


@needs_are
def test_the_mapping_gives_our_kernel_and_are_apps() -> None:
    code = textwrap.dedent(
        """
        from sotopia_are.simulation import compat
        compat.install()
        import are.simulation.environment as env, are.simulation.types as types
        import sotopia_are.simulation.environment as ours
        from are.simulation.apps.email_client import EmailClientApp
        from are.simulation.apps.app import App
        import sotopia_are.simulation.apps.app as our_app
        assert env is ours and App is our_app.App and issubclass(EmailClientApp, App)
        tools = EmailClientApp().get_tools()
        assert any(t.name == "EmailClientApp__send_email" for t in tools)
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr[-3000:]


def test_without_are_installed_the_mapping_serves_our_modules_only() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.path = [p for p in sys.path if "site-packages" not in p or "sotopia" in p]
        from sotopia_are.simulation import compat
        finder = compat.install()
        finder.are_paths.clear()  # as if ARE were not installed
        import are.simulation.environment as env
        import are.simulation.apps.app as app
        import sotopia_are.simulation.environment as ours
        assert env is ours and app.App.__module__ == "sotopia_are.simulation.apps.app"
        try:
            import are.simulation.apps.email_client
        except ModuleNotFoundError:
            print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr[-3000:]
