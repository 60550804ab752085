"""A transformers rollout that records every ``generate`` call, per rank (for sharding tests)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from es_lightning.rollout.hf import HFRollout


class RecordingHFRollout(HFRollout):
    """:class:`HFRollout` that appends ``{"n", "seed", "prompts"}`` of each call to
    ``$ES_LIGHTNING_TEST_RECORD/rank{r}.jsonl``."""

    def generate(self, prompts, sampling):
        dist = torch.distributed
        rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        record = Path(os.environ["ES_LIGHTNING_TEST_RECORD"])
        record.mkdir(parents=True, exist_ok=True)
        with (record / f"rank{rank}.jsonl").open("a") as f:
            f.write(json.dumps({"n": sampling.n, "seed": sampling.seed, "prompts": len(prompts)}) + "\n")
        return super().generate(prompts, sampling)
