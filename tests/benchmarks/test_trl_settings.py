"""The TRL peer benchmark runs TRL's GRPOTrainer with the demo GRPO recipe's settings, the same
prompt text and the task's verifier (``benchmarks/measures/trl_settings.py``, ``trl_grpo.py``)."""

import pytest

from benchmarks.measures.trl_grpo import RECIPE, recipe_module
from benchmarks.measures.trl_settings import our_overrides, recipe_settings, trl_batching, trl_config_kwargs


def test_recipe_settings_are_the_demo_recipes():
    s = recipe_settings(RECIPE)
    assert (s.group_size, s.batch_size, s.learning_rate, s.max_tokens) == (8, 64, 2e-5, 32)
    assert (s.temperature, s.beta, s.clip_eps, s.clip_eps_high) == (1.0, 0.0, 0.2, None)
    assert (s.loss_aggregation, s.advantage, s.inner_iterations, s.micro_batch_size) == (
        "token_mean",
        "group",
        1,
        128,
    )
    assert (s.lr_schedule, s.weight_decay, s.max_grad_norm) == ("constant", 0.0, 1.0)
    assert recipe_settings(RECIPE, batch_size=16).batch_size == 16


def test_batching_counts_completions():
    s = recipe_settings(RECIPE)
    assert trl_batching(s) == (128, 4)  # 64 prompts x 8 = 512 completions in micro-batches of 128
    assert trl_batching(recipe_settings(RECIPE, batch_size=4)) == (32, 1)  # 32 < 128: one micro-batch


def test_grpo_config_carries_the_recipes_settings(tmp_path):
    pytest.importorskip("trl", reason="pip install -e '.[bench]'")
    from trl import GRPOConfig

    s = recipe_settings(RECIPE)
    c = GRPOConfig(**trl_config_kwargs(s, steps=3, seed=1, output_dir=str(tmp_path)))
    assert c.num_generations == 8 and c.per_device_train_batch_size * c.gradient_accumulation_steps == 512
    assert c.generation_batch_size == 512 and c.steps_per_generation == c.gradient_accumulation_steps
    assert (c.learning_rate, c.max_completion_length, c.temperature, c.top_p, c.top_k) == (
        2e-5,
        32,
        1.0,
        1.0,
        0,
    )
    # epsilon_high None: the trainer uses epsilon (ours: clip_eps_high None, the same)
    assert (c.beta, c.epsilon, c.epsilon_high, c.num_iterations) == (0.0, 0.2, None, 1)
    assert (c.loss_type, c.scale_rewards, str(c.lr_scheduler_type)) in {
        ("dapo", "group", "constant"),
        ("dapo", "group", "SchedulerType.CONSTANT"),
    }
    assert (c.max_steps, c.seed, c.warmup_steps, c.weight_decay, c.max_grad_norm) == (3, 1, 0, 0.0, 1.0)
    assert (c.adam_beta1, c.adam_beta2, c.bf16, c.gradient_checkpointing) == (0.9, 0.999, False, False)


def test_both_sides_see_the_same_prompts_and_rewards():
    module = recipe_module(RECIPE)
    row = module.task.load("train")[0]
    text = module.format_prompt(row)  # what TRL's dataset holds as "prompt"
    assert module.tokenizer(text, add_special_tokens=False)["input_ids"] == module.encode([row])[0]
    right = f"{row['a']}+{row['b']}-{row['c']}={row['a'] + row['b'] - row['c']}"
    completions = ["nonsense", right]
    columns = {k: [row[k]] * 2 for k in row}
    rewards = module.task.reward_fn(prompts=[text] * 2, completions=completions, **columns)
    assert rewards == [module.task.score(c, row).reward for c in completions]


def test_our_overrides_set_batch_steps_seed_and_the_hf_rollout():
    args = our_overrides(recipe_settings(RECIPE, batch_size=16), steps=5, seed=2, output_dir="out")
    pairs = dict(zip(args[::2], args[1::2]))
    assert pairs["--trainer.batch_size"] == "16" and pairs["--trainer.max_steps"] == "5"
    assert pairs["--trainer.seed"] == "2" and pairs["--rollout"] == "hf" and pairs["--evaluation"] == "null"
    assert "--rollout.batch_size" not in args  # HFRollout's default unless asked
    batched = our_overrides(recipe_settings(RECIPE), steps=5, seed=2, output_dir="out", rollout_batch=512)
    assert dict(zip(batched[::2], batched[1::2]))["--rollout.batch_size"] == "512"
