#!/usr/bin/env bash
# Installs ptxas from PyPI (the nvidia-cuda-nvcc wheel: no CUDA toolkit needed) into .tools/ptxas, and
# nvdisasm (the nvidia-cuda-nvdisasm wheel) into .tools/nvdisasm for scripts/check-ptx.sh's SASS fence
# audit, unless they are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PTXAS=.tools/ptxas/nvidia/cuda_nvcc/bin/ptxas
NVDISASM=.tools/nvdisasm/nvidia/cu13/bin/nvdisasm
if [ ! -x "$PTXAS" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target .tools/ptxas "nvidia-cuda-nvcc-cu12==12.9.86"
  test -x "$PTXAS" || { echo "ptxas not found at $PTXAS after install" >&2; exit 1; }
fi
if [ ! -x "$NVDISASM" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target .tools/nvdisasm "nvidia-cuda-nvdisasm==13.5.37"
  test -x "$NVDISASM" || { echo "nvdisasm not found at $NVDISASM after install" >&2; exit 1; }
fi
