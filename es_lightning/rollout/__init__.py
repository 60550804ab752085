"""Rollout backends: generation behind one contract (base.py), plus in-engine ES operations (es_engine.py);
transformers in hf.py, vLLM in vllm/."""
