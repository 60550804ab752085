"""Float32 tensors between the trainer and a vLLM worker through a shared-memory file in
``/dev/shm``, instead of ``collective_rpc``'s copies."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Iterator, Mapping

import torch


@contextlib.contextmanager
def exchange_file(numbers: int) -> Iterator[str]:
    """A fresh file for ``numbers`` float32 values in shared memory (else the temporary folder)."""
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="es-lightning-exchange-", suffix=".f32", dir=folder)
    try:
        os.ftruncate(fd, 4 * max(int(numbers), 1))
        os.close(fd)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def unflatten(flat: torch.Tensor, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """Views of ``flat`` with the given shapes, one after another in ``shapes``' order."""
    out, offset = {}, 0
    for name, shape in shapes.items():
        n = math.prod(shape)
        out[name] = flat[offset : offset + n].view(shape)
        offset += n
    if offset != flat.numel():
        raise ValueError(f"unflatten: {flat.numel()} numbers for shapes of {offset}")
    return out
