#!/usr/bin/env bash
# Measures the gpumem binary end to end (process start, embedded catalog,
# estimate, output) against a Go hello world built on the same machine,
# and the HTTP API under a bounded loopback load.
#
# For each command it prints the machine instructions one run executes,
# counted by callgrind when valgrind is installed (a count that does not
# depend on the machine's load, unlike time: compare these across runs
# and machines), and the median wall and CPU times of a run (a busy
# machine stretches the wall time of a short process most), each with its
# ratio to hello world. "gpumem --version" estimates nothing: it is the start-up every
# command pays. The binaries are built with CGO_ENABLED=0, as releases
# are; the default cgo build is counted too, for its dynamic loader.
#
# The load test starts "gpumem serve" on a free loopback port and sends
# /api/estimate and /api/plan requests at concurrency 1, 8 and 64
# (bench/load): answers per second, p50/p99 latency and the server's CPU
# time per request. Its figures are wall-clock ones: on a shared machine
# they read low; the CPU per request is the steadier one.
#
#   bench/run.sh                 everything
#   RUNS=200 bench/run.sh        more timed runs per command (default 50)
#   CG_RUNS=9 bench/run.sh       more callgrind runs per command (default 5, median)
#   LOAD=0 bench/run.sh          skip the load test
#   LOAD_ONLY=1 bench/run.sh     only the load test
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-50}
cg_runs=${CG_RUNS:-5}
tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

CGO_ENABLED=0 go build -trimpath -o "$tmp/gpumem" ./cmd/gpumem
CGO_ENABLED=1 go build -trimpath -o "$tmp/gpumem-cgo" ./cmd/gpumem
CGO_ENABLED=0 go build -trimpath -o "$tmp/hello" ./bench/hello
go build -o "$tmp/load" ./bench/load
go build -o "$tmp/cputime" ./bench/cputime

echo "machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); load average $(cut -d' ' -f1-3 /proc/loadavg)"

# instructions prints the median instruction count of a command over
# cg_runs callgrind runs. Go's asynchronous preemption signals confuse
# callgrind, so they are turned off (GODEBUG=asyncpreemptoff=1); a run
# valgrind cannot finish (it lacks some instructions a busy runtime may
# use, such as rdtscp) is run again.
instructions() {
  local i try out n
  : >"$tmp/counts"
  for ((i = 0; i < cg_runs; i++)); do
    for try in 1 2 3; do
      if out=$(GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null); then
        n=$(awk '/Collected/ { print $4 }' <<<"$out")
        [ -n "$n" ] && echo "$n" >>"$tmp/counts" && break
      fi
    done
  done
  sort -n "$tmp/counts" | awk '{ c[NR] = $1 } END { if (NR == 0) print "-"; else print c[int((NR + 1) / 2)] }'
}

# times prints the median wall time and the median CPU time (user +
# system) of one run of a command, in milliseconds (bench/cputime).
times() { "$tmp/cputime" -n "$runs" -- "$@"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.1f", a / b }'; }
millions() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else printf "%.2fM", a / 1e6 }'; }

if [ -z "${LOAD_ONLY:-}" ]; then
  g="$tmp/gpumem"
  commands=(
    "$g --version"
    "$g estimate --model meta-llama/Llama-2-7b-hf --format json"
    "$g estimate --model llama3-8b --seq-len 4096 --format json"
    "$g estimate --model llama3-8b --method qlora --lora-target-modules all-linear --seq-len 8192"
    "$g estimate --model qwen2.5-7b --mode inference --batch-size 8 --prompt-len 4096 --gen-len 1024"
    "$g estimate --model Qwen/Qwen3-30B-A3B --engine deepspeed --zero 3 --num-gpus 64 --seq-len 4096"
    "$g params --model meta-llama/Llama-3.1-405B"
    "$g fit --model llama3-8b --gpu H100 --seq-len 4096"
    "$tmp/gpumem-cgo --version"
    "$tmp/gpumem-cgo estimate --model meta-llama/Llama-2-7b-hf --format json"
  )
  have_cg=
  command -v valgrind >/dev/null 2>&1 && have_cg=1
  echo "go: $(go env GOVERSION); wall and CPU time: median of $runs runs (bench/cputime);" \
    "instructions: $([ -n "$have_cg" ] && echo "callgrind, median of $cg_runs runs" || echo "valgrind not installed")"
  echo
  hello_i=-
  [ -n "$have_cg" ] && hello_i=$(instructions "$tmp/hello")
  read -r hello_w hello_c < <(times "$tmp/hello")
  printf '%-92s %12s %6s %9s %6s %9s %6s\n' "command (CGO_ENABLED=0 build unless noted)" "instructions" "ratio" "wall" "ratio" "CPU" "ratio"
  printf '%-92s %12s %6s %6s ms %6s %6s ms %6s\n' "hello world (Go, same machine)" "$(millions "$hello_i")" "1.0" "$hello_w" "1.0" "$hello_c" "1.0"
  for c in "${commands[@]}"; do
    name="gpumem ${c#"$g "}"
    [[ $c == "$tmp/gpumem-cgo"* ]] && name="gpumem ${c#"$tmp/gpumem-cgo "} (cgo build)"
    i=-
    # shellcheck disable=SC2086 # the command is split into words on purpose
    [ -n "$have_cg" ] && i=$(instructions $c)
    # shellcheck disable=SC2086
    read -r w cpu < <(times $c)
    printf '%-92s %12s %6s %6s ms %6s %6s ms %6s\n' "$name" "$(millions "$i")" "$(ratio "$i" "$hello_i")" \
      "$w" "$(ratio "$w" "$hello_w")" "$cpu" "$(ratio "$cpu" "$hello_c")"
  done
  echo
  echo "binary sizes (bytes): gpumem $(stat -c %s "$g"), cgo build $(stat -c %s "$tmp/gpumem-cgo"), hello world $(stat -c %s "$tmp/hello")"
fi

if [ "${LOAD:-1}" != 0 ]; then
  echo
  "$tmp/gpumem" serve --addr 127.0.0.1:0 2>"$tmp/serve.log" &
  server_pid=$!
  addr=
  for _ in $(seq 50); do
    addr=$(sed -n 's|.*url=http://\([0-9.:]*\)/.*|\1|p' "$tmp/serve.log" | head -1)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  if [ -z "$addr" ]; then
    echo "gpumem serve did not start:" >&2
    cat "$tmp/serve.log" >&2
    exit 1
  fi
  echo "load test: gpumem serve on $addr, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  "$tmp/load" -addr "$addr" -pid "$server_pid" -route estimate -c 1,8,64 -n 20000 -limit 20s
  "$tmp/load" -addr "$addr" -pid "$server_pid" -route plan -c 1,8,64 -n 200 -limit 30s
  "$tmp/load" -addr "$addr" -pid "$server_pid" -route plan -cached -c 1,8,64 -n 2000 -limit 20s
fi
