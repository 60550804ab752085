"""What training did to the weights: drift, sparsity, the largest updates, thresholded export.

``es-lightning analyze`` compares a checkpoint with its starting model; its accumulators stream
tensor by tensor, so callbacks reuse them on weights streamed out of a strategy::

    analyzer = PairAnalyzer(taus=[1e-3], top_k=100, view="stored")
    for name, theta in strategy_weights:
        analyzer.add(name, base.get(name), theta)       # base: a WeightIndex over θ_0's files
"""

from es_lightning.analysis.delta import VIEWS, View, in_view, parse_taus, tau_key, weight_delta
from es_lightning.analysis.drift import DriftAccumulator
from es_lightning.analysis.kinds import KINDS, layer_index, parameter_kind
from es_lightning.analysis.pair import PairAnalyzer, analyze_pair
from es_lightning.analysis.sparsity import SparsityAccumulator
from es_lightning.analysis.topk import TopKAccumulator

__all__ = [
    "KINDS",
    "VIEWS",
    "DriftAccumulator",
    "PairAnalyzer",
    "SparsityAccumulator",
    "TopKAccumulator",
    "View",
    "analyze_pair",
    "in_view",
    "layer_index",
    "parameter_kind",
    "parse_taus",
    "tau_key",
    "weight_delta",
]
