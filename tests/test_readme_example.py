"""The README's "Your own task, data and reward" example, run as written (two updates)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from es_lightning.training.loggers import read_metrics
from tests.helpers import CLI, REPO, subprocess_env


def _section(title: str) -> str:
    """The README's section ``## title`` up to the next heading."""
    lines = (REPO / "README.md").read_text().split(f"\n## {title}\n", 1)[1].splitlines()
    fenced, kept = False, []
    for line in lines:
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"#{1,3} ", line):  # the next heading (code comments are not)
            break
        kept.append(line)
    return "\n".join(kept)


def _section_blocks(title: str) -> dict[str, str]:
    section = _section(title)
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.DOTALL)
    return {lang: body for lang, body in blocks}


@pytest.mark.integration
def test_the_readme_example_trains_on_a_local_jsonl_with_python_rewards(tmp_path):
    """As written, on the README's data, 6 of its 20 updates: the updates are applied (the first
    ones are skipped until a member writes a digit: all tie), the digit share rises, and what the
    TRL-style functions log is in metrics.jsonl and samples.jsonl."""
    blocks = _section_blocks("Your own task, data and reward")
    (tmp_path / "my_rewards.py").write_text(blocks["python"])
    (tmp_path / "my_task.yaml").write_text(blocks["yaml"])
    (tmp_path / "data").mkdir()
    for split, n in (("train", 64), ("test", 4)):
        rows = [
            {"prompt": f"Repeat: {1000 + 37 * i + n}", "answer": str(1000 + 37 * i + n)} for i in range(n)
        ]
        (tmp_path / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = yaml.safe_load(blocks["yaml"])
    assert recipe["module"]["task"]["class_path"] == "es_lightning.tasks.FunctionTask"
    cmd = [*CLI, "fit", "--config", "my_task.yaml", "--trainer.max_steps", "6", "--trainer.log_samples_every", "6",
           "--rollout", "es_lightning.rollout.hf.HFRollout", "--trainer.progress_bar", "false"]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = read_metrics(tmp_path / "runs" / "my_task" / "metrics.jsonl")
    train = [r for r in rows if "train/reward_mean" in r]
    assert [r["step"] for r in train] == [1, 2, 3, 4, 5, 6]
    applied = [r for r in train if r["es/skipped"] == 0.0]
    assert len(applied) >= 2 and all(r["es/update_norm"] > 0 for r in applied), train
    share = [r["train/rewards/digits/mean"] for r in train]
    assert share[-1] > share[0], share
    assert all(
        r["train/rewards/correct/mean"] == 0.0 and 1 <= r["train/completion_tokens"] <= 12 for r in train
    )
    assert any("eval/repeat/pass@4" in r for r in rows)
    samples = [
        json.loads(line)
        for line in (tmp_path / "runs" / "my_task" / "samples.jsonl").read_text().splitlines()
    ]
    assert samples and all(
        s["logged"]["expected"] in s["prompt"] and set(s["rewards"]) == {"correct", "digits"} for s in samples
    )
    assert (tmp_path / "runs" / "my_task" / "checkpoints" / "step-000006" / "config.json").is_file()


def test_the_readme_reward_functions_are_the_examples():
    """The README's my_rewards.py is examples/trl_rewards/rewards.py's functions, word for word."""
    readme = _section_blocks("Your own task, data and reward")["python"].split("\n", 1)[1]  # the file name
    example = (REPO / "examples" / "trl_rewards" / "rewards.py").read_text()
    assert readme.strip() in example and "examples/trl_rewards/" in _section("Your own task, data and reward")


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_process_group")
def test_the_readme_python_api_example_runs_twice_in_one_process(tmp_path, monkeypatch, capsys):
    """As a script run twice in one interpreter (a notebook cell run again): both runs train and
    print Pass@1, each writes config.yaml, the second starts over in the same folder."""
    import runpy

    script = _section_blocks("Python API")["python"]
    (tmp_path / "train.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    printed = []
    for _ in range(2):
        runpy.run_path(str(tmp_path / "train.py"), run_name="__main__")
        printed.append(float(capsys.readouterr().out.strip().splitlines()[-1]))
        steps = [
            r["step"]
            for r in read_metrics(tmp_path / "runs" / "api" / "metrics.jsonl")
            if "train/reward_mean" in r
        ]
        assert steps == [1, 2, 3, 4, 5]  # the second run started over: no steps appended
        config = yaml.safe_load((tmp_path / "runs" / "api" / "config.yaml").read_text())
        assert config["module"]["init_args"]["model"] == "es-lightning/tiny-random"
        assert config["strategy"]["init_args"]["population_size"] == 8
    assert all(0.0 <= p <= 1.0 for p in printed) and printed[0] == printed[1]  # seeded: the same run


def test_the_package_exports_the_documented_names():
    import es_lightning

    text = _section("Python API").split("```python", 1)[0]
    documented = set(re.findall(r"`(\w+)`", text))
    assert documented == set(es_lightning.__all__)
    assert all(getattr(es_lightning, name) is not None for name in es_lightning.__all__)
