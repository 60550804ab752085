import pytest

from es_lightning.evaluation.plots import plot_pass_at_k

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_writes_a_png(tmp_path):
    base = {k: min(1.0, 0.2 + 0.1 * i) for i, k in enumerate([1, 2, 4, 8, 16, 32, 64])}
    after = {k: min(1.0, 0.35 + 0.07 * i) for i, k in enumerate([1, 2, 4, 8, 16, 32, 64])}
    path = plot_pass_at_k(
        {"base": base, "after ES": after}, tmp_path / "sub" / "pass_at_k.png", title="gsm8k"
    )
    assert path == tmp_path / "sub" / "pass_at_k.png"
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_MAGIC


def test_single_point_curve(tmp_path):
    path = plot_pass_at_k({"base": {1: 0.5}}, tmp_path / "one.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="no curves"):
        plot_pass_at_k({}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="'base' has no points"):
        plot_pass_at_k({"base": {}}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        plot_pass_at_k({"base": {1: 45.0}}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="k must be >= 1"):
        plot_pass_at_k({"base": {0: 0.5}}, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
