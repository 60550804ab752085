"""Small run summaries to keep in git: what a report or a tune needs to be rebuilt, no weights.

    python -m es_lightning.report.summaries runs/report_cpu results/report_cpu

Each ``*_completions.jsonl`` is replaced by a counts file, all the paired bootstrap reads.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from es_lightning.report.outcomes import counts_name, counts_record, read_outcomes
from es_lightning.report.readers import is_finished

KEEP_SUFFIXES = (".json", ".jsonl", ".yaml", ".md")
"""What is copied (text summaries); anything under a ``checkpoints`` or ``tensorboard`` folder is not."""
SKIP_PARTS = {"checkpoints", "tensorboard", "chosen_weights", ".model_meta"}


def is_completions(path: Path) -> bool:
    """An evaluation's samples: ``*_completions.jsonl`` or a thresholded export's ``completions-*.jsonl``."""
    return path.suffix == ".jsonl" and (
        path.name.endswith("_completions.jsonl") or path.name.startswith("completions-")
    )


def write_counts(src: Path, dst_dir: Path) -> Path | None:
    """The counts file of the completions ``src`` in ``dst_dir`` (``None``: no rewards saved)."""
    outcomes = read_outcomes(src)
    if outcomes is None:
        return None
    target = dst_dir / counts_name(src.name)
    target.write_text(json.dumps(counts_record(outcomes)) + "\n", encoding="utf-8")
    return target


RUN_MARKERS = ("config.yaml", "metrics.jsonl")
"""A folder holding one of these is a run folder."""


def unfinished_runs(src: Path) -> list[Path]:
    """The outermost run folders under ``src`` whose final evaluation is not written yet."""
    found = {
        path.parent
        for marker in RUN_MARKERS
        for path in src.rglob(marker)
        if not SKIP_PARTS & set(path.relative_to(src).parts)
    }
    outer = sorted(run for run in found if not any(other in run.parents for other in found))
    return [run for run in outer if not is_finished(run)]


def export_summaries(src: Path, dst: Path) -> list[Path]:
    """Copy the summaries of finished runs under ``src`` into ``dst``; the files written."""
    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise FileNotFoundError(f"summaries: {str(src)!r} is not a folder")
    if dst.resolve() == src.resolve() or src.resolve() in dst.resolve().parents:
        raise ValueError(f"summaries: the destination {dst} must lie outside {src}")
    unfinished = unfinished_runs(src)
    for run in unfinished:
        print(f"[summaries] {run}: not finished, left out", file=sys.stderr)
    written = []
    for path in sorted(src.rglob("*")):
        relative = path.relative_to(src)
        if not path.is_file() or path.suffix not in KEEP_SUFFIXES or SKIP_PARTS & set(relative.parts):
            continue
        if any(run in path.parents for run in unfinished):
            continue
        target = dst / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if is_completions(path):
            counts = write_counts(path, target.parent)
            written += [counts] if counts is not None else []
            continue
        shutil.copyfile(path, target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print("usage: python -m es_lightning.report.summaries SRC DST", file=sys.stderr)
        return 2
    written = export_summaries(Path(argv[0]), Path(argv[1]))
    size = sum(p.stat().st_size for p in written)
    print(f"[summaries] {len(written)} files, {size / 1e6:.2f} MB -> {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
