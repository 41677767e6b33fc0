# Helpers shared by the CLI test scripts (sourced). Each script sets $T to its scratch dir
# before calling expect_error.

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# sanitized: true in a build under -Db_sanitize (ASan + UBSan at -O1, several times slower),
# where a script may run a part of its cases: the code is the same, the sanitizers check it.
sanitized() { [ "${SS_SANITIZE:-none}" != none ]; }

# sql DB QUERY: the first column of the first row, with sqlite3 or else python3's sqlite3.
sql() {
    if command -v sqlite3 >/dev/null; then
        sqlite3 "$1" "$2"
    else
        python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$1" "$2"
    fi
}

# expect_error WANT_RC REGEX CMD...: exit status WANT_RC, nothing on stdout, exactly one stderr
# line, matching REGEX.
expect_error() {
    local want=$1 re=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "$*: exit $rc, want $want (stderr: $(cat "$T/err"))"
    [ ! -s "$T/out" ] || fail "$*: wrote to stdout: $(head -c 200 "$T/out")"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: want one stderr line, got: $(cat "$T/err")"
    grep -Eq "$re" "$T/err" || fail "$*: stderr '$(cat "$T/err")' does not match '$re'"
}

# tmp_of FILE: the temporary files being written for FILE (FILE.k3q9zt.tmp: six random
# characters, core/ss_file.h), one a line; nothing when there are none.
tmp_of() {
    local f
    for f in "$1".??????.tmp; do
        [ -e "$f" ] || [ -L "$f" ] && echo "$f"
    done
    return 0
}

# The tiny two-tenant scenario of the capacity tests, on stdout: chat at 6 req/s and a bursty
# code tenant at 2 req/s, one Llama-2-7B container each on an A100 node, a 40 s window after 5 s
# of warm-up, TTFT bound 1 s and TBT bound 100 ms.
capacity_tiny_ini() {
    cat <<'INI'
[cluster]
gpu = a100-80g
nodes = 1

[run]
seed = 3
duration_s = 40
warmup_s = 5

[tenant.chat]
model = llama-2-7b
replicas = 1
synthetic = "rate=6 duration=40 prompt=lognormal:800:0.5 output=lognormal:120:0.5"
sla_ttft_ms = 1000
sla_tbt_ms = 100

[tenant.code]
model = llama-2-7b
replicas = 1
synthetic = "rate=2 duration=40 arrival=gamma cv=2 prompt=lognormal:1500:0.5 output=fixed:100"
sla_ttft_ms = 1000
sla_tbt_ms = 100
INI
}
