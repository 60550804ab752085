#!/usr/bin/env bash
# GPU check: ES (full-rank, then low-rank with all members in one generate call) and GRPO updates of
# a Qwen2.5-1.5B-shaped model (random weights, built locally in bf16) on the transformers (HF)
# rollout, through ESStrategy / GRPOStrategy's training steps.
#
# Launch:  bash benchmarks/gpu_check.sh              # one CUDA GPU; sized for one H200 in < 8 min
#          bash benchmarks/gpu_check.sh --tiny       # CPU, tiny model, < 1 min (checks the script)
#          bash benchmarks/gpu_check.sh --help       # every size can be overridden
#
# Measures, per strategy: time per update, generated tokens/s, peak torch.cuda.max_memory_allocated
# and max_memory_reserved; for ES also es_over_generation (ES update / generating the same N x B
# rollouts with no perturbation), the update's share (noise + apply) and the perturb+restore share;
# for low-rank ES lowrank_population_over_plain_batch and lowrank_over_fullrank_update.
# Writes --json (default $OUT/gpu_check.json when $OUT is set, else runs/gpu_check.json) and prints a
# markdown table; progress lines carry timestamps.
#
# Time budget: estimated 3-5 min on one H200 (HF generate ~25-50 ms per decoding step at batch 64,
# ~1.3-2.6k tokens/s; see benchmarks/gpu_check.py's docstring for the sums); --budget-s 420 drops ES
# repeats / GRPO updates that would not fit, so the whole run stays inside 8 minutes.
# Needs only torch, transformers, lightning and this repository: no vLLM, no network, no hub.
# Fails with a clear message when CUDA is missing and --tiny is not given.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -n "${PYTHON:-}" ]]; then
  py="$PYTHON"
elif [[ -x .venv/bin/python ]]; then
  py=.venv/bin/python
else
  py=python3
fi

export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
exec "$py" -m benchmarks.gpu_check "$@"
