#!/bin/bash
# compare and sweep set up every point (scenario, models, tenants fitting on the cluster,
# policy parameters) before the first one runs: a bad bundle or grid value is refused with
# exit 2 and stores nothing, however late in the grid it comes; sweep --dry-run finds it too.
# Before, the points ahead of it ran and were stored.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

"$S" trace gen --rate 2 --duration 60 -o t.csv >/dev/null || fail "trace gen"
printf '[tenant.chat]\nmodel = llama-2-7b\nreplicas = 1\ntrace = t.csv\n[run]\ndb = c.db\n' >e.ini

expect_error 2 "policy=x;rate=1: unknown parameter 'nope'" \
    "$S" compare -c e.ini --policies container,llumnix,x:policy.nope=1 --no-progress
[ ! -e c.db ] || fail "compare stored runs before a bad bundle"
expect_error 2 "policy=container;rate=1: .*3 does not divide the 32 attention heads" \
    "$S" compare -c e.ini --policies container --rates 1,2 --set tenant.chat.tp=3 \
    --set tenant.chat.rate_scale=1 --no-progress
# only the second bundle does not fit: 3 replicas of TP 4 need 12 GPUs, one node has 8
printf '[cluster]\nnodes = 1\n' >>e.ini
expect_error 2 "policy=x;rate=1: cluster: the tenants' containers need 12 GPUs" \
    "$S" compare -c e.ini --policies container,x:tenant.chat.replicas=3+tenant.chat.tp=4 \
    --no-progress
[ ! -e c.db ] || fail "compare stored runs before a point that does not fit"

cat >sw.ini <<'INI'
[sweep]
scenario = e.ini
db = sw.db
[grid]
tenant.chat.tp = 1, 2, 3
INI
for jobs in 1 2; do
    expect_error 2 "tenant.chat.tp=3: .*3 does not divide the 32 attention heads" \
        "$S" sweep sw.ini --jobs $jobs --no-progress
    [ -z "$(ls sw.db* 2>/dev/null)" ] || fail "sweep --jobs $jobs stored points before a bad one"
done
expect_error 2 "tenant.chat.tp=3: " "$S" sweep sw.ini --dry-run
sed -i 's/policy.nope/x/; s/tp = 1, 2, 3/tp = 1, 2/' sw.ini
printf 'policy = container, x:policy.nope=1\n' >>sw.ini
expect_error 2 "policy=x: unknown parameter 'nope'" "$S" sweep sw.ini --jobs 1 --no-progress
[ -z "$(ls sw.db* 2>/dev/null)" ] || fail "sweep stored points before a bad bundle"
# and a good grid still runs
sed -i '$d' sw.ini
"$S" sweep sw.ini --jobs 1 --no-progress >out 2>&1 || fail "good sweep: $(cat out)"
[ "$(sql sw.db 'SELECT count(*) FROM sweep_points')" = 2 ] || fail "good sweep points"
echo "points_cli: ok"
