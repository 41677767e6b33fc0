/* Import of Vidur's published operator profiles (github.com/microsoft/vidur, MIT) into
 * slicesim profile tables: compute/<gpu>/<org>/<model>/mlp.csv (per-GPU-shard times of the
 * non-attention operators of a layer at each TP degree) and network/<node>/{all_reduce,
 * send_recv}.csv. Also the fidelity report: the roofline's error against every imported
 * median. Not for reading slicesim's own tables (cost_profile.c). */
#include "cost/cost_profile.h"

#include "core/ss_alloc.h"
#include "core/ss_csv.h"
#include "core/ss_file.h"
#include "core/ss_log.h"
#include "core/ss_parse.h"
#include "cost/cost_roofline.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define N_OUT 9   /* operators a Vidur mlp.csv yields */
#define N_VOPS 10 /* Vidur's operators in it (two norms) */
#define B(k) (1u << COST_PK_##k)

static const cost_op_kind out_ops[N_OUT] = {
    COST_OP_EMBED, COST_OP_NORM,   COST_OP_QKV, COST_OP_ROPE,    COST_OP_OPROJ,
    COST_OP_RESIDUAL, COST_OP_MLP_UP, COST_OP_ACT, COST_OP_MLP_DOWN,
};

/* The shape keys each operator's time depends on; the others are written '-', so that a table
 * applies to every catalog model sharing those keys. The embedding is a row gather: its time
 * does not depend on the vocabulary (Vidur's 32768 for Llama 2 is the padded size anyway). */
static const unsigned out_keys[N_OUT] = {
    B(HIDDEN),
    B(HIDDEN),
    B(HIDDEN) | B(HEADS) | B(KV_HEADS) | B(HEAD_DIM),
    B(HEADS) | B(KV_HEADS) | B(HEAD_DIM),
    B(HIDDEN) | B(HEADS) | B(HEAD_DIM),
    B(HIDDEN),
    B(HIDDEN) | B(FFN) | B(GATED) | B(EXPERTS) | B(TOP_K),
    B(FFN) | B(GATED) | B(EXPERTS) | B(TOP_K),
    B(HIDDEN) | B(FFN) | B(EXPERTS) | B(TOP_K),
};

/* Vidur's operator names and the output operator each feeds. The two RMSNorms of a layer are
 * the same kernel on the same shape: their medians are averaged into one `norm` row. */
static const struct {
    const char *name;
    int out;
} vidur_ops[N_VOPS] = {
    {"emb", 0},           {"input_layernorm", 1}, {"post_attention_layernorm", 1},
    {"attn_pre_proj", 2}, {"attn_rope", 3},       {"attn_post_proj", 4},
    {"add", 5},           {"mlp_up_proj", 6},     {"mlp_act", 7},
    {"mlp_down_proj", 8},
};

/* One imported point: a (TP, key) with the times of every output operator. */
typedef struct imp_row {
    uint32_t tp;        /* TP degree, or GPUs in the collective */
    uint64_t key;       /* tokens, or bytes */
    double med[N_OUT];  /* median, us */
    double min[N_OUT];  /* minimum, us */
    double roof[N_OUT]; /* roofline, us (NAN when not compared) */
    uint32_t dup;       /* source rows merged into this one */
} imp_row;

/* The model shape of a compute file, Vidur's columns. */
typedef struct vshape {
    int64_t v[6]; /* n_head, n_kv_head, n_embd, n_expanded_embd, vocab_size, use_gated_mlp */
} vshape;

static const char *const shape_cols[6] = {"n_head",          "n_kv_head",  "n_embd",
                                          "n_expanded_embd", "vocab_size", "use_gated_mlp"};
enum { VS_HEADS, VS_KV, VS_HIDDEN, VS_FFN, VS_VOCAB, VS_GATED };

/* State of one import. */
typedef struct imp {
    const char *path;
    const catalog *cat;
    const cat_gpu *gpu;
    int collective;         /* 0 compute, 1 network */
    cost_op_kind coll_op;   /* collectives: all_reduce or pp_send */
    size_t n_ops;           /* output operators: N_OUT or 1 */
    vshape sh;              /* compute: the shape (checked equal on every row) */
    const cat_model *model; /* compute: catalog model with that shape, or NULL */
    imp_row *rows;          /* owned */
    size_t n, cap;
    cost_prof_import *res;
} imp;

/* {======================================================================
 * Reading Vidur's CSVs
 * ======================================================================= */

static int need_col(const ss_csv *c, const char *name, int *col, ss_errbuf *eb)
{
    if ((*col = ss_csv_col(c, name)) < 0)
        return ss_csv_err(c, eb, SS_EPARSE, name, "missing column");
    return SS_OK;
}

static int get_int(const ss_csv *c, int col, int64_t lo, int64_t *out, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    if (ss_parse_i64z(s, out) || *out < lo)
        return ss_csv_err(c, eb, SS_EPARSE, c->hdr[col], "not an integer >= %lld: '%s'",
                          (long long)lo, s);
    return SS_OK;
}

/* A time in ms, returned in us. The bound keeps sums and means of times finite. */
static int get_ms(const ss_csv *c, int col, double *us, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    double v;
    if (ss_parse_doublez(s, &v) || v < 0 || v > 1e12)
        return ss_csv_err(c, eb, SS_EPARSE, c->hdr[col],
                          "not a non-negative number of at most 1e12 ms: '%s'", s);
    *us = v * 1e3;
    return SS_OK;
}

/* An operator's median and minimum, in us. A profile table needs median > 0 and min <=
 * median, so a source row without them is an error at its own line (else the import would
 * write a table that the profile reader rejects). */
static int get_times(const ss_csv *c, int med_col, int min_col, double *med, double *mn,
                     ss_errbuf *eb)
{
    int rc = get_ms(c, med_col, med, eb);
    if (!rc)
        rc = get_ms(c, min_col, mn, eb);
    if (!rc && !(*med > 0))
        rc = ss_csv_err(c, eb, SS_EPARSE, c->hdr[med_col], "must be positive, got '%s'",
                        ss_csv_get(c, med_col));
    if (!rc && *mn > *med)
        rc = ss_csv_err(c, eb, SS_EPARSE, c->hdr[min_col], "%s is above the median %s",
                        ss_csv_get(c, min_col), ss_csv_get(c, med_col));
    return rc;
}

static int get_bool(const ss_csv *c, int col, int64_t *out, ss_errbuf *eb)
{
    const char *s = ss_csv_get(c, col);
    if (!strcmp(s, "True") || !strcmp(s, "true") || !strcmp(s, "1"))
        *out = 1;
    else if (!strcmp(s, "False") || !strcmp(s, "false") || !strcmp(s, "0"))
        *out = 0;
    else
        return ss_csv_err(c, eb, SS_EPARSE, c->hdr[col], "not True or False: '%s'", s);
    return SS_OK;
}

static int time_col(const ss_csv *c, const char *op, const char *stat, int *col, ss_errbuf *eb)
{
    char name[96];
    snprintf(name, sizeof name, "time_stats.%s.%s", op, stat);
    return need_col(c, name, col, eb);
}

static imp_row *new_row(imp *im, ss_errbuf *eb)
{
    if (ss_grow((void **)&im->rows, &im->cap, im->n + 1, sizeof *im->rows)) {
        ss_err(eb, SS_ENOMEM, "%s: out of memory", im->path);
        return NULL;
    }
    imp_row *r = &im->rows[im->n++];
    memset(r, 0, sizeof *r);
    r->dup = 1;
    return r;
}

/* Column indices of a compute file. */
typedef struct vcols {
    int med[N_VOPS], min[N_VOPS], shape[6], tokens, tp;
} vcols;

/* Models with parallel attention and MLP blocks (phi-2) have one norm per layer: the
 * post-attention norm's columns may be absent. */
static int optional_op(int i) { return !strcmp(vidur_ops[i].name, "post_attention_layernorm"); }

static int compute_cols(const ss_csv *c, vcols *k, ss_errbuf *eb)
{
    int rc = SS_OK;
    for (int i = 0; !rc && i < N_VOPS; i++) {
        k->med[i] = k->min[i] = -1;
        char name[96];
        snprintf(name, sizeof name, "time_stats.%s.median", vidur_ops[i].name);
        if (optional_op(i) && ss_csv_col(c, name) < 0)
            continue;
        if (!(rc = time_col(c, vidur_ops[i].name, "median", &k->med[i], eb)))
            rc = time_col(c, vidur_ops[i].name, "min", &k->min[i], eb);
    }
    for (int i = 0; !rc && i < 6; i++)
        rc = need_col(c, shape_cols[i], &k->shape[i], eb);
    if (!rc)
        rc = need_col(c, "num_tokens", &k->tokens, eb);
    if (!rc)
        rc = need_col(c, "num_tensor_parallel_workers", &k->tp, eb);
    return rc;
}

/* The shape of this row; every row of a file must have the first row's. */
static int compute_shape(imp *im, const ss_csv *c, const vcols *k, ss_errbuf *eb)
{
    vshape sh;
    int rc = SS_OK;
    for (int i = 0; !rc && i < 6; i++)
        rc = i == VS_GATED ? get_bool(c, k->shape[i], &sh.v[i], eb)
                           : get_int(c, k->shape[i], 1, &sh.v[i], eb);
    if (rc)
        return rc;
    if (sh.v[VS_HIDDEN] % sh.v[VS_HEADS])
        return ss_csv_err(c, eb, SS_EPARSE, "n_embd", "%lld is not a multiple of n_head %lld",
                          (long long)sh.v[VS_HIDDEN], (long long)sh.v[VS_HEADS]);
    if (im->n == 0)
        im->sh = sh;
    for (int i = 0; i < 6; i++)
        if (sh.v[i] != im->sh.v[i])
            return ss_csv_err(c, eb, SS_EPARSE, shape_cols[i],
                              "%lld differs from the first row's %lld: one model per file",
                              (long long)sh.v[i], (long long)im->sh.v[i]);
    return SS_OK;
}

static int compute_row(imp *im, const ss_csv *c, const vcols *k, ss_errbuf *eb)
{
    int64_t tok, tp;
    int rc = compute_shape(im, c, k, eb);
    if (rc || (rc = get_int(c, k->tokens, 1, &tok, eb)) || (rc = get_int(c, k->tp, 1, &tp, eb)))
        return rc;
    if (tp > 64)
        return ss_csv_err(c, eb, SS_EPARSE, c->hdr[k->tp], "%lld is above 64", (long long)tp);
    imp_row *r = new_row(im, eb);
    if (!r)
        return SS_ENOMEM;
    *r = (imp_row){.tp = (uint32_t)tp, .key = (uint64_t)tok, .dup = 1};
    uint32_t cnt[N_OUT] = {0};
    for (int i = 0; i < N_VOPS; i++) {
        double med = 0, mn = 0;
        int o = vidur_ops[i].out;
        if (k->med[i] < 0)
            continue;
        if ((rc = get_times(c, k->med[i], k->min[i], &med, &mn, eb)))
            return rc;
        r->med[o] += med;
        r->min[o] = cnt[o]++ ? fmin(r->min[o], mn) : mn;
    }
    for (int o = 0; o < N_OUT; o++)
        r->med[o] /= cnt[o];
    return SS_OK;
}

/* Column indices of a network file. */
typedef struct ncols {
    int rank, workers, size, coll, per_node, med, min;
} ncols;

/* The collective a network file times: its single time_stats.<name>.median column. */
static int network_op(imp *im, const ss_csv *c, ncols *k, char *name, size_t n, ss_errbuf *eb)
{
    const char *pre = "time_stats.", *suf = ".median";
    size_t lp = strlen(pre), ls = strlen(suf);
    name[0] = '\0';
    for (size_t i = 0; i < c->n_hdr; i++) {
        size_t len = strlen(c->hdr[i]);
        if (len > lp + ls && !strncmp(c->hdr[i], pre, lp) && !strcmp(c->hdr[i] + len - ls, suf))
            snprintf(name, n, "%.*s", (int)(len - lp - ls), c->hdr[i] + lp);
    }
    if (!name[0])
        return ss_csv_err(c, eb, SS_EPARSE, "time_stats.<collective>.median", "missing column");
    if (!strcmp(name, "all_reduce"))
        im->coll_op = COST_OP_ALLREDUCE;
    else if (!strcmp(name, "send_recv"))
        im->coll_op = COST_OP_PP_SEND;
    else
        return ss_csv_err(c, eb, SS_EPARSE, "collective",
                          "unsupported collective '%s' (known: all_reduce, send_recv)", name);
    int rc = time_col(c, name, "median", &k->med, eb);
    if (!rc)
        rc = time_col(c, name, "min", &k->min, eb);
    return rc;
}

static int network_cols(imp *im, const ss_csv *c, ncols *k, char *name, size_t n, ss_errbuf *eb)
{
    int rc = need_col(c, "rank", &k->rank, eb);
    if (!rc)
        rc = need_col(c, "num_workers", &k->workers, eb);
    if (!rc)
        rc = need_col(c, "size", &k->size, eb);
    if (!rc)
        rc = need_col(c, "collective", &k->coll, eb);
    if (!rc)
        rc = need_col(c, "devices_per_node", &k->per_node, eb);
    if (!rc)
        rc = network_op(im, c, k, name, n, eb);
    return rc;
}

/* Keep rank 0 of collectives within one node (devices_per_node = num_workers): slicesim's TP
 * groups and pipeline neighbours sit in one node, so multi-node rows do not apply. */
static int network_row(imp *im, const ss_csv *c, const ncols *k, const char *name, ss_errbuf *eb)
{
    int64_t rank, workers, size, per_node;
    double med = 0, mn = 0;
    int rc;
    if ((rc = get_int(c, k->rank, 0, &rank, eb)) ||
        (rc = get_int(c, k->workers, 1, &workers, eb)) ||
        (rc = get_int(c, k->size, 1, &size, eb)) ||
        (rc = get_int(c, k->per_node, 1, &per_node, eb)) ||
        (rc = get_times(c, k->med, k->min, &med, &mn, eb)))
        return rc;
    if (strcmp(ss_csv_get(c, k->coll), name))
        return ss_csv_err(c, eb, SS_EPARSE, "collective", "'%s' in a file of %s timings",
                          ss_csv_get(c, k->coll), name);
    if (rank != 0 || workers < 2 || workers > 64 || per_node != workers ||
        (im->coll_op == COST_OP_PP_SEND && workers != 2))
        return SS_OK;
    imp_row *r = new_row(im, eb);
    if (!r)
        return SS_ENOMEM;
    r->tp = (uint32_t)workers;
    r->key = (uint64_t)size;
    r->med[0] = med;
    r->min[0] = mn;
    return SS_OK;
}

/* Read the whole file into im->rows. */
static int read_vidur(imp *im, ss_errbuf *eb)
{
    ss_csv c;
    int rc = ss_csv_open(&c, im->path, 0, eb);
    if (rc)
        return rc;
    vcols vc = {0};
    ncols nc = {0};
    char name[64];
    im->collective = ss_csv_col(&c, "num_tokens") < 0 && ss_csv_col(&c, "collective") >= 0;
    im->n_ops = im->collective ? 1 : N_OUT;
    if (im->collective)
        rc = network_cols(im, &c, &nc, name, sizeof name, eb);
    else
        rc = compute_cols(&c, &vc, eb);
    while (!rc && (rc = ss_csv_next(&c, eb)) == 1) {
        im->res->rows_in++;
        rc = im->collective ? network_row(im, &c, &nc, name, eb) : compute_row(im, &c, &vc, eb);
    }
    if (!rc && !im->n)
        rc = ss_err(eb, SS_EPARSE, "%s:%u: no rows to import%s", im->path, c.line,
                    im->collective ? " (rank 0 of single-node collectives)" : "");
    ss_csv_close(&c);
    return rc;
}

/* }====================================================================== */

/* {======================================================================
 * Merging, matching and the roofline comparison
 * ======================================================================= */

static int cmp_row(const void *pa, const void *pb)
{
    const imp_row *a = pa, *b = pb;
    if (a->tp != b->tp)
        return a->tp < b->tp ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* Sort by (TP, key) and merge repeated measurements of one point: the mean of the medians,
 * the minimum of the minima. (Vidur's files repeat some token counts.) */
static void merge_rows(imp *im)
{
    qsort(im->rows, im->n, sizeof *im->rows, cmp_row);
    size_t w = 0;
    for (size_t i = 0; i < im->n; i++) {
        imp_row *d = &im->rows[w - (w > 0)];
        const imp_row *s = &im->rows[i];
        if (w > 0 && d->tp == s->tp && d->key == s->key) {
            for (size_t o = 0; o < im->n_ops; o++) {
                d->med[o] = (d->med[o] * d->dup + s->med[o]) / (d->dup + 1);
                d->min[o] = fmin(d->min[o], s->min[o]);
            }
            d->dup++;
        } else {
            im->rows[w++] = *s;
        }
    }
    im->res->rows_kept = im->n;
    im->n = w;
}

/* The catalog model with this shape (dense, vocabulary ignored; an equal vocabulary wins),
 * or NULL. */
static const cat_model *match_model(const catalog *cat, const vshape *sh)
{
    const cat_model *best = NULL;
    for (size_t i = 0; i < catalog_n_models(cat); i++) {
        const cat_model *m = catalog_model_at(cat, i);
        if (m->experts > 1 || m->hidden != sh->v[VS_HIDDEN] || m->heads != sh->v[VS_HEADS] ||
            m->kv_heads != sh->v[VS_KV] || m->ffn != sh->v[VS_FFN] ||
            m->head_dim != sh->v[VS_HIDDEN] / sh->v[VS_HEADS] ||
            (m->gated_mlp ? 1 : 0) != sh->v[VS_GATED])
            continue;
        if (!best || (m->vocab == sh->v[VS_VOCAB] && best->vocab != sh->v[VS_VOCAB]))
            best = m;
    }
    return best;
}

/* Roofline times of the compute rows of one TP degree [i, j). 0 or SS_ENOMEM; rows of a TP
 * degree the model cannot use (heads not divisible) are left uncompared. */
static int roofline_compute_tp(imp *im, size_t i, size_t j, ss_errbuf *eb)
{
    /* The fidelity report compares against the eager engine's floors: Vidur timed each
     * operator launched on its own, as an eager engine runs it (a table holds kernel times,
     * which the engine's host terms do not touch). */
    cost_params p = {.gpu = im->gpu, .model = im->model, .tp = im->rows[i].tp,
                     .engine = catalog_engine(im->cat, CAT_ENGINE_EAGER)};
    cost_model *cm = NULL;
    if (!im->model)
        return SS_OK;
    if (!p.engine)
        return SS_OK; /* a catalog without engines: not compared */
    int rc = cost_model_create(&cm, "roofline", &p, eb);
    if (rc)
        return rc == SS_ENOMEM ? rc : SS_OK;
    for (; i < j; i++) {
        imp_row *r = &im->rows[i];
        cost_batch b = {.n_decode = (uint32_t)r->key}; /* r->key tokens, attention unused */
        cost_op ops[32];
        ss_time ns[32];
        size_t n = cost_iteration_ops(cm, &b, ops, ns, 32);
        for (size_t o = 0; o < N_OUT; o++)
            for (size_t k = 0; k < n && k < 32; k++)
                if (ops[k].kind == out_ops[o])
                    r->roof[o] = (double)ns[k] / 1e3;
    }
    cost_model_destroy(&cm);
    return SS_OK;
}

static int roofline_all(imp *im, ss_errbuf *eb)
{
    for (size_t i = 0; i < im->n; i++)
        for (size_t o = 0; o < N_OUT; o++)
            im->rows[i].roof[o] = NAN;
    if (im->collective) {
        cost_roofline_rates rr;
        if (cost_roofline_rates_init(&rr, im->gpu,
                                     catalog_engine(im->cat, CAT_ENGINE_EAGER), NULL))
            return SS_OK; /* a GPU without roofline figures: not compared */
        for (size_t i = 0; i < im->n; i++) {
            cost_op op = {.kind = im->coll_op, .tp = im->rows[i].tp, .count = 1,
                          .comm_bytes = (double)im->rows[i].key};
            im->rows[i].roof[0] = (double)cost_roofline_ns(&rr, &op) / 1e3;
        }
        return SS_OK;
    }
    int rc = SS_OK;
    for (size_t i = 0, j; !rc && i < im->n; i = j) {
        for (j = i; j < im->n && im->rows[j].tp == im->rows[i].tp; j++)
            ;
        rc = roofline_compute_tp(im, i, j, eb);
    }
    return rc;
}

/* Fidelity of operator o over the rows [i, j) of one TP degree. */
static cost_prof_fid fid_of(const imp *im, size_t o, size_t i, size_t j)
{
    cost_prof_fid f = {.op = im->collective ? im->coll_op : out_ops[o], .tp = im->rows[i].tp,
                       .rows = j - i, .key_min = im->rows[i].key, .key_max = im->rows[j - 1].key,
                       .median_min_us = INFINITY, .median_max_us = 0, .compared = 1};
    for (size_t k = i; k < j; k++) {
        double m = im->rows[k].med[o], p = im->rows[k].roof[o];
        f.median_min_us = fmin(f.median_min_us, m);
        f.median_max_us = fmax(f.median_max_us, m);
        if (isnan(p) || m <= 0) {
            f.compared = 0;
            continue;
        }
        f.mape += fabs(p - m) / m / (double)(j - i);
        f.bias += (p - m) / m / (double)(j - i);
    }
    if (!f.compared)
        f.mape = f.bias = NAN;
    return f;
}

static int build_fidelity(imp *im, ss_errbuf *eb)
{
    size_t n_tp = 0;
    for (size_t i = 0; i < im->n; i++)
        n_tp += i == 0 || im->rows[i].tp != im->rows[i - 1].tp;
    cost_prof_import *res = im->res;
    res->fid = ss_calloc(n_tp * im->n_ops, sizeof *res->fid);
    if (!res->fid)
        return ss_err(eb, SS_ENOMEM, "%s: out of memory", im->path);
    for (size_t o = 0; o < im->n_ops; o++)
        for (size_t i = 0, j; i < im->n; i = j) {
            for (j = i; j < im->n && im->rows[j].tp == im->rows[i].tp; j++)
                ;
            res->fid[res->n_fid++] = fid_of(im, o, i, j);
        }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Writing the table
 * ======================================================================= */

/* The last k components of path ("a100/meta-llama/Llama-2-7b-hf/mlp.csv" for k = 4). */
static const char *path_tail(const char *path, int k)
{
    const char *p = path + strlen(path);
    while (p > path) {
        if (p[-1] == '/' && --k == 0)
            break;
        p--;
    }
    return p;
}

/* Component k from the end of path (0 = the file name) into buf, "" when there is none. */
static void path_part(const char *path, int k, char *buf, size_t n)
{
    const char *start = path_tail(path, k + 1), *end = strchr(start, '/');
    size_t len = end && k > 0 ? (size_t)(end - start) : strlen(start);
    if (start == path && k > 0 && !strchr(path, '/'))
        len = 0;
    snprintf(buf, n, "%.*s", (int)len, start);
}

/* Lower-case file-name-safe copy: letters, digits, '.', '-', '_'; others become '_'. */
static void safe_name(char *s)
{
    for (; *s; s++)
        *s = isalnum((unsigned char)*s) || *s == '.' || *s == '-' || *s == '_'
                 ? (char)tolower((unsigned char)*s) : '_';
}

static void table_name(const imp *im, char *buf, size_t n)
{
    char part[64];
    if (im->collective) {
        path_part(im->path, 1, part, sizeof part);
        snprintf(buf, n, "%s%s%s.csv", cost_op_name(im->coll_op), part[0] ? "-" : "", part);
    } else if (im->model) {
        snprintf(buf, n, "%s.csv", im->model->name);
    } else {
        path_part(im->path, 1, part, sizeof part);
        if (part[0] && strcmp(part, "."))
            snprintf(buf, n, "%s.csv", part);
        else
            snprintf(buf, n, "h%lld-a%lld-kv%lld-f%lld.csv", (long long)im->sh.v[VS_HIDDEN],
                     (long long)im->sh.v[VS_HEADS], (long long)im->sh.v[VS_KV],
                     (long long)im->sh.v[VS_FFN]);
    }
    safe_name(buf);
}

int cost_prof_make_dirs(const char *dir, ss_errbuf *eb)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return ss_err(eb, SS_EINVAL, "-o: path too long: %s", dir);
    for (char *p = buf + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST)
            return ss_err(eb, SS_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = c;
        if (!c)
            return SS_OK;
    }
}

static void write_comments(const imp *im, FILE *f)
{
    char date[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%d", &tm);
    fprintf(f, "# slicesim profile table (format: profiles/PROFILE-FORMAT.md)\n"
               "# source: Vidur (github.com/microsoft/vidur, MIT license), %s\n"
               "# tool: slicesim profile import --from vidur\n# date: %s\n# gpu: %s\n",
            path_tail(im->path, im->collective ? 2 : 4), date, im->gpu->name);
    if (im->collective) {
        fprintf(f, "# rows: rank 0 of collectives within one node; repeated sizes merged\n");
        return;
    }
    fprintf(f, "# shape: %s\n# model: %s\n", im->res->shape,
            im->model ? im->model->name : "no catalog model with this shape");
    fprintf(f, "# rows: per-GPU-shard times at each TP; norm = mean of input_layernorm and "
               "post_attention_layernorm; repeated token counts merged (mean of medians)\n");
}

/* The row of operator o at imported point r. */
static cost_prof_row table_row(const imp *im, size_t o, const imp_row *r, const char *src)
{
    cost_prof_row row = {.median_us = r->med[o], .min_us = r->min[o], .p90_us = -1,
                         .source = src};
    for (int k = 0; k < COST_PK__COUNT; k++)
        row.key[k] = COST_PROF_ANY;
    if (im->collective) {
        row.op = im->coll_op;
        row.key[COST_PK_N_GPUS] = r->tp;
        row.key[COST_PK_BYTES] = (int64_t)r->key;
        return row;
    }
    const int64_t *sh = im->sh.v;
    const int64_t v[COST_PK_TOP_K + 1] = {
        [COST_PK_HIDDEN] = sh[VS_HIDDEN], [COST_PK_HEADS] = sh[VS_HEADS],
        [COST_PK_KV_HEADS] = sh[VS_KV],   [COST_PK_HEAD_DIM] = sh[VS_HIDDEN] / sh[VS_HEADS],
        [COST_PK_FFN] = sh[VS_FFN],       [COST_PK_GATED] = sh[VS_GATED],
        [COST_PK_VOCAB] = sh[VS_VOCAB],   [COST_PK_EXPERTS] = 0, [COST_PK_TOP_K] = 0,
    };
    row.op = out_ops[o];
    for (int k = 0; k <= COST_PK_TOP_K; k++)
        if (out_keys[o] & (1u << k))
            row.key[k] = v[k];
    row.key[COST_PK_TP] = r->tp;
    row.key[COST_PK_TOKENS] = (int64_t)r->key;
    return row;
}

static int write_table(const imp *im, ss_errbuf *eb)
{
    char src[160];
    snprintf(src, sizeof src, "vidur:%s", path_tail(im->path, im->collective ? 2 : 4));
    for (char *p = src; *p; p++)
        if (*p == ',')
            *p = ';';
    ss_outfile *out = NULL;
    FILE *f;
    int rc = ss_outfile_open(&out, &f, im->res->out_path, 0, eb);
    if (rc)
        return rc;
    write_comments(im, f);
    cost_prof_write_header(f);
    for (size_t o = 0; o < im->n_ops; o++)
        for (size_t i = 0; i < im->n; i++) {
            cost_prof_row row = table_row(im, o, &im->rows[i], src);
            cost_prof_write_row(f, &row);
        }
    return ss_outfile_commit(&out, eb);
}

/* }====================================================================== */

/* Warn when the source's GPU directory (a100, h100_dgx, ...) does not look like --gpu. */
static void check_gpu(const imp *im)
{
    char part[64];
    path_part(im->path, im->collective ? 1 : 3, part, sizeof part);
    size_t n = strcspn(part, "_");
    if (n && strncasecmp(part, im->gpu->name, n))
        ss_warn("%s: measured on '%.*s', imported for GPU %s", im->path, (int)n, part,
                im->gpu->name);
}

static void describe_shape(imp *im)
{
    im->res->collective = im->collective;
    if (im->collective)
        return;
    const int64_t *v = im->sh.v;
    snprintf(im->res->shape, sizeof im->res->shape,
             "hidden %lld, heads %lld/%lld, head_dim %lld, ffn %lld%s, vocab %lld",
             (long long)v[VS_HIDDEN], (long long)v[VS_HEADS], (long long)v[VS_KV],
             (long long)(v[VS_HIDDEN] / v[VS_HEADS]), (long long)v[VS_FFN],
             v[VS_GATED] ? " gated" : "", (long long)v[VS_VOCAB]);
    im->model = match_model(im->cat, &im->sh);
    if (im->model)
        snprintf(im->res->model, sizeof im->res->model, "%s", im->model->name);
}

int cost_prof_import_vidur(const char *in_path, const catalog *cat, const cat_gpu *gpu,
                           const char *out_dir, cost_prof_import *res, ss_errbuf *eb)
{
    return cost_prof_import_vidur_checked(in_path, cat, gpu, out_dir, NULL, NULL, res, eb);
}

int cost_prof_import_vidur_checked(const char *in_path, const catalog *cat, const cat_gpu *gpu,
                                   const char *out_dir, cost_prof_out_check_fn *check, void *ud,
                                   cost_prof_import *res, ss_errbuf *eb)
{
    memset(res, 0, sizeof *res);
    imp im = {.path = in_path, .cat = cat, .gpu = gpu, .res = res};
    int rc = read_vidur(&im, eb);
    if (!rc) {
        merge_rows(&im);
        describe_shape(&im);
        check_gpu(&im);
        char name[128];
        table_name(&im, name, sizeof name);
        if (snprintf(res->out_path, sizeof res->out_path, "%s/%s", out_dir, name) >=
            (int)sizeof res->out_path)
            rc = ss_err(eb, SS_EINVAL, "-o: path too long: %s", out_dir);
    }
    if (!rc && check)
        rc = check(ud, res->out_path, eb);
    if (!rc)
        rc = cost_prof_make_dirs(out_dir, eb);
    if (!rc)
        rc = roofline_all(&im, eb);
    if (!rc)
        rc = build_fidelity(&im, eb);
    if (!rc)
        rc = write_table(&im, eb);
    ss_free(im.rows);
    if (rc)
        cost_prof_import_fini(res);
    return rc;
}

void cost_prof_import_fini(cost_prof_import *res)
{
    ss_free(res->fid);
    memset(res, 0, sizeof *res);
}
