#!/usr/bin/env bash
# scripts/bench redis-tier: the shared cache tier (RedisTier + SharedLoader)
# with 4 front-end processes listing one 10,000-entry collection, without
# and with the tier, on a fresh redis-server (tests/peers/redis, a free
# port), plus the time a rename takes to show in the other front ends'
# listings (tests/bench/redis_tier_bench.cc). About 15 s.
#   BENCH_FRONTS=4 BENCH_ENTRIES=10000 BENCH_TTL_MS=1000 BENCH_PERIODS=5
#   BENCH_ORIGIN_DELAY_MS=50 BENCH_RENAMES=100
# Both programs are built only where libhiredis-dev is installed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
BENCH="$BUILD/tests/ferry_redis_tier_bench"
FRONT="$BUILD/tests/integration/redis/ferry_redis_front_end"
require_built redis-tier.sh "$BENCH" "$FRONT"
bench_work redis
REDIS_PORT=0 bench_peer redis "$STATE/redis"
"$BENCH" --front-end="$FRONT" --port="$(cat "$STATE/redis/port")" \
  --fronts="${BENCH_FRONTS:-4}" --entries="${BENCH_ENTRIES:-10000}" --ttl-ms="${BENCH_TTL_MS:-1000}" \
  --periods="${BENCH_PERIODS:-5}" --origin-delay-ms="${BENCH_ORIGIN_DELAY_MS:-50}" \
  --renames="${BENCH_RENAMES:-100}"
