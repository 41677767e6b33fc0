/* Profile-table cost backends. `profile` times an operator from measured tables (every .csv
 * file in <profiles_dir>/<gpu>/, format in profiles/PROFILE-FORMAT.md) whenever one exists for
 * it, interpolating piecewise-linearly on the median; `auto` does so only inside the measured
 * range. Both fall back to the roofline for the rest. Also the table reader and writer, so the
 * format lives in one file. Not for importing other tools' files (profile_vidur.c). */
#include "cost/cost_profile.h"

#include "core/ss_alloc.h"
#include "core/ss_csv.h"
#include "core/ss_log.h"
#include "core/ss_parse.h"
#include "cost/cost_roofline.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How an operator's rows are keyed. */
typedef enum prof_class {
    PC_DENSE, /* GEMMs and element-wise kernels: shape, tp, tokens */
    PC_ATTN,  /* attention: shape, tp, tokens (batch) and kv_tokens */
    PC_COLL,  /* collectives: n_gpus and bytes */
} prof_class;

static prof_class op_class(cost_op_kind k)
{
    if (k == COST_OP_ATTN_PREFILL || k == COST_OP_ATTN_DECODE)
        return PC_ATTN;
    if (k == COST_OP_ALLREDUCE || k == COST_OP_PP_SEND)
        return PC_COLL;
    return PC_DENSE;
}

static const char *const key_names[COST_PK__COUNT] = {
    [COST_PK_HIDDEN] = "hidden",     [COST_PK_HEADS] = "heads",   [COST_PK_KV_HEADS] = "kv_heads",
    [COST_PK_HEAD_DIM] = "head_dim", [COST_PK_FFN] = "ffn",       [COST_PK_GATED] = "gated",
    [COST_PK_VOCAB] = "vocab",       [COST_PK_EXPERTS] = "experts", [COST_PK_TOP_K] = "top_k",
    [COST_PK_TP] = "tp",             [COST_PK_TOKENS] = "tokens", [COST_PK_KV_TOKENS] = "kv_tokens",
    [COST_PK_N_GPUS] = "n_gpus",     [COST_PK_BYTES] = "bytes",
};

const char *cost_prof_key_name(cost_prof_key k)
{
    return (unsigned)k < COST_PK__COUNT ? key_names[k] : "?";
}

/* {======================================================================
 * Reading and writing tables
 * ======================================================================= */

struct cost_prof_reader {
    ss_csv csv;
    int c_op, c_key[COST_PK__COUNT], c_median, c_min, c_p90, c_source; /* -1 = absent */
};

/* The header's column for name, -1 if absent; duplicates are errors. */
static int header_col(const ss_csv *c, const char *name, int *col, ss_errbuf *eb)
{
    *col = -1;
    for (size_t i = 0; i < c->n_hdr; i++) {
        if (strcmp(c->hdr[i], name))
            continue;
        if (*col >= 0)
            return ss_csv_err(c, eb, SS_EPARSE, name, "column appears twice");
        *col = (int)i;
    }
    return SS_OK;
}

static int known_column(const char *name)
{
    static const char *const other[] = {"op", "median_us", "min_us", "p90_us", "source"};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        if (!strcmp(name, other[i]))
            return 1;
    for (int k = 0; k < COST_PK__COUNT; k++)
        if (!strcmp(name, key_names[k]))
            return 1;
    return 0;
}

static int check_header(cost_prof_reader *r, ss_errbuf *eb)
{
    const ss_csv *c = &r->csv;
    for (size_t i = 0; i < c->n_hdr; i++)
        if (!known_column(c->hdr[i]))
            return ss_csv_err(c, eb, SS_EPARSE, c->hdr[i][0] ? c->hdr[i] : "(empty)",
                              "unknown column (see profiles/PROFILE-FORMAT.md)");
    int rc = header_col(c, "op", &r->c_op, eb);
    for (int k = 0; !rc && k < COST_PK__COUNT; k++)
        rc = header_col(c, key_names[k], &r->c_key[k], eb);
    if (!rc)
        rc = header_col(c, "median_us", &r->c_median, eb);
    if (!rc)
        rc = header_col(c, "min_us", &r->c_min, eb);
    if (!rc)
        rc = header_col(c, "p90_us", &r->c_p90, eb);
    if (!rc)
        rc = header_col(c, "source", &r->c_source, eb);
    if (!rc && r->c_op < 0)
        rc = ss_csv_err(c, eb, SS_EPARSE, "op", "missing column");
    if (!rc && r->c_median < 0)
        rc = ss_csv_err(c, eb, SS_EPARSE, "median_us", "missing column");
    return rc;
}

int cost_prof_reader_open(cost_prof_reader **r_out, const char *path, ss_errbuf *eb)
{
    cost_prof_reader *r = ss_calloc(1, sizeof *r);
    if (!r)
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
    int rc = ss_csv_open(&r->csv, path, 1, eb);
    if (!rc && (rc = check_header(r, eb)))
        ss_csv_close(&r->csv);
    if (rc) {
        ss_free(r);
        return rc;
    }
    *r_out = r;
    return SS_OK;
}

/* Operators a cost backend times: every device operator of the iteration (the kinds before
 * host in cost_op_kind) and the pipeline send. Host time and KV swaps are the engine's. */
static int op_timed(cost_op_kind k) { return k < COST_OP_HOST || k == COST_OP_PP_SEND; }

static int parse_op(const ss_csv *c, const char *s, cost_op_kind *out, ss_errbuf *eb)
{
    for (int k = 0; k < COST_OP__COUNT; k++)
        if (!strcmp(s, cost_op_name((cost_op_kind)k))) {
            if (!op_timed((cost_op_kind)k))
                return ss_csv_err(c, eb, SS_EPARSE, "op",
                                  "'%s' is timed by the engine, not by a profile table", s);
            *out = (cost_op_kind)k;
            return SS_OK;
        }
    return ss_csv_err(c, eb, SS_EPARSE, "op", "unknown operator '%s' (known: embed, norm, qkv, "
                      "rope, attn_prefill, attn_decode, o_proj, all_reduce, residual, "
                      "moe_router, mlp_up, act, mlp_down, final_norm, lm_head, pp_send)", s);
}

static int is_blank_cell(const char *s) { return !*s || !strcmp(s, "-"); }

static int parse_key(const cost_prof_reader *r, int k, int64_t *out, ss_errbuf *eb)
{
    const char *s = ss_csv_get(&r->csv, r->c_key[k]);
    *out = COST_PROF_ANY;
    if (is_blank_cell(s))
        return SS_OK;
    if (ss_parse_i64z(s, out) || *out < 0)
        return ss_csv_err(&r->csv, eb, SS_EPARSE, key_names[k],
                          "not a non-negative integer: '%s'", s);
    if (k == COST_PK_GATED && *out > 1)
        return ss_csv_err(&r->csv, eb, SS_EPARSE, key_names[k], "must be 0 or 1, got '%s'", s);
    if (k == COST_PK_EXPERTS && *out == 1)
        *out = 0; /* one expert is a dense MLP, as in the model catalog */
    return SS_OK;
}

/* A time cell in us; *out < 0 when optional and blank. */
static int parse_us(const cost_prof_reader *r, int col, const char *name, int required,
                    double *out, ss_errbuf *eb)
{
    const char *s = ss_csv_get(&r->csv, col);
    *out = -1;
    if (is_blank_cell(s) && !required)
        return SS_OK;
    if (is_blank_cell(s))
        return ss_csv_err(&r->csv, eb, SS_EPARSE, name, "missing value");
    if (ss_parse_doublez(s, out) || *out < 0 || (required && *out <= 0))
        return ss_csv_err(&r->csv, eb, SS_EPARSE, name, "not a %s number of microseconds: '%s'",
                          required ? "positive" : "non-negative", s);
    return SS_OK;
}

/* Which key columns an operator of class pc needs (+1), forbids (-1) or accepts (0). */
static int key_role(prof_class pc, int k)
{
    int shape = k <= COST_PK_TOP_K;
    switch (pc) {
    case PC_DENSE:
        return shape ? 0 : (k == COST_PK_TP || k == COST_PK_TOKENS) ? 1 : -1;
    case PC_ATTN:
        return shape ? 0 : (k == COST_PK_N_GPUS || k == COST_PK_BYTES) ? -1 : 1;
    default:
        return (k == COST_PK_N_GPUS || k == COST_PK_BYTES) ? 1 : -1;
    }
}

static int check_keys(const cost_prof_reader *r, const cost_prof_row *row, ss_errbuf *eb)
{
    prof_class pc = op_class(row->op);
    const char *op = cost_op_name(row->op);
    for (int k = 0; k < COST_PK__COUNT; k++) {
        int role = key_role(pc, k), any = row->key[k] == COST_PROF_ANY;
        if (role > 0 && any)
            return ss_csv_err(&r->csv, eb, SS_EPARSE, key_names[k], "required for op '%s'", op);
        if (role < 0 && !any)
            return ss_csv_err(&r->csv, eb, SS_EPARSE, key_names[k],
                              "not used by op '%s'; write '-'", op);
    }
    const int positive[] = {COST_PK_TP, COST_PK_TOKENS, COST_PK_BYTES};
    for (size_t i = 0; i < sizeof positive / sizeof *positive; i++)
        if (row->key[positive[i]] == 0)
            return ss_csv_err(&r->csv, eb, SS_EPARSE, key_names[positive[i]], "must be >= 1");
    int64_t n = row->key[COST_PK_N_GPUS];
    if (n != COST_PROF_ANY && (n < 2 || (row->op == COST_OP_PP_SEND && n != 2)))
        return ss_csv_err(&r->csv, eb, SS_EPARSE, "n_gpus", "must be %s for op '%s'",
                          row->op == COST_OP_PP_SEND ? "2" : ">= 2", op);
    return SS_OK;
}

static int check_times(const cost_prof_reader *r, const cost_prof_row *row, ss_errbuf *eb)
{
    if (row->min_us >= 0 && row->min_us > row->median_us)
        return ss_csv_err(&r->csv, eb, SS_EPARSE, "min_us", "%g is above median_us %g",
                          row->min_us, row->median_us);
    if (row->p90_us >= 0 && row->p90_us < row->median_us)
        return ss_csv_err(&r->csv, eb, SS_EPARSE, "p90_us", "%g is below median_us %g",
                          row->p90_us, row->median_us);
    return SS_OK;
}

int cost_prof_reader_next(cost_prof_reader *r, cost_prof_row *row, ss_errbuf *eb)
{
    int rc = ss_csv_next(&r->csv, eb);
    if (rc != 1)
        return rc;
    const char *op = ss_csv_get(&r->csv, r->c_op);
    if ((rc = parse_op(&r->csv, op, &row->op, eb)))
        return rc;
    for (int k = 0; k < COST_PK__COUNT; k++)
        if ((rc = parse_key(r, k, &row->key[k], eb)))
            return rc;
    if ((rc = parse_us(r, r->c_median, "median_us", 1, &row->median_us, eb)) ||
        (rc = parse_us(r, r->c_min, "min_us", 0, &row->min_us, eb)) ||
        (rc = parse_us(r, r->c_p90, "p90_us", 0, &row->p90_us, eb)))
        return rc;
    row->source = ss_csv_get(&r->csv, r->c_source);
    if ((rc = check_keys(r, row, eb)) || (rc = check_times(r, row, eb)))
        return rc;
    return 1;
}

unsigned cost_prof_reader_line(const cost_prof_reader *r) { return r->csv.line; }

void cost_prof_reader_close(cost_prof_reader **rp)
{
    if (!*rp)
        return;
    ss_csv_close(&(*rp)->csv);
    ss_free(*rp);
    *rp = NULL;
}

void cost_prof_write_header(FILE *f)
{
    fputs("op", f);
    for (int k = 0; k < COST_PK__COUNT; k++)
        fprintf(f, ",%s", key_names[k]);
    fputs(",median_us,min_us,p90_us,source\n", f);
}

static void write_us(FILE *f, double us)
{
    if (us < 0)
        fputs(",-", f);
    else
        fprintf(f, ",%.9g", us);
}

static int64_t model_key(const cat_model *m, int k);

void cost_prof_shape_keys(cost_prof_row *row, const cat_model *m)
{
#define KB(k) (1u << COST_PK_##k)
    unsigned keys = 0;
    switch (row->op) {
    case COST_OP_EMBED: case COST_OP_NORM: case COST_OP_FINAL_NORM: case COST_OP_RESIDUAL:
        keys = KB(HIDDEN);
        break;
    case COST_OP_QKV:
        keys = KB(HIDDEN) | KB(HEADS) | KB(KV_HEADS) | KB(HEAD_DIM);
        break;
    case COST_OP_ROPE: case COST_OP_ATTN_PREFILL: case COST_OP_ATTN_DECODE:
        keys = KB(HEADS) | KB(KV_HEADS) | KB(HEAD_DIM);
        break;
    case COST_OP_OPROJ:
        keys = KB(HIDDEN) | KB(HEADS) | KB(HEAD_DIM);
        break;
    case COST_OP_MOE_ROUTER:
        keys = KB(HIDDEN) | KB(EXPERTS) | KB(TOP_K);
        break;
    case COST_OP_MLP_UP:
        keys = KB(HIDDEN) | KB(FFN) | KB(GATED) | KB(EXPERTS) | KB(TOP_K);
        break;
    case COST_OP_ACT:
        keys = KB(FFN) | KB(GATED) | KB(EXPERTS) | KB(TOP_K);
        break;
    case COST_OP_MLP_DOWN:
        keys = KB(HIDDEN) | KB(FFN) | KB(EXPERTS) | KB(TOP_K);
        break;
    case COST_OP_LM_HEAD:
        keys = KB(HIDDEN) | KB(VOCAB);
        break;
    default:
        break;
    }
#undef KB
    for (int k = 0; k < COST_PK__COUNT; k++)
        row->key[k] = k <= COST_PK_TOP_K && (keys & (1u << k)) ? model_key(m, k) : COST_PROF_ANY;
}

void cost_prof_write_row(FILE *f, const cost_prof_row *row)
{
    fputs(cost_op_name(row->op), f);
    for (int k = 0; k < COST_PK__COUNT; k++)
        if (row->key[k] == COST_PROF_ANY)
            fputs(",-", f);
        else
            fprintf(f, ",%lld", (long long)row->key[k]);
    write_us(f, row->median_us);
    write_us(f, row->min_us);
    write_us(f, row->p90_us);
    fprintf(f, ",%s\n", row->source ? row->source : "");
}

/* }====================================================================== */

/* {======================================================================
 * Loading the tables that apply to one container
 * ======================================================================= */

typedef struct prof_pt {
    double x; /* key: tokens, kv_tokens or bytes */
    double y; /* median after the monotonic fix-up, ns */
} prof_pt;

/* One curve: the points sharing an outer key (attention: tokens; others: one curve). */
typedef struct prof_grp {
    double g;        /* outer key (0 when unused) */
    uint32_t first;  /* index into pt */
    uint32_t n;      /* points, >= 1 */
} prof_grp;

typedef struct prof_tab {
    uint32_t first; /* index into grp */
    uint32_t n;     /* curves; 0 = no table for this operator */
} prof_tab;

typedef struct profile_priv {
    cost_roofline_rates roof;     /* fallback */
    int in_range_only;            /* `auto`: tables only inside their measured range */
    prof_tab tab[COST_OP__COUNT]; /* per operator kind */
    prof_pt *pt;                  /* owned */
    prof_grp *grp;                /* owned */
} profile_priv;

/* A matching row reduced to what the curves need. */
typedef struct prof_raw {
    int kind;
    double g, x, y; /* outer key, key, median ns */
} prof_raw;

typedef struct prof_load {
    const cost_params *p;
    prof_raw *raw; /* owned */
    size_t n, cap;
} prof_load;

/* The model's value for a shape key (MoE keys are 0 for dense models). */
static int64_t model_key(const cat_model *m, int k)
{
    int moe = m->experts > 1;
    switch (k) {
    case COST_PK_HIDDEN: return m->hidden;
    case COST_PK_HEADS: return m->heads;
    case COST_PK_KV_HEADS: return m->kv_heads;
    case COST_PK_HEAD_DIM: return m->head_dim;
    case COST_PK_FFN: return m->ffn;
    case COST_PK_GATED: return m->gated_mlp ? 1 : 0;
    case COST_PK_VOCAB: return m->vocab;
    case COST_PK_EXPERTS: return moe ? m->experts : 0;
    default: return moe ? m->top_k : 0;
    }
}

/* Does the row describe this container's operator? */
static int row_applies(const cost_params *p, const cost_prof_row *row)
{
    if (op_class(row->op) == PC_COLL)
        return row->key[COST_PK_N_GPUS] == (row->op == COST_OP_ALLREDUCE ? (int64_t)p->tp : 2);
    if (row->key[COST_PK_TP] != (int64_t)p->tp)
        return 0;
    for (int k = 0; k <= COST_PK_TOP_K; k++)
        if (row->key[k] != COST_PROF_ANY && row->key[k] != model_key(p->model, k))
            return 0;
    return 1;
}

static prof_raw raw_of(const cost_prof_row *row)
{
    prof_raw r = {.kind = row->op, .y = row->median_us * 1e3};
    switch (op_class(row->op)) {
    case PC_DENSE: r.x = (double)row->key[COST_PK_TOKENS]; break;
    case PC_ATTN:
        r.g = (double)row->key[COST_PK_TOKENS];
        r.x = (double)row->key[COST_PK_KV_TOKENS];
        if (row->op == COST_OP_ATTN_PREFILL) /* curves over the cached tokens c0 = kv - q */
            r.x = r.x > r.g ? r.x - r.g : 0;
        break;
    default: r.x = (double)row->key[COST_PK_BYTES]; break;
    }
    return r;
}

/* Read one table file, keeping the rows that apply. */
static int load_file(prof_load *ld, const char *path, ss_errbuf *eb)
{
    cost_prof_reader *r = NULL;
    int rc = cost_prof_reader_open(&r, path, eb);
    cost_prof_row row;
    while (!rc && (rc = cost_prof_reader_next(r, &row, eb)) == 1) {
        rc = SS_OK;
        if (!row_applies(ld->p, &row))
            continue;
        if (ss_grow((void **)&ld->raw, &ld->cap, ld->n + 1, sizeof *ld->raw))
            rc = ss_err(eb, SS_ENOMEM, "%s: out of memory", path);
        else
            ld->raw[ld->n++] = raw_of(&row);
    }
    cost_prof_reader_close(&r);
    return rc;
}

static int is_table_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 4 && !strcmp(name + n - 4, ".csv");
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ss_free(names[i]);
    ss_free(names);
}

/* The *.csv files in dir (not hidden ones), sorted; a missing dir has none. */
static int list_tables(const char *dir, char ***out, size_t *n_out, ss_errbuf *eb)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    if (!d && errno == ENOENT)
        return SS_OK;
    if (!d)
        return ss_err(eb, SS_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = SS_OK;
    struct dirent *de;
    while (!rc && (errno = 0, de = readdir(d))) {
        if (!is_table_name(de->d_name))
            continue;
        if (ss_grow((void **)&names, &cap, n + 1, sizeof *names) ||
            !(names[n] = ss_path_join(dir, de->d_name)))
            rc = ss_err(eb, SS_ENOMEM, "%s: out of memory", dir);
        else
            n++;
    }
    if (!rc && errno)
        rc = ss_err(eb, SS_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
    closedir(d);
    if (rc) {
        names_free(names, n);
        return rc;
    }
    if (n)
        qsort(names, n, sizeof *names, cmp_strp);
    *out = names;
    *n_out = n;
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Building the curves
 * ======================================================================= */

/* Order by operator, outer key, key, then value, so that equal keys are averaged in the same
 * order whatever the order of the files and rows: the result is bit-for-bit reproducible. */
static int cmp_raw(const void *pa, const void *pb)
{
    const prof_raw *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->g != b->g)
        return a->g < b->g ? -1 : 1;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return a->y < b->y ? -1 : a->y > b->y;
}

/* Where build_curve appends. */
typedef struct prof_build {
    profile_priv *pp;
    uint32_t n_grp, n_pt; /* used so far */
} prof_build;

/* Append the points of raw[i..] sharing (kind, g) as one curve: duplicates of a key averaged,
 * then the running maximum, so time never falls as the key grows. Returns the next i. */
static size_t build_curve(prof_build *b, const prof_raw *raw, size_t n, size_t i)
{
    profile_priv *pp = b->pp;
    int kind = raw[i].kind;
    double g = raw[i].g;
    prof_tab *t = &pp->tab[kind];
    if (!t->n)
        t->first = b->n_grp;
    t->n++;
    prof_grp *gr = &pp->grp[b->n_grp++];
    *gr = (prof_grp){.g = g, .first = b->n_pt};
    while (i < n && raw[i].kind == kind && raw[i].g == g) {
        size_t j = i;
        double sum = 0;
        for (; j < n && raw[j].kind == kind && raw[j].g == g && raw[j].x == raw[i].x; j++)
            sum += raw[j].y;
        double y = sum / (double)(j - i);
        if (gr->n && y < pp->pt[b->n_pt - 1].y)
            y = pp->pt[b->n_pt - 1].y;
        pp->pt[b->n_pt++] = (prof_pt){.x = raw[i].x, .y = y};
        gr->n++;
        i = j;
    }
    return i;
}

static int build_tables(profile_priv *pp, prof_raw *raw, size_t n)
{
    if (!n)
        return SS_OK;
    qsort(raw, n, sizeof *raw, cmp_raw);
    pp->pt = ss_malloc(n * sizeof *pp->pt);
    pp->grp = ss_malloc(n * sizeof *pp->grp);
    if (!pp->pt || !pp->grp)
        return SS_ENOMEM;
    prof_build b = {.pp = pp};
    for (size_t i = 0; i < n;)
        i = build_curve(&b, raw, n, i);
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Interpolation and the backends
 * ======================================================================= */

/* The curve at x: piecewise-linear between points. Below the first point, the first value:
 * small kernels are bound by launch and latency, so time does not shrink toward 0. Above the
 * last point, the line through the last two points (its slope is >= 0 after the monotonic
 * fix-up, so never below the last value), or proportional to x for a one-point curve.
 * *in tells whether x lies within [first key, last key]. */
static double curve_at(const prof_pt *pt, uint32_t n, double x, int *in)
{
    *in = x >= pt[0].x && x <= pt[n - 1].x;
    if (x <= pt[0].x)
        return pt[0].y;
    if (x >= pt[n - 1].x) {
        if (n == 1)
            return pt[0].x > 0 ? pt[0].y * x / pt[0].x : pt[0].y;
        const prof_pt *a = &pt[n - 2], *b = &pt[n - 1];
        return b->y + (b->y - a->y) / (b->x - a->x) * (x - b->x);
    }
    uint32_t lo = 0, hi = n - 1; /* pt[lo].x <= x < pt[hi].x */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (pt[mid].x <= x)
            lo = mid;
        else
            hi = mid;
    }
    const prof_pt *a = &pt[lo], *b = &pt[hi];
    return a->y + (b->y - a->y) * (x - a->x) / (b->x - a->x);
}

/* The table at (g, x): each curve at x, then linear in g between the two curves whose outer
 * keys bracket g (geometric, log y linear in log g, when `geo`: prefill attention, whose time
 * grows as a power of the chunk, quadratically once compute-bound); outside the outer keys'
 * range, the nearest curve (for attention the KV tokens, not the batch, dominate the time).
 * Inside the range means x inside the curves used and g inside the outer keys' range. */
static double table_at(const profile_priv *pp, const prof_tab *t, double g, double x, int geo,
                       int *in)
{
    const prof_grp *gr = pp->grp + t->first;
    uint32_t n = t->n, i = 0;
    while (i + 1 < n && gr[i + 1].g <= g)
        i++;
    int in_a, in_b;
    double ya = curve_at(pp->pt + gr[i].first, gr[i].n, x, &in_a);
    if (i + 1 == n || g <= gr[i].g) {
        *in = in_a && g == gr[i].g; /* one-curve tables have g = 0 in the table and the query */
        return ya;
    }
    double yb = curve_at(pp->pt + gr[i + 1].first, gr[i + 1].n, x, &in_b);
    *in = in_a && in_b;
    double f = (g - gr[i].g) / (gr[i + 1].g - gr[i].g);
    if (geo && ya > 0 && yb > 0 && gr[i].g > 0)
        return ya * pow(yb / ya, log(g / gr[i].g) / log(gr[i + 1].g / gr[i].g));
    return ya + f * (yb - ya);
}

/* The table for kind, or NULL. The final norm is the same RMSNorm kernel over the same
 * (tokens x hidden) activations as the per-layer norms, so it uses their table unless it has
 * its own. */
static const prof_tab *table_for(const profile_priv *pp, cost_op_kind k)
{
    if ((unsigned)k >= COST_OP__COUNT)
        return NULL;
    if (pp->tab[k].n)
        return &pp->tab[k];
    if (k == COST_OP_FINAL_NORM && pp->tab[COST_OP_NORM].n)
        return &pp->tab[COST_OP_NORM];
    return NULL;
}

double cost_prof_prefill_equiv_tokens(uint64_t tokens, uint32_t n_seqs, uint64_t ctx_tokens,
                                      double pairs)
{
    if (n_seqs <= 1 || !(pairs > 0) || ctx_tokens < tokens)
        return (double)tokens;
    double b = 2.0 * (double)ctx_tokens + 1.0, d = b * b - 8.0 * pairs;
    double q = 0.5 * (b - sqrt(d > 0 ? d : 0));
    return q < 1 ? 1 : q > (double)tokens ? (double)tokens : q;
}

static ss_time profile_op_ns(void *priv, const cost_op *op)
{
    const profile_priv *pp = priv;
    const prof_tab *t = table_for(pp, op->kind);
    if (t) {
        double g = 0, x = (double)op->tokens;
        if (op->kind == COST_OP_ATTN_PREFILL) {
            /* the tables hold one sequence per point: a batch of several is looked up as the
               one sequence with the same keys and the same (query, key) pairs */
            g = cost_prof_prefill_equiv_tokens(op->tokens, op->n_seqs, op->ctx_tokens,
                                               op->attn_pairs);
            x = (double)op->ctx_tokens > g ? (double)op->ctx_tokens - g : 0;
        } else if (op_class(op->kind) == PC_ATTN) {
            g = (double)op->tokens;
            x = (double)op->ctx_tokens;
        } else if (op_class(op->kind) == PC_COLL) {
            x = op->comm_bytes;
        }
        int in;
        double ns = table_at(pp, t, g, x, op->kind == COST_OP_ATTN_PREFILL, &in);
        if (in || !pp->in_range_only)
            return cost__op_ns(ns);
    }
    return cost_roofline_ns(&pp->roof, op);
}

/* Does the model's iteration contain operators of kind k (cost.c's build)? */
static int op_used(const cost_params *p, cost_op_kind k)
{
    if (k == COST_OP_ALLREDUCE)
        return p->tp > 1;
    if (k == COST_OP_MOE_ROUTER)
        return p->model->experts > 1;
    return k < COST_OP_HOST;
}

/* Say on stderr which of the model's operators have no table and use the roofline. Several
 * containers of one shape build the same model; the message is printed once, not per
 * replica (the one piece of static state here; it affects only stderr). */
static void warn_fallbacks(const profile_priv *pp, const cost_params *p, const char *backend,
                           const char *dir)
{
    static char last[SS_ERRBUF_LEN];
    char list[256] = "", msg[SS_ERRBUF_LEN];
    size_t used = 0;
    int n_tab = 0;
    for (int k = 0; k < COST_OP__COUNT; k++) {
        if (!op_used(p, (cost_op_kind)k))
            continue;
        if (table_for(pp, (cost_op_kind)k)) {
            n_tab++;
        } else if (used < sizeof list) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                             cost_op_name((cost_op_kind)k));
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (!list[0])
        return;
    snprintf(msg, sizeof msg, "cost model '%s' (%s, %s, TP %u): %d operators from tables in %s; "
             "roofline for %s", backend, p->gpu->name, p->model->name, p->tp, n_tab, dir, list);
    if (!strcmp(msg, last))
        return;
    memcpy(last, msg, sizeof last);
    ss_warn("%s", msg);
}

static void profile_fini(void *priv)
{
    profile_priv *pp = priv;
    ss_free(pp->pt);
    ss_free(pp->grp);
    pp->pt = NULL;
    pp->grp = NULL;
    memset(pp->tab, 0, sizeof pp->tab);
}

/* Read every table in dir and build the curves that apply to p's container. */
static int load_dir(profile_priv *pp, const cost_params *p, const char *dir, ss_errbuf *eb)
{
    char **files = NULL;
    size_t n_files = 0;
    prof_load ld = {.p = p};
    int rc = list_tables(dir, &files, &n_files, eb);
    for (size_t i = 0; !rc && i < n_files; i++)
        rc = load_file(&ld, files[i], eb);
    if (!rc && build_tables(pp, ld.raw, ld.n))
        rc = ss_err(eb, SS_ENOMEM, "%s: out of memory building the profile tables", dir);
    ss_free(ld.raw);
    names_free(files, n_files);
    return rc;
}

static int profile_init_mode(profile_priv *pp, const cost_params *p, int in_range_only,
                             const char *backend, ss_errbuf *eb)
{
    int rc = cost_roofline_rates_init(&pp->roof, p->gpu, p->engine, eb);
    if (rc)
        return rc;
    pp->in_range_only = in_range_only;
    char *dir = p->profiles_dir ? ss_path_join(p->profiles_dir, p->gpu->name) : NULL;
    if (p->profiles_dir && !dir)
        return ss_err(eb, SS_ENOMEM, "cost model '%s': out of memory", backend);
    if (dir && (rc = load_dir(pp, p, dir, eb)))
        profile_fini(pp);
    else
        warn_fallbacks(pp, p, backend, dir ? dir : "(no profiles directory)");
    ss_free(dir);
    return rc;
}

static int profile_init(void *priv, const cost_params *p, ss_errbuf *eb)
{
    return profile_init_mode(priv, p, 0, "profile", eb);
}

static int auto_init(void *priv, const cost_params *p, ss_errbuf *eb)
{
    return profile_init_mode(priv, p, 1, "auto", eb);
}

const cost_ops cost_profile = {
    .abi_version = COST_ABI_VERSION,
    .name = "profile",
    .priv_size = sizeof(profile_priv),
    .init = profile_init,
    .op_ns = profile_op_ns,
    .fini = profile_fini,
};

const cost_ops cost_auto = {
    .abi_version = COST_ABI_VERSION,
    .name = "auto",
    .priv_size = sizeof(profile_priv),
    .init = auto_init,
    .op_ns = profile_op_ns,
    .fini = profile_fini,
};

/* }====================================================================== */
