#!/usr/bin/env bash
# scripts/bench arch: the shape of the tree, as figures (issue #13's proof):
#   duplicate_pairs      pairs of places sharing 6+ lines (`duplicates`, the
#                        tool library's command; -1 where it is not installed)
#   ferry_cp_lines       lines of examples/ferry-cp.cc (argument parsing and
#                        presentation only: the engine does the work)
#   public_wire_headers  wire-format headers left under an include/ dir
#                        (http_client.h, sigv4.h, s3_xml.h, nfs3_xdr.h,
#                        xdr_codec*): target 0
# Ends with one line `RESULT {json}`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
pairs=-1
if command -v duplicates >/dev/null 2>&1; then
  first=$(duplicates --seconds 60 2>/dev/null | head -n 1)
  case "$first" in
    "no duplicates"*) pairs=0 ;;
    [0-9]*) pairs=${first%% *} ;;
  esac
fi
cp_lines=$(wc -l <examples/ferry-cp.cc)
wire=$(git ls-files | grep -E '(^|/)include/' |
       grep -cE '/(http_client\.h|sigv4\.h|s3_xml\.h|nfs3_xdr\.h|xdr_codec[^/]*)$' || true)
echo "duplicate pairs (duplicates --seconds 60): $pairs"
echo "examples/ferry-cp.cc: $cp_lines lines"
echo "wire headers under include/: $wire"
printf 'RESULT {"bench":"arch","duplicate_pairs":%d,"ferry_cp_lines":%d,"public_wire_headers":%d}\n' \
  "$pairs" "$cp_lines" "$wire"
