"""Reward functions in TRL's signature, used unchanged by es-lightning's ES and GRPO.

Each takes what TRL's ``GRPOTrainer`` passes by keyword (``prompts``, ``completions``,
``completion_ids``, ``trainer_state``, ``log_extra``, ``log_metric``) plus the dataset's columns it
names (``answer``), and returns one reward per completion; ``**kwargs`` takes the rest. The same
file works as ``reward_funcs`` of TRL's ``GRPOTrainer``.
"""


def correct(completions, answer, log_extra=None, **kwargs):
    """1 when the completion starts with the row's answer; the answer is logged beside it."""
    if log_extra:
        log_extra("expected", list(answer))
    return [float(c.strip().startswith(a)) for c, a in zip(completions, answer)]


def digits(completions, completion_ids, log_metric=None, **kwargs):
    """Partial credit: the share of digits in each completion; logs the completions' mean length
    in tokens (TRL's ``completion_ids``: the generated token ids)."""
    if log_metric:
        log_metric("completion_tokens", sum(len(ids) for ids in completion_ids) / len(completion_ids))
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]
