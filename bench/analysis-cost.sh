#!/usr/bin/env bash
# What the analysis (verdicts, paired rounds, outliers, robust shifts, power, validity,
# change points) costs the report of a grown store: builds a store of RUNS runs
# through the store API, times its report, and the analysis alone as the report does
# it; prints the report's time with the analysis against without it.
#   bench/analysis-cost.sh [RUNS]      (default 2000; release build)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --locked -p pgsurge-report --example analysis_cost -- "${1:-2000}"
