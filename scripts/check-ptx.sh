#!/usr/bin/env bash
# Writes every kernel of the workspace as PTX (examples/dump_ptx) and assembles each with
# `ptxas -arch=sm_90a`. Any warning, error or local-memory use fails the check.
#
# Then the SASS fence audit: each cubin disassembled with nvdisasm, its memory fences (MEMBAR.*) counted
# by kind and compared with tests/golden/sass_fences.txt. A fence in SASS can come from a PTX instruction
# that does not say "fence" (an mbarrier arrive with `.release.cluster` assembles to MEMBAR.ALL.GPU before
# the arrival), and costs a hot loop dearly; a changed count fails the check until it is looked at and
# blessed: `PRISM_BLESS=1 bash scripts/check-ptx.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
PTXAS=${PRISM_PTXAS:-.tools/ptxas/nvidia/cuda_nvcc/bin/ptxas}
NVDISASM=${PRISM_NVDISASM:-.tools/nvdisasm/nvidia/cu13/bin/nvdisasm}
GOLDEN=tests/golden/sass_fences.txt
OUT=${1:-target/ptx-check}
rm -rf "$OUT" && mkdir -p "$OUT"
cargo run --quiet --example dump_ptx -- "$OUT"
n=0; bad=0
: > "$OUT/sass_fences.txt"
for f in "$OUT"/*.ptx; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  k=$(basename "$f" .ptx)
  log=$("$PTXAS" -arch=sm_90a -v -o "$OUT/$k.cubin" "$f" 2>&1) || { echo "FAIL $f"; echo "$log"; bad=$((bad + 1)); continue; }
  if echo "$log" | grep -qi "warning"; then echo "WARN $f"; echo "$log"; bad=$((bad + 1)); continue; fi
  if echo "$log" | grep -Eq "[1-9][0-9]* bytes (stack frame|spill)"; then echo "LOCAL MEMORY $f"; echo "$log"; bad=$((bad + 1)); continue; fi
  regs=$(echo "$log" | grep -o "Used [0-9]* registers" | head -1)
  echo "ok   $(basename "$f") ($regs)"
  if [ -x "$NVDISASM" ]; then
    if ! sass=$("$NVDISASM" -c "$OUT/$k.cubin" 2>"$OUT/$k.nvdisasm.log"); then
      echo "NVDISASM FAILED $k.cubin"; cat "$OUT/$k.nvdisasm.log"; bad=$((bad + 1)); continue
    fi
    fences=$(echo "$sass" | { grep -oE "MEMBAR(\.[A-Z]+)+" || true; } | sort | uniq -c | awk '{printf " %s=%s", $2, $1}')
    echo "$k${fences:- none}" >> "$OUT/sass_fences.txt"
  fi
done
if [ "$n" -eq 0 ]; then echo "no PTX files were written" >&2; exit 1; fi
echo "$n PTX files assembled, $bad failed"
[ "$bad" -eq 0 ]
if [ ! -x "$NVDISASM" ]; then
  echo "SASS fence audit skipped: no nvdisasm at $NVDISASM (bash scripts/install-ptxas.sh installs it)"
  exit 0
fi
if [ "${PRISM_BLESS:-}" = 1 ]; then
  cp "$OUT/sass_fences.txt" "$GOLDEN"
  echo "SASS fence audit: blessed $GOLDEN ($(wc -l < "$GOLDEN") kernels)"
elif ! diff -u "$GOLDEN" "$OUT/sass_fences.txt"; then
  echo "SASS fence audit: the fences above changed (- expected, + now); look at the SASS" \
    "(nvdisasm -c $OUT/<kernel>.cubin) and bless with PRISM_BLESS=1 if they are meant" >&2
  exit 1
else
  echo "SASS fence audit: $(wc -l < "$GOLDEN") kernels as $GOLDEN says"
fi
