"""Pass@K as a ``torchmetrics.Metric``: accumulate per-prompt correct counts, estimate at the end.

Each update takes a ``(P, M)`` boolean tensor; the metric keeps the ``P`` correct counts
(concatenated across updates and, synced, across ranks) and :meth:`PassAtK.compute` returns
``pass@k = (1/P) Σ_p [1 - C(M - c_p, k) / C(M, k)]``::

    metric = PassAtK(ks=[1, 4, 16])
    metric.update(rewards >= 1.0)          # (P, 16) booleans
    metric.compute()                       # {"pass@1": tensor(...), "pass@4": ..., "pass@16": ...}
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from es_lightning.evaluation.pass_at_k import pass_at_k_curve


class PassAtK(Metric):
    """Unbiased Pass@K over the prompts seen since the last reset.

    Args:
        ks: the ``k`` values to report; default ``1, 2, ..., M`` with ``M`` the samples per prompt.
        **kwargs: passed on to :class:`torchmetrics.Metric`.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    correct_counts: list[Tensor]
    n_samples: Tensor

    def __init__(self, ks: Sequence[int] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        if ks is not None:
            ks = [int(k) for k in ks]
            if not ks:
                raise ValueError("PassAtK: ks is empty; pass None for every k in 1..M")
            if any(k < 1 for k in ks):
                raise ValueError(f"PassAtK: every k must be >= 1, got ks={ks}")
        self.ks = ks
        self.add_state("correct_counts", default=[], dist_reduce_fx="cat")
        # Samples per prompt M; 0 until the first update. "max" keeps it when a rank saw no prompts.
        self.add_state("n_samples", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="max")

    def update(self, correct: Tensor) -> None:
        """Add ``P`` prompts: a boolean ``(P, M)`` tensor, the same ``M`` every time."""
        if not isinstance(correct, Tensor) or correct.dtype != torch.bool:
            kind = correct.dtype if isinstance(correct, Tensor) else type(correct).__name__
            raise TypeError(
                f"PassAtK.update: correct must be a bool tensor of shape (prompts, samples), got {kind}; "
                "threshold rewards first (e.g. rewards >= 1.0)"
            )
        if correct.ndim != 2 or correct.shape[1] < 1:
            raise ValueError(
                f"PassAtK.update: correct must have shape (prompts, samples) with samples >= 1, "
                f"got shape {tuple(correct.shape)}"
            )
        m = correct.shape[1]
        seen = int(self.n_samples)
        if seen and m != seen:
            raise ValueError(
                f"PassAtK.update: got {m} samples per prompt but earlier updates had {seen}; "
                "Pass@K needs the same number of samples M for every prompt"
            )
        if self.ks is not None and max(self.ks) > m:
            raise ValueError(f"PassAtK.update: k={max(self.ks)} exceeds the {m} samples per prompt")
        self.n_samples.fill_(m)
        self.correct_counts.append(correct.sum(dim=1).to(torch.long))

    def compute(self) -> dict[str, Tensor]:
        """``{"pass@k": mean estimate}`` per configured ``k`` (RuntimeError with no prompts)."""
        state = self.correct_counts  # a list, or one tensor once synced across ranks
        counts = dim_zero_cat(state) if not (isinstance(state, list) and not state) else None
        m = int(self.n_samples)
        if counts is None or counts.numel() == 0 or m == 0:
            raise RuntimeError("PassAtK.compute: no prompts were added (call update first)")
        curve = pass_at_k_curve(counts.tolist(), n=m, ks=self.ks)
        return {
            f"pass@{k}": torch.tensor(v, dtype=torch.float64, device=self.device) for k, v in curve.items()
        }
