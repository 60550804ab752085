"""GRPO's learning-rate schedules against transformers' own schedulers, step by step."""

import pytest
import torch
from transformers import get_scheduler

from es_lightning.grpo.schedule import lr_multiplier, resolve_warmup


@pytest.mark.parametrize(
    ("ours", "theirs"), [("constant", "constant_with_warmup"), ("linear", "linear"), ("cosine", "cosine")]
)
@pytest.mark.parametrize(("total", "warmup"), [(10, 0), (10, 3), (7, 1), (1, 0)])
def test_multipliers_equal_transformers_schedulers(ours, theirs, total, warmup):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = get_scheduler(theirs, optimizer, num_warmup_steps=warmup, num_training_steps=total)
    for step in range(total):
        assert lr_multiplier(step, total, warmup, ours) == pytest.approx(
            optimizer.param_groups[0]["lr"], abs=1e-12
        )
        optimizer.step()
        scheduler.step()


def test_hand_worked_values_and_warmup_ratio():
    assert [lr_multiplier(s, 4, 1, "linear") for s in range(4)] == [
        0.0,
        1.0,
        pytest.approx(2 / 3),
        pytest.approx(1 / 3),
    ]
    assert lr_multiplier(2, 4, 0, "cosine") == pytest.approx(0.5)
    assert resolve_warmup(100, warmup=0, warmup_ratio=0.1) == 10
    assert resolve_warmup(100, warmup=5, warmup_ratio=0.1) == 5  # steps win over the ratio
    assert resolve_warmup(7, warmup=0, warmup_ratio=0.1) == 1  # rounded up, as transformers does
