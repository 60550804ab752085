"""Rollout backends: generation behind one contract, holding the ES centre where they generate."""
