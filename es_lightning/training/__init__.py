"""The training loop, pipelines, batches, run settings, logging and run outputs."""
