/* scn_write: a scenario back to INI text, every key in table order with its value, so that a
 * run stores exactly what it simulated and scn_load reads it back to the same scenario. Not
 * for parsing (scenario.c). */
#include "scenario/scn_int.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "key = value"; values with blanks are quoted (the reader drops one pair of quotes). */
static void write_kv(FILE *f, const char *key, const char *value)
{
    if (!*value)
        fprintf(f, "%s =\n", key);
    else if (strpbrk(value, " \t"))
        fprintf(f, "%s = \"%s\"\n", key, value);
    else
        fprintf(f, "%s = %s\n", key, value);
}

/* A relative path (only --set makes them) becomes absolute: the file may be read from
 * another folder, against which scn_load would resolve it. */
static void write_key(FILE *f, const scn_scenario *s, const void *base, const scn__key *k)
{
    char buf[SCN_PATH_MAX], cwd[PATH_MAX], abs[PATH_MAX + SCN_PATH_MAX + 1];
    scn__key_format(s, base, k, buf, sizeof buf);
    int path = k->kind == SCN__PATH || (k->kind == SCN__PROFILE && scn_profile_is_path(buf));
    if (path && buf[0] && buf[0] != '/' && getcwd(cwd, sizeof cwd)) {
        snprintf(abs, sizeof abs, "%s/%s", cwd, buf);
        write_kv(f, k->name, abs);
        return;
    }
    write_kv(f, k->name, buf);
}

/* Whether tenant t's key k is written: a co-located tenant has no pool keys, a disaggregated
 * one no replicas or max_replicas (its instances are its pools, and scn_check refuses both). */
static int tenant_key_written(const scn_tenant *t, const scn__key *k)
{
    size_t o = k->off;
    int pool = o == offsetof(scn_tenant, prefill_replicas) ||
               o == offsetof(scn_tenant, decode_replicas) ||
               o == offsetof(scn_tenant, prefill_tp) || o == offsetof(scn_tenant, decode_tp) ||
               o == offsetof(scn_tenant, kv_transfer);
    if (!t->prefill_replicas && !t->decode_replicas)
        return !pool;
    return o != offsetof(scn_tenant, replicas) && o != offsetof(scn_tenant, max_replicas);
}

static void write_section(FILE *f, const char *header, scn__sect sect, const scn_scenario *s,
                          const void *base)
{
    fprintf(f, "\n[%s]\n", header);
    for (size_t i = 0; i < scn__n_keys; i++) {
        const scn__key *k = &scn__keys[i];
        if (k->sect != sect || (sect == SCN__TENANT && !tenant_key_written(base, k)))
            continue;
        const scn_tenant *t = base;
        if (sect == SCN__TENANT && ((k->off == offsetof(scn_tenant, prefill_tp) &&
                                     !t->prefill_tp) ||
                                    (k->off == offsetof(scn_tenant, decode_tp) && !t->decode_tp)))
            fprintf(f, "%s = %u\n", k->name, t->tp); /* unset: the tenant's tp */
        else
            write_key(f, s, base, k);
    }
}

static void emit_param(void *ud, const char *key, const char *value) { write_kv(ud, key, value); }

int scn_write(const scn_scenario *s, FILE *f)
{
    fprintf(f, "; slicesim scenario (canonical form: every key, defaults included)\n");
    write_section(f, "cluster", SCN__CLUSTER, s, s);
    write_section(f, "policy", SCN__POLICY, s, s);
    ss_params_each(s->params, emit_param, f);
    write_section(f, "run", SCN__RUN, s, s);
    write_section(f, "engine", SCN__ENGINE, s, s);
    write_section(f, "kvpool", SCN__KVPOOL, s, s);
    for (uint32_t i = 0; i < s->n_tenants; i++) {
        char header[SCN_NAME_MAX + 8];
        snprintf(header, sizeof header, "tenant.%s", s->tenants[i].name);
        write_section(f, header, SCN__TENANT, s, &s->tenants[i]);
    }
    return fflush(f) || ferror(f) ? SS_EIO : SS_OK;
}
