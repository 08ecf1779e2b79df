#!/usr/bin/env bash
# Times the gpumem binary end to end (process start, embedded catalog,
# estimate, output) against a Go hello-world built on the same machine,
# and prints each command's median time and its ratio to hello world.
# "gpumem --version" estimates nothing: it is the start-up every command
# pays. It is also timed for a CGO_ENABLED=0 build, which links no C
# library (the default build links libc dynamically because package net
# uses cgo's DNS resolver), and the page faults of each start-up are
# counted when GNU time is installed.
#
#   bench/run.sh            hyperfine when installed, else a timing loop
#   RUNS=200 bench/run.sh   more runs per command (default 50)
#   NO_HYPERFINE=1 bench/run.sh   the timing loop even when hyperfine is installed
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-50}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -trimpath -o "$tmp/gpumem" ./cmd/gpumem
CGO_ENABLED=0 go build -trimpath -o "$tmp/gpumem-nocgo" ./cmd/gpumem
go build -trimpath -o "$tmp/hello" ./bench/hello

# median_ms prints the median wall time of a command in milliseconds.
median_ms() {
  if [ -z "${NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null 2>&1; then
    hyperfine -N --style none --warmup 3 --runs "$runs" --export-csv "$tmp/run.csv" -- "$*" >/dev/null
    # columns: command,mean,stddev,median,user,system,min,max (seconds);
    # counted from the end, as the command may hold commas
    awk -F, 'NR == 2 { printf "%.2f\n", $(NF - 4) * 1000 }' "$tmp/run.csv"
    return
  fi
  local i start end
  : >"$tmp/times"
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    "$@" >/dev/null
    end=$(date +%s%N)
    echo $(((end - start) / 1000)) >>"$tmp/times"
  done
  sort -n "$tmp/times" | awk '{ t[NR] = $1 } END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2; printf "%.2f\n", m / 1000 }'
}

g="$tmp/gpumem"
commands=(
  "$g --version"
  "$g estimate --model llama3-8b --seq-len 4096 --format json"
  "$g estimate --model llama3-8b --method qlora --lora-target-modules all-linear --seq-len 8192"
  "$g estimate --model qwen2.5-7b --mode inference --batch-size 8 --prompt-len 4096 --gen-len 1024"
  "$g estimate --model Qwen/Qwen3-30B-A3B --engine deepspeed --zero 3 --num-gpus 64 --seq-len 4096"
  "$g params --model meta-llama/Llama-3.1-405B"
  "$g fit --model llama3-8b --gpu H100 --seq-len 4096"
)

tool="a timing loop (date +%s%N)"
[ -z "${NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null 2>&1 && tool="hyperfine $(hyperfine --version | awk '{print $2}')"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "go: $(go env GOVERSION); timing: $tool, $runs runs per command, median"
echo

hello=$(median_ms "$tmp/hello")
printf '%-100s %9s %7s\n' "command" "median" "ratio"
printf '%-100s %7s ms %7s\n' "hello world (Go, same machine)" "$hello" "1.0"
row() { # row NAME MS
  printf '%-100s %7s ms %7s\n' "$1" "$2" "$(awk -v a="$2" -v b="$hello" 'BEGIN { printf "%.1f", a / b }')"
}
for c in "${commands[@]}"; do
  # shellcheck disable=SC2086 # the command is split into words on purpose
  row "gpumem ${c#"$g "}" "$(median_ms $c)"
done
row "gpumem --version (CGO_ENABLED=0 build)" "$(median_ms "$tmp/gpumem-nocgo" --version)"

# minor_faults prints the page faults of one run of a command.
minor_faults() {
  /usr/bin/time -f %R "$@" 2>&1 >/dev/null | tail -1
}
if [ -x /usr/bin/time ]; then
  echo
  echo "page faults at start-up: hello world $(minor_faults "$tmp/hello"), gpumem --version $(minor_faults "$g" --version)," \
    "CGO_ENABLED=0 build $(minor_faults "$tmp/gpumem-nocgo" --version)"
fi
echo "binary sizes (bytes): gpumem $(stat -c %s "$g"), CGO_ENABLED=0 build $(stat -c %s "$tmp/gpumem-nocgo"), hello world $(stat -c %s "$tmp/hello")"
