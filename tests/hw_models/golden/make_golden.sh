#!/usr/bin/env bash
# Records what the experiment commands print and write, as test data for
# tests/hw_models/test_golden_outputs.py. Run from the repository root:
#   bash tests/hw_models/golden/make_golden.sh [.venv/bin/hw-models]
# Each case NAME is run in a scratch directory with relative output paths; its stdout goes
# to NAME/stdout.txt, without the lines holding a heavy rule (the progress bar's last
# state, which shows wall time, and with it the tables' top rules), and
# the CSV files it writes to NAME/ (and the JSONL result stores the releases before the
# SQLite store wrote, for the allreduce, noc_sweep_load and train cases: test data of
# `hw-models sweep import-jsonl`). The command line is in
# CASES below and in NAME/command.txt. Recorded with the code of commit 66b2846 (a copy of
# it first on PYTHONPATH, the same virtual environment); train/*.jsonl with the code of
# commit 0b7c9e8 in the same way (its CSV and stdout byte-identical to 66b2846's):
#   git archive 66b2846 | tar -x -C /tmp/base
#   PYTHONPATH=/tmp/base bash tests/hw_models/golden/make_golden.sh
# The "% of optimum" column of the allreduce tables (and the optimum_cycles and
# optimum_percent CSV columns) came later: the demo, allreduce and allreduce_flit cases were
# run again by this script with the code that added them, and only those columns taken over
# (every other figure is byte for byte the recorded one). The noc_run case was recorded with
# the code of commit f806779, the rtl_synth case with that of 43ce2b3, each before its command
# ran its points through the sweep pipeline. The times beside the cycles (the allreduce
# tables' "time" column and CSV columns time_us, and clock_ghz, flit_us, message_us of the
# calibration CSV; noc run's ns line and latency_*_ns columns; noc sweep-load's "lat ns"
# column and clock_ghz, latency_*_ns columns) came later: the demo, allreduce,
# allreduce_flit, noc_run and noc_sweep_load cases were run again by this script with the
# code that added them; every earlier CSV column is byte for byte the recorded one, and the
# printed text differs only by those columns and lines (and the result store's name, which
# the test reads as STORE). The train_system_dlion case came last, recorded with the code of
# commit 0d8ffbe (its points already ran through the sweep pipeline): a record of what the
# command printed and wrote then, against which later refactors are checked.
set -euo pipefail
HW=${1:-$(pwd)/.venv/bin/hw-models}
HW=$(cd "$(dirname "$HW")" && pwd)/$(basename "$HW")
HERE=$(cd "$(dirname "$0")" && pwd)
export COLUMNS=120
TS="-t torus:2x2 --nis 1 -w alexnet --max-iterations 300"
CASES=(
  "demo|demo --out out/demo"
  "allreduce|allreduce -t torus:2x2 -a ring,multitree -s 4KiB,16KiB --nic both --out out/allreduce"
  "allreduce_flit|allreduce -t torus:2x2 -a ring,dbtree -s 4KiB --model both --out out/allreduce"
  "noc_sweep_load|noc sweep-load noc.toml --out out/noc"
  "train|train -t torus:2x2 --nis 1 -w alexnet -a ring,multitree --policy wfbp,p3 --out out/train"
  "train_system_ps|train-system ps $TS --servers 2 --modes sync,async --out out/ts"
  "train_system_ssd|train-system ssd $TS --delays 1,2 --out out/ts"
  "train_system_easgd|train-system easgd $TS --variants sync,async --out out/ts"
  "train_system_kfac|train-system kfac $TS --out out/ts"
  "train_system_compression|train-system compression $TS --compressors topk:0.01,onebit --out out/ts"
  "train_system_dlion|train-system dlion ${TS/300/60} --techniques none,priority --out out/ts"
  "maddpg_accel|maddpg accel --agents 3,6 --interconnect ring,crossbar --cpu none --out out/accel"
  "noc_run|noc run noc.toml --rate 0.05 --out out/noc"
  "rtl_synth|rtl synth --depths 16 --nis 1,2 -t none --out out/rtl/synth.csv"
)
for case in "${CASES[@]}"; do
  name=${case%%|*}
  args=${case#*|}
  if [ $# -ge 2 ] && [ "$2" != "$name" ]; then continue; fi
  work=$(mktemp -d)
  cp "$HERE/noc.toml" "$work/noc.toml"
  # the JSONL stores stay: the releases named above wrote them (the commands write runs.sqlite now)
  mkdir -p "$HERE/$name" && find "${HERE:?}/$name" -maxdepth 1 -type f ! -name '*.jsonl' -delete
  echo "hw-models $args" > "$HERE/$name/command.txt"
  (cd "$work" && $HW $args) | grep -v '━' > "$HERE/$name/stdout.txt"
  kinds=(-name '*.csv')
  case $name in allreduce|noc_sweep_load|train) kinds+=(-o -name '*.jsonl');; esac  # small JSONL stores
  (cd "$work" && find out "${kinds[@]}" | sort) | while read -r f; do
    cp "$work/$f" "$HERE/$name/$(basename "$f")"
  done
  rm -rf "$work"
  echo "recorded $name"
done
