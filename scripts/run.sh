#!/usr/bin/env bash
# `make run`: migrate, make sure the demo merchant exists, then web + worker + beat in the foreground.
# Ctrl-C (or any of the three exiting) stops all three.
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
bin=.venv/bin

"$bin/python" manage.py migrate --noinput
"$bin/python" manage.py demo_merchant

pids=()
stop() {
    trap - INT TERM EXIT
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap stop INT TERM EXIT

"$bin/python" manage.py runserver "127.0.0.1:${PORT}" --noreload &
pids+=($!)
"$bin/celery" -A config worker --loglevel INFO --concurrency 2 --hostname "kassa@%h" \
    --queues webhooks,payouts,chain,housekeeping &
pids+=($!)
"$bin/celery" -A config beat --loglevel INFO &
pids+=($!)

wait -n
