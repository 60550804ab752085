"""A shared noise table: each member's ε a slice of one seeded table of Gaussian numbers.

``noise: table`` (Salimans et al. 2017): ``size`` float32 N(0, 1) numbers drawn once per process
from :data:`TABLE_SEED`; ε of ``name`` under ``s`` is the ``numel`` numbers from offset
``param_seed(s, name) mod size``, wrapping. Reading a slice is far cheaper than drawing on a CPU.
Slices overlap, so members are not independent; :func:`check_table_size` refuses a tensor larger
than the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import torch

from es_lightning.errors import ConfigError
from es_lightning.es.noise import param_seed

NoiseSource = Literal["generator", "table"]
NOISE_SOURCES: tuple[str, ...] = ("generator", "table")
TABLE_SEED = 123
"""The generator seed of every table (the public ES code's, Salimans et al. 2017)."""

_tables: dict[tuple[int, str], NoiseTable] = {}


class NoiseTable:
    """``size`` float32 standard-normal numbers on ``device`` and the slices ES reads from them."""

    def __init__(self, size: int, device: torch.device | str | None = None) -> None:
        if size < 1:
            raise ValueError(f"NoiseTable: size must be >= 1, got {size}")
        self.device = torch.device("cpu") if device is None else torch.device(device)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(TABLE_SEED)
        self.numbers = torch.randn(size, generator=gen, device=self.device, dtype=torch.float32)
        """T, one dimension; read only (a slice may be a view of it)."""

    @property
    def size(self) -> int:
        """Numbers in the table."""
        return self.numbers.numel()

    def offset(self, seed: int, name: str) -> int:
        """Where ε of ``name`` under member seed ``seed`` starts in the table."""
        return param_seed(seed, name) % self.size

    def slice(self, seed: int, name: str, shape: Sequence[int] | torch.Size) -> torch.Tensor:
        """ε of ``name`` under ``seed``: a read-only view of the table, or a copy where it wraps."""
        numel = math.prod(int(d) for d in shape)
        if numel > self.size:
            raise ValueError(f"NoiseTable: {name!r} has {numel} numbers, more than the table's {self.size}")
        start = self.offset(seed, name)
        end = start + numel
        if end <= self.size:
            return self.numbers[start:end].view(tuple(shape))
        return torch.cat((self.numbers[start:], self.numbers[: end - self.size])).view(tuple(shape))


def check_table_size(size: int, shapes: Mapping[str, Sequence[int]]) -> None:
    """Refuse a table smaller than the largest tensor of ``shapes`` (its ε would repeat itself)."""
    numels = {name: math.prod(int(d) for d in shape) for name, shape in shapes.items()}
    if numels:
        largest = max(numels, key=lambda n: numels[n])
        if numels[largest] > size:
            raise ConfigError(
                f"ESStrategy: noise_table_size {size} is smaller than the tensor {largest!r} "
                f"({numels[largest]} numbers); set strategy.init_args.noise_table_size to at least "
                f"{numels[largest]}"
            )


def noise_table(size: int, device: torch.device | str | None = None) -> NoiseTable:
    """The process's table of ``size`` numbers on ``device``, built at the first call and kept."""
    device = torch.device("cpu") if device is None else torch.device(device)
    key = (int(size), str(device))
    if key not in _tables:
        _tables[key] = NoiseTable(size, device)
    return _tables[key]
