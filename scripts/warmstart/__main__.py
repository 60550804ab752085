"""The warm starts' entry point: ``python -m scripts.warmstart <model> --output DIR [--evaluate]``.

Trains the model (its defaults are the packaged model's settings), prints the time, and with
``--evaluate`` scores it on the held-out test problems, prints the main numbers and writes every
number to ``DIR/evaluation.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from scripts.warmstart import arithmetic, countdown, two_tasks
from scripts.warmstart.common import WarmStart

WARM_STARTS: dict[str, WarmStart] = {
    "arithmetic": arithmetic.WARM_START,
    "countdown": countdown.WARM_START,
    "two_tasks": two_tasks.WARM_START,
}


def parser() -> argparse.ArgumentParser:
    """The options: a subcommand per model, each with the common options at its own defaults."""
    top = argparse.ArgumentParser(
        prog="python -m scripts.warmstart", description="Rebuild a packaged tiny model on CPU."
    )
    models = top.add_subparsers(dest="model", required=True, metavar="{" + ",".join(WARM_STARTS) + "}")
    for name, w in WARM_STARTS.items():
        sub = models.add_parser(name, help=w.description, description=w.description)
        sub.add_argument("--output", type=Path, required=True, help="folder to write the HF model to")
        sub.add_argument("--steps", type=int, default=w.steps, help=f"optimizer steps (default: {w.steps})")
        sub.add_argument("--seed", type=int, default=0, help="seed of weights and data order (default: 0)")
        sub.add_argument(
            "--batch-size",
            type=int,
            default=w.batch_size,
            help=f"examples per step (default: {w.batch_size})",
        )
        sub.add_argument(
            "--lr", type=float, default=w.lr, help=f"peak AdamW learning rate (default: {w.lr:g})"
        )
        sub.add_argument(
            "--threads",
            type=int,
            default=w.threads,
            help=f"torch CPU threads for training (default: {w.threads})",
        )
        sub.add_argument(
            "--evaluate", action="store_true", help=f"then report Pass@K and greedy on {w.evaluates}"
        )
        sub.add_argument("--no-progress", action="store_true", help="hide the progress bar")
        w.add_arguments(sub)
    return top


COMMON = ("model", "output", "steps", "seed", "batch_size", "lr", "threads", "evaluate", "no_progress")
"""The options every warm start takes; the rest are the model's own, named as its train function's."""


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    warm_start = WARM_STARTS[args.model]
    own = {k: v for k, v in vars(args).items() if k not in COMMON}
    start = time.perf_counter()
    folder = warm_start.train(
        args.output,
        args.steps,
        args.seed,
        batch_size=args.batch_size,
        lr=args.lr,
        threads=args.threads,
        progress=not args.no_progress,
        **own,
    )
    print(f"trained {args.steps} steps in {time.perf_counter() - start:.1f} s -> {folder}", flush=True)
    if args.evaluate:
        start = time.perf_counter()
        summaries = warm_start.evaluate(folder, args)
        for task, summary in summaries.items():
            shown = {
                k: round(v, 4)
                for k, v in summary.items()
                if any(k == s or (s.endswith("/") and k.startswith(s)) for s in warm_start.shown)
            }
            print(f"{task}: {json.dumps(shown)}", flush=True)
        (folder / "evaluation.json").write_text(json.dumps(summaries, indent=2) + "\n")
        print(f"evaluated in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
