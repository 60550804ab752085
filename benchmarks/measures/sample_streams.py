"""Do the sampled responses of one generation call draw independent random numbers?

    python -m benchmarks.measures.sample_streams --rollout vllm --seeds 0 1 2 --out streams.json

The built-in ``es-lightning/tiny-arithmetic`` model answers the arithmetic test problems, M
responses each, at temperature 0.6, in one seeded call per seed; r[i, j] is the reward of response
j to prompt i. Two sets of pairs of responses to neighbouring prompts are compared:

* shifted pairs (r[i, j], r[i+1, j−1]): under a seeding of prompt i with ``seed + i`` and of its
  response j with ``seed + i + j`` (vLLM's n > 1 fan-out) the two draw the same random numbers;
* control pairs (r[i, j], r[i+1, j]): different seeds under any scheme.

The Pearson correlation of each set is written per seed and pooled over seeds, with its count,
on the raw rewards and on the prompt-centred ones (r[i, j] minus prompt i's mean over its M
responses of that call), which removes what neighbouring prompts' difficulties share by chance.
Without shared random numbers the centred correlations are ≈ 0 (standard error ≈ 1/√count).
Seeds far apart (the default 0, 1000, 2000) keep the calls apart under a ``seed + i + j`` scheme.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def pairs(rewards: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The shifted and control pairs of ``rewards`` (S, P, M), flattened over calls and prompts."""
    return {
        "shifted": (rewards[:, :-1, 1:].ravel(), rewards[:, 1:, :-1].ravel()),
        "control": (rewards[:, :-1, :].ravel(), rewards[:, 1:, :].ravel()),
    }


def pair_correlations(rewards: np.ndarray) -> dict[str, float]:
    """Pearson correlations of shifted and control pairs of ``rewards`` (S, P, M), raw and
    prompt-centred, with the number of pairs."""
    centred = rewards - rewards.mean(axis=2, keepdims=True)
    out: dict[str, float] = {}
    for label, values in (("", rewards), ("centred_", centred)):
        for kind, (x, y) in pairs(values).items():
            out[f"{label}{kind}_corr"] = float(np.corrcoef(x, y)[0, 1])
            out[f"{kind}_pairs"] = int(x.size)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollout", choices=("vllm", "hf"), default="vllm")
    parser.add_argument("--samples", type=int, default=16, help="M, responses per prompt")
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1000, 2000])
    parser.add_argument("--out", default=None, help="write the result here as JSON")
    parser.add_argument("--rewards", default=None, help="save the rewards (S, P, M) here (.npy)")
    args = parser.parse_args()

    import torch

    from es_lightning.models.registry import resolve_model
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import SamplingConfig
    from es_lightning.tasks import Arithmetic

    model = str(resolve_model("es-lightning/tiny-arithmetic"))
    if args.rollout == "vllm":
        from es_lightning.rollout.vllm import VLLMRollout

        rollout = VLLMRollout(gpu_memory_utilization=0.1, max_model_len=256)
    else:
        from es_lightning.rollout.hf import HFRollout

        rollout = HFRollout(batch_size=512)
    rollout.setup(model, torch.device("cpu"), torch.float32)
    rollout.start()
    module = ReasoningModule(model=model, task=Arithmetic(n_test=args.prompts, seed=0))
    rows = module.task.load("test")
    prompts = module.encode(rows)
    per_seed = []
    for seed in args.seeds:
        sampling = SamplingConfig(n=args.samples, temperature=0.6, max_tokens=32, seed=seed)
        scores = module.score(rows, rollout.generate(prompts, sampling))
        per_seed.append(np.array([[s.reward for s in per] for per in scores]))  # (P, M)
    rollout.close()
    rewards = np.stack(per_seed)  # (S, P, M)
    if args.rewards:
        np.save(args.rewards, rewards)
    result = {
        "rollout": args.rollout,
        "samples": args.samples,
        "prompts": len(rows),
        "seeds": args.seeds,
        "pass@1": float(rewards.mean()),
        "per_seed": [pair_correlations(r[None]) for r in rewards],
        **pair_correlations(rewards),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
