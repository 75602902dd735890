"""Settings given as environment variables are checked as the same settings given as
flags are: a malformed ``REDIS_OM_URL`` is the clear error ``--redis-url`` gives (it was a
traceback from redis-om's import), and every ``SOTOPIA_ARE_*`` variable a command reads
fails as its flag does."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import SCENARIOS, invoke

from sotopia_are.llm import LLMConfig, PermanentLLMError

GARBAGE_URLS = ["garbage", "http://localhost:6379", "redis://127.0.0.1:notaport"]


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``sotopia-are ARGS`` in a fresh process (redis-om reads REDIS_OM_URL at import)."""
    return subprocess.run(
        [sys.executable, "-m", "sotopia_are", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("url", GARBAGE_URLS)
def test_a_malformed_redis_om_url_is_the_error_the_flag_gives(url: str, tmp_path: Path) -> None:
    base = {"SOTOPIA_ARE_DATA_DIR": str(tmp_path)}
    by_env = cli("list", env={**base, "REDIS_OM_URL": url})
    by_flag = cli("list", "--redis-url", url, env=base)
    assert by_env.returncode == by_flag.returncode == 1
    assert "Traceback" not in by_env.stderr
    assert by_env.stderr.startswith(f"error: cannot use Redis at {url} (REDIS_OM_URL): ")
    reason = by_flag.stderr.split(": ", 2)[2].split(". Fix:")[0]
    assert reason in by_env.stderr


def test_a_malformed_redis_om_url_is_a_storage_error_in_the_library() -> None:
    script = (
        "import sotopia_are as sa\n"
        "try:\n"
        "    sa.connect()\n"
        "except sa.StorageError as error:\n"
        "    print('refused:', error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "REDIS_OM_URL": "garbage"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: cannot use Redis at garbage (REDIS_OM_URL)")


@pytest.mark.parametrize(
    ("variable", "flag", "value", "said"),
    [
        ("SOTOPIA_ARE_TIMEOUT", "--timeout", "soon", "valid number"),
        ("SOTOPIA_ARE_TIMEOUT", "--timeout", "-1", "greater than or equal to 0.1"),
        ("SOTOPIA_ARE_REQUEST_ATTEMPTS", "--request-attempts", "x", "valid integer"),
        ("SOTOPIA_ARE_TRANSPORT", "--transport", "carrier-pigeon", "is not one of"),
        ("SOTOPIA_ARE_JUDGE_SAMPLING", "--judge-sampling", "hot", "is not key=value"),
        ("SOTOPIA_ARE_SAMPLING", "--sampling", "temperature=9", "less than or equal to 2"),
    ],
)
def test_a_bad_variable_fails_as_its_flag_does(
    variable: str, flag: str, value: str, said: str, redis_url: str
) -> None:
    spec = SCENARIOS / "bakery_negotiation.json"
    common = ("run", spec, "--model", "openai/m", "--api-base", "http://127.0.0.1:9/v1")
    by_env = invoke(*common, env={variable: value})
    by_flag = invoke(*common, flag, value)
    assert by_env.exit_code == by_flag.exit_code != 0
    assert said in by_env.stderr and said in by_flag.stderr
    assert "Traceback" not in by_env.output


def test_a_data_dir_that_is_a_file_fails_as_the_flag_does(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    env = {"REDIS_OM_URL": ""}
    by_env = invoke("list", env={**env, "SOTOPIA_ARE_DATA_DIR": str(not_a_dir)})
    by_flag = invoke("list", "--data-dir", not_a_dir, env=env)
    assert by_env.exit_code == by_flag.exit_code == 1
    assert by_env.stderr == by_flag.stderr
    assert by_env.stderr.startswith(f"error: cannot start the embedded Redis in {not_a_dir}")


@pytest.mark.parametrize("source", ["variable", "config"])
def test_an_api_key_with_a_newline_is_named(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if source == "variable":
        monkeypatch.setenv("SOTOPIA_ARE_API_KEY", "sk-abc\n")
        config = LLMConfig(api_base="http://127.0.0.1:9/v1")
    else:
        config = LLMConfig(api_base="http://127.0.0.1:9/v1", api_key="sk-abc\n")
    with pytest.raises(PermanentLLMError, match="control character") as e:
        config.endpoint("openai/m")
    named = "SOTOPIA_ARE_API_KEY" if source == "variable" else "the key given"
    assert named in str(e.value) and "sk-abc" not in str(e.value)


def test_each_option_reads_the_variable_the_study_names() -> None:
    """The command line and ``StudyConfig.resolve`` read one variable per setting: every
    option of a study's flag in the commands that run a study declares the variable
    ``STUDY_FLAGS`` gives it (``list --model`` and the like are filters, not settings)."""
    import typer.core
    import typer.main

    from sotopia_are.cli import app
    from sotopia_are.studies import STUDY_FLAGS

    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    by_flag = {flag: variable for flag, variable in STUDY_FLAGS.values()}
    seen: dict[str, set[str | None]] = {}
    for name in ["demo", "run", "batch", "benchmark", "evaluate"]:
        for param in group.commands[name].params:
            flags = set(param.opts) & set(by_flag)
            # benchmark's --model names the models under test, not the agents' model.
            if flags and not (name == "benchmark" and "--model" in flags):
                [flag] = flags
                envvar = param.envvar if isinstance(param.envvar, str) else None
                seen.setdefault(flag, set()).add(envvar)
    assert all(seen[flag] == {by_flag[flag]} for flag in seen), seen
    with_variable = {flag for flag, variable in by_flag.items() if variable}
    assert with_variable <= set(seen)
