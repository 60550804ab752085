import json
import re

import pytest

from es_lightning.evaluation.offline import score_completions_file, write_completions_file
from es_lightning.tasks.base import Score, Task


class ExactMatch(Task):
    """Test-local task: the completion, stripped, must equal the row's ``target``."""

    name = "exact"
    required_columns = ("q", "target")

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def question(self, row):
        return row["q"]

    def score(self, completion, row):
        answer = completion.strip() or None
        return Score(reward=float(answer == row["target"]), answer=answer, extra={"chars": len(completion)})

    def score_many(self, completions, rows):
        self.calls.append(len(completions))
        return super().score_many(completions, rows)


ROWS = [{"q": "1+1", "target": "2"}, {"q": "2+3", "target": "5"}]
COMPLETIONS = [["2", "3", "3"], ["4", " ", "5"]]


def _write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_round_trip_scores_in_one_batch(tmp_path):
    path = write_completions_file(tmp_path / "out" / "c.jsonl", ROWS, COMPLETIONS, greedy=["2", "4"])
    task = ExactMatch()
    out = score_completions_file(task, path, ks=[1, 3])
    assert task.calls == [8]  # 6 sampled + 2 greedy, one call
    assert out["n_prompts"] == 2 and out["n_samples"] == 3
    assert out["pass@1"] == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert out["pass@3"] == 1.0
    assert out["maj@1"] == pytest.approx(1 / 3)  # = pass@1 (maj@k averages over the k-subsets)
    assert out["maj@3"] == 0.25  # "3" wins prompt 0; prompt 1: " " is no answer, "4"/"5" tie: 1/2
    assert out["greedy"] == 0.5
    assert out["chars"] == pytest.approx(1.0)
    first = json.loads(path.read_text().splitlines()[0])
    assert first == {"q": "1+1", "target": "2", "completions": ["2", "3", "3"], "greedy": "2"}


def test_blank_lines_are_skipped_and_greedy_is_optional(tmp_path):
    lines = [json.dumps({**r, "completions": c}) for r, c in zip(ROWS, COMPLETIONS, strict=True)]
    path = _write_lines(tmp_path / "c.jsonl", [lines[0], "", lines[1]])
    out = score_completions_file(ExactMatch(), path)
    assert "greedy" not in out and out["pass@3"] == 1.0


def test_bad_json_names_the_line(tmp_path):
    good = json.dumps({**ROWS[0], "completions": ["2"]})
    path = _write_lines(tmp_path / "c.jsonl", [good, good, "{not json"])
    with pytest.raises(ValueError, match=r"line 3: invalid JSON"):
        score_completions_file(ExactMatch(), path)


def test_missing_completions_names_the_line(tmp_path):
    path = _write_lines(
        tmp_path / "c.jsonl", [json.dumps({**ROWS[0], "completions": ["2"]}), json.dumps(ROWS[1])]
    )
    with pytest.raises(ValueError, match=r"line 2: missing 'completions'"):
        score_completions_file(ExactMatch(), path)


def test_different_m_names_the_line(tmp_path):
    path = _write_lines(
        tmp_path / "c.jsonl",
        [json.dumps({**ROWS[0], "completions": ["2", "2"]}), json.dumps({**ROWS[1], "completions": ["5"]})],
    )
    with pytest.raises(ValueError, match=r"line 2: 1 completions but line 1 has 2"):
        score_completions_file(ExactMatch(), path)


def test_other_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        score_completions_file(ExactMatch(), tmp_path / "missing.jsonl")
    empty = _write_lines(tmp_path / "empty.jsonl", [""])
    with pytest.raises(ValueError, match="no rows"):
        score_completions_file(ExactMatch(), empty)
    no_col = _write_lines(tmp_path / "nocol.jsonl", [json.dumps({"q": "1", "completions": ["1"]})])
    with pytest.raises(ValueError, match=r"line 1 lacks column\(s\) \['target'\]"):
        score_completions_file(ExactMatch(), no_col)
    bad = _write_lines(tmp_path / "bad.jsonl", [json.dumps({**ROWS[0], "completions": []})])
    with pytest.raises(ValueError, match="line 1: 'completions' must be a non-empty list"):
        score_completions_file(ExactMatch(), bad)


def test_write_errors(tmp_path):
    with pytest.raises(ValueError, match="row 1 has 1 completions, row 0 has 3"):
        write_completions_file(tmp_path / "c.jsonl", ROWS, [["a", "b", "c"], ["a"]])
    with pytest.raises(ValueError, match="2 rows but 1 completion lists"):
        write_completions_file(tmp_path / "c.jsonl", ROWS, [["a"]])
    with pytest.raises(ValueError, match="row 0 already has"):
        write_completions_file(tmp_path / "c.jsonl", [{"completions": 1}], [["a"]])
    with pytest.raises(TypeError, match="row 0 is not JSON-serialisable"):
        write_completions_file(tmp_path / "c.jsonl", [{"x": object()}], [["a"]])


def _final_number(solution: str) -> str:
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def test_gsm8k_gold_solutions_and_wrong_numbers(tmp_path, gsm8k_test_file):
    gsm8k = pytest.importorskip("es_lightning.tasks.gsm8k", reason="es_lightning.tasks.gsm8k not written yet")
    with gsm8k_test_file.open(encoding="utf-8") as f:
        rows = [json.loads(next(f)) for _ in range(4)]
    task = gsm8k.GSM8K()

    gold = write_completions_file(tmp_path / "gold.jsonl", rows, [[r["answer"]] for r in rows])
    out = score_completions_file(task, gold)
    assert out["pass@1"] == 1.0 and out["maj@1"] == 1.0

    def wrong(solution: str) -> str:
        n = _final_number(solution)
        return re.sub(r"####.*$", f"#### {int(float(n)) + 1}", solution.strip())

    bad = write_completions_file(tmp_path / "wrong.jsonl", rows, [[wrong(r["answer"])] for r in rows])
    out = score_completions_file(task, bad)
    assert out["pass@1"] == 0.0 and out["maj@1"] == 0.0


def _exact(prompts, completions, target, **columns):
    return [float(c.strip() == t) for c, t in zip(completions, target, strict=True)]


def test_reward_function_task_has_pass_at_k_but_no_maj_at_k(tmp_path):
    """A FunctionTask extracts no answer: maj@k is absent (not a 0 that reads as a failed vote)."""
    from es_lightning.tasks.function import FunctionTask

    rows = [{"prompt": r["q"], "target": r["target"]} for r in ROWS]
    path = write_completions_file(tmp_path / "c.jsonl", rows, COMPLETIONS)
    out = score_completions_file(FunctionTask(reward_funcs=[_exact]), path, ks=[1, 3])
    assert out["pass@1"] == pytest.approx(1 / 3) and out["pass@3"] == 1.0
    assert not [key for key in out if key.startswith("maj@")]
