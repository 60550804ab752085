"""Where a GRPO update's CPU seconds go: ``es-lightning fit`` on a GRPO recipe, in this process,
with every phase of the update timed in CPU seconds of the process (``time.process_time``).

    OMP_NUM_THREADS=1 python -m benchmarks.measures.grpo_profile --batch 16 --steps 4 --out grpo_profile.json

The run is the recipe with the transformers rollout, no evaluation and no callbacks but the
clock (the settings of :mod:`benchmarks.measures.trl_grpo`'s side of ours). Timers wrap the
package's own functions and the models' ``forward`` (hooks), and count *exclusive* time: a phase
nested in another (the model's forward inside generation) is taken out of the outer one, so the
phases of an update add up to its CPU seconds; what no timer covers is ``other``. Phases:

- ``tokenise``: prompts to token ids (``ReasoningModule.encode``);
- ``generate/forward``: the rollout model's forwards; ``generate/loop``: the rest of transformers
  ``generate`` (logits processors, sampling, seeding, bookkeeping); ``generate/decode``: ids back
  to text;
- ``score``: the verifier; ``pack``: the trainer's padded batch;
- ``train/forward``: the trainer model's forwards; ``train/logprobs``: log-probabilities of the
  sampled tokens from the logits; ``train/entropy``: their predictive entropy; ``train/loss``:
  the clipped surrogate; ``train/backward``; ``train/optimizer``: clipping, AdamW, zeroing;
- ``sync``: weights into the rollout; ``metrics``: the update's scalars and samples;
- ``other``: everything else in the update (the trainer's logging among it).

The first update warms up and is left out of the medians. Wall seconds are written too, but on
shared cores the CPU seconds are the measure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.measures.common import REPO, summary, write_json
from benchmarks.measures.trl_settings import our_overrides, recipe_settings

RECIPE = REPO / "recipes" / "demo_cpu_grpo.yaml"


class PhaseTimer:
    """Exclusive CPU seconds per phase: a phase entered inside another is not counted twice."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self._stack: list[list[Any]] = []  # [phase, start, seconds of nested phases]

    def enter(self, phase: str) -> None:
        self._stack.append([phase, time.process_time(), 0.0])

    def leave(self) -> None:
        phase, start, nested = self._stack.pop()
        spent = time.process_time() - start
        self.totals[phase] += spent - nested
        if self._stack:
            self._stack[-1][2] += spent

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        """Time every call of ``owner.name`` (a function of a module or class) as ``phase``."""
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(phase)
            try:
                return original(*args, **kwargs)
            finally:
                self.leave()

        setattr(owner, name, timed)

    def hook(self, model: Any, phase: str) -> None:
        """Time every forward of ``model`` (a torch module) as ``phase``."""
        model.register_forward_pre_hook(lambda *_: self.enter(phase))
        model.register_forward_hook(lambda *_: self.leave(), always_call=True)


TIMER = PhaseTimer()


class PhaseClock:
    """A callback: each update's CPU and wall seconds and its phases, kept in ``UPDATES``."""

    def __init__(self) -> None:
        self._last = (time.process_time(), time.perf_counter(), dict(TIMER.totals))

    def on_fit_start(self, trainer: Any) -> None:
        self._last = (time.process_time(), time.perf_counter(), dict(TIMER.totals))
        strategy = trainer.strategy
        TIMER.hook(strategy._unwrapped(), "train/forward")
        TIMER.hook(trainer.rollout.served_model, "generate/forward")

    def on_train_batch_end(self, trainer: Any, step: int, metrics: dict[str, float]) -> None:
        cpu, wall, totals = time.process_time(), time.perf_counter(), dict(TIMER.totals)
        phases = {k: v - self._last[2].get(k, 0.0) for k, v in totals.items()}
        phases["other"] = (cpu - self._last[0]) - sum(phases.values())
        UPDATES.append({"cpu_s": cpu - self._last[0], "wall_s": wall - self._last[1], "phases": phases})
        self._last = (cpu, wall, totals)


UPDATES: list[dict[str, Any]] = []


def install_timers() -> None:
    """Wrap the functions of one GRPO update (see the module docstring for the phases)."""
    import es_lightning.grpo.logprobs as logprobs
    import es_lightning.grpo.optimize as optimize
    import es_lightning.strategies.grpo as grpo
    import es_lightning.strategies.grpo_rollouts as rollouts
    from es_lightning.grpo.loss import GRPOLoss
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.hf import HFRollout

    TIMER.wrap(ReasoningModule, "encode", "tokenise")
    TIMER.wrap(HFRollout, "_generate_call", "generate/loop")
    TIMER.wrap(HFRollout, "_completion", "generate/decode")
    TIMER.wrap(ReasoningModule, "score", "score")
    TIMER.wrap(rollouts, "policy_batch", "pack")
    for name, phase in (("token_logprobs", "train/logprobs"), ("token_entropy", "train/entropy")):
        if hasattr(logprobs, name):  # split functions; otherwise both in one
            TIMER.wrap(logprobs, name, phase)
    TIMER.wrap(optimize, "token_logprobs_and_entropy", "train/logprobs")
    TIMER.wrap(GRPOLoss, "__call__", "train/loss")
    TIMER.wrap(optimize, "_step", "train/optimizer")
    TIMER.wrap(grpo._GRPO, "sync_weights", "sync")
    TIMER.wrap(grpo._GRPO, "_metrics", "metrics")
    TIMER.wrap(grpo, "text_samples", "metrics")
    from lightning.fabric import Fabric

    TIMER.wrap(Fabric, "backward", "train/backward")


def profile(args: argparse.Namespace) -> dict[str, Any]:
    """One in-process run of ``args.steps`` updates; per-update phases and their medians."""
    from es_lightning.cli import main as cli_main

    install_timers()
    settings = recipe_settings(args.recipe, args.batch)
    callbacks = "[{class_path: benchmarks.measures.grpo_profile.PhaseClock}]"
    out = Path(args.out).resolve().parent / "grpo_profile_run"
    argv = ["fit", "--config", str(args.recipe)]
    argv += our_overrides(settings, args.steps, args.seed, str(out), callbacks, args.rollout_batch)
    cpu0, load = time.process_time(), os.getloadavg()
    status = cli_main(argv)
    if status:
        raise SystemExit(f"es-lightning fit exited {status}")
    steady = UPDATES[1:] or UPDATES
    names = sorted({k for u in steady for k in u["phases"]}, key=lambda k: -steady[0]["phases"].get(k, 0))
    medians = {k: summary([u["phases"].get(k, 0.0) for u in steady])["median"] for k in names}
    return {
        "recipe": str(args.recipe), "batch": settings.batch_size, "group_size": settings.group_size,
        "steps": args.steps, "seed": args.seed, "rollout_batch": args.rollout_batch,
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "loadavg_before": load, "loadavg_after": os.getloadavg(), "run_cpu_s": time.process_time() - cpu0,
        "update_cpu_s": summary([u["cpu_s"] for u in steady]),
        "update_wall_s": summary([u["wall_s"] for u in steady]),
        "phase_cpu_s_median": medians, "updates": UPDATES,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, help="B prompts per update (default: the recipe's)")
    parser.add_argument("--steps", type=int, default=4, help="updates (the first warms up)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rollout-batch", type=int, help="sequences per generate call (default: HFRollout's)"
    )
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    result = profile(args)
    total = result["update_cpu_s"]["median"]
    print(f"CPU s per update: median {total:.2f} (wall {result['update_wall_s']['median']:.2f})")
    for phase, seconds in result["phase_cpu_s_median"].items():
        print(f"  {phase:18s} {seconds:7.3f}  {100 * seconds / total:5.1f}%")
    write_json(args.out, result)


if __name__ == "__main__":  # the callback imports this module by name: run its copy, not __main__'s
    from benchmarks.measures.grpo_profile import main as module_main

    sys.exit(module_main())
