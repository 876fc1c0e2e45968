#!/usr/bin/env bash
# Vocabulary-parallel fused linear + cross-entropy on 2 CPU workers (MindSpore's msrun, mccl
# collectives on 127.0.0.1). Extra arguments go to examples/vocab_parallel.py, e.g. --graph.
# msrun starts the workers with the `python` found on PATH: run this from the environment that
# has ms_ops installed (its bin directory first on PATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log_dir="${LOG_DIR:-$(mktemp -d)}"
port="${MASTER_PORT:-18120}"
export PATH="$(dirname "$(command -v python)"):$PATH"
status=0
timeout --kill-after=10 300 msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1 \
  --master_port="$port" --join=True --log_dir="$log_dir" \
  "$here/vocab_parallel.py" "$@" || status=$?
grep -h "^RESULT" "$log_dir"/worker_*.log || true
echo "worker logs: $log_dir"
exit "$status"
