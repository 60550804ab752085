"""Tests of ``es_lightning.tasks``; real GSM8K/MBPP rows come from ``tests/assets``."""
