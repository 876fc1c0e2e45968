#!/usr/bin/env bash
# Vocabulary-parallel fused linear + cross-entropy on 2 CPU workers (MindSpore's msrun, mccl
# collectives on 127.0.0.1). Extra arguments go to examples/vocab_parallel.py, e.g. --graph.
# msrun starts the workers with the `python` found on PATH: run this from the environment that
# has ms_ops installed (its bin directory first on PATH).
#
# Prints one RESULT line per rank (taken from the worker logs once msrun has joined the workers).
# msrun's own output and the worker logs go to a temporary directory that is removed after a
# successful run and kept (its path printed) after a failure. LOG_DIR=<dir> writes them to <dir>
# instead and always keeps it. MindSpore logs errors only (GLOG_v=3) unless GLOG_v is set.
# Environment: MASTER_PORT (default 18120), MSRUN_TIMEOUT in seconds (default 300).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -n "${LOG_DIR:-}" ]]; then
  log_dir="$LOG_DIR"
  keep_logs=1
  mkdir -p "$log_dir"
else
  log_dir="$(mktemp -d "${TMPDIR:-/tmp}/vocab_parallel_msrun.XXXXXX")"
  keep_logs=0
fi
port="${MASTER_PORT:-18120}"
export PATH="$(dirname "$(command -v python)"):$PATH"
# msrun passes its environment on to the scheduler and the workers; GLOG_v also sets the level of
# msrun's own Python logger.
export GLOG_v="${GLOG_v:-3}"

status=0
# Without --tail_worker_log, --join=True also copies every worker log to the console (`tail -f`),
# which printed each RESULT line a second time. No worker has rank -2: nothing is tailed.
# On a timeout msrun gets SIGINT, on which it kills its workers (they run in their own sessions).
timeout --signal=INT --kill-after=30 "${MSRUN_TIMEOUT:-300}" \
  msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1 --master_port="$port" \
  --join=True --tail_worker_log=-2 --log_dir="$log_dir" \
  "$here/vocab_parallel.py" "$@" >"$log_dir/msrun.log" 2>&1 &
msrun_pid=$!
# SIGTERM/SIGINT to this script: send SIGINT to `timeout`, which passes it on to msrun (msrun dies
# of SIGTERM without stopping its workers; on SIGINT it kills them and exits 0).
interrupted=0
on_signal() { interrupted=$1; kill -INT "$msrun_pid" 2>/dev/null || true; }
trap 'on_signal 143' TERM
trap 'on_signal 130' INT
while :; do
  wait "$msrun_pid" && status=0 || status=$?
  kill -0 "$msrun_pid" 2>/dev/null || break  # wait was only interrupted by a trapped signal
done
trap - TERM INT
[[ "$interrupted" -eq 0 ]] || status=$interrupted

grep -h "^RESULT" "$log_dir"/worker_*.log 2>/dev/null || true
if [[ "$status" -ne 0 ]]; then
  reason="msrun failed (exit $status)"
  [[ "$status" -eq 124 ]] && reason="msrun timed out after ${MSRUN_TIMEOUT:-300} s"
  [[ "$interrupted" -eq 0 ]] || reason="interrupted"
  echo "vocab_parallel_msrun.sh: $reason; logs kept in $log_dir" >&2
  for f in "$log_dir"/msrun.log "$log_dir"/worker_*.log; do
    [[ -f "$f" ]] || continue
    echo "---- last lines of $f" >&2
    tail -n 20 "$f" >&2
  done
elif [[ "$keep_logs" -eq 1 ]]; then
  echo "logs: $log_dir"
else
  rm -rf "$log_dir"
fi
exit "$status"
