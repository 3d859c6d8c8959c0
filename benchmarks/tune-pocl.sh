#!/bin/sh
# tune-pocl.sh — the PoCL half of the tuning benchmark: fmmtune on the CPU
# device over every kernel and precision, into a private tuning file, and
# the closing table as CSV (benchmarks/TUNING.md shows a run's figures).
#   usage: benchmarks/tune-pocl.sh [BUILD_DIR] [BUDGET_SECONDS] [OUT_DIR]
# The GPU half is the same command with --device gpu (see TUNING.md).
set -e
build=${1:-.}
budget=${2:-600}
out=${3:-tune-pocl-results}
mkdir -p "$out"
# a private file: the benchmark neither reads nor changes the user's cache
FMMCL_TUNING_FILE="$out/tuning-pocl.txt"
export FMMCL_TUNING_FILE
rm -f "$FMMCL_TUNING_FILE"
"$build/tuner/fmmtune" --device cpu --kernel all --precision both --budget "$budget" \
  --report-csv "$out/tune-pocl.csv" | tee "$out/tune-pocl.txt"
echo "CSV: $out/tune-pocl.csv; tuning file: $FMMCL_TUNING_FILE"
