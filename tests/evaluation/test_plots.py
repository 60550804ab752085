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


def _axes():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure()
    FigureCanvasAgg(fig)
    return fig.add_subplot()


def test_close_curves_are_not_magnified_and_carry_the_noise_band():
    """Two curves 0.08 points apart: the axis spans 10 points, not 0.08, and the first curve's
    95 % binomial band (P = 200) is drawn: ±1.96·√(0.477·0.523/200) = ±6.9 points at K = 1."""
    from es_lightning.evaluation.plots import draw_pass_at_k

    ax = _axes()
    draw_pass_at_k(ax, {"start": {1: 0.4770, 4: 0.6}, "es": {1: 0.4778, 4: 0.6}}, problems={"start": 200})
    low, high = ax.get_ylim()
    assert high - low >= 10.0 and 0.0 <= low and high <= 100.0
    (band,) = ax.collections
    assert band.get_label() == "start: 95% noise band (binomial, P=200)"
    edges = band.get_paths()[0].vertices[:, 1]
    half = 100 * 1.959964 * (0.477 * 0.523 / 200) ** 0.5
    assert min(edges) == pytest.approx(47.7 - half) and low <= min(edges)


def test_axis_and_band_stay_inside_0_and_100():
    from es_lightning.evaluation.plots import draw_pass_at_k

    ax = _axes()
    draw_pass_at_k(
        ax, {"start": {1: 0.97, 8: 1.0}, "es": {1: 0.99, 8: 1.0}}, problems={"start": 30, "es": 30}
    )
    low, high = ax.get_ylim()
    assert high == 100.0 and 10.0 <= high - low < 11.0
    (band,) = ax.collections  # the first curve's only
    assert max(band.get_paths()[0].vertices[:, 1]) == 100.0
    ax = _axes()
    draw_pass_at_k(ax, {"start": {1: 0.0, 2: 0.01}})  # no counts: no band
    assert ax.get_ylim() == (0.0, 10.0) and not ax.collections


def test_change_from_start_is_drawn_in_points_against_the_noise_of_a_difference():
    from es_lightning.evaluation.plots import draw_change_from_start

    ax = _axes()
    curves = {"start": {1: 0.40, 4: 0.70}, "es": {1: 0.4008, 4: 0.75}, "grpo": {1: 0.5, 2: 0.6}}
    draw_change_from_start(ax, curves, "start", problems={"start": 100})
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert list(lines["es"].get_xdata()) == [1, 4]
    assert list(lines["es"].get_ydata()) == pytest.approx([0.08, 5.0])
    assert list(lines["grpo"].get_xdata()) == [1]  # only the Ks the start has
    (band,) = ax.collections
    half = 100 * 1.959964 * 2**0.5 * (0.4 * 0.6 / 100) ** 0.5  # ±13.6 points at K = 1
    assert max(band.get_paths()[0].vertices[:, 1]) == pytest.approx(half)
    low, high = ax.get_ylim()
    assert low == -high and high >= half
    with pytest.raises(ValueError, match="no curve 'base'"):
        draw_change_from_start(_axes(), curves, "base")
