"""The user-error types, how the CLI finds them inside jsonargparse's errors, and ``--debug``."""

from __future__ import annotations

import pytest

from es_lightning.cli import build_parser, debug_requested, main
from es_lightning.errors import ConfigError, MissingPathError, UnknownNameError, find_config_error
from tests.helpers import REPO


def test_the_error_types_keep_the_builtin_ones():
    assert issubclass(ConfigError, ValueError)
    missing = MissingPathError("data.jsonl does not exist")
    assert isinstance(missing, FileNotFoundError) and isinstance(missing, ConfigError)
    assert str(missing) == "data.jsonl does not exist"
    unknown = UnknownNameError("unknown task 'x'; known tasks: a, b")
    assert isinstance(unknown, KeyError) and isinstance(unknown, ValueError)
    assert str(unknown) == "unknown task 'x'; known tasks: a, b"  # not KeyError's quoted repr


def test_find_config_error_follows_causes_and_contexts():
    inner = ConfigError("sigma must be > 0")
    try:
        try:
            raise inner
        except ConfigError as err:
            raise ValueError("Does not validate against any of the Union subtypes") from err
    except ValueError as wrapped:
        assert find_config_error(wrapped) is inner
    try:
        try:
            raise inner
        except ConfigError:
            raise RuntimeError("while handling") from None
    except RuntimeError as unrelated:
        assert find_config_error(unrelated) is None  # `from None` cuts the chain
    assert find_config_error(ValueError("a bug")) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy.init_args.sigma", "-1"], "ESStrategy: invalid sigma=-1.0 (must be > 0)"),
        (["--evaluation.ks", "[1, 8]"], "evaluation.ks [8] out of range 1..num_samples=4"),
        (["--trainer.epochs", "0"], "trainer.epochs must be > 0, got 0.0"),
    ],
)
def test_errors_of_instantiation_are_found_inside_jsonargparse_wrappers(args, message):
    parser = build_parser()
    cfg = parser.parse_args(["fit", "--config", str(REPO / "recipes/smoke_cpu.yaml"), *args])
    with pytest.raises(Exception) as err:
        parser.instantiate(cfg)
    found = find_config_error(err.value)
    assert found is not None and message in str(found)


def test_main_prints_one_line_and_returns_2(capsys, monkeypatch):
    monkeypatch.delenv("ES_LIGHTNING_DEBUG", raising=False)
    argv = ["fit", "--config", str(REPO / "recipes/smoke_cpu.yaml"), "--strategy.init_args.sigma", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err  # (building the built-in model may print its progress first)
    assert err.endswith("\n") and err.splitlines()[-1] == (
        "es-lightning: error: ESStrategy: invalid sigma=0.0 (must be > 0)"
    )
    monkeypatch.setenv("ES_LIGHTNING_DEBUG", "1")
    with pytest.raises(ValueError) as err:  # --debug: the error as raised, its whole chain shown
        main(argv)
    assert "sigma=0.0 (must be > 0)" in str(find_config_error(err.value))


def test_debug_is_asked_before_the_subcommand_or_by_the_environment(monkeypatch):
    monkeypatch.delenv("ES_LIGHTNING_DEBUG", raising=False)
    assert debug_requested(["--debug", "fit", "--config", "x.yaml"])
    assert not debug_requested(["fit", "--config", "x.yaml"])
    assert not debug_requested(["fit", "--module.plain_template", "--debug"])  # a value, not the flag
    monkeypatch.setenv("ES_LIGHTNING_DEBUG", "1")
    assert debug_requested(["fit"])
    monkeypatch.setenv("ES_LIGHTNING_DEBUG", "0")
    assert not debug_requested(["fit"])
