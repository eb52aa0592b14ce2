#!/usr/bin/env bash
# Runs everything in gpu-pack/ (made by scripts/gpu/package.sh) on this machine's GPU: the probe, every GPU
# correctness test, then every benchmark; prints a compact table last. Needs bash, coreutils, tar, gzip and
# the NVIDIA driver; no Rust toolchain.
#
#   bash scripts/gpu/run.sh                 # from the repository root, with gpu-pack/ there
#   bash gpu-pack/run.sh                    # the copy inside the pack finds the pack beside it
#   bash scripts/gpu/run.sh --emulator      # the correctness tests on the PTX emulator (no GPU needed)
#   options: --tests-only  --benches-only  --filter SUBSTRING (entries whose name contains it)
#            --skip SUBSTRING (leaves out the entries whose name contains it; repeatable)
#            --quick (benches: only their own same-run timing table, median of event-timed calls; criterion's
#            sampling is skipped with its --ignored flag, which takes a bench from minutes to seconds)
#            --results DIR (default: $OUT when set, else gpu-results/<date>)  --pack DIR
#
# The GPU backend is forced (PRISM_BACKEND=gpu): a test never falls back to the emulator. cuBLAS is looked
# up in the Python packages (nvidia-cublas), then in CUDA installs, and put on the library path.
#
# Exit status: 0 all passed; 1 a test failed, a result disagreed with its reference, or the pack is
# unusable; 3 no GPU is present (nothing ran on a GPU; every entry says so); 2 bad usage.
set -uo pipefail

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }

MODE=gpu
RUN_TESTS=1
RUN_BENCHES=1
FILTER=""
RESULTS=""
PACK=""
QUICK=""
SKIPS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --emulator) MODE=emulator ;;
    --tests-only) RUN_BENCHES=0 ;;
    --benches-only) RUN_TESTS=0 ;;
    --quick) QUICK=--ignored ;;
    --skip) SKIPS+=("${2:?--skip needs a value}"); shift ;;
    --filter) FILTER=${2:?--filter needs a value}; shift ;;
    --results) RESULTS=${2:?--results needs a folder}; shift ;;
    --pack) PACK=${2:?--pack needs a folder}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$PACK" ]; then
  if [ -f "$here/MANIFEST.json" ]; then PACK=$here; else PACK=$PWD/gpu-pack; fi
fi
if [ ! -f "$PACK/MANIFEST.json" ] || [ ! -f "$PACK/ENTRIES.tsv" ] || [ ! -f "$PACK/bin.tar.gz" ]; then
  echo "run.sh: no pack at $PACK (MANIFEST.json, ENTRIES.tsv, bin.tar.gz): run scripts/gpu/package.sh on a build machine and carry gpu-pack/ here" >&2
  exit 1
fi
PACK=$(cd "$PACK" && pwd)
if [ -z "$RESULTS" ]; then
  if [ -n "${OUT:-}" ]; then RESULTS=$OUT; else RESULTS=$PWD/gpu-results/$(date -u +%Y%m%d-%H%M%S); fi
fi
mkdir -p "$RESULTS/logs" "$RESULTS/bench" "$RESULTS/criterion" || { echo "run.sh: cannot create $RESULTS" >&2; exit 1; }
RESULTS=$(cd "$RESULTS" && pwd)
SUMMARY=$RESULTS/summary.tsv
: >"$SUMMARY"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar -C "$WORK" -xzf "$PACK/bin.tar.gz" || { echo "run.sh: cannot unpack $PACK/bin.tar.gz" >&2; exit 1; }

# Manifest fields without a JSON parser: `"key": "value"` on one line each (package.sh writes it so).
field() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" "$PACK/MANIFEST.json" | head -1; }
# Entries: kind<TAB>name<TAB>file<TAB>runs, in the manifest's order.
entries() { cat "$PACK/ENTRIES.tsv"; }

echo "== pack: commit $(field commit), built $(field built) with $(field rustc)"
need=$(field glibc_needed)
have=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9]\+\.[0-9]\+$' || true)
if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "run.sh: the binaries need glibc $need, this host has $have: build the pack on an older system" >&2
  exit 1
fi

# cuBLAS: cudarc opens libcublas.so (or .so.12); the pip package nvidia-cublas ships libcublas.so.<major>.
find_cublas() {
  local dirs=() py d
  for py in python3 python; do
    command -v "$py" >/dev/null || continue
    while IFS= read -r d; do dirs+=("$d"); done < <("$py" -c 'import site, sys
for p in site.getsitepackages() + [site.getusersitepackages()] + sys.path: print(p)' 2>/dev/null)
  done
  dirs+=(/usr/local/cuda/lib64 /usr/local/cuda*/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    find "$d" -maxdepth 4 -name 'libcublas.so*' -not -path '*/stubs/*' 2>/dev/null
  done | grep -E 'libcublas\.so(\.[0-9]+)*$' | head -1
}
mkdir -p "$WORK/lib"
CUBLAS=$(find_cublas || true)
if [ -n "$CUBLAS" ]; then
  ln -sf "$CUBLAS" "$WORK/lib/libcublas.so"
  export LD_LIBRARY_PATH="$WORK/lib:$(dirname "$CUBLAS")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== cuBLAS: $CUBLAS"
else
  echo "== cuBLAS: not found (looked in the Python packages and CUDA installs); benchmarks against it will fail"
fi

export CRITERION_HOME=$RESULTS/criterion
export PRISM_BENCH_OUT=$RESULTS/bench
NO_GPU=""
if [ "$MODE" = gpu ]; then
  export PRISM_BACKEND=gpu
  echo "== device"
  probe=$("$WORK/bin/example_gpu_info" 2>&1)
  rc=$?
  echo "$probe" | tee "$RESULTS/logs/gpu_info.log"
  case $rc in
    0) ;;
    3) NO_GPU=$(echo "$probe" | sed -n 's/^no GPU: //p' | head -1); NO_GPU=${NO_GPU:-no GPU} ;;
    *) echo "run.sh: the GPU probe failed (exit $rc)" >&2
       printf 'probe\tgpu_info\t\t-\t-\t-\tFAIL: exit %s\n' "$rc" >>"$SUMMARY" ;;
  esac
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw,power.limit \
      --format=csv 2>&1 | tee "$RESULTS/logs/nvidia-smi.log"
  else
    echo "(nvidia-smi is not on PATH)"
  fi
else
  export PRISM_BACKEND=emulator
  echo "== backend: the PTX emulator (--emulator): correctness tests only"
fi

selected() {
  local s
  for s in ${SKIPS[@]+"${SKIPS[@]}"}; do [[ "$1" == *"$s"* ]] && return 1; done
  [ -z "$FILTER" ] || [[ "$1" == *"$FILTER"* ]]
}
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$SUMMARY"; }
TIMEOUT=${PRISM_GPU_TIMEOUT:-1800}
run_logged() { # log command...
  local log=$1; shift
  if command -v timeout >/dev/null; then timeout "$TIMEOUT" "$@" >"$log" 2>&1; else "$@" >"$log" 2>&1; fi
}

if [ "$RUN_TESTS" = 1 ]; then
  while IFS=$'\t' read -r kind name file runs; do
    case "$kind" in test|example) ;; *) continue ;; esac
    [ "$name" = gpu_info ] && continue
    selected "$name" || continue
    if [ -n "$NO_GPU" ]; then
      echo "SKIP $kind $name: no GPU present ($NO_GPU)"
      row "$kind" "$name" "" "-" "-" "-" "SKIP: no GPU present"
      continue
    fi
    log=$RESULTS/logs/$kind-$name.log
    echo "== $kind $name: $runs"
    start=$(date +%s)
    if [ "$kind" = test ]; then
      run_logged "$log" "$WORK/$file" --test-threads="${PRISM_TEST_THREADS:-4}"
    else
      run_logged "$log" "$WORK/$file"
    fi
    rc=$?
    secs=$(($(date +%s) - start))
    passed=$(sed -n 's/^test result: .* \([0-9]\+\) passed.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    failed=$(sed -n 's/^test result: .* \([0-9]\+\) failed.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    grep -E '^test .* \.\.\. FAILED|panicked at|^test result' "$log" | head -20
    if [ "$kind" = test ]; then what="$passed passed, $failed failed, ${secs}s"; else what="${secs}s"; fi
    if [ $rc -eq 0 ] && [ "$failed" = 0 ]; then
      row "$kind" "$name" "" "$what" "-" "-" "pass"
    else
      [ $rc -eq 124 ] && what="$what, timed out after ${TIMEOUT}s"
      row "$kind" "$name" "" "$what" "-" "-" "FAIL: exit $rc (log: logs/$kind-$name.log)"
      tail -15 "$log"
    fi
  done < <(entries)
fi

if [ "$RUN_BENCHES" = 1 ]; then
  while IFS=$'\t' read -r kind name file runs; do
    [ "$kind" = bench ] || continue
    selected "$name" || continue
    if [ "$MODE" = emulator ]; then
      echo "SKIP bench $name: benchmarks need a GPU (--emulator runs the correctness tests only)"
      row bench "$name" "" "-" "-" "-" "SKIP: benchmarks need a GPU"
      continue
    fi
    log=$RESULTS/logs/bench-$name.log
    echo "== bench $name: $runs"
    rm -f "$RESULTS/bench/$name.tsv"
    run_logged "$log" "$WORK/$file" --bench $QUICK
    rc=$?
    if [ -n "$NO_GPU" ]; then
      # The bench itself says it found no GPU; show that line.
      grep -m1 '^no GPU' "$log" || echo "no GPU: $NO_GPU"
      row bench "$name" "" "-" "-" "-" "SKIP: no GPU present"
      continue
    fi
    # The bench's own table (everything after its last criterion line).
    sed -n '/ on .*ratio = ours \/ reference/,$p' "$log"
    if [ -s "$RESULTS/bench/$name.tsv" ]; then
      cat "$RESULTS/bench/$name.tsv" >>"$SUMMARY"
    fi
    if [ $rc -ne 0 ]; then
      [ -s "$RESULTS/bench/$name.tsv" ] && grep -q 'FAIL' "$RESULTS/bench/$name.tsv" ||
        row bench "$name" "" "-" "-" "-" "FAIL: exit $rc (log: logs/bench-$name.log)"
      tail -15 "$log"
    fi
  done < <(entries)
fi

# The final table: kind/bench, kernel, size, ours, reference, ratio, check.
{
  printf 'what\tkernel\tsize\tours\treference\tratio\tcheck\n'
  cat "$SUMMARY"
} | awk -F'\t' '
  { for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR; if (NF > nf) nf = NF }
  END {
    for (r = 1; r <= n; r++) {
      line = ""
      for (i = 1; i <= nf; i++) line = line sprintf("%-" w[i] "s", cell[r, i]) (i < nf ? "  " : "")
      sub(/ +$/, "", line); print line
      if (r == 1) { t = 2 * (nf - 1); for (i = 1; i <= nf; i++) t += w[i]; s = ""; for (i = 1; i <= t; i++) s = s "-"; print s }
    }
  }' >"$RESULTS/summary.txt"

fails=$(awk -F'\t' '$7 ~ /^FAIL/' "$SUMMARY" | wc -l)
passes=$(awk -F'\t' '$7 == "pass"' "$SUMMARY" | wc -l)
skips=$(awk -F'\t' '$7 ~ /^SKIP/' "$SUMMARY" | wc -l)
echo
echo "== summary (commit $(field commit); results in $RESULTS)"
[ -f "$RESULTS/logs/gpu_info.log" ] && grep '^device:' "$RESULTS/logs/gpu_info.log"
cat "$RESULTS/summary.txt"
echo "$passes passed, $fails failed, $skips skipped"
if [ "$fails" -gt 0 ]; then exit 1; fi
if [ -n "$NO_GPU" ]; then
  echo "NO GPU: nothing ran on a GPU ($NO_GPU)"
  exit 3
fi
exit 0
