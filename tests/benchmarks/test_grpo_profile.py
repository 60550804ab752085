"""The profiler's phase timer: nested phases are counted once, and the phases add up."""

from __future__ import annotations

import time
import types

from benchmarks.measures.grpo_profile import PhaseTimer


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_nested_phase_is_taken_out_of_the_outer_one() -> None:
    timer = PhaseTimer()
    owner = types.SimpleNamespace(inner=lambda: _burn(0.05))

    def outer() -> None:
        _burn(0.03)
        owner.inner()

    owner.outer = outer
    timer.wrap(owner, "inner", "inner")
    timer.wrap(owner, "outer", "outer")
    start = time.process_time()
    owner.outer()
    spent = time.process_time() - start
    assert timer.totals["inner"] >= 0.05
    assert 0.03 <= timer.totals["outer"] < 0.05  # its own 0.03 s, not the inner 0.05 s
    assert abs(timer.totals["inner"] + timer.totals["outer"] - spent) < 0.01


def test_forward_hook_times_the_module() -> None:
    import torch

    timer = PhaseTimer()
    model = torch.nn.Linear(4, 4)
    timer.hook(model, "forward")
    model(torch.ones(2, 4))
    assert timer.totals["forward"] > 0 and not timer._stack
