"""Noise regenerated in a fresh process (different hash salt) is bit-identical."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from es_lightning.es.noise import noise_like, param_seed, seed_schedule

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PAIRS = [(0, "w"), (123456789, "model.layers.0.self_attn.q_proj.weight"), (2**62 + 1, "lm_head.weight")]
SHAPE = (64, 33)

SCRIPT = """
import sys, torch
from es_lightning.es.noise import noise_like, param_seed, seed_schedule
pairs = {pairs!r}
out = {{f"{{s}}|{{n}}": noise_like(s, n, {shape!r}, "cpu") for s, n in pairs}}
torch.save(out, sys.argv[1])
for s, n in pairs:
    t = out[f"{{s}}|{{n}}"]
    print(param_seed(s, n), repr(float(t.double().sum())))
print(seed_schedule(7, 3, 4))
"""


def _run(tmp_path: Path, hashseed: str) -> tuple[dict, list[str]]:
    path = tmp_path / f"noise_{hashseed}.pt"
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = hashseed
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(pairs=PAIRS, shape=SHAPE), str(path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return torch.load(path), proc.stdout.strip().splitlines()


def test_noise_identical_across_processes(tmp_path):
    for hashseed in ("1", "2"):  # different str-hash salts: Python's hash() would disagree
        saved, lines = _run(tmp_path, hashseed)
        for k, (s, n) in enumerate(PAIRS):
            here = noise_like(s, n, SHAPE, "cpu")
            assert torch.equal(saved[f"{s}|{n}"], here), (hashseed, s, n)
            ps, total = lines[k].split()
            assert int(ps) == param_seed(s, n)
            assert float(total) == float(here.double().sum())  # repr round-trips exactly
        assert lines[-1] == str(seed_schedule(7, 3, 4))
