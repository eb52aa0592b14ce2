#!/usr/bin/env bash
# Builds (release) every test, benchmark and example binary that runs kernels on a GPU, strips them and packs
# them with a manifest into gpu-pack/ at the repository root, for a GPU host that has the NVIDIA driver but
# no Rust toolchain. Carry gpu-pack/ (and this repository's scripts/gpu/run.sh, or the copy inside the pack)
# to the host and run `bash scripts/gpu/run.sh` there. Prints the pack's size last.
#
#   bash scripts/gpu/package.sh            # build and pack
#   PRISM_PACK_MAX_MIB=48 bash scripts/gpu/package.sh   # fail if the pack is larger (default 48 MiB)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PACK="$ROOT/gpu-pack"
MAX_MIB=${PRISM_PACK_MAX_MIB:-48}

for tool in cargo python3 strip tar gzip; do
  command -v "$tool" >/dev/null || { echo "package.sh: '$tool' is needed and not on PATH" >&2; exit 1; }
done

# What goes into the pack: kind|name|cargo selection|what it runs. run.sh runs tests and examples in this
# order, then the benches.
TARGETS=(
  "example|gpu_info|-p prism-runtime --example gpu_info|probe: device, compute capability, clocks, driver, cuBLAS"
  "example|quickstart|-p prism --example quickstart|README quick start: vector add and the Fig. 6 TF32 matmul vs CPU"
  "test|gpu_kernels|-p prism --test gpu_kernels|every library kernel's host API at GPU sizes vs CPU references"
  "test|e2e_kernels|-p prism --test e2e_kernels|vector add, Fig. 6 mma, appendix-B load/store chain, cross-crate kernels vs CPU"
  "test|e2e_contracts|-p prism --test e2e_contracts|kernel contracts: bad launches refused before anything runs"
  "test|scan_reduce|-p prism --test scan_reduce|reduce/scan device functions and kernels vs CPU references"
  "test|runtime_api|-p prism-runtime --test runtime_api|runtime API: buffers, launches, argument checks, errors"
  "test|runtime_env|-p prism-runtime --test runtime_env|PRISM_BACKEND overrides Device::auto"
  "test|runtime_tensor_map|-p prism-runtime --test runtime_tensor_map|tensor maps (cuTensorMapEncodeTiled, TMA box per swizzle vs CPU), cluster launches (cuLaunchKernelEx), 227 KiB dynamic smem"
  "test|gemm_bf16|-p prism --test gemm_bf16|Hopper bf16 GEMM ladder (TMA, wgmma, rings, setmaxnreg) vs an f64 CPU reference, ragged sizes"
  "test|gemm_bf16_out|-p prism --test gemm_bf16_out|rung 7: bf16 output through shared memory and TMA stores vs an f64 CPU reference, ragged sizes"
  "test|emu_vs_gpu|-p prism --test emu_vs_gpu|differential check: nvcc fixtures and workspace kernels, emulator vs GPU, every output byte"
  "bench|sgemm|-p prism --bench sgemm|sgemm ladder and Fig. 6 TF32 vs cuBLAS SGEMM / TF32, 1024-4096"
  "bench|gemm_bf16|-p prism --bench gemm_bf16|bf16 GEMM ladder vs cuBLAS bf16 (cublasGemmEx; f32 and bf16 output), 2048-8192 and two LLM shapes"
  "bench|scan|-p prism --bench scan|decoupled look-back scan vs device-to-device copy, 2^20-2^28"
  "bench|reduce|-p prism --bench reduce|device-wide reduction vs device-to-device copy, 2^20-2^28"
)

# Build one kind of target and print "name<TAB>executable" for each artifact built.
build() { # cargo-subcommand selection...
  local sub=$1; shift
  local -a cmd
  case "$sub" in
    test) cmd=(cargo test --release --no-run) ;;
    bench) cmd=(cargo bench --no-run) ;;
    example) cmd=(cargo build --release) ;;
  esac
  "${cmd[@]}" "$@" --message-format=json-render-diagnostics | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"] + "\t" + m["executable"])
'
}

echo "== building (release)"
declare -A EXE
for kind in example test bench; do
  sel=()
  for t in "${TARGETS[@]}"; do
    IFS='|' read -r k name cargo_sel _ <<<"$t"
    [ "$k" = "$kind" ] || continue
    # shellcheck disable=SC2206
    sel+=($cargo_sel)
  done
  # One cargo call per package keeps the selection valid for each.
  for pkg in prism prism-runtime; do
    psel=()
    i=0
    while [ $i -lt ${#sel[@]} ]; do
      if [ "${sel[$i]}" = "-p" ] && [ "${sel[$((i + 1))]}" = "$pkg" ]; then
        psel+=("${sel[$((i + 2))]}" "${sel[$((i + 3))]}")
      fi
      i=$((i + 4))
    done
    [ ${#psel[@]} -gt 0 ] || continue
    while IFS=$'\t' read -r name exe; do
      EXE["$kind:$name"]=$exe
    done < <(build "$kind" -p "$pkg" "${psel[@]}")
  done
done

echo "== packing into $PACK"
rm -rf "$PACK"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$PACK"
ENTRIES="$STAGE/entries.tsv"
: >"$ENTRIES"
for t in "${TARGETS[@]}"; do
  IFS='|' read -r kind name _ what <<<"$t"
  exe=${EXE["$kind:$name"]:-}
  if [ -z "$exe" ] || [ ! -x "$exe" ]; then
    echo "package.sh: cargo built no executable for $kind '$name'" >&2
    exit 1
  fi
  file="${kind}_${name}"
  cp "$exe" "$STAGE/bin/$file"
  strip "$STAGE/bin/$file"
  printf '%s\t%s\t%s\t%s\n' "$kind" "$name" "bin/$file" "$what" >>"$ENTRIES"
done
cp "$ENTRIES" "$PACK/ENTRIES.tsv"
cp scripts/gpu/run.sh "$PACK/run.sh"

COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=$(git status --porcelain --untracked-files=no 2>/dev/null | head -1)
python3 - "$STAGE" "$PACK" "$COMMIT" "${DIRTY:+dirty}" "$(rustc -V)" "$(cargo -V)" <<'EOF'
import hashlib, json, os, re, subprocess, sys, datetime
stage, pack, commit, dirty, rustc, cargo = sys.argv[1:7]
glibc_re = re.compile(rb"GLIBC_(\d+)\.(\d+)(?:\.(\d+))?")
entries, needed_all = [], (0, 0)
for line in open(os.path.join(stage, "entries.tsv")):
    kind, name, file, what = line.rstrip("\n").split("\t")
    data = open(os.path.join(stage, file), "rb").read()
    needed = max(((int(a), int(b)) for a, b, _ in glibc_re.findall(data)), default=(0, 0))
    needed_all = max(needed_all, needed)
    entries.append({
        "kind": kind, "name": name, "file": file, "runs": what,
        "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
        "glibc": "%d.%d" % needed,
    })
try:
    host_glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
except (ValueError, OSError, AttributeError):
    host_glibc = "unknown"
manifest = {
    "format": 1,
    "commit": commit + ("-dirty" if dirty else ""),
    "built": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "rustc": rustc, "cargo": cargo,
    "target": subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout.split("host: ")[1].split()[0],
    "glibc_needed": "%d.%d" % needed_all,
    "glibc_build_host": host_glibc,
    "archive": "bin.tar.gz",
    "entries": entries,
}
json.dump(manifest, open(os.path.join(pack, "MANIFEST.json"), "w"), indent=1)
with open(os.path.join(pack, "MANIFEST.txt"), "w") as f:
    f.write("Prism GPU pack\n")
    for k in ("commit", "built", "rustc", "cargo", "target", "glibc_needed", "glibc_build_host"):
        f.write("%-17s %s\n" % (k + ":", manifest[k]))
    f.write("\n")
    for e in entries:
        f.write("%-6s %-14s %6.1f MiB  glibc %-5s %s\n" % (e["kind"], e["name"], e["bytes"] / 2**20, e["glibc"], e["runs"]))
EOF
tar -C "$STAGE" -czf "$PACK/bin.tar.gz" bin
cat "$PACK/MANIFEST.txt"
BYTES=$(du -sb "$PACK" | cut -f1)
MIB=$(python3 -c "print(f'{$BYTES / 2**20:.1f}')")
if [ "$BYTES" -gt $((MAX_MIB * 1024 * 1024)) ]; then
  echo "package.sh: the pack is $MIB MiB, over the $MAX_MIB MiB limit" >&2
  exit 1
fi
echo "gpu-pack/: $MIB MiB ($BYTES bytes; limit $MAX_MIB MiB)"
