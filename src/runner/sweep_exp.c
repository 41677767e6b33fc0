/* The sweep experiment file, apart from running the points so that the fuzz target
 * (fuzz/fuzz_sweep.c) reads experiments exactly as `slicesim sweep` does. The format is
 * described at the top of app/cmd_sweep.c and in its --help. Not for running points. */
#include "runner/sweep.h"

#include "runner/bundle.h"

#include "core/ss_alloc.h"
#include "core/ss_ini.h"
#include "core/ss_strbuf.h"

#include <stdio.h>
#include <string.h>

void runner_sweep_exp_free(runner_sweep_exp *x)
{
    for (int i = 0; i < x->n_sets; i++)
        ss_free(x->set[i]);
    for (int i = 0; i < x->n_keys; i++)
        ss_free(x->keys[i].text);
}

static int copy_into(char *dst, size_t size, const char *src)
{
    if (strlen(src) >= size)
        return -1;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

static int on_entry(void *ud, unsigned line, const char *section, const char *key,
                    const char *value, ss_errbuf *eb)
{
    runner_sweep_exp *x = ud;
    if (!key) {
        if (strcmp(section, "sweep") && strcmp(section, "set") && strcmp(section, "grid"))
            return ss_err(eb, SS_EPARSE, "%s:%u: section [%s]: unknown section (known: sweep, "
                          "set, grid)", x->path, line, section);
        copy_into(x->section, sizeof x->section, section);
        return SS_OK;
    }
    if (!x->section[0])
        return ss_err(eb, SS_EPARSE, "%s:%u: %s: key outside any section", x->path, line, key);
    if (!strcmp(x->section, "sweep")) {
        char *dst = !strcmp(key, "name") ? x->name : !strcmp(key, "scenario") ? x->scenario
                  : !strcmp(key, "db") ? x->db : NULL;
        size_t size = dst == x->name ? sizeof x->name : SCN_PATH_MAX;
        if (!dst)
            return ss_err(eb, SS_EPARSE, "%s:%u: sweep.%s: unknown key (known: name, scenario, "
                          "db)", x->path, line, key);
        if (dst[0])
            return ss_err(eb, SS_EPARSE, "%s:%u: sweep.%s: set twice", x->path, line, key);
        if (!value[0] || copy_into(dst, size, value))
            return ss_err(eb, SS_EPARSE, "%s:%u: sweep.%s: expected a value of 1 to %zu "
                          "characters", x->path, line, key, size - 1);
        if (dst == x->name && ss_str_has_control(value))
            return ss_err(eb, SS_EPARSE, "%s:%u: sweep.name: '%s' holds a control character "
                          "(a tab, an escape): a sweep's name is shown on one line", x->path,
                          line, value);
        return SS_OK;
    }
    if (!strcmp(x->section, "set")) {
        if (x->n_sets == RUNNER_SWEEP_MAX_SETS)
            return ss_err(eb, SS_EPARSE, "%s:%u: set: more than %d keys", x->path, line,
                          RUNNER_SWEEP_MAX_SETS);
        ss_strbuf b = {0};
        ss_strbuf_printf(&b, "%s=%s", key, value);
        x->set[x->n_sets] = ss_strbuf_ok(&b) ? ss_strdup(ss_strbuf_str(&b)) : NULL;
        ss_strbuf_fini(&b);
        if (!x->set[x->n_sets])
            return ss_err(eb, SS_ENOMEM, "out of memory");
        x->set_line[x->n_sets++] = line;
        return SS_OK;
    }
    /* [grid] */
    for (int i = 0; i < x->n_keys; i++)
        if (!strcmp(x->keys[i].name, key))
            return ss_err(eb, SS_EPARSE, "%s:%u: grid.%s: set twice (first on line %u)", x->path,
                          line, key, x->keys[i].line);
    if (x->n_keys == RUNNER_SWEEP_MAX_KEYS)
        return ss_err(eb, SS_EPARSE, "%s:%u: grid: more than %d keys", x->path, line,
                      RUNNER_SWEEP_MAX_KEYS);
    runner_sweep_key *k = &x->keys[x->n_keys];
    if (copy_into(k->name, sizeof k->name, key) || strchr(key, ';') || strchr(key, '='))
        return ss_err(eb, SS_EPARSE, "%s:%u: grid.%s: not a key", x->path, line, key);
    if (!(k->text = ss_strdup(value)))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    k->line = line;
    x->n_keys++;
    k->n = runner_split_list(k->text, k->values, RUNNER_SWEEP_MAX_VALUES);
    if (k->n < 1)
        return ss_err(eb, SS_EPARSE, "%s:%u: grid.%s: expected 1 to %d comma-separated values",
                      x->path, line, key, RUNNER_SWEEP_MAX_VALUES);
    for (int i = 0; i < k->n; i++) {
        char *v = k->values[i];
        for (size_t e = strlen(v); e && v[e - 1] == ' '; e--)
            v[e - 1] = 0;
        if (strchr(v, ';'))
            return ss_err(eb, SS_EPARSE, "%s:%u: grid.%s: a value may not contain ';'", x->path,
                          line, key);
    }
    return SS_OK;
}

int runner_sweep_exp_load(runner_sweep_exp *x, const char *path, ss_errbuf *eb)
{
    x->path = path;
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(x->dir, sizeof x->dir, "%.*s", (int)(slash - path), path);
    int rc = ss_ini_parse(path, on_entry, x, eb);
    if (rc == SS_EIO)
        return SS_EPARSE; /* an unreadable experiment is bad input */
    if (rc)
        return rc;
    if (!x->scenario[0])
        return ss_err(eb, SS_EPARSE, "%s: sweep.scenario: required", path);
    if (!x->n_keys)
        return ss_err(eb, SS_EPARSE, "%s: [grid]: empty: a sweep needs at least one key with "
                      "values", path);
    if (!x->name[0]) {
        const char *b = slash ? slash + 1 : path;
        size_t n = strlen(b);
        if (n > 4 && !strcmp(b + n - 4, ".ini"))
            n -= 4;
        snprintf(x->name, sizeof x->name, "%.*s",
                 (int)(n < RUNNER_SWEEP_KEY_MAX - 1 ? n : RUNNER_SWEEP_KEY_MAX - 1), b);
    }
    if (x->scenario[0] != '/' && x->dir[0]) {
        char full[SCN_PATH_MAX];
        if (snprintf(full, sizeof full, "%s/%s", x->dir, x->scenario) >= (int)sizeof full)
            return ss_err(eb, SS_EPARSE, "%s: sweep.scenario: path too long", path);
        memcpy(x->scenario, full, sizeof full);
    }
    if (!x->db[0])
        snprintf(x->db, sizeof x->db, "results/%s.db", x->name);
    x->n_points = 1;
    for (int i = 0; i < x->n_keys; i++) {
        if (!strcmp(x->keys[i].name, "policy"))
            for (int v = 0; v < x->keys[i].n; v++) {
                char label[RUNNER_LABEL_MAX];
                int rc2 = runner_bundle_label(x->keys[i].values[v], label, eb);
                if (!rc2 && runner_bundle_searches(x->keys[i].values[v]))
                    rc2 = ss_err(eb, SS_EPARSE, "policy '%s': its scenario is searched for "
                                 "at each load, which slicesim compare and capacity do and a "
                                 "sweep does not", x->keys[i].values[v]);
                if (rc2)
                    return ss_err_prefix(eb, rc2, "%s:%u: grid.policy", path, x->keys[i].line);
            }
        x->n_points *= (size_t)x->keys[i].n;
    }
    return SS_OK;
}
