"""What the measures share: the bench model, GSM8K rows, statistics, subprocesses and their RSS.

The bench model is a random-initialised Qwen2 (≈30M parameters, head size 64) with the built-in
character tokenizer, built once into ``$ES_LIGHTNING_BENCH_CACHE`` (default
``~/.cache/es-lightning-bench``); random weights are enough because every measure here is about
time and memory, not answers.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GSM8K_DIR = REPO.parent / "shared" / "data" / "gsm8k"
DEMO_MODEL = "es-lightning/tiny-arithmetic"


@dataclass(frozen=True)
class BenchModel:
    """Size of the benchmark model (a Qwen2 with the character tokenizer, random weights)."""

    hidden_size: int = 512
    num_hidden_layers: int = 8
    num_attention_heads: int = 8  # head size 64: vLLM's CPU attention needs >= 32
    num_key_value_heads: int = 2
    intermediate_size: int = 2048
    max_position_embeddings: int = 2048
    seed: int = 0

    @property
    def name(self) -> str:
        return f"qwen2-h{self.hidden_size}-l{self.num_hidden_layers}-i{self.intermediate_size}-chars"


def cache_dir() -> Path:
    return Path(os.environ.get("ES_LIGHTNING_BENCH_CACHE", Path.home() / ".cache" / "es-lightning-bench"))


def bench_model_path(config: BenchModel = BenchModel()) -> Path:
    return cache_dir() / config.name


def build_bench_model(config: BenchModel = BenchModel()) -> Path:
    """The bench model's folder, built on first use (call in a subprocess: it does torch work)."""
    from es_lightning.models.tiny import TinyConfig, build_tiny_model

    path = bench_model_path(config)
    if not (path / "config.json").is_file():
        tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
        fields = {k: v for k, v in asdict(config).items()}
        build_tiny_model(tmp, TinyConfig(**fields))
        tmp.rename(path)
    return path


def parameter_count(model_path: str | Path) -> int:
    """Parameters of a safetensors model folder, from the file headers (no torch)."""
    total = 0
    for file in Path(model_path).glob("*.safetensors"):
        with file.open("rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        for name, info in header.items():
            if name != "__metadata__":
                n = 1
                for d in info["shape"]:
                    n *= d
                total += n
    return total


def resolve(model: str) -> str:
    from es_lightning.models.registry import resolve_model

    return resolve_model(model)


def gsm8k_task():
    """GSM8K read from the shared data folder (train and test JSONL)."""
    from es_lightning.tasks import GSM8K
    from es_lightning.tasks.data import DataSource

    return GSM8K(
        train=DataSource(path=str(GSM8K_DIR / "train.jsonl")),
        test=DataSource(path=str(GSM8K_DIR / "test.jsonl")),
    )


def task_for(model: str):
    """The task a model is measured on: the demo model's arithmetic, GSM8K for the bench model."""
    if model == DEMO_MODEL:
        from es_lightning.tasks import Arithmetic

        return Arithmetic(n_train=2048, n_test=200, seed=0)
    return gsm8k_task()


def summary(values: Sequence[float]) -> dict[str, Any]:
    """Median and min–max of repeated measurements."""
    values = [float(v) for v in values]
    if not values:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def ratio_summary(numerators: Sequence[float], denominators: Sequence[float]) -> dict[str, Any]:
    """Per-repeat ratios (paired repeats), summarised."""
    return summary([a / b for a, b in zip(numerators, denominators) if b])


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a measure's subprocess: the repository on the path (measures and the
    profiling worker extension import ``benchmarks.measures``), vLLM quiet, unbuffered output."""
    drop = ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", "LOCAL_WORLD_SIZE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    path = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env | {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"} | extra


@dataclass
class TreeRun:
    """A finished subprocess: exit code, wall time, peak summed RSS/PSS of its whole process tree."""

    returncode: int
    seconds: float
    peak_rss_bytes: int
    peak_pss_bytes: int
    peak_processes: int
    log: Path


def run_tree(cmd: list[str], log: Path, timeout_s: float, env: dict[str, str] | None = None) -> TreeRun:
    """Run ``cmd``, sampling the resident memory of it and all its descendants every 0.25 s.

    RSS counts shared pages (torch's libraries) once per process; PSS splits them, so it is the
    fairer total; both are kept.
    """
    import psutil

    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    peak_rss = peak_pss = peak_n = 0
    pss_at = 0.0
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env or subprocess_env(), stdout=out, stderr=subprocess.STDOUT
        )
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            if time.perf_counter() - start > timeout_s:
                _kill_tree(root)
                break
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                procs = []
            rss = pss = 0
            full = time.perf_counter() - pss_at > 1.0  # smaps is slower: PSS once a second
            for p in procs:
                try:
                    if full:
                        info = p.memory_full_info()
                        rss, pss = rss + info.rss, pss + getattr(info, "pss", info.rss)
                    else:
                        rss += p.memory_info().rss
                except psutil.Error:
                    pass
            if full:
                pss_at = time.perf_counter()
                peak_pss = max(peak_pss, pss)
            peak_rss, peak_n = max(peak_rss, rss), max(peak_n, len(procs))
            time.sleep(0.25)
        code = proc.wait()
    return TreeRun(code, time.perf_counter() - start, peak_rss, peak_pss, peak_n, log)


def _kill_tree(root) -> None:
    import psutil

    try:
        children = root.children(recursive=True)
    except psutil.Error:
        children = []
    for p in [*children, root]:
        try:
            p.kill()
        except psutil.Error:
            pass


def run_script(module: str, args: list[str], out: Path, log: Path, timeout_s: float) -> dict[str, Any]:
    """``python -m benchmarks.measures.<module> ... --out out`` in its own process tree; its JSON,
    with ``_run`` (exit code, wall time, peak RSS/PSS of the tree) added."""
    cmd = [sys.executable, "-m", f"benchmarks.measures.{module}", *args, "--out", str(out)]
    out.unlink(missing_ok=True)  # never read an earlier run's file
    run = run_tree(cmd, log, timeout_s)
    result: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    result["_run"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(run).items()}
    if run.returncode != 0 and "error" not in result:
        tail = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
        result["error"] = f"exit code {run.returncode}; log {log}: ...{tail[-600:]}"
    return result


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2, default=str))
