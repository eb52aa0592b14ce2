#!/usr/bin/env bash
# Generates prism-kernels/src/reduce.rs and scan.rs from the `*.rs.in` templates in this folder: Prism has
# no type generics, so every value-type-dependent function exists three times (suffix _u32, _i32, _f32).
# In a template, `VT` is the value type, `_vt` the suffix, `VZERO` the zero literal. Run from anywhere.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gen() { # file-header template... -> stdout
  local hdr=$1; shift
  cat "$here/$hdr"
  for t in u32 i32 f32; do
    local z=0; [ "$t" = f32 ] && z=0.0
    for tmpl in "$@"; do
      echo
      sed -e "s/VZERO/${z}${t}/g" -e "s/\bVT\b/${t}/g" -e "s/_vt/_${t}/g" -e "s/VT/$(echo "$t" | tr a-z A-Z)/g" "$here/$tmpl"
    done
  done
}
gen reduce_head.rs.in load_vt.rs.in reduce_vt.rs.in > "$here/../reduce.rs"
gen scan_head.rs.in scan_vt.rs.in > "$here/../scan.rs"
gen test_head.rs.in test_vt.rs.in > "$here/../../../tests/scan_reduce.rs"
rustfmt --edition 2021 "$here/../reduce.rs" "$here/../scan.rs" "$here/../../../tests/scan_reduce.rs"
