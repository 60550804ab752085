"""The measures of ``benchmarks/run.py``: each subprocess script here writes one JSON file.

``common`` holds what they share (bench model, data, statistics, the process-tree sampler);
``es_step`` times ES updates against plain generation (1 or 2 ranks); ``engine`` times raw engines
(vLLM alone / with a trainer / two at once, transformers, LoRA populations); ``scoring`` times
the GSM8K verifier; ``memory`` runs ``es-lightning fit`` and samples the run's process tree.
"""
