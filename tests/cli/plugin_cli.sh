#!/bin/bash
# Policies from outside the tree: plugins/template builds with its own meson project against
# this source tree, and `--plugin FILE.so` (any command, any position, repeatable) loads it so
# that its routing policy jsq2 is named like the built-ins, deterministically; a file that is
# no plug-in, one built for another ABI, one whose init fails and one whose policy's name is
# taken are each refused with one line and exit status 2, running nothing. Before, a policy
# could only be added by rebuilding slicesim.
set -u
S=${SLICESIM:?SLICESIM not set}
SRC=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
CC=${CC:-cc}
for tool in meson ninja "$CC"; do
    command -v "$tool" >/dev/null || { echo "plugin_cli: no $tool: skipped" >&2; exit 77; }
done

# the template, as a user builds it
meson setup pb "$SRC/plugins/template" -Dslicesim_src="$SRC" >setup.log 2>&1 ||
    fail "meson setup of the template: $(tail -5 setup.log)"
ninja -C pb >build.log 2>&1 || fail "building the template: $(tail -5 build.log)"
P=$T/pb/mypolicy.so
[ -f "$P" ] || fail "no mypolicy.so"

"$S" trace gen --rate 12 --duration 20 -o t.csv 2>/dev/null || fail "trace gen"
R=(replay --trace t.csv --replicas 4 --db none --json --no-progress)
"$S" "${R[@]}" --plugin "$P" --routing jsq2 >a.json || fail "replay with the plug-in's policy"
"$S" --plugin="$P" "${R[@]}" --routing jsq2 >b.json || fail "--plugin= before the command"
same_json() { # the same results, wall-clock time aside
    python3 -c 'import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    d.pop("wall_s")
sys.exit(a != b)' "$1" "$2"
}
same_json a.json b.json || fail "a plug-in's run is not deterministic (or --plugin= differs)"
"$S" "${R[@]}" --routing lor >lor.json || fail "lor"
python3 - a.json lor.json <<'PY' || fail "jsq2 did not route"
import json, sys
a, l = (json.load(open(p)) for p in sys.argv[1:])
assert a["routing"] == "jsq2" and a["completed"] == l["completed"] > 100, (a["routing"], a["completed"])
# two random choices are not the least loaded of all: some figure differs from lor's
assert a["ttft_ms"] != l["ttft_ms"], "jsq2 routed exactly as lor"
PY
expect_error 2 "unknown policy 'jsq2'" "$S" "${R[@]}" --routing jsq2
expect_error 2 "known: rr, .*, jsq2\)" "$S" "${R[@]}" --plugin "$P" --routing nope
# compare's bundles take it too
printf '[tenant.chat]\nmodel = llama-2-7b\nreplicas = 4\ntrace = t.csv\n' >e.ini
"$S" compare -c e.ini --policies container,j:policy.routing=jsq2 --db none --no-progress \
    --plugin "$P" >cmp.out || fail "compare with a plug-in bundle"
grep -Eq "^  1 +j +[0-9]" cmp.out || fail "compare's table has no row of bundle j: $(cat cmp.out)"

# ---- refusals ----
cat >noplug.c <<'C'
int not_a_plugin(void) { return 1; }
C
cat >abi.c <<'C'
#include "policy/plugin.h"
const uint32_t slicesim_plugin_abi = SLICESIM_PLUGIN_ABI + 100;
int slicesim_plugin_init(ss_errbuf *eb) { (void)eb; return 0; }
C
cat >fails.c <<'C'
#include "policy/plugin.h"
SLICESIM_PLUGIN_DECLARE();
int slicesim_plugin_init(ss_errbuf *eb) { return ss_err(eb, SS_EINVAL, "no GPU budget file"); }
C
cat >taken.c <<'C'
#include "policy/plugin.h"
static gmg_id pick(void *p, const gmg *g, gmg_id r, const gmg_id *c, uint32_t n, ss_rng *rng)
{ (void)p; (void)g; (void)r; (void)n; (void)rng; return c[0]; }
static const pol_route_ops rr2 = {.abi_version = POL_ABI_VERSION, .name = "rr", .pick = pick};
SLICESIM_PLUGIN_DECLARE();
int slicesim_plugin_init(ss_errbuf *eb)
{
    int rc = pol_route_register(&rr2);
    return rc ? ss_err(eb, rc, "cannot register routing policy 'rr'") : 0;
}
C
for f in noplug abi fails taken; do
    "$CC" -shared -fPIC -I"$SRC/src" -o $f.so $f.c 2>cc.log || fail "compiling $f.c: $(cat cc.log)"
done
expect_error 2 "^slicesim: --plugin \./none\.so: cannot load: .*No such file" "$S" --plugin ./none.so "${R[@]}"
expect_error 2 "^slicesim: --plugin noplug\.so: not a slicesim plug-in \(it defines no slicesim_plugin_abi; see plugins/template\)$" \
    "$S" "${R[@]}" --plugin noplug.so
expect_error 2 "^slicesim: --plugin abi\.so: built for plug-in ABI [0-9]+, this slicesim has [0-9]+: rebuild it against this slicesim's source$" \
    "$S" "${R[@]}" --plugin abi.so
expect_error 2 "^slicesim: --plugin fails\.so: no GPU budget file$" "$S" "${R[@]}" --plugin fails.so
expect_error 2 "^slicesim: --plugin taken\.so: cannot register routing policy 'rr'$" \
    "$S" "${R[@]}" --plugin taken.so
expect_error 2 "^slicesim: --plugin needs a FILE.so$" "$S" "${R[@]}" --plugin
# a refused plug-in runs nothing
expect_error 2 "fails\.so" "$S" replay --trace t.csv --db r.db --no-progress --plugin fails.so
[ ! -e r.db ] || fail "a run went ahead after its plug-in was refused"
echo "plugin_cli: ok"
