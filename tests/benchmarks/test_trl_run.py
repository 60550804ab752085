"""``run.py``'s ``trl_over_ours_grpo_update``: TRL's CPU seconds over ours at one generate call per
update, and the profile of our update from the same invocation at the same B (the measure scripts
are replaced by their recorded shapes: TRL is not run)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from benchmarks import run
from benchmarks.measures.common import summary
from benchmarks.measures.report import _rows, bound_sentence

PHASES = {"train/backward": 1.3, "generate/forward": 0.84, "train/forward": 0.67, "train/loss": 0.001}
PROFILE = {
    "batch": 64, "rollout_batch": 512, "steps": 5, "threads": {"OMP_NUM_THREADS": "1"},
    "update_cpu_s": summary([3.04, 3.05]), "update_wall_s": summary([3.1, 3.2]),
    "phase_cpu_s_median": PHASES, "updates": [], "loadavg_before": [0.2, 0.2, 0.2],
}  # fmt: skip
PEER = {
    "steps": 5, "versions": {"trl": "1.16.0"}, "our_rollout_batch": 512,
    "settings": {"batch_size": 64, "group_size": 8, "learning_rate": 2e-5, "max_tokens": 32},
    "rounds": [
        {"order": ["trl", "ours"], "trl": {"reward_mean": [0.4], "loadavg_before": 0.5},
         "ours": {"reward_mean": [0.41], "loadavg_before": 0.6}},
    ],
    "ratio": summary([1.04, 0.99]), "cpu_ratio": summary([0.947, 1.019]),
    "pooled_update_s": {"trl": summary([3.0]), "ours": summary([3.1])},
    "pooled_update_cpu_s": {"trl": summary([2.93]), "ours": summary([2.93])},
}  # fmt: skip


class Scripts:
    """The bench's ``script``: records each call and answers with a recorded result's shape."""

    def __init__(self, settings: dict[str, int]) -> None:
        self.s, self.calls = settings, []

    def script(self, name: str, module: str, args: list[str], timeout_s: float = 900) -> dict[str, Any]:
        self.calls.append((name, module, args))
        return {"trl_grpo": PEER, "grpo_profile": PROFILE}[module]


@pytest.fixture()
def trl_found(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name == "trl" else find_spec(name, *a)
    )


def _options(args: list[str]) -> dict[str, str]:
    return dict(zip(args[::2], args[1::2], strict=True))


@pytest.mark.parametrize(
    ("settings", "batch", "per_call"), [(run.FULL, "64", "512"), (run.QUICK, "16", "128")]
)
def test_ratio_and_profile_come_from_one_invocation_at_one_call_per_update(
    trl_found, settings, batch, per_call
):
    bench = Scripts({**settings, "trl_steps": 5, "trl_rounds": 2})
    value, ctx = run.trl_over_ours_grpo_update(bench)
    (_, peer_module, peer_args), (_, profile_module, profile_args) = bench.calls
    assert (peer_module, profile_module) == ("trl_grpo", "grpo_profile")
    peer, profile = _options(peer_args), _options(profile_args)
    assert peer == {"--steps": "5", "--batch": batch, "--rollout-batch": per_call, "--rounds": "2"}
    assert profile == {"--steps": "5", "--batch": batch, "--rollout-batch": per_call}  # the same B and calls
    assert value == PEER["cpu_ratio"]  # TRL CPU s / our CPU s per update, not the wall ratio
    assert ctx["wall_ratio"] == PEER["ratio"]
    assert ctx["profile"]["phase_cpu_s_median"] == PHASES and ctx["profile"]["rollout_batch"] == 512


def test_the_table_and_the_bounds_show_the_cpu_ratio_and_the_profile(trl_found):
    value, ctx = run.trl_over_ours_grpo_update(Scripts(dict(run.FULL)))
    result = {"value": value["median"], "spread": [value["min"], value["max"]], "context": ctx, "met": False}
    ((key, shown, _, _, context),) = _rows({"trl_over_ours_grpo_update": result})
    assert shown == "0.983 [0.947-1.019]"
    assert context.startswith("CPU seconds, B=64 x G=8, ours 512 per generate call, 5 updates per run")
    assert "TRL 2.93 vs ours 2.93 s per update" in context and "ratio 1.015" in context  # the wall ratio
    assert "ours profiled in the same run (B=64, 512 per call, 5 updates): 3.045 CPU s per update" in context
    assert "train/backward 1.300, generate/forward 0.840, train/forward 0.670, rest 0.001" in context
    assert bound_sentence(key, result, {}) == context + "."


def test_without_trl_the_key_says_why(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    bench = Scripts(dict(run.FULL))
    with pytest.raises(RuntimeError, match="trl is not installed"):
        run.trl_over_ours_grpo_update(bench)
    assert bench.calls == []
