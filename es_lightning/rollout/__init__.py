"""Rollout backends: generation behind one contract (base.py), holding the ES centre where they
generate; transformers in hf.py, vLLM in vllm/."""
