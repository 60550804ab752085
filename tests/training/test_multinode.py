"""Two nodes on this machine: ``torchrun --nnodes 2 --nproc-per-node 1`` twice (node ranks 0 and
1 on localhost, one CPU device each), as ``docs/multinode.md`` launches them on a cluster. The
population is split across the two nodes' ranks and the centre after two updates must be the
1-rank run's, bit for bit (as ``test_fit_es`` checks for two ranks on one node)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from es_lightning.training.loggers import read_metrics
from tests.helpers import REDRAW_TWO_UPDATES, TINY_ES_RECIPE, assert_bit_identical, subprocess_env

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _master(out: Path) -> dict:
    return load_file(out / "checkpoints" / "step-000002" / "es_state" / "master.safetensors")


def _two_nodes(tmp_path: Path) -> Path:
    config, out, port = tmp_path / "two_nodes.yaml", tmp_path / "two_nodes", _free_port()
    config.write_text(TINY_ES_RECIPE)
    fit_args = ["-m", "es_lightning", "fit", "--config", str(config), "--trainer.output_dir", str(out)]
    fit_args += ["--trainer.num_nodes", "2", "--trainer.devices", "1", *REDRAW_TWO_UPDATES]
    nodes = []
    for node_rank in (0, 1):
        launch = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
        launch += ["--node-rank", str(node_rank), "--master-addr", "127.0.0.1", "--master-port", str(port)]
        log = (tmp_path / f"node{node_rank}.log").open("w")
        nodes.append(
            subprocess.Popen([*launch, *fit_args], cwd=tmp_path, env=subprocess_env(), stdout=log, stderr=log)
        )
    try:
        codes = [node.wait(timeout=900) for node in nodes]
    finally:
        for node in nodes:
            if node.poll() is None:
                node.kill()
    logs = "\n".join((tmp_path / f"node{r}.log").read_text()[-3000:] for r in (0, 1))
    assert codes == [0, 0], logs
    return out


def test_two_nodes_give_the_one_rank_run(tmp_path, es_one_rank_redraw_run):
    one = es_one_rank_redraw_run
    two = _two_nodes(tmp_path)
    assert_bit_identical(_master(one), _master(two))
    m1, m2 = read_metrics(one / "metrics.jsonl"), read_metrics(two / "metrics.jsonl")
    assert [m["train/reward_mean"] for m in m1] == [m["train/reward_mean"] for m in m2]
    assert [m["step"] for m in m2 if "train/reward_mean" in m] == [1, 2]  # logged once per update
