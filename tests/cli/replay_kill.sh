#!/bin/bash
# A replay killed with SIGKILL in the middle of its run must leave every earlier run in the
# results database intact and none of its own rows: one transaction per run. Afterwards the
# database passes PRAGMA integrity_check and accepts new runs.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap '[ "$pid" -gt 0 ] && kill -9 "$pid" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
pid=0

"$S" replay --trace "$ROOT/traces/azure-conv-synth.csv" --limit 500 --db k.db >/dev/null ||
    fail "first run"
# A long run: a large generated trace replayed with per-event invariant checks (slow on
# purpose), killed once it has written request rows into its open transaction.
"$S" trace gen --rate 40 --requests 200000 --seed 3 -o big.csv || fail "trace gen"
"$S" replay --trace big.csv --replicas 8 --check --db k.db >run.out 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    sleep 0.1
    [ -s k.db-wal ] && [ "$(stat -c %s k.db-wal)" -gt 200000 ] && break
done
sleep 0.5
kill -0 $pid 2>/dev/null || fail "the long run ended before it could be killed: $(cat run.out)"
kill -9 $pid
wait $pid 2>/dev/null
pid=0
[ "$(sql k.db 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after kill"
[ "$(sql k.db 'SELECT count(*) FROM runs')" = 1 ] || fail "the killed run left a runs row"
[ "$(sql k.db 'SELECT count(*) FROM requests')" = 500 ] || fail "the killed run left requests"
[ "$(sql k.db 'SELECT completed FROM summary WHERE run_id = 1')" = 500 ] || fail "run 1 changed"
"$S" replay --trace "$ROOT/traces/azure-conv-synth.csv" --limit 300 --db k.db >/dev/null ||
    fail "run after the kill"
[ "$(sql k.db 'SELECT count(*) FROM runs')" = 2 ] || fail "new run after kill not stored"
echo "replay_kill: all checks passed"
