"""Ranks that fail together: a failure on one rank of a multi-rank run ends every rank, at once and
in one line, instead of leaving the others in their next collective::

    with fail_together():               # every rank
        local = evaluate_members(...)   # generation and your reward functions: may raise on one rank
    rewards = all_reduce(local.rewards)  # reached by every rank, or by none
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from es_lightning.errors import USER_ERROR_STATUS, find_config_error

FAILURE_STATUS = 1  # anything but a ConfigError (USER_ERROR_STATUS): a traceback
_SHARED = "_es_lightning_shared_by_ranks"


class PeerRankError(RuntimeError):
    """Another rank failed (it printed why); this rank stops with the same ``status``."""

    def __init__(self, rank: int, status: int) -> None:
        super().__init__(f"rank {rank} failed (its error is printed by that rank); this rank stops with it")
        self.rank, self.status = rank, status


@contextmanager
def fail_together() -> Iterator[None]:
    """Run the block, then agree with every rank whether any raised (one ``all_reduce``)."""
    import torch.distributed as dist

    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    if world == 1:
        yield
        return
    error: Exception | None = None
    try:
        yield
    except Exception as err:  # a signal (BaseException) is the signal handlers' to share
        error = err
    rank = dist.get_rank()
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    status = 0 if error is None else USER_ERROR_STATUS if find_config_error(error) else FAILURE_STATUS
    mine = torch.tensor([float(status), float(world - rank) if error else 0.0], device=device)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    status, first = int(mine[0].item()), world - int(mine[1].item())
    if error is not None:
        setattr(error, _SHARED, True)
        raise error
    if status:
        raise PeerRankError(first, status)


def shared(error: BaseException) -> bool:
    """Whether every rank learned of ``error`` through :func:`fail_together`."""
    return isinstance(error, PeerRankError) or bool(getattr(error, _SHARED, False))


def started_by_fabric() -> bool:
    """Whether Fabric's launcher started this process for a local rank above 0."""
    local = os.environ.get("LOCAL_RANK", "").strip()
    external = any(v in os.environ for v in ("TORCHELASTIC_RUN_ID", "SLURM_PROCID"))
    return local.isdigit() and int(local) > 0 and not external


def exit_status(error: BaseException, status: int) -> int:
    """The exit status for ``error``: 0 in a Fabric-started process after a shared failure."""
    return 0 if shared(error) and started_by_fabric() else status
