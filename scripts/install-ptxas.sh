#!/usr/bin/env bash
# Installs ptxas from PyPI (the nvidia-cuda-nvcc wheel: no CUDA toolkit needed) into .tools/ptxas, unless it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PTXAS=.tools/ptxas/nvidia/cuda_nvcc/bin/ptxas
if [ -x "$PTXAS" ]; then exit 0; fi
python3 -m pip install --quiet --disable-pip-version-check --no-deps --target .tools/ptxas "nvidia-cuda-nvcc-cu12==12.9.86"
test -x "$PTXAS" || { echo "ptxas not found at $PTXAS after install" >&2; exit 1; }
