"""Rollout backends: generation behind one contract (base.py), plus in-engine ES operations (es_engine.py)."""
