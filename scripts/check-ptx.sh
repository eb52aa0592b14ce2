#!/usr/bin/env bash
# Writes every kernel of the workspace as PTX (examples/dump_ptx) and assembles each with
# `ptxas -arch=sm_90a`. Any warning, error or local-memory use fails the check.
set -euo pipefail
cd "$(dirname "$0")/.."
PTXAS=${PRISM_PTXAS:-.tools/ptxas/nvidia/cuda_nvcc/bin/ptxas}
OUT=${1:-target/ptx-check}
rm -rf "$OUT" && mkdir -p "$OUT"
cargo run --quiet --example dump_ptx -- "$OUT"
n=0; bad=0
for f in "$OUT"/*.ptx; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  log=$("$PTXAS" -arch=sm_90a -v -o /dev/null "$f" 2>&1) || { echo "FAIL $f"; echo "$log"; bad=$((bad + 1)); continue; }
  if echo "$log" | grep -qi "warning"; then echo "WARN $f"; echo "$log"; bad=$((bad + 1)); continue; fi
  if echo "$log" | grep -Eq "[1-9][0-9]* bytes (stack frame|spill)"; then echo "LOCAL MEMORY $f"; echo "$log"; bad=$((bad + 1)); continue; fi
  regs=$(echo "$log" | grep -o "Used [0-9]* registers" | head -1)
  echo "ok   $(basename "$f") ($regs)"
done
if [ "$n" -eq 0 ]; then echo "no PTX files were written" >&2; exit 1; fi
echo "$n PTX files assembled, $bad failed"
[ "$bad" -eq 0 ]
