/* `slicesim list models|gpus|engines|tier-mixes`: prints the catalog, or the tier mixes of the
 * workload module, as an aligned table or as JSON. Not for checking profiles beyond what
 * catalog_load does, nor for anything the cost model derives. */
#include "app/cli.h"

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "core/ss_strbuf.h"
#include "scenario/scenario.h"
#include "workload/workload.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define CELL_MAX 136 /* longest cell: a description (127) plus slack */
#define MAX_COLS 16 /* columns of the widest listing (checked below) */
#define LIST_COLUMNS 100 /* the widest line a table or the long view prints, where it can */

/* One listing: its table columns and JSON object, both generated from one entry. */
typedef struct list_kind {
    const char *name;                 /* "models" */
    int n_cols;
    const char *const *headers;       /* n_cols column titles */
    const char *left;                 /* per column: 'l' left-aligned text, 'r' number */
    size_t (*count)(const catalog *c);
    const void *(*at)(const catalog *c, size_t i);
    void (*cell)(const void *item, int col, char *buf, size_t n);
    void (*json)(const void *item, FILE *out);
} list_kind;

/* {======================================================================
 * JSON helpers
 * ======================================================================= */

static void json_str(FILE *out, const char *key, const char *s, int last)
{
    fprintf(out, "\"%s\": ", key);
    ss_json_fputs(out, s);
    fprintf(out, "%s", last ? "" : ", ");
}

static void json_num(FILE *out, const char *key, double v, int last)
{
    fprintf(out, "\"%s\": %.15g%s", key, v, last ? "" : ", ");
}

static void json_bool(FILE *out, const char *key, int v, int last)
{
    fprintf(out, "\"%s\": %s%s", key, v ? "true" : "false", last ? "" : ", ");
}

/* }====================================================================== */

/* Print text from column col (already written), breaking it at spaces so that no line passes
 * LIST_COLUMNS; continuation lines start at column indent. A word longer than the room is
 * printed whole. Ends the line. */
static void put_wrapped(FILE *out, const char *text, int col, int indent)
{
    int at = col, first = 1;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        int len = (int)strcspn(p, " ");
        if (!len)
            break;
        if (!first && at + 1 + len > LIST_COLUMNS) {
            fprintf(out, "\n%*s", indent, "");
            at = indent;
            first = 1;
        }
        fprintf(out, "%s%.*s", first ? "" : " ", len, p);
        at += len + !first;
        first = 0;
        p += len;
    }
    fputc('\n', out);
}

/* {======================================================================
 * Models
 * ======================================================================= */

static const char *const model_headers[] = {
    "MODEL", "PARAMS_B", "LAYERS", "HIDDEN", "HEADS/KV", "FFN", "VOCAB", "EXPERTS/TOPK",
    "CONTEXT", "KV_KIB/TOK",
};

static void model_cell(const void *item, int col, char *buf, size_t n)
{
    const cat_model *m = item;
    switch (col) {
    case 0: snprintf(buf, n, "%s", m->name); break;
    case 1: snprintf(buf, n, "%.2f", cat_model_params(m) / 1e9); break;
    case 2: snprintf(buf, n, "%u", m->layers); break;
    case 3: snprintf(buf, n, "%u", m->hidden); break;
    case 4: snprintf(buf, n, "%u/%u", m->heads, m->kv_heads); break;
    case 5: snprintf(buf, n, "%u", m->ffn); break;
    case 6: snprintf(buf, n, "%u", m->vocab); break;
    case 7:
        if (m->experts > 1)
            snprintf(buf, n, "%u/%u", m->experts, m->top_k);
        else
            snprintf(buf, n, "-");
        break;
    case 8: snprintf(buf, n, "%u", m->max_context); break;
    default: snprintf(buf, n, "%g", cat_model_kv_bytes_per_token(m) / 1024); break;
    }
}

static void model_json(const void *item, FILE *out)
{
    const cat_model *m = item;
    fputc('{', out);
    json_str(out, "name", m->name, 0);
    json_str(out, "description", m->description, 0);
    json_num(out, "params", cat_model_params(m), 0);
    json_num(out, "layers", m->layers, 0);
    json_num(out, "hidden", m->hidden, 0);
    json_num(out, "heads", m->heads, 0);
    json_num(out, "kv_heads", m->kv_heads, 0);
    json_num(out, "head_dim", m->head_dim, 0);
    json_num(out, "ffn", m->ffn, 0);
    json_num(out, "vocab", m->vocab, 0);
    json_num(out, "experts", m->experts, 0);
    json_num(out, "top_k", m->top_k, 0);
    json_num(out, "max_context", m->max_context, 0);
    json_num(out, "dtype_bytes", m->dtype_bytes, 0);
    json_bool(out, "gated_mlp", m->gated_mlp, 0);
    json_bool(out, "tied_embeddings", m->tied_embeddings, 0);
    json_num(out, "kv_bytes_per_token", cat_model_kv_bytes_per_token(m), 1);
    fputc('}', out);
}

static const void *model_at(const catalog *c, size_t i) { return catalog_model_at(c, i); }

/* }====================================================================== */

/* {======================================================================
 * GPUs
 * ======================================================================= */

static const char *const gpu_headers[] = {
    "GPU", "DESCRIPTION", "BF16_TFLOPS", "HBM_GIB", "HBM_TB/S", "NVLINK_GB/S", "PCIE_GB/S",
};

static void gpu_cell(const void *item, int col, char *buf, size_t n)
{
    const cat_gpu *g = item;
    switch (col) {
    case 0: snprintf(buf, n, "%s", g->name); break;
    case 1: snprintf(buf, n, "%s", g->description); break;
    case 2: snprintf(buf, n, "%g", g->peak_flops / 1e12); break;
    case 3: snprintf(buf, n, "%g", g->hbm_bytes / 1073741824.0); break;
    case 4: snprintf(buf, n, "%g", g->hbm_bw / 1e12); break;
    case 5:
        if (g->has_nvlink)
            snprintf(buf, n, "%g", g->nvlink_bw / 1e9);
        else
            snprintf(buf, n, "-");
        break;
    default: snprintf(buf, n, "%g", g->pcie_bw / 1e9); break;
    }
}

static void gpu_json(const void *item, FILE *out)
{
    const cat_gpu *g = item;
    fputc('{', out);
    json_str(out, "name", g->name, 0);
    json_str(out, "description", g->description, 0);
    json_num(out, "peak_flops", g->peak_flops, 0);
    json_num(out, "hbm_bytes", g->hbm_bytes, 0);
    json_num(out, "hbm_bw", g->hbm_bw, 0);
    json_num(out, "sm_count", g->sm_count, 0);
    json_num(out, "l2_bytes", g->l2_bytes, 0);
    json_num(out, "gpus_per_node", g->gpus_per_node, 0);
    json_bool(out, "has_nvlink", g->has_nvlink, 0);
    json_num(out, "nvlink_bw", g->nvlink_bw, 0);
    json_num(out, "pcie_bw", g->pcie_bw, 0);
    json_num(out, "net_bw", g->net_bw, 0);
    json_num(out, "link_latency_s", g->link_latency_s, 0);
    json_num(out, "net_latency_s", g->net_latency_s, 0);
    json_num(out, "nvlink_eff", g->nvlink_eff, 0);
    json_num(out, "pcie_eff", g->pcie_eff, 0);
    json_num(out, "net_eff", g->net_eff, 0);
    json_num(out, "eff_compute", g->eff_compute, 0);
    json_num(out, "eff_memory", g->eff_memory, 0);
    json_num(out, "eff_elementwise", g->eff_elementwise, 1);
    fputc('}', out);
}

static const void *gpu_at(const catalog *c, size_t i) { return catalog_gpu_at(c, i); }

/* }====================================================================== */

/* {======================================================================
 * Engines
 * ======================================================================= */

/* The table is the short view (it fits LIST_COLUMNS columns, the description wrapped); every term
 * of one engine, or of all with --long, is print_engine_long's. */
static const char *const engine_headers[] = {
    "ENGINE", "OVERLAP", "ASYNC", "ITER_US", "FRONTEND_MS", "DESCRIPTION",
};
#define N_ENGINE_COLS ((int)(sizeof engine_headers / sizeof *engine_headers))
_Static_assert(sizeof engine_headers / sizeof *engine_headers <= MAX_COLS, "raise MAX_COLS");

static void engine_cell(const void *item, int col, char *buf, size_t n)
{
    const cat_engine *e = item;
    switch (col) {
    case 0: snprintf(buf, n, "%s", e->name); break;
    case 1: snprintf(buf, n, "%s", e->overlap_name); break;
    case 2: snprintf(buf, n, "%s", e->async_scheduling ? "yes" : "no"); break;
    case 3: snprintf(buf, n, "%g", e->host.iter_fixed_s * 1e6); break;
    case 4: snprintf(buf, n, "%g", e->frontend_s * 1e3); break;
    default: snprintf(buf, n, "%s", e->description); break;
    }
}

static const char *fused_text(const cat_engine *e)
{
    return e->fuse_add_norm && e->fuse_silu_mul ? "add-norm, silu-mul"
           : e->fuse_add_norm                   ? "add-norm"
           : e->fuse_silu_mul                   ? "silu-mul"
                                                : "none";
}

/* One "  LABEL  TEXT" line of the long view, TEXT wrapped under itself. */
static void long_line(FILE *out, const char *label, const char *text)
{
    fprintf(out, "  %-20s", label);
    put_wrapped(out, text, 22, 22);
}

/* Every term of e, one per line (host times in microseconds, as the profile writes them). */
static void print_engine_long(const cat_engine *e, FILE *out)
{
    char buf[CELL_MAX * 2];
    fprintf(out, "%s: ", e->name);
    put_wrapped(out, e->description, (int)strlen(e->name) + 2, 2);
    snprintf(buf, sizeof buf, "%s (%s)", e->overlap_name,
             e->overlap == CAT_OVERLAP_MAX ? "the host prepares step n+1 while the device runs "
                                             "step n"
                                           : "host work, then device work, every step");
    long_line(out, "overlap", buf);
    long_line(out, "async scheduling", e->async_scheduling ? "yes" : "no");
    const cat_engine_host *h = &e->host;
    snprintf(buf, sizeof buf, "iteration %g us, sequence %g us, token %g us",
             h->iter_fixed_s * 1e6, h->iter_per_seq_s * 1e6, h->iter_per_token_s * 1e6);
    long_line(out, "host time", buf);
    snprintf(buf, sizeof buf, "floor %g us, launch %g us", h->op_floor_s * 1e6,
             h->launch_s * 1e6);
    long_line(out, "kernels", buf);
    for (uint32_t i = 0; i < e->n_gpus; i++) {
        const cat_engine_host *g = &e->per_gpu[i].host;
        char label[CAT_NAME_MAX + 16];
        snprintf(label, sizeof label, "on %s", e->per_gpu[i].gpu);
        snprintf(buf, sizeof buf, "iteration %g us, sequence %g us, token %g us, floor %g us, "
                 "launch %g us", g->iter_fixed_s * 1e6, g->iter_per_seq_s * 1e6,
                 g->iter_per_token_s * 1e6, g->op_floor_s * 1e6, g->launch_s * 1e6);
        long_line(out, label, buf);
    }
    long_line(out, "fused kernels", fused_text(e));
    snprintf(buf, sizeof buf, "%g of the roofline", e->moe_eff);
    long_line(out, "MoE expert GEMMs", buf);
    snprintf(buf, sizeof buf, "%g x the GEMMs' roofline efficiencies", e->attn_speed);
    long_line(out, "attention speed", buf);
    snprintf(buf, sizeof buf, "%s, %g of the link, %g us per step", e->allreduce_name,
             e->allreduce_eff, e->allreduce_hop_s * 1e6);
    long_line(out, "all-reduce", buf);
    snprintf(buf, sizeof buf, "%g ms added to TTFT and E2E", e->frontend_s * 1e3);
    long_line(out, "front end", buf);
}

static void engine_host_json(FILE *out, const cat_engine_host *h, int last)
{
    json_num(out, "iter_fixed_s", h->iter_fixed_s, 0);
    json_num(out, "iter_per_seq_s", h->iter_per_seq_s, 0);
    json_num(out, "iter_per_token_s", h->iter_per_token_s, 0);
    json_num(out, "op_floor_s", h->op_floor_s, 0);
    json_num(out, "launch_s", h->launch_s, last);
}

static void engine_json(const void *item, FILE *out)
{
    const cat_engine *e = item;
    fputc('{', out);
    json_str(out, "name", e->name, 0);
    json_str(out, "description", e->description, 0);
    json_str(out, "overlap", e->overlap_name, 0);
    engine_host_json(out, &e->host, 0);
    json_bool(out, "fuse_add_norm", e->fuse_add_norm, 0);
    json_bool(out, "fuse_silu_mul", e->fuse_silu_mul, 0);
    json_num(out, "moe_eff", e->moe_eff, 0);
    json_str(out, "allreduce", e->allreduce_name, 0);
    json_num(out, "allreduce_eff", e->allreduce_eff, 0);
    json_num(out, "allreduce_hop_s", e->allreduce_hop_s, 0);
    json_num(out, "frontend_s", e->frontend_s, 0);
    json_bool(out, "async_scheduling", e->async_scheduling, 0);
    json_num(out, "attn_speed", e->attn_speed, 0);
    fputs("\"per_gpu\": {", out);
    for (uint32_t i = 0; i < e->n_gpus; i++) {
        fprintf(out, "%s\"%s\": {", i ? ", " : "", e->per_gpu[i].gpu);
        engine_host_json(out, &e->per_gpu[i].host, 1);
        fputc('}', out);
    }
    fputs("}}", out);
}

static const void *engine_at(const catalog *c, size_t i) { return catalog_engine_at(c, i); }

/* }====================================================================== */

static const list_kind kinds[] = {
    {.name = "models", .n_cols = 10, .headers = model_headers, .left = "lrrrrrrrrr",
     .count = catalog_n_models, .at = model_at, .cell = model_cell, .json = model_json},
    {.name = "gpus", .n_cols = 7, .headers = gpu_headers, .left = "llrrrrr",
     .count = catalog_n_gpus, .at = gpu_at, .cell = gpu_cell, .json = gpu_json},
    {.name = "engines", .n_cols = N_ENGINE_COLS, .headers = engine_headers,
     .left = "lllrrl",
     .count = catalog_n_engines, .at = engine_at, .cell = engine_cell, .json = engine_json},
};

/* One row; a left-aligned last column (a description) is wrapped under itself to fit
 * LIST_COLUMNS. */
static void print_row(const list_kind *k, const void *item, const int *width, FILE *out)
{
    char buf[CELL_MAX];
    int at = 0;
    for (int col = 0; col < k->n_cols; col++) {
        if (item)
            k->cell(item, col, buf, sizeof buf);
        else
            snprintf(buf, sizeof buf, "%s", k->headers[col]);
        int pad = k->left[col] == 'l' ? -width[col] : width[col];
        if (col == k->n_cols - 1 && pad < 0) {
            put_wrapped(out, buf, at, at); /* no trailing blanks */
            return;
        }
        fprintf(out, "%*s%s", pad, buf, col == k->n_cols - 1 ? "" : "  ");
        at += width[col] + 2;
    }
    fputc('\n', out);
}

static void print_table(const list_kind *k, const catalog *c, FILE *out)
{
    int width[MAX_COLS];
    char buf[CELL_MAX];
    for (int col = 0; col < k->n_cols; col++) {
        width[col] = (int)strlen(k->headers[col]);
        for (size_t i = 0; i < k->count(c); i++) {
            k->cell(k->at(c, i), col, buf, sizeof buf);
            if ((int)strlen(buf) > width[col])
                width[col] = (int)strlen(buf);
        }
    }
    print_row(k, NULL, width, out);
    for (size_t i = 0; i < k->count(c); i++)
        print_row(k, k->at(c, i), width, out);
}

static void print_json(const list_kind *k, const catalog *c, FILE *out)
{
    fputs("[\n", out);
    for (size_t i = 0; i < k->count(c); i++) {
        fputs("  ", out);
        k->json(k->at(c, i), out);
        fputs(i + 1 < k->count(c) ? ",\n" : "\n", out);
    }
    fputs("]\n", out);
}

/* `list engines NAME`: its long view or JSON; exit 2 naming the catalog's engines when it has
 * no engine NAME. */
static int print_engine(const catalog *c, const char *name, int json, FILE *out)
{
    const cat_engine *e = catalog_engine(c, name);
    if (!e) {
        ss_strbuf names = {0};
        for (size_t i = 0; i < catalog_n_engines(c); i++)
            ss_strbuf_printf(&names, "%s%s", i ? ", " : "", catalog_engine_at(c, i)->name);
        fprintf(stderr, "slicesim: list: no engine '%s' in the catalog (its engines: %s)\n",
                name, ss_strbuf_str(&names));
        ss_strbuf_fini(&names);
        return CLI_EUSAGE;
    }
    if (json) {
        fputs("[\n  ", out);
        engine_json(e, out);
        fputs("\n]\n", out);
    } else {
        print_engine_long(e, out);
    }
    return CLI_OK;
}

/* {======================================================================
 * Tier mixes: each named mix for K = 1 .. SS_MAX_TIERS (powerlaw with alpha = 1)
 * ======================================================================= */

static const char *const mix_names[] = {"uniform", "gaussian", "enterprise", "powerlaw"};

static int print_mixes(int json, FILE *out)
{
    ss_errbuf eb = {""};
    if (json)
        fputs("[\n", out);
    else
        fprintf(out, "%-10s %2s  %s\n", "MIX", "K", "P(TIER 0) P(TIER 1) ...");
    size_t n_mix = sizeof mix_names / sizeof *mix_names;
    for (size_t i = 0; i < n_mix; i++) {
        for (uint32_t k = 1; k <= SS_MAX_TIERS; k++) {
            wl_tier_mix m;
            if (wl_tier_mix_make(&m, mix_names[i], k, 1.0, &eb)) {
                fprintf(stderr, "slicesim: list: %s\n", eb.msg);
                return CLI_EFAIL;
            }
            if (json) {
                fprintf(out, "  {\"mix\": \"%s\", \"tiers\": %u, \"p\": [", mix_names[i], k);
                for (uint32_t t = 0; t < k; t++)
                    fprintf(out, "%.6f%s", m.p[t], t + 1 < k ? ", " : "");
                fprintf(out, "]}%s\n", i + 1 < n_mix || k < SS_MAX_TIERS ? "," : "");
            } else {
                fprintf(out, "%-10s %2u ", mix_names[i], k);
                for (uint32_t t = 0; t < k; t++)
                    fprintf(out, " %.3f", m.p[t]);
                fputc('\n', out);
            }
        }
    }
    if (json)
        fputs("]\n", out);
    return CLI_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Scenario keys (the scenario's key table and the policies' parameters)
 * ======================================================================= */

typedef struct keys_out {
    FILE *f;
    int json, n;
} keys_out;

/* text from column `col` on, wrapped at 100 columns, continuation lines indented to col */
static void wrapped(FILE *f, const char *text, int col)
{
    int at = col;
    while (*text) {
        size_t w = strcspn(text, " ");
        if (at > col && at + 1 + (int)w > 100) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fprintf(f, "%.*s", (int)w, text);
        at += (int)w;
        text += w + strspn(text + w, " ");
    }
    fputc('\n', f);
}

static void print_key(void *ud, const scn_key_info *k)
{
    keys_out *o = ud;
    if (o->json) {
        fprintf(o->f, "%s\n  {\"section\": ", o->n++ ? "," : "");
        ss_json_fputs(o->f, k->section);
        fputs(", \"key\": ", o->f);
        ss_json_fputs(o->f, k->name);
        fputs(", \"default\": ", o->f);
        ss_json_fputs(o->f, k->def);
        fputs(", \"values\": ", o->f);
        ss_json_fputs(o->f, k->values);
        if (k->read_by) {
            fputs(", \"read_by\": ", o->f);
            ss_json_fputs(o->f, k->read_by);
        }
        fputc('}', o->f);
        return;
    }
    char key[96], line[512];
    snprintf(key, sizeof key, "%s.%s", k->section, k->name);
    if (k->read_by)
        snprintf(line, sizeof line, "read by %s", k->read_by);
    else
        snprintf(line, sizeof line, "%s", k->values);
    fprintf(o->f, "%-36s %-18s ", key, k->def[0] ? k->def : "-");
    int col = 56;
    if (strlen(key) > 36 || strlen(k->def) > 18) { /* a long one: the values on their own line */
        fprintf(o->f, "\n%*s", col, "");
    }
    wrapped(o->f, line, col);
}

static int print_keys(int json, FILE *out)
{
    keys_out o = {out, json, 0};
    if (json)
        fputc('[', out);
    else
        fprintf(out, "%-36s %-18s %s\n", "KEY", "DEFAULT", "VALUES");
    int rc = scn_keys_each(print_key, &o);
    if (json)
        fputs("\n]\n", out);
    if (rc) {
        fprintf(stderr, "slicesim: list: out of memory\n");
        return CLI_EFAIL;
    }
    return CLI_OK;
}

/* }====================================================================== */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: slicesim list [--profiles DIR] [--json] models|gpus|tier-mixes|keys\n"
            "       slicesim list [--profiles DIR] [--json] [--long] engines [NAME]\n\n"
            "List the catalog of model shapes, GPU kinds or serving engines read from the\n"
            "profiles directory, or the tier mixes a scenario's tier_mix may name.\n\n"
            "  models           parameters, layers, width, heads/KV heads, MLP size, vocabulary,\n"
            "                   experts/top-k, context window, KV cache per token\n"
            "  gpus             peak dense bf16 FLOP/s, device memory and its bandwidth,\n"
            "                   NVLink and PCIe bandwidth per direction\n"
            "  engines          serving-engine profiles, a table: host/device overlap, async\n"
            "                   scheduling, host time per iteration, front-end latency, what\n"
            "                   the engine is\n"
            "  engines NAME     every term of engine NAME: host time per iteration (per GPU\n"
            "                   where it differs), per sequence and per token, kernel floor and\n"
            "                   launch time, fused kernels, MoE and attention efficiency,\n"
            "                   all-reduce, front end\n"
            "  tier-mixes       the probability of each tier under the uniform, gaussian,\n"
            "                   enterprise and powerlaw (alpha 1) mixes, for K = 1 .. 10\n"
            "  keys             every key a scenario file (or --set SECTION.KEY=VALUE) takes,\n"
            "                   with its default and what it accepts, then the [policy]\n"
            "                   parameters of the policies, with the policies that read them\n"
            "  --long           with engines: every term of every engine, as engines NAME does\n"
            "  --profiles DIR   profiles directory (default: $SLICESIM_PROFILES, else ./profiles,\n"
            "                   else the source tree's profiles/)\n"
            "  --json           print a JSON array (SI units, every term) instead of a table\n"
            "  -h, --help       show this help\n");
}

static const list_kind *find_kind(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(kinds[i].name, name))
            return &kinds[i];
    return NULL;
}

typedef struct list_opts {
    const char *profiles; /* NULL: catalog_default_dir decides */
    int json;
    int help;
    int long_view;        /* --long: every term of every engine */
    const char *kind;
    const char *name;     /* engines NAME, else NULL */
} list_opts;

/* Parse argv into *o; on a usage error print one line and return CLI_EUSAGE. */
static int parse_args(int argc, char **argv, list_opts *o)
{
    static const struct option longopts[] = {
        {"profiles", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"long", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 0; /* GNU: full reinitialisation, in case another parser ran before */
    if (cli_check_long_options("list", argc, argv, ":h", longopts))
        return CLI_EUSAGE;
    for (int ch; (ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
        switch (ch) {
        case 'p': o->profiles = optarg; break;
        case 'j': o->json = 1; break;
        case 'l': o->long_view = 1; break;
        case 'h': o->help = 1; break;
        case ':':
            fprintf(stderr, "slicesim: list: option '%s' needs an argument\n", argv[optind - 1]);
            return CLI_EUSAGE;
        default:
            fprintf(stderr, "slicesim: list: unknown option '%s' (try --help)\n", argv[optind - 1]);
            return CLI_EUSAGE;
        }
    }
    if (o->help)
        return CLI_OK;
    int engines = optind < argc && !strcmp(argv[optind], "engines");
    if (optind != argc - 1 && !(engines && optind == argc - 2)) {
        fprintf(stderr, "slicesim: list: expected one of models, gpus, engines, tier-mixes, "
                        "keys (try --help)\n");
        return CLI_EUSAGE;
    }
    o->kind = argv[optind];
    o->name = engines ? argv[optind + 1] : NULL;
    if (o->long_view && !engines) {
        fprintf(stderr, "slicesim: list: --long lists engines only (slicesim list --long "
                        "engines)\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

int cmd_list(int argc, char **argv)
{
    list_opts o = {0};
    int st = parse_args(argc, argv, &o);
    if (st || o.help) {
        if (o.help)
            usage(stdout);
        return st;
    }
    if (!strcmp(o.kind, "tier-mixes") || !strcmp(o.kind, "keys")) {
        st = !strcmp(o.kind, "keys") ? print_keys(o.json, stdout) : print_mixes(o.json, stdout);
        if (!st && (fflush(stdout) || ferror(stdout))) {
            fprintf(stderr, "slicesim: list: cannot write to standard output\n");
            return CLI_EFAIL;
        }
        return st;
    }
    const list_kind *k = find_kind(o.kind);
    if (!k) {
        fprintf(stderr,
                "slicesim: list: unknown kind '%s' (valid: models, gpus, engines, tier-mixes, "
                "keys)\n",
                o.kind);
        return CLI_EUSAGE;
    }
    catalog *c = NULL;
    ss_errbuf eb = {""};
    int rc = catalog_load(&c, catalog_default_dir(o.profiles), &eb);
    if (rc) {
        fprintf(stderr, "slicesim: %s\n", eb.msg[0] ? eb.msg : ss_strerror(rc));
        return cli_status_of(rc);
    }
    if (o.name)
        st = print_engine(c, o.name, o.json, stdout);
    else if (o.json)
        print_json(k, c, stdout);
    else if (o.long_view)
        for (size_t i = 0; i < catalog_n_engines(c); i++) {
            fputs(i ? "\n" : "", stdout);
            print_engine_long(catalog_engine_at(c, i), stdout);
        }
    else
        print_table(k, c, stdout);
    catalog_destroy(&c);
    if (st)
        return st;
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "slicesim: list: cannot write to standard output\n");
        return CLI_EFAIL;
    }
    return CLI_OK;
}
