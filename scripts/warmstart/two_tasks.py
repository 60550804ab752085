"""Supervised warm start of ``es-lightning/tiny-countdown-arithmetic``: one tiny model, two tasks.

The setting where forgetting can be measured: post-train on ``countdown_tiny`` only, then evaluate
on its test problems (in domain) and on ``arithmetic``'s (out of domain), before and after
(``recipes/forgetting_cpu_{es,grpo}.yaml``). Run it from the repository's root (``--help`` lists
every option)::

    python -m scripts.warmstart two_tasks --output runs/tiny-countdown-arithmetic --evaluate

(the defaults are the packaged model's settings) or call :func:`train_two_task_model`. What it
does, top to bottom:

1. starts from the shipped ``es-lightning/tiny-countdown`` (``init``; ``None``: random weights of
   :func:`two_task_config`): its character tokenizer, printable ASCII one token per character,
   covers both tasks' prompts and solutions (``Q: 4 8 2 -> 10`` and ``Q: 12+7-5=?``);
2. takes the two training sets of the single-task warm starts, with their held-out discipline:
   ``countdown_tiny``: the ``n_problems`` problems after the first ``held_out`` of the
   ``CountdownTiny(seed=0)`` stream (:func:`scripts.warmstart.countdown.training_task`, the
   problems ``tiny-countdown`` was trained on); ``arithmetic``: every ``a+b-c`` problem except
   the first ``held_out`` of the ``Arithmetic(seed=0)`` test stream
   (:func:`scripts.warmstart.arithmetic.training_task`); so both tasks' test and validation splits
   (problems 1-200 and 201-400 of those streams) are never trained on;
3. fills every batch with ``batch_size - arithmetic_per_batch`` countdown problems and
   ``arithmetic_per_batch`` arithmetic problems (:class:`MixedStream`), each task in epochs of
   its own seeded order; a countdown problem's worked solution is drawn afresh, uniformly among
   its step sequences, each time it comes round (as for ``tiny-countdown``); an arithmetic
   solution always ends ``A: r`` (no second answer style: a format the verifier ignores would
   turn "forgetting" into a formatting effect);
4. trains with the loop every warm start shares
   (:func:`~scripts.warmstart.common.fit_completions`: completion-only cross-entropy, AdamW,
   warmup then cosine, clipping at 1) and saves an HF folder plus ``training_config.json``
   (which records the starting model and its sha256).

Starting from ``tiny-countdown`` rather than from random weights is what keeps the run short
(150 steps against the 2,000 ``tiny-countdown`` took from scratch; the model card has the times).
Countdown is rehearsed in every batch, so arithmetic is learned beside it, not instead of it.

Deterministic: the same arguments on the same machine and software give bit-identical weights.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from es_lightning.errors import ConfigError
from es_lightning.models.tiny import TinyConfig, build_tiny_model
from es_lightning.tasks.countdown_tiny import Step
from scripts.warmstart import arithmetic as arithmetic_warmstart
from scripts.warmstart import countdown as countdown_warmstart
from scripts.warmstart.common import Example, WarmStart, default_warmup, epoch_queue, fit_completions

COUNTDOWN, ARITHMETIC = "countdown_tiny", "arithmetic"


@dataclass(frozen=True)
class Problem:
    """One training problem of a mixed batch."""

    task: str
    """``countdown_tiny`` or ``arithmetic``."""
    row: dict[str, Any]
    """The task's row."""
    steps: tuple[Step, ...] | None = None
    """The worked solution drawn for a countdown problem (``None`` for arithmetic)."""


class MixedStream:
    """The problems of every step: ``batch_size - arithmetic_per_batch`` countdown problems, then
    ``arithmetic_per_batch`` arithmetic ones, each task in epochs of its own ``randperm`` order.

    Seeded generators: ``seed`` orders countdown problems, ``seed + 1`` draws their solutions
    (as in :mod:`~scripts.warmstart.countdown`), ``seed + 2`` orders arithmetic problems.
    """

    def __init__(
        self,
        countdown_rows: list[dict[str, Any]],
        countdown_paths: list[tuple[tuple[Step, ...], ...]],
        arithmetic_rows: list[dict[str, Any]],
        batch_size: int,
        arithmetic_per_batch: int,
        seed: int,
    ) -> None:
        if len(countdown_paths) != len(countdown_rows):
            raise ValueError(f"MixedStream: {len(countdown_paths)} path lists for {len(countdown_rows)} rows")
        if not 0 <= arithmetic_per_batch <= batch_size:
            raise ConfigError(
                f"MixedStream: arithmetic_per_batch must be in [0, batch_size={batch_size}], got {arithmetic_per_batch}"
            )
        self.countdown_rows, self.countdown_paths = countdown_rows, countdown_paths
        self.arithmetic_rows = arithmetic_rows
        self.n_countdown, self.n_arithmetic = batch_size - arithmetic_per_batch, arithmetic_per_batch
        self._take_countdown = epoch_queue(len(countdown_rows), torch.Generator().manual_seed(seed))
        self._pick = torch.Generator().manual_seed(seed + 1)
        self._take_arithmetic = epoch_queue(len(arithmetic_rows), torch.Generator().manual_seed(seed + 2))

    def next_problems(self) -> list[Problem]:
        """The next step's problems, countdown first."""
        batch = []
        for i in self._take_countdown(self.n_countdown):
            paths = self.countdown_paths[i]
            draw = int(torch.randint(len(paths), (1,), generator=self._pick))
            batch.append(Problem(COUNTDOWN, self.countdown_rows[i], paths[draw]))
        batch += [
            Problem(ARITHMETIC, self.arithmetic_rows[i]) for i in self._take_arithmetic(self.n_arithmetic)
        ]
        return batch


def encode_problems(problems: list[Problem], countdown_module: Any, arithmetic_module: Any) -> list[Example]:
    """``(input_ids, labels)`` per problem, in order, each built by its task's warm-start script
    (the prompt from that task's module's ``encode``, so training prompts equal rollout prompts;
    labels on the completion and ``</s>`` only)."""
    unknown = {p.task for p in problems} - {COUNTDOWN, ARITHMETIC}
    if unknown:
        raise ValueError(f"encode_problems: unknown task(s) {sorted(unknown)}")
    at = {task: [i for i, p in enumerate(problems) if p.task == task] for task in (COUNTDOWN, ARITHMETIC)}
    countdown = [problems[i] for i in at[COUNTDOWN]]
    arithmetic = [problems[i].row for i in at[ARITHMETIC]]
    examples: dict[int, Example] = {}
    if countdown:
        built = countdown_warmstart.build_examples(
            countdown_module, [p.row for p in countdown], [p.steps for p in countdown]
        )
        examples.update(zip(at[COUNTDOWN], built, strict=True))
    if arithmetic:
        examples.update(
            zip(
                at[ARITHMETIC],
                arithmetic_warmstart.build_examples(arithmetic_module, arithmetic),
                strict=True,
            )
        )
    return [examples[i] for i in range(len(problems))]


def training_sets(
    n_problems: int = 30000, held_out: int = 1000, max_number: int = 30
) -> tuple[Any, Any, list[dict[str, Any]], list[tuple[tuple[Step, ...], ...]], list[dict[str, Any]]]:
    """``(countdown task, arithmetic task, countdown rows, their step sequences, arithmetic rows)``:
    the train splits of the two single-task warm starts (module docstring, point 2)."""
    countdown = countdown_warmstart.training_task(n_problems, held_out)
    arithmetic = arithmetic_warmstart.training_task(max_number, held_out)
    countdown_rows = countdown.load("train")
    paths = [countdown_warmstart.step_sequences(countdown, row) for row in countdown_rows]
    return countdown, arithmetic, countdown_rows, paths, arithmetic.load("train")


def two_task_config(seed: int = 0) -> TinyConfig:
    """The size of ``es-lightning/tiny-countdown-arithmetic``, that of ``tiny-countdown``: hidden
    128, 4 layers, 2 heads of 64, 1 KV head, MLP 384 (about 0.8M parameters)."""
    return countdown_warmstart.countdown_config(seed)


HF_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)
"""The files of a model folder that a warm start starts from."""


def start_model(output: Path, init: str | None, config: TinyConfig | None, seed: int) -> dict[str, Any]:
    """Write the starting model into ``output``: a copy of ``init`` (a packaged name or a folder),
    or random weights of ``config`` (default :func:`two_task_config`) drawn from ``seed``.
    Returns what ``training_config.json`` records of it."""
    import hashlib
    import shutil

    from es_lightning.models.registry import resolve_model

    if init is None:
        config = config or two_task_config(seed)
        build_tiny_model(output, config)  # random weights from config.seed + the tokenizer
        return dict(init=None, model=asdict(config))
    if config is not None:
        raise ConfigError(f"train_two_task_model: give `config` or `init`, not both (init={init!r})")
    folder = Path(resolve_model(init))
    missing = [name for name in HF_FILES if not (folder / name).is_file()]
    if missing:
        raise ConfigError(f"train_two_task_model: init {init!r} ({folder}) lacks {missing}")
    output.mkdir(parents=True, exist_ok=True)
    for name in HF_FILES:
        shutil.copyfile(folder / name, output / name)
    recorded = folder / "training_config.json"
    model = json.loads(recorded.read_text()).get("model") if recorded.is_file() else None
    sha256 = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    return dict(init=init, init_sha256=sha256, model=model)


def _check_sizes(steps: int, batch_size: int, n_problems: int, arithmetic_per_batch: int) -> None:
    """Refuse sizes that cannot train, before any work."""
    if steps < 1 or batch_size < 1 or n_problems < 1:
        raise ConfigError(
            "train_two_task_model: steps, batch_size and n_problems must be >= 1, "
            f"got {steps}, {batch_size}, {n_problems}"
        )
    if not 0 <= arithmetic_per_batch <= batch_size:
        raise ConfigError(
            f"train_two_task_model: arithmetic_per_batch must be in [0, batch_size={batch_size}], "
            f"got {arithmetic_per_batch}"
        )


def _task_settings(
    countdown: Any,
    arithmetic: Any,
    countdown_rows: list[dict[str, Any]],
    arithmetic_rows: list[dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each task's generator settings and training-set size, as recorded in ``training_config.json``."""
    return {
        COUNTDOWN: dict(max_number=countdown.max_number, max_target=countdown.max_target,
                        max_value=countdown.max_value, four_number_fraction=countdown.four_number_fraction,
                        min_solutions=countdown.min_solutions, seed=0, train_problems=len(countdown_rows)),
        ARITHMETIC: dict(max_number=arithmetic.max_number, seed=0, train_problems=len(arithmetic_rows)),
    }  # fmt: skip


def train_two_task_model(
    output: Path,
    steps: int = 150,
    seed: int = 0,
    *,
    init: str | None = "es-lightning/tiny-countdown",
    batch_size: int = 96,
    arithmetic_per_batch: int = 32,
    lr: float = 1e-3,
    warmup_steps: int | None = None,
    weight_decay: float = 0.01,
    n_problems: int = 30000,
    held_out: int = 1000,
    config: TinyConfig | None = None,
    threads: int = 1,
    device: str = "cpu",
    progress: bool = True,
) -> Path:
    """Train the two-task model (module docstring) into ``output``; returns ``output``.

    Args:
        output: folder to write (created; files already there are overwritten).
        steps: optimizer steps.
        seed: seed of both tasks' data orders and the solution draws (and of the initial weights
            when ``init`` is ``None``).
        init: the model to start from, a packaged name or a folder (the default: the shipped
            ``tiny-countdown``, trained on the same countdown problems); ``None``: random weights.
        batch_size: examples per step.
        arithmetic_per_batch: arithmetic examples in each step's batch (the rest are countdown).
        lr: peak AdamW learning rate.
        warmup_steps: linear warmup steps; ``None``: 5% of ``steps`` (at least 1).
        weight_decay: AdamW weight decay.
        n_problems: countdown training problems.
        held_out: how many problems at the start of each task's test stream are never trained on.
        config: model size of a random start (``init=None``); ``None``: :func:`two_task_config`.
        threads: torch CPU threads while training (fixed, so the result does not depend on the
            machine's core count).
        device: where to train; ``"cuda"`` rounds differently from the CPU run that made the
            packaged model.
        progress: show a tqdm progress bar.
    """
    from es_lightning.module import ReasoningModule

    _check_sizes(steps, batch_size, n_problems, arithmetic_per_batch)
    output = Path(output)
    warmup = default_warmup(steps, warmup_steps)
    start = start_model(output, init, config, seed)
    countdown, arithmetic, countdown_rows, paths, arithmetic_rows = training_sets(n_problems, held_out)
    settings = dict(
        steps=steps, seed=seed, batch_size=batch_size, arithmetic_per_batch=arithmetic_per_batch, lr=lr,
        warmup_steps=warmup, weight_decay=weight_decay, n_problems=n_problems, held_out=held_out,
        threads=threads, **start,
        tasks=_task_settings(countdown, arithmetic, countdown_rows, arithmetic_rows),
    )  # fmt: skip

    countdown_module = ReasoningModule(model=str(output), task=countdown)
    arithmetic_module = ReasoningModule(model=str(output), task=arithmetic)
    stream = MixedStream(countdown_rows, paths, arithmetic_rows, batch_size, arithmetic_per_batch, seed)
    losses = fit_completions(
        output,
        lambda: encode_problems(stream.next_problems(), countdown_module, arithmetic_module),
        steps,
        seed,
        pad_id=countdown_module.tokenizer.pad_token_id,
        lr=lr,
        warmup_steps=warmup,
        weight_decay=weight_decay,
        threads=threads,
        device=device,
        progress=progress,
    )
    settings["final_loss"] = sum(losses[-20:]) / len(losses[-20:])  # mean of the last 20 steps
    (output / "training_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    return output


def evaluate_two_task_model(
    folder: Path, n_test: int = 200, num_samples: int = 16, temperature: float = 0.6, threads: int = 1
) -> dict[str, dict[str, float]]:
    """``{task: summary}`` of ``folder`` on the first ``n_test`` test problems of each task
    (``seed=0``): Pass@K (K = 1..``num_samples``), maj@K and greedy accuracy at ``temperature``,
    sampling seed 1234, at most 64 new tokens, through the project's evaluation runner and
    ``HFRollout(batch_size=512)`` on ``threads`` CPU threads; the countdown summary also holds
    its ``errors/<verdict>`` shares (:func:`~scripts.warmstart.countdown.error_profile`)."""
    saved_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return {
            COUNTDOWN: countdown_warmstart.evaluate_countdown_model(
                folder, n_test, num_samples, temperature, threads=threads
            ),
            ARITHMETIC: arithmetic_warmstart.evaluate_arithmetic_model(
                folder, n_test, num_samples, temperature
            ),
        }
    finally:
        torch.set_num_threads(saved_threads)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--init",
        default="es-lightning/tiny-countdown",
        type=lambda given: None if given.lower() == "none" else given,
        help="model to start from, a packaged name or a folder; 'none': random weights "
        "(default: es-lightning/tiny-countdown)",
    )
    parser.add_argument(
        "--arithmetic-per-batch", type=int, default=32, help="arithmetic examples per batch (default: 32)"
    )
    parser.add_argument(
        "--n-problems", type=int, default=30000, help="countdown training problems (default: 30000)"
    )


WARM_START = WarmStart(
    description="Train the tiny two-task model (es-lightning/tiny-countdown-arithmetic) on CPU.",
    steps=150,
    threads=1,
    evaluates="200 test problems of each task",
    shown=("pass@1", "pass@4", "pass@16", "maj@16", "greedy"),
    add_arguments=_add_arguments,
    train=train_two_task_model,
    evaluate=lambda folder, args: evaluate_two_task_model(folder, threads=args.threads),
    batch_size=96,
    lr=1e-3,
)
"""``python -m scripts.warmstart two_tasks``."""
