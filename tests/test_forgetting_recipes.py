"""The forgetting recipes: the coverage recipes' strategies on the two-task model, both tasks evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest

from es_lightning.cli import build_parser
from es_lightning.models.registry import resolve_model

REPO = Path(__file__).resolve().parents[1]


def _fit(recipe: str):
    """The recipe's ``fit`` settings as parsed and as built."""
    parser = build_parser()
    cfg = parser.parse_args(["fit", "--config", str(REPO / "recipes" / recipe)])
    return cfg.fit, parser.instantiate(cfg).fit


@pytest.mark.parametrize("method", ["es", "grpo"])
def test_forgetting_recipe_is_the_coverage_recipe_on_the_two_task_model(method):
    from es_lightning.tasks import Arithmetic, CountdownTiny

    (parsed, fit), (coverage_parsed, coverage) = (
        _fit(f"forgetting_cpu_{method}.yaml"),
        _fit(f"coverage_cpu_{method}.yaml"),
    )
    assert fit.module.model == resolve_model("es-lightning/tiny-countdown-arithmetic")
    assert parsed.strategy == coverage_parsed.strategy  # the same optimizer and settings
    assert fit.module.train_sampling == coverage.module.train_sampling
    assert vars(fit.module.task) == vars(coverage.module.task)  # trained on countdown_tiny only
    assert (fit.trainer.max_steps, fit.trainer.batch_size) == (
        coverage.trainer.max_steps,
        coverage.trainer.batch_size,
    )
    assert fit.evaluation == coverage.evaluation  # M=32 at T=0.6, every K (Pass@K and Maj@K), greedy
    assert list(fit.eval_tasks) == ["countdown_tiny", "arithmetic"]  # in domain, out of domain
    in_domain, out_of_domain = fit.eval_tasks["countdown_tiny"], fit.eval_tasks["arithmetic"]
    assert isinstance(in_domain, CountdownTiny) and isinstance(out_of_domain, Arithmetic)
    assert in_domain.load("test") == fit.module.task.load("test")  # the training task's test split
    assert (out_of_domain.n_test, out_of_domain.seed, out_of_domain.max_number) == (200, 0, 30)
    heldout = next(cb for cb in fit.callbacks if type(cb).__name__ == "HeldOutPassAtK")
    assert list(heldout.tasks) == ["countdown_tiny", "arithmetic"]
