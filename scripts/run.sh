#!/usr/bin/env bash
# `make run`: migrate, make sure the demo merchant exists, then web + worker + beat in the foreground, and
# the banner (URLs, demo token) once the web server answers.
# Ctrl-C, a SIGTERM to this script (or to `make run`, which passes it on), or any of the three exiting
# stops all three: each gets SIGTERM, and this script exits only once they have (one still running after
# KASSA_STOP_SECONDS gets SIGKILL).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every entry point defaults to production settings: the development stack says so explicitly.
export DJANGO_SETTINGS_MODULE=config.settings.dev
export PORT="${PORT:-8000}"
# Local receivers (127.0.0.1) are the point of development; production keeps this off.
export WEBHOOK_ALLOW_PRIVATE_HOSTS="${WEBHOOK_ALLOW_PRIVATE_HOSTS:-true}"
# The sandbox chain mines a block this often, so payments confirm on their own while you watch.
export SANDBOX_BLOCK_SECONDS="${SANDBOX_BLOCK_SECONDS:-15}"
export PYTHONUNBUFFERED=1
# The worker ends its own shutdown within WORKER_SHUTDOWN_SECONDS (20); this is the backstop above it.
stop_seconds="${KASSA_STOP_SECONDS:-30}"
bin=.venv/bin

"$bin/python" manage.py migrate --noinput
banner="$("$bin/python" manage.py demo_merchant)"

pids=()  # web, worker, beat, and the wait for the banner
stop() {
    trap - INT TERM EXIT
    kill -TERM "${pids[@]}" 2>/dev/null || true
    local deadline=$((SECONDS + stop_seconds))
    while [ -n "$(jobs -pr)" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.2
    done
    if [ -n "$(jobs -pr)" ]; then
        echo "run.sh: still running after ${stop_seconds} s, killed: $(jobs -pr | tr '\n' ' ')" >&2
        kill -KILL $(jobs -pr) 2>/dev/null || true
    fi
    wait 2>/dev/null || true
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

"$bin/python" manage.py runserver "127.0.0.1:${PORT}" --noreload &
pids+=($!)
"$bin/celery" -A config worker --loglevel INFO --concurrency 2 --hostname "kassa@%h" \
    --queues webhooks,payouts,chain,housekeeping &
pids+=($!)
"$bin/celery" -A config beat --loglevel INFO &
pids+=($!)

# The banner once /healthz answers (whatever its status: the server listens). Waited for in the
# background, as `wait` is what a signal interrupts at once.
"$bin/python" - "http://127.0.0.1:${PORT}/healthz" "${pids[0]}" <<'EOF' &
import os
import sys
import time
import urllib.error
import urllib.request

url, web = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)  # an answer all the same (503: a part is down, /healthz says which)
    except OSError:
        try:
            os.kill(web, 0)
        except ProcessLookupError:
            sys.exit(1)  # the web server exited
        time.sleep(0.2)
sys.exit(1)
EOF
pids+=($!)
if wait "${pids[3]}"; then
    printf '%s\n' "$banner"
else
    echo "run.sh: the web server did not answer on http://127.0.0.1:${PORT}/healthz" >&2
fi

unset 'pids[3]'  # ended and reaped: its id may belong to another process by now

wait -n "${pids[@]}"
