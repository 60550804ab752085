"""The ES centre θ as fp32 master weights, written into whatever model serves generation.

The serving model may be an HF module (write = ``copy_`` into its parameters) or a vLLM engine's
model (write = its own ``load_weights``, which fuses and shards). Either way every write is
computed from the fp32 master and cast once, so ``restore`` is bit-exact whatever the serving dtype
and the update is accumulated in fp32 (see :mod:`es_lightning.es.update`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Literal

import torch

from es_lightning.es.noise import noise_like
from es_lightning.es.update import apply_es_update, assign_es_grad_

ES_STATE = "es_state"
"""Subfolder of a checkpoint holding the fp32 master and the optimizer state."""
Writer = Callable[[Iterable[tuple[str, torch.Tensor]]], None]
OptimizerName = Literal["sgd", "adam"]


class ESWeights:
    """fp32 master of the centre plus a writer into the serving weights.

    Args:
        master: HF-named fp32 tensors (the centre θ); owned by this object.
        write: puts ``(name, tensor)`` pairs into the serving model.
        serving_dtype: dtype the serving model holds.
        optimizer: ``sgd`` = plain ES (θ ← θ + Δ); ``adam`` feeds −Δ/α as the gradient to
            ``torch.optim.Adam(lr=α)``.
    """

    def __init__(
        self,
        master: dict[str, torch.Tensor],
        write: Writer,
        serving_dtype: torch.dtype,
        optimizer: OptimizerName = "sgd",
        adam_betas: tuple[float, float] = (0.9, 0.999),
        adam_eps: float = 1e-8,
    ) -> None:
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"ESWeights: unknown optimizer {optimizer!r}; use 'sgd' or 'adam'")
        self.master = {n: t.to(torch.float32) for n, t in master.items()}
        self.write = write
        self.serving_dtype = serving_dtype
        self.optimizer_name = optimizer
        self._adam: torch.optim.Adam | None = None
        self._adam_args = dict(betas=adam_betas, eps=adam_eps)

    def perturbed(self, seed: int, sign: float, sigma: float) -> Iterator[tuple[str, torch.Tensor]]:
        """θ + sign·σ·ε_seed per tensor, computed in fp32 and cast once to the serving dtype."""
        for name, m in self.master.items():
            eps = noise_like(seed, name, m.shape, m.device)
            yield name, torch.add(m, eps, alpha=float(sign) * float(sigma)).to(self.serving_dtype)

    @torch.no_grad()
    def perturb(self, seed: int, sign: float, sigma: float) -> None:
        self.write(self.perturbed(seed, sign, sigma))

    @torch.no_grad()
    def restore(self) -> None:
        self.write((n, m.to(self.serving_dtype)) for n, m in self.master.items())

    @torch.no_grad()
    def update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·Σ_s c_s ε_s (or the Adam step on it); writes the new centre; returns ‖Δ‖₂."""
        if self.optimizer_name == "sgd":
            norm = apply_es_update(self.master, coeffs, lr, population_size)
        else:
            before = {n: m.clone() for n, m in self.master.items()}
            if self._adam is None:
                for m in self.master.values():
                    m.requires_grad_(True)
                self._adam = torch.optim.Adam(list(self.master.values()), lr=lr, **self._adam_args)
            for group in self._adam.param_groups:  # α may differ from the one a resumed state was made with
                group["lr"] = lr
            assign_es_grad_(self.master, coeffs, population_size)
            self._adam.step()
            self._adam.zero_grad(set_to_none=True)
            norm = float(
                torch.sqrt(
                    sum(((m.detach() - before[n]).double().square().sum() for n, m in self.master.items()))
                )
            )
        self.restore()
        return norm

    def checksum(self) -> float:
        return float(sum(m.detach().double().sum().item() for m in self.master.values()))

    def state_dict(self) -> dict:
        """A copy of the optimizer state (``None`` for plain ES)."""
        import copy

        return {"optimizer": None if self._adam is None else copy.deepcopy(self._adam.state_dict())}

    def load_state_dict(self, state: dict) -> None:
        if state.get("optimizer") is not None:
            if self.optimizer_name != "adam":
                raise ValueError("ESWeights: the checkpoint holds Adam state but the optimizer is 'sgd'")
            for m in self.master.values():
                m.requires_grad_(True)
            self._adam = torch.optim.Adam(list(self.master.values()), lr=0.0, **self._adam_args)
            self._adam.load_state_dict(state["optimizer"])


def load_master(
    files: Iterable[str], device: torch.device | str, names: set[str] | None = None
) -> dict[str, torch.Tensor]:
    """fp32 tensors from safetensors ``files`` (keeping only ``names`` when given), on ``device``."""
    from safetensors import safe_open

    master: dict[str, torch.Tensor] = {}
    for f in files:
        with safe_open(f, framework="pt", device="cpu") as handle:
            for key in handle.keys():
                if names is None or key in names:
                    master[key] = handle.get_tensor(key).to(device=device, dtype=torch.float32)
    if not master:
        raise ValueError(f"load_master: no tensors found in {list(files)}")
    return master


def save_es_files(weights: ESWeights, directory: str) -> None:
    """``model.safetensors`` (the centre cast to the serving dtype, loadable by transformers and
    vLLM) plus ``es_state/master.safetensors`` (fp32 centre, for exact resume) and
    ``es_state/optimizer.pt`` (kept in a subfolder so model loaders do not pick them up)."""
    from pathlib import Path

    from safetensors.torch import save_file

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    master = {n: m.detach().to("cpu").contiguous() for n, m in weights.master.items()}
    save_file(
        {n: m.to(weights.serving_dtype) for n, m in master.items()},
        str(out / "model.safetensors"),
        {"format": "pt"},
    )
    (out / ES_STATE).mkdir(exist_ok=True)
    save_file(master, str(out / ES_STATE / "master.safetensors"), {"format": "pt"})
    torch.save(weights.state_dict(), out / ES_STATE / "optimizer.pt")


def resume_es_weights(weights: ESWeights, state_dir: str) -> None:
    """Replace ``weights``' master and optimizer state with those saved in ``state_dir``."""
    from pathlib import Path

    folder = Path(state_dir)
    master_file = folder / "master.safetensors"
    if not master_file.is_file():
        raise FileNotFoundError(f"ES resume: {master_file} does not exist")
    device = next(iter(weights.master.values())).device
    saved = load_master([str(master_file)], device)
    if set(saved) != set(weights.master):
        diff = sorted(set(saved) ^ set(weights.master))[:5]
        raise KeyError(f"ES resume: {master_file} does not match the model's parameters (e.g. {diff})")
    weights.master = saved
    optimizer_file = folder / "optimizer.pt"
    if optimizer_file.is_file():
        weights.load_state_dict(torch.load(optimizer_file, map_location=device, weights_only=True))
    weights.restore()


MASTER_FOLDERS = ("es_state", "grpo_state")
"""Checkpoint subfolders whose ``master.safetensors`` holds the fp32 weights."""


def full_precision_master(model_path: str) -> str | None:
    """The fp32 ``master.safetensors`` of an es-lightning checkpoint folder, if it has one."""
    from pathlib import Path

    for sub in MASTER_FOLDERS:
        candidate = Path(model_path) / sub / "master.safetensors"
        if candidate.is_file():
            return str(candidate)
    return None


def model_weight_files(model_path: str) -> list[str]:
    """The weights to read an fp32 master from: an es-lightning checkpoint's own fp32 master when
    present, else the ``*.safetensors`` files of a local folder or of a hub id in the local cache."""
    from pathlib import Path

    master = full_precision_master(model_path)
    if master is not None:
        return [master]
    folder = Path(model_path)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(model_path, allow_patterns=["*.safetensors"], local_files_only=True))
    files = sorted(str(f) for f in folder.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"ES: no *.safetensors weights in {folder}")
    return files
