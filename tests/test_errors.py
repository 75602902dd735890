"""One error root: every exception class of sotopia_are derives from sa.SotopiaAreError,
keeps the built-in base it is known by, and is in the documented tree."""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import sotopia_are as sa
from sotopia_are.social.spec import check_safe_id
from sotopia_are.studies import errors

EXAMPLES = Path(__file__).parents[1] / "examples"


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a module of sotopia_are (private ones too)."""
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(sa.__path__, "sotopia_are."):
        if info.name.endswith("__main__"):  # running it would start the CLI
            continue
        module = importlib.import_module(info.name)
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
        ]
    return found


CLASSES = _exception_classes()


def test_the_walk_finds_the_errors_of_every_layer() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"ScriptParseError", "ScenarioFormatError", "LLMError", "StorageError"} <= names
    assert {"BatchError", "ClusterError", "_Failure"} <= names and len(CLASSES) >= 55


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_every_exception_class_derives_from_the_root(cls: type[BaseException]) -> None:
    assert issubclass(cls, sa.SotopiaAreError)


def test_every_public_error_is_in_the_documented_tree() -> None:
    public = {cls for cls in CLASSES if not cls.__name__.startswith("_")}
    exported = {getattr(errors, name) for name in errors.__all__}
    # The front ends' errors are above studies: named in the tree, not imported.
    assert {cls.__name__ for cls in public - exported} == {
        "ClusterError",
        "TrainingDataError",
        "SubmissionError",
        "StudyMismatchError",
        "ResumeError",
        "ExposedHostWarning",
        "IllegalMoveError",
    }
    assert sa.SotopiaAreError in exported
    tree = errors.__doc__ or ""
    assert "\nSotopiaAreError " in tree
    for cls in public - {sa.SotopiaAreError}:
        assert re.search(rf"── {cls.__name__}\b", tree), cls.__name__  # a branch of the tree


def test_the_documented_tree_is_the_class_tree() -> None:
    by_name = {cls.__name__: cls for cls in CLASSES} | {"SotopiaAreError": sa.SotopiaAreError}
    parents: list[str] = []  # the path from the root to the entry above
    drawn = 0
    for line in (errors.__doc__ or "").splitlines():
        branch = line.find("── ")
        if line.startswith("SotopiaAreError "):
            parents = ["SotopiaAreError"]
        elif branch > 0 and parents:
            depth = (branch - 1) // 4 + 1  # "├── " is depth 1, each level 4 more
            name = line[branch + 3 :].split()[0]
            parents = [*parents[:depth], name]
            cls = by_name[name]
            # Its parent in the drawing is the one of its bases that is a library error.
            assert [b for b in cls.__bases__ if issubclass(b, sa.SotopiaAreError)] == [
                by_name[parents[-2]]
            ], name
            drawn += 1
    assert drawn == len([cls for cls in CLASSES if not cls.__name__.startswith("_")])


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.ScriptParseError, ValueError),
        (errors.RubricError, ValueError),
        (errors.RecordVersionError, ValueError),
        (errors.JsonlFormatError, ValueError),
        (errors.EmptySelectionError, ValueError),
        (errors.ScenarioFormatError, ValueError),
        (errors.StudyInputError, ValueError),
        (errors.VerdictExistsError, ValueError),
        (errors.UnsafeIdError, ValueError),
        (errors.RecordNotFoundError, KeyError),
        (errors.UnknownAppClassError, LookupError),
        (errors.BatchError, RuntimeError),
        (errors.HumanInputError, RuntimeError),
        (errors.ScriptExhaustedError, RuntimeError),
    ],
)
def test_each_error_keeps_the_builtin_base_users_catch(
    cls: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(cls, builtin) and issubclass(cls, sa.SotopiaAreError)


def test_user_mistakes_are_typed_errors(tmp_path: Path) -> None:
    from sotopia_are.record import load_record
    from sotopia_are.studies import plan_batch, read_specs

    with pytest.raises(errors.RecordFormatError, match="no 'version'"):
        load_record({"episode_id": "x"})
    bad = tmp_path / "specs.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(sa.StudyInputError, match="not JSON"):
        read_specs(bad)
    specs = read_specs(EXAMPLES / "scenarios" / "garden_committee.json")
    with pytest.raises(sa.StudyInputError, match="no model for"):
        plan_batch(specs, {"Ines Okafor": "m"}, tag="t")
    with pytest.raises(errors.UnsafeIdError, match="not allowed"):
        check_safe_id("../x", "tag")
