# Helpers shared by the CLI test scripts (sourced). Each script sets $T to its scratch dir
# before calling expect_error.

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

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
