"""The callback contract (es_lightning.training.callbacks): its hooks, and what it accepts as a callback."""

from __future__ import annotations

import pytest

from es_lightning.training.callbacks import HOOKS, Callback, check_callbacks
from tests.helpers import REPO


class _DuckTyped:
    def on_train_batch_end(self, trainer, step, metrics): ...


def test_callback_base_has_every_hook_as_a_no_op():
    cb = Callback()
    assert all(callable(getattr(cb, hook)) for hook in HOOKS)
    assert cb.state_dict() == {} and cb.load_state_dict({}) is None


def test_callbacks_and_duck_typed_objects_are_accepted():
    cbs = [Callback(), _DuckTyped()]
    assert check_callbacks(cbs) == cbs and check_callbacks(None) == []


@pytest.mark.parametrize(
    "bad", ["es_lightning.callbacks.ParameterDrift", Callback, {"class_path": "x"}, object()]
)
def test_non_callbacks_are_refused_with_their_index(bad):
    with pytest.raises(TypeError, match=r"callbacks\[1\].*is not a callback"):
        check_callbacks([Callback(), bad])


def test_a_string_in_a_recipe_fails_before_training(tmp_path):
    """`--callbacks+=Name` that names nothing callable used to be accepted and never called."""
    from es_lightning.cli import main

    with pytest.raises((TypeError, SystemExit)):
        main(
            [
                "fit",
                "--config",
                str(REPO / "recipes" / "smoke_cpu.yaml"),
                "--trainer.output_dir",
                str(tmp_path / "run"),
                "--callbacks",
                '["not-a-callback"]',
            ]
        )
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
