"""Per-tensor ES work on threads: the same numbers, in the same order, as one tensor at a time."""

import os
import subprocess
import sys
import threading
import time

import pytest
import torch

import es_lightning.es.parallel as parallel
from es_lightning.es.noise import noise_like
from es_lightning.es.parallel import map_tensors
from es_lightning.es.update import apply_es_update, assign_es_grad_
from es_lightning.es.weights import ESWeights

SHAPES = {f"layers.{i}.weight": (64 + 8 * i, 48) for i in range(9)} | {"norm.weight": (48,)}
COEFFS = {11: 1.25, 12: -0.5, 13: 0.0, 14: 2.0}


def _master() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return {n: torch.randn(s, generator=g) for n, s in SHAPES.items()}


def test_map_tensors_keeps_input_order_and_values():
    items = list(_master().items())

    def slow_for_early(name: str, t: torch.Tensor) -> tuple[str, torch.Tensor]:
        time.sleep(0.02 if name.endswith(("0.weight", "1.weight")) else 0.0)  # early items finish last
        return name, noise_like(5, name, t.shape)

    got = list(map_tensors(slow_for_early, items, threads=3))
    assert [n for n, _ in got] == [n for n, _ in items]
    for (name, eps), (_, t) in zip(got, items):
        assert torch.equal(eps, noise_like(5, name, t.shape))


def test_map_tensors_uses_threads_and_bounds_what_is_pending():
    items = [(f"t{i}", torch.zeros(4)) for i in range(20)]
    running, peak, seen = [0], [0], set()
    lock = threading.Lock()

    def work(name: str, t: torch.Tensor) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            seen.add(threading.get_ident())
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return name

    consumed = []
    for name in map_tensors(work, items, threads=2):
        consumed.append(name)
    assert consumed == [n for n, _ in items]
    assert peak[0] == 2 and len(seen) == 2
    assert threading.get_ident() not in seen


def test_map_tensors_raises_at_the_failing_item():
    def fail_on_third(name: str, t: torch.Tensor) -> str:
        if name == "t2":
            raise ValueError("bad tensor t2")
        return name

    it = map_tensors(fail_on_third, [(f"t{i}", torch.zeros(2)) for i in range(5)], threads=2)
    assert [next(it), next(it)] == ["t0", "t1"]
    with pytest.raises(ValueError, match="bad tensor t2"):
        next(it)


@pytest.mark.parametrize("threads", [2, 4])
def test_update_and_perturbation_on_threads_are_bit_identical_to_serial(monkeypatch, threads):
    def run(n_threads: int):
        monkeypatch.setattr(parallel, "tensor_threads", lambda: n_threads)
        master = _master()
        norm = apply_es_update(master, COEFFS, lr=0.3, population_size=8)
        grads = _master()
        for t in grads.values():
            t.requires_grad_(True)
        assign_es_grad_(grads, COEFFS, population_size=8)
        weights = ESWeights(_master(), write=lambda named: None, serving_dtype=torch.bfloat16)
        perturbed = list(weights.perturbed(21, -1.0, 0.01))
        return master, norm, {n: t.grad for n, t in grads.items()}, perturbed

    serial, threaded = run(1), run(threads)
    assert serial[1] == threaded[1]
    for name in SHAPES:
        assert torch.equal(serial[0][name], threaded[0][name])
        assert torch.equal(serial[2][name], threaded[2][name])
    assert [n for n, _ in serial[3]] == [n for n, _ in threaded[3]] == list(SHAPES)
    for (_, a), (_, b) in zip(serial[3], threaded[3]):
        assert a.dtype == torch.bfloat16 and torch.equal(a, b)
    # and against a plain reference computation of θ + (α/N)·Σ c_s ε_s
    for name, theta in _master().items():
        ref = theta.clone()
        acc = torch.zeros_like(theta)
        for seed, c in COEFFS.items():
            acc += c * noise_like(seed, name, theta.shape)
        ref += acc * (0.3 / 8)
        torch.testing.assert_close(threaded[0][name], ref, rtol=0, atol=1e-6)


PINNED = """
import os, threading, torch
from es_lightning.es.parallel import map_tensors
cores = sorted(os.sched_getaffinity(0))
other = threading.Thread(target=lambda: (os.sched_setaffinity(0, {cores[1]}), stop.wait()))
stop = threading.Event()
other.start()
os.sched_setaffinity(0, {cores[0]})  # the main thread pinned, as a vLLM worker's OpenMP runtime does
seen = set(map_tensors(lambda n, t: tuple(sorted(os.sched_getaffinity(0))), [(str(i), torch.zeros(1)) for i in range(8)], threads=2))
stop.set()
print(seen == {(cores[0], cores[1])})
"""


@pytest.mark.integration
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_threads_run_on_every_core_of_the_process_when_the_caller_is_pinned():
    proc = subprocess.run([sys.executable, "-c", PINNED], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"


REPINNED = """
import os, torch
from es_lightning.es.parallel import map_tensors
cores = sorted(os.sched_getaffinity(0))

def pinned_while_running(name, tensor):  # as a worker's OpenMP runtime pins a thread that runs torch work
    at_start = tuple(sorted(os.sched_getaffinity(0)))
    os.sched_setaffinity(0, {cores[0]})
    return at_start

items = [(str(i), torch.zeros(1)) for i in range(16)]
print(set(map_tensors(pinned_while_running, items, threads=2)) == {tuple(cores)})
"""


@pytest.mark.integration
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_a_thread_pinned_while_it_ran_gets_every_core_back_for_its_next_tensor():
    proc = subprocess.run([sys.executable, "-c", REPINNED], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"
