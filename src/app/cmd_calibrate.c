/* `slicesim calibrate`: measure one model's operators on a GPU over a grid of shapes and write
 * them as a profile table (profiles/PROFILE-FORMAT.md) for the `profile` and `auto` cost
 * models. Rows go to TABLE.partial as they are measured, so an interrupted run resumes where it
 * stopped; the finished table is written to TABLE.tmp and renamed. Not for running operators:
 * exec/exec.h owns that. */
#include "app/cli.h"

#include "catalog/catalog.h"
#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_err.h"
#include "cost/cost.h"
#include "cost/cost_profile.h"
#include "exec/exec.h"
#include "version.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct cal_opts {
    const char *model, *gpu, *out, *backend, *grid, *ops, *profiles;
    int gpu_index, reps, warmup, l2_cold, restart, selftest_only, no_selftest, quiet, help;
    unsigned tp;
    long limit_points;   /* measure at most this many new points, then stop (< 0: all) */
} cal_opts;

typedef struct cal_point {
    cost_op_kind kind;
    uint64_t a, b; /* dense: tokens; lm_head: sequences; prefill: q, c0; decode: batch, ctx;
                      pp_send: bytes */
} cal_point;

typedef struct cal_pts {
    cal_point *v;
    size_t n, cap;
} cal_pts;

static void usage(FILE *f)
{
    fputs("usage: slicesim calibrate --model NAME --tp N [--gpu-index I] [--gpu GPU]\n"
          "                          [--grid quick|full] [-o DIR] [options]\n\n"
          "Measure a model's decoder-layer operators on a GPU (one TP rank's shard) over a grid\n"
          "of shapes and write them as a profile table for `slicesim replay --cost profile|auto`\n"
          "(format: profiles/PROFILE-FORMAT.md). Rows are appended to TABLE.partial as they are\n"
          "measured: run the same command again to resume after an interruption.\n\n"
          "  --model NAME      catalog model (slicesim list models)\n"
          "  --tp N            tensor-parallel degree whose per-GPU shard is measured (default 1)\n"
          "  --gpu-index I     CUDA device to use (default 0)\n"
          "  --gpu GPU         catalog GPU the table is for (default: from the device's name;\n"
          "                    required with --backend sim)\n"
          "  --grid G          quick (a few minutes) or full (peers' density; default quick)\n"
          "  -o DIR            output directory (default: <profiles>/<gpu>/); the table is\n"
          "                    DIR/<model>-tp<N>.csv\n"
          "  --backend B       cuda (a real GPU; default when built with CUDA) or sim (the\n"
          "                    roofline plays the GPU: shows what the tool does without one)\n"
          "  --ops LIST        only these operators, comma-separated (default: all the model has)\n"
          "  --reps N          timed repetitions per point (default 20); the table keeps the\n"
          "                    median, minimum and 90th percentile\n"
          "  --warmup N        untimed runs before them (default 3)\n"
          "  --l2 cold|hot     flush the L2 cache before every timed run (default cold: weights\n"
          "                    stream from HBM as in a real forward pass) or not\n"
          "  --limit-points N  measure at most N new points in this run, then stop (resume later)\n"
          "  --restart         discard a partial table measured with other settings\n"
          "  --selftest        only check every kernel against the CPU reference, then exit\n"
          "  --no-selftest     skip that check before measuring\n"
          "  --profiles DIR    catalog directory (default: $SLICESIM_PROFILES, else ./profiles,\n"
          "                    else the source tree's profiles/)\n"
          "  -q, --quiet       no progress line\n"
          "  -h, --help        this help\n\n"
          "Collectives (all_reduce) need several GPUs and are not measured; pp_send is measured\n"
          "as a peer copy when a second GPU is visible. Clocks, temperature and power are read\n"
          "before and after and written into the table's comments; a throttled run is flagged.\n"
          "Exit status: 0 done, 1 no GPU / a device or file error / stopped by --limit-points,\n"
          "2 bad usage (unknown model, TP that does not divide the model).\n",
          f);
}

static int parse_args(int argc, char **argv, cal_opts *o)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},   {"tp", required_argument, NULL, 't'},
        {"gpu-index", required_argument, NULL, 'i'}, {"gpu", required_argument, NULL, 'g'},
        {"grid", required_argument, NULL, 'G'},    {"backend", required_argument, NULL, 'b'},
        {"ops", required_argument, NULL, 'O'},     {"reps", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'},  {"l2", required_argument, NULL, 'L'},
        {"limit-points", required_argument, NULL, 'P'}, {"restart", no_argument, NULL, 'R'},
        {"selftest", no_argument, NULL, 'S'},      {"no-selftest", no_argument, NULL, 'N'},
        {"profiles", required_argument, NULL, 'p'}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    *o = (cal_opts){.tp = 1, .reps = 20, .warmup = 3, .l2_cold = 1, .grid = "quick",
                    .backend = "cuda", .limit_points = -1};
    opterr = 0;
    optind = 0;
    long v;
    if (cli_check_long_options("calibrate", argc, argv, ":ho:q", longopts))
        return CLI_EUSAGE;
    for (int ch; (ch = getopt_long(argc, argv, ":ho:q", longopts, NULL)) != -1;) {
        int st = CLI_OK;
        switch (ch) {
        case 'm': o->model = optarg; break;
        case 't': st = cli_parse_long("--tp", optarg, 1, 64, &v); o->tp = (unsigned)v; break;
        case 'i': st = cli_parse_long("--gpu-index", optarg, 0, 1023, &v); o->gpu_index = (int)v; break;
        case 'g': o->gpu = optarg; break;
        case 'G': o->grid = optarg; break;
        case 'b': o->backend = optarg; break;
        case 'O': o->ops = optarg; break;
        case 'r': st = cli_parse_long("--reps", optarg, 1, 10000, &v); o->reps = (int)v; break;
        case 'w': st = cli_parse_long("--warmup", optarg, 0, 1000, &v); o->warmup = (int)v; break;
        case 'P': st = cli_parse_long("--limit-points", optarg, 0, 100000000, &o->limit_points); break;
        case 'L':
            if (!strcmp(optarg, "cold") || !strcmp(optarg, "hot"))
                o->l2_cold = !strcmp(optarg, "cold");
            else {
                fprintf(stderr, "slicesim: --l2: expected cold or hot, got '%s'\n", optarg);
                st = CLI_EUSAGE;
            }
            break;
        case 'R': o->restart = 1; break;
        case 'S': o->selftest_only = 1; break;
        case 'N': o->no_selftest = 1; break;
        case 'p': o->profiles = optarg; break;
        case 'o': o->out = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'h': o->help = 1; break;
        default:
            fprintf(stderr, "slicesim: calibrate: bad option or missing argument '%s' (see "
                            "--help)\n", argv[optind - 1]);
            return CLI_EUSAGE;
        }
        if (st)
            return st;
    }
    if (optind < argc) {
        fprintf(stderr, "slicesim: calibrate: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return CLI_EUSAGE;
    }
    if (o->help)
        return CLI_OK;
    if (strcmp(o->backend, "cuda") && strcmp(o->backend, "sim")) {
        fprintf(stderr, "slicesim: --backend: expected cuda or sim, got '%s'\n", o->backend);
        return CLI_EUSAGE;
    }
    if (strcmp(o->grid, "quick") && strcmp(o->grid, "full")) {
        fprintf(stderr, "slicesim: --grid: expected quick or full, got '%s'\n", o->grid);
        return CLI_EUSAGE;
    }
    if (!o->model && !o->selftest_only) {
        fprintf(stderr, "slicesim: --model: required (slicesim list models)\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* {======================================================================
 * The grid
 * ======================================================================= */

static int push(cal_pts *p, cost_op_kind k, uint64_t a, uint64_t b)
{
    if (p->n == p->cap && ss_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
        return SS_ENOMEM;
    p->v[p->n++] = (cal_point){k, a, b};
    return SS_OK;
}

/* Token counts of the dense operators: powers of two (quick), or the peers' density: every
 * count to 8, then steps of 8 to 1024, 16 to 2048, 32 to 4096 and 512 to 8192 (full). */
static size_t dense_tokens(int full, uint64_t *out)
{
    size_t n = 0;
    if (!full) {
        for (uint64_t t = 1; t <= 4096; t *= 2)
            out[n++] = t;
        return n;
    }
    for (uint64_t t = 1; t <= 8; t++)
        out[n++] = t;
    for (uint64_t t = 16; t <= 1024; t += 8)
        out[n++] = t;
    for (uint64_t t = 1040; t <= 2048; t += 16)
        out[n++] = t;
    for (uint64_t t = 2080; t <= 4096; t += 32)
        out[n++] = t;
    for (uint64_t t = 4608; t <= 8192; t += 512)
        out[n++] = t;
    return n;
}

static const cost_op_kind grid_ops[] = {
    COST_OP_EMBED,    COST_OP_NORM,     COST_OP_QKV,      COST_OP_ROPE,
    COST_OP_ATTN_PREFILL, COST_OP_ATTN_DECODE, COST_OP_OPROJ, COST_OP_RESIDUAL,
    COST_OP_MOE_ROUTER, COST_OP_MLP_UP,  COST_OP_ACT,      COST_OP_MLP_DOWN,
    COST_OP_LM_HEAD,  COST_OP_PP_SEND,
};

static int op_selected(const char *list, cost_op_kind k)
{
    if (!list)
        return 1;
    const char *name = cost_op_name(k);
    size_t len = strlen(name);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == len && !strncmp(s, name, n))
            return 1;
        s += n + (e ? 1 : 0);
    }
    return 0;
}

/* Check --ops names: 0 or CLI_EUSAGE after one line. */
static int check_ops(const char *list)
{
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        int known = 0;
        for (size_t i = 0; i < sizeof grid_ops / sizeof *grid_ops; i++)
            known |= strlen(cost_op_name(grid_ops[i])) == n &&
                     !strncmp(s, cost_op_name(grid_ops[i]), n);
        if (!known) {
            fprintf(stderr, "slicesim: --ops: unknown or unmeasurable operator '%.*s' (known: "
                            "embed, norm, qkv, rope, attn_prefill, attn_decode, o_proj, "
                            "residual, moe_router, mlp_up, act, mlp_down, lm_head, pp_send)\n",
                    (int)n, s);
            return CLI_EUSAGE;
        }
        s += n + (e ? 1 : 0);
    }
    return CLI_OK;
}

static int build_grid(cal_pts *g, int full, cost_model *cm, const exec_device *dev,
                      const char *ops)
{
    uint64_t tok[512];
    size_t nt = dense_tokens(full, tok);
    static const uint64_t q_quick[] = {16, 64, 256, 512, 1024, 2048, 4096};
    static const uint64_t c0_quick[] = {0, 1024, 4096};
    static const uint64_t q_full[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    static const uint64_t c0_full[] = {0, 256, 1024, 2048, 4096};
    static const uint64_t b_quick[] = {1, 4, 16, 64, 256}, l_quick[] = {128, 512, 2048, 4096};
    static const uint64_t b_full[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    static const uint64_t l_full[] = {64, 128, 256, 512, 1024, 2048, 4096, 8192};
    cost_batch probe = {0};
    cost_batch_add_prefill(&probe, 16, 16);
    cost_batch_add_decode(&probe, 16);
    for (size_t i = 0; i < sizeof grid_ops / sizeof *grid_ops; i++) {
        cost_op_kind k = grid_ops[i];
        cost_op shape;
        if (!op_selected(ops, k) || !exec_runs_op(dev, k) || cost_op_shape(cm, k, &probe, &shape))
            continue;
        int rc = SS_OK;
        switch (k) {
        case COST_OP_ATTN_PREFILL: {
            const uint64_t *q = full ? q_full : q_quick, *c = full ? c0_full : c0_quick;
            size_t nq = full ? 10 : 7, nc = full ? 5 : 3;
            for (size_t a = 0; !rc && a < nq; a++)
                for (size_t b = 0; !rc && b < nc; b++)
                    rc = push(g, k, q[a], c[b]);
            break;
        }
        case COST_OP_ATTN_DECODE: {
            const uint64_t *bs = full ? b_full : b_quick, *ls = full ? l_full : l_quick;
            size_t nb = full ? 10 : 5, nl = full ? 8 : 4;
            for (size_t a = 0; !rc && a < nb; a++)
                for (size_t b = 0; !rc && b < nl; b++)
                    if (bs[a] * ls[b] <= ((uint64_t)1 << 21))
                        rc = push(g, k, bs[a], ls[b]);
            break;
        }
        case COST_OP_LM_HEAD:
            for (size_t a = 0; !rc && a < nt && tok[a] <= (full ? 512u : 256u); a++)
                rc = push(g, k, tok[a], 0);
            break;
        case COST_OP_PP_SEND:
            for (uint64_t bytes = 4096; !rc && bytes <= ((uint64_t)256 << 20);
                 bytes *= full ? 2 : 4)
                rc = push(g, k, bytes, 0);
            break;
        default:
            for (size_t a = 0; !rc && a < nt; a++)
                rc = push(g, k, tok[a], 0);
            break;
        }
        if (rc)
            return rc;
    }
    return SS_OK;
}

/* The executor operator of a point (seqs must hold the decode batch) and its table row keys. */
static void point_op(cost_model *cm, const cat_model *m, unsigned tp, const cal_point *pt,
                     exec_op *eo, exec_seq *seqs, cost_prof_row *row)
{
    cost_batch b = {0};
    memset(eo, 0, sizeof *eo);
    memset(row, 0, sizeof *row);
    row->op = pt->kind;
    cost_prof_shape_keys(row, m);
    switch (pt->kind) {
    case COST_OP_ATTN_PREFILL:
        cost_batch_add_prefill(&b, pt->a, pt->b);
        seqs[0] = (exec_seq){(uint32_t)pt->a, (uint32_t)pt->b};
        eo->seqs = seqs;
        eo->n_seqs = 1;
        break;
    case COST_OP_ATTN_DECODE:
        for (uint64_t i = 0; i < pt->a; i++) {
            cost_batch_add_decode(&b, pt->b);
            seqs[i] = (exec_seq){1, (uint32_t)(pt->b - 1)};
        }
        eo->seqs = seqs;
        eo->n_seqs = (uint32_t)pt->a;
        break;
    case COST_OP_PP_SEND:
        eo->op = (cost_op){.kind = COST_OP_PP_SEND, .tp = tp, .count = 1,
                           .comm_bytes = (double)pt->a};
        row->key[COST_PK_N_GPUS] = 2;
        row->key[COST_PK_BYTES] = (int64_t)pt->a;
        return;
    default:
        for (uint64_t i = 0; i < pt->a; i++)
            cost_batch_add_decode(&b, 1);
        break;
    }
    cost_op_shape(cm, pt->kind, &b, &eo->op);
    eo->op.count = 1;
    row->key[COST_PK_TP] = tp;
    row->key[COST_PK_TOKENS] = (int64_t)eo->op.tokens;
    if (pt->kind == COST_OP_ATTN_PREFILL || pt->kind == COST_OP_ATTN_DECODE)
        row->key[COST_PK_KV_TOKENS] = (int64_t)eo->op.ctx_tokens;
}

/* }====================================================================== */

/* {======================================================================
 * The partial table: settings line, rows measured so far
 * ======================================================================= */

typedef struct done_set {
    cost_prof_row *rows; /* keys only */
    size_t n, cap;
} done_set;

static int same_keys(const cost_prof_row *a, const cost_prof_row *b)
{
    return a->op == b->op && !memcmp(a->key, b->key, sizeof a->key);
}

static int is_done(const done_set *d, const cost_prof_row *row)
{
    for (size_t i = d->n; i-- > 0;)
        if (same_keys(&d->rows[i], row))
            return 1;
    return 0;
}

/* Drop a torn last line (a run killed while writing a row), so the rows before it survive. */
static int trim_torn_line(const char *path, ss_errbuf *eb)
{
    FILE *f = fopen(path, "r+");
    if (!f)
        return ss_err(eb, SS_EIO, "%s: cannot open: %s", path, strerror(errno));
    long keep = 0, pos = 0;
    for (int c; (c = fgetc(f)) != EOF;) {
        pos++;
        if (c == '\n')
            keep = pos;
    }
    int rc = SS_OK;
    if (keep != pos && ftruncate(fileno(f), keep))
        rc = ss_err(eb, SS_EIO, "%s: cannot drop its torn last line: %s", path, strerror(errno));
    fclose(f);
    return rc;
}

/* Read the settings line and the rows of an existing partial table. *found = 0 when absent. */
static int read_partial(const char *path, char *settings, size_t len, done_set *d, int *found,
                        ss_errbuf *eb)
{
    *found = 0;
    settings[0] = 0;
    if (access(path, F_OK))
        return SS_OK;
    *found = 1;
    int rc = trim_torn_line(path, eb);
    if (rc)
        return rc;
    FILE *f = fopen(path, "r");
    if (!f)
        return ss_err(eb, SS_EIO, "%s: cannot open: %s", path, strerror(errno));
    char line[1024];
    while (fgets(line, sizeof line, f) && line[0] == '#')
        if (!strncmp(line, "# settings: ", 12)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(settings, len, "%s", line + 12);
        }
    fclose(f);
    cost_prof_reader *r = NULL;
    if ((rc = cost_prof_reader_open(&r, path, eb)))
        return rc == SS_EPARSE && !settings[0] ? SS_OK : rc; /* header never written */
    cost_prof_row row;
    while ((rc = cost_prof_reader_next(r, &row, eb)) == 1) {
        if (d->n == d->cap && ss_grow((void **)&d->rows, &d->cap, d->n + 1, sizeof *d->rows)) {
            rc = ss_err(eb, SS_ENOMEM, "calibrate: out of memory");
            break;
        }
        d->rows[d->n] = row;
        d->rows[d->n++].source = NULL;
    }
    cost_prof_reader_close(&r);
    return rc < 0 ? rc : SS_OK;
}

/* }====================================================================== */

typedef struct cal_run {
    const cal_opts *o;
    const cat_model *m;
    const cat_gpu *gpu;
    exec *x;
    cost_model *cm;     /* shapes (and the roofline the report compares with) */
    cal_pts grid;
    done_set done;
    char final_path[1100], partial_path[1110];
    char settings[1024];
    exec_sensors before, after;
    exec_sensors busy;  /* while points ran: lowest clocks, highest temperature and power */
    char started[32];
    size_t measured;    /* points measured in this run */
    ss_errbuf eb;
} cal_run;

static void now_utc(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    buf[0] = 0;
    if (gmtime_r(&t, &tm))
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void write_sensors(FILE *f, const char *when, const exec_sensors *s)
{
    if (!s->valid)
        fprintf(f, "# sensors_%s: unavailable (NVML not found)\n", when);
    else
        fprintf(f, "# sensors_%s: sm %.0f MHz, memory %.0f MHz, %.0f C, %.1f W, clock-event "
                   "reasons 0x%llx\n",
                when, s->sm_mhz, s->mem_mhz, s->temp_c, s->power_w,
                (unsigned long long)s->throttle);
}

static void write_meta(FILE *f, const cal_run *c, int final)
{
    const exec_device *d = exec_device_info(c->x);
    const cat_model *m = c->m;
    char date[32];
    now_utc(date, sizeof date);
    fprintf(f, "# source: measured by slicesim calibrate on %s\n", d->name);
    fprintf(f, "# tool: slicesim %s calibrate, executor %s, timer %s\n", SS_VERSION,
            exec_backend(c->x), d->timer);
    fprintf(f, "# date: %s (started %s)\n", date, c->started);
    fprintf(f, "# gpu: %s\n", c->gpu->name);
    fprintf(f, "# device: %s, index %d of %d, %u SMs, %.1f GiB, L2 %.0f MiB, driver %s, "
               "runtime %s%s%s\n",
            d->name, d->index, d->n_devices, d->sm_count, d->mem_bytes / 1073741824.0,
            d->l2_bytes / 1048576.0, d->driver[0] ? d->driver : "-", d->runtime,
            d->uuid[0] ? ", " : "", d->uuid);
    fprintf(f, "# model: %s\n", m->name);
    fprintf(f, "# shape: hidden %u, heads %u, kv_heads %u, head_dim %u, ffn %u, gated %d, vocab "
               "%u, experts %u, top_k %u; TP %u emulated on one GPU (one rank's shard)\n",
            m->hidden, m->heads, m->kv_heads, m->head_dim, m->ffn, m->gated_mlp, m->vocab,
            m->experts, m->top_k, c->o->tp);
    fprintf(f, "# method: bf16 weights and activations with random values, fp32 accumulation; "
               "%d warm-up runs then %d timed runs per point; L2 %s; an operator's time is the "
               "sum of its kernels' device times; prefill attention is %s\n",
            c->o->warmup, c->o->reps,
            c->o->l2_cold ? "flushed before every timed run (cold)" : "not flushed (hot)",
            exec_prefill_fused(m->head_dim)
                ? "one fused kernel per batch (tensor-core QK^T and PV, online softmax)"
                : "cuBLASLt QK^T and PV with a causal softmax kernel (not fused)");
    fprintf(f, "# not measured: all_reduce (needs a TP group of GPUs)%s\n",
            d->peer ? "" : "; pp_send (no second GPU: copies were not measured)");
    fprintf(f, "# settings: %s\n", c->settings);
    write_sensors(f, "before", &c->before);
    if (final) {
        write_sensors(f, "after", &c->after);
        const exec_sensors *b = &c->busy;
        if (!b->valid)
            fprintf(f, "# sensors_during: unavailable (NVML not found or no point measured)\n");
        else
            fprintf(f, "# sensors_during: lowest sm %.0f MHz, lowest memory %.0f MHz, hottest "
                       "%.0f C, highest %.1f W, clock-event reasons 0x%llx (read as each "
                       "point's runs were queued)\n",
                    b->sm_mhz, b->mem_mhz, b->temp_c, b->power_w,
                    (unsigned long long)b->throttle);
        uint64_t bad = c->before.throttle | c->after.throttle | b->throttle;
        fprintf(f, "# throttled: %s\n", bad ? "yes (see the clock-event reasons)" : "no");
    }
}

static int open_partial(cal_run *c, FILE **f_out)
{
    const cal_opts *o = c->o;
    char old[1024];
    int found = 0, rc = read_partial(c->partial_path, old, sizeof old, &c->done, &found, &c->eb);
    if (rc)
        return rc;
    if (found && (strcmp(old, c->settings) || o->restart)) {
        if (!o->restart)
            return ss_err(&c->eb, SS_EINVAL,
                          "%s: a partial table measured with other settings (%s); run with "
                          "--restart to discard it, or with the same options to resume",
                          c->partial_path, old[0] ? old : "none recorded");
        c->done.n = 0;
        found = 0;
    }
    FILE *f = fopen(c->partial_path, found ? "a" : "w");
    if (!f)
        return ss_err(&c->eb, SS_EIO, "%s: cannot write: %s", c->partial_path, strerror(errno));
    if (!found) {
        write_meta(f, c, 0);
        cost_prof_write_header(f);
    }
    if (fflush(f)) {
        fclose(f);
        return ss_err(&c->eb, SS_EIO, "%s: cannot write: %s", c->partial_path, strerror(errno));
    }
    *f_out = f;
    return SS_OK;
}

/* Measure one point: warm-up, timed repetitions, median / min / p90. */
static int measure(cal_run *c, const exec_op *eo, cost_prof_row *row, char *src, size_t src_len)
{
    int rc = SS_OK;
    for (int i = 0; !rc && i < c->o->warmup; i++)
        rc = exec_launch(c->x, eo, 0, &c->eb);
    for (int i = 0; !rc && i < c->o->reps; i++)
        rc = exec_launch(c->x, eo, (uint64_t)i + 1, &c->eb);
    if (!rc) { /* the GPU is busy with the timed runs now: read its clocks and limits */
        exec_sensors now;
        exec_sensors_read(c->x, &now);
        exec_sensors *b = &c->busy;
        if (now.valid && !b->valid) {
            *b = now;
        } else if (now.valid) {
            b->sm_mhz = fmin(b->sm_mhz, now.sm_mhz);
            b->mem_mhz = fmin(b->mem_mhz, now.mem_mhz);
            b->temp_c = fmax(b->temp_c, now.temp_c);
            b->power_w = fmax(b->power_w, now.power_w);
            b->throttle |= now.throttle;
        }
    }
    const exec_sample *s = NULL;
    size_t n = 0;
    if (!rc)
        rc = exec_collect(c->x, &s, &n, &c->eb);
    if (rc)
        return ss_err_prefix(&c->eb, rc, "%s", cost_op_name(eo->op.kind));
    if (n != (size_t)c->o->reps)
        return ss_err(&c->eb, SS_EIO, "%s: %zu samples for %d runs", cost_op_name(eo->op.kind),
                      n, c->o->reps);
    ss_time ns[10000];
    for (size_t i = 0; i < n; i++)
        ns[i] = s[i].ns > 0 ? s[i].ns : 1;
    snprintf(src, src_len, "slicesim-calibrate:%s:%s", exec_device_info(c->x)->timer,
             s[0].kernel[0] ? s[0].kernel : "-");
    qsort(ns, n, sizeof *ns, cli_cmp_time);
    double med = n % 2 ? (double)ns[n / 2] : 0.5 * ((double)ns[n / 2 - 1] + (double)ns[n / 2]);
    size_t k90 = (size_t)ceil(0.9 * (double)n);
    row->median_us = med / 1e3;
    row->min_us = (double)ns[0] / 1e3;
    row->p90_us = (double)ns[(k90 ? k90 : 1) - 1] / 1e3;
    if (row->p90_us < row->median_us)
        row->p90_us = row->median_us;
    row->source = src;
    return SS_OK;
}

static void progress(const cal_run *c, size_t i, size_t n, const cal_point *pt, time_t t0,
                     size_t done_before)
{
    if (c->o->quiet)
        return;
    int tty = isatty(2);
    size_t step = n / 10 ? n / 10 : 1;
    if (!tty && i % step && i != n)
        return;
    double el = difftime(time(NULL), t0);
    size_t now = i - done_before;
    double left = now ? el / (double)now * (double)(n - i) : 0;
    fprintf(stderr, "%scalibrate: %zu/%zu points (%3.0f%%) %-12s %6llu  ~%.0f s left%s",
            tty ? "\r" : "", i, n, 100.0 * (double)i / (double)(n ? n : 1),
            pt ? cost_op_name(pt->kind) : "", pt ? (unsigned long long)pt->a : 0ull, left,
            tty ? "   " : "\n");
    if (tty && i == n)
        fputc('\n', stderr);
}

/* Rewrite the partial table as the final one: metadata with the sensors after, every row. */
static int finish_table(cal_run *c)
{
    ss_outfile *out = NULL;
    FILE *f;
    int rc = ss_outfile_open(&out, &f, c->final_path, 0, &c->eb);
    if (rc)
        return rc;
    write_meta(f, c, 1);
    cost_prof_write_header(f);
    cost_prof_reader *r = NULL;
    rc = cost_prof_reader_open(&r, c->partial_path, &c->eb);
    cost_prof_row row;
    while (!rc && (rc = cost_prof_reader_next(r, &row, &c->eb)) == 1) {
        cost_prof_write_row(f, &row);
        rc = SS_OK;
    }
    cost_prof_reader_close(&r);
    if (!rc)
        rc = ss_outfile_commit(&out, &c->eb);
    ss_outfile_abort(&out);
    if (!rc)
        unlink(c->partial_path);
    return rc;
}

typedef struct op_stat {
    size_t n;
    double lo, hi, ape, bias; /* median range (us), sums of |error| and error over measured */
} op_stat;

/* Per operator: points, median range, and how far the roofline is from the measurement. */
static int report(cal_run *c)
{
    cost_prof_reader *r = NULL;
    int rc = cost_prof_reader_open(&r, c->final_path, &c->eb);
    if (rc)
        return rc;
    op_stat st[COST_OP__COUNT] = {{0}};
    cost_prof_row row;
    exec_seq *seqs = ss_malloc(1024 * sizeof *seqs);
    if (!seqs)
        rc = ss_err(&c->eb, SS_ENOMEM, "calibrate: out of memory");
    while (!rc && (rc = cost_prof_reader_next(r, &row, &c->eb)) == 1) {
        rc = SS_OK;
        for (size_t i = 0; i < c->grid.n; i++) {
            exec_op eo;
            cost_prof_row want;
            point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &want);
            if (!same_keys(&want, &row))
                continue;
            double roof = (double)cost_op_ns(c->cm, &eo.op) / 1e3, meas = row.median_us;
            op_stat *s = &st[row.op];
            s->lo = s->n ? fmin(s->lo, meas) : meas;
            s->hi = s->n ? fmax(s->hi, meas) : meas;
            s->ape += fabs(roof - meas) / meas;
            s->bias += (roof - meas) / meas;
            s->n++;
            break;
        }
    }
    cost_prof_reader_close(&r);
    ss_free(seqs);
    if (rc < 0)
        return rc;
    printf("%s: %s at TP %u on %s (%s)\n", c->final_path, c->m->name, c->o->tp, c->gpu->name,
           exec_device_info(c->x)->name);
    printf("  %-13s %6s %-22s %16s %16s\n", "OP", "POINTS", "MEDIAN_US", "ROOFLINE_MAPE_%",
           "ROOFLINE_BIAS_%");
    for (int k = 0; k < COST_OP__COUNT; k++) {
        if (!st[k].n)
            continue;
        char med[32];
        snprintf(med, sizeof med, "%.4g..%.4g", st[k].lo, st[k].hi);
        printf("  %-13s %6zu %-22s %16.1f %+16.1f\n", cost_op_name((cost_op_kind)k), st[k].n, med,
               100 * st[k].ape / (double)st[k].n, 100 * st[k].bias / (double)st[k].n);
    }
    if (c->before.throttle | c->after.throttle)
        fprintf(stderr, "slicesim: warning: the GPU reported clock-event reasons 0x%llx "
                        "(thermal or power limits): the table says so\n",
                (unsigned long long)(c->before.throttle | c->after.throttle));
    return SS_OK;
}

static int run_points(cal_run *c, FILE *part)
{
    exec_limits lim = {0};
    exec_seq *seqs = ss_malloc(1024 * sizeof *seqs);
    if (!seqs)
        return ss_err(&c->eb, SS_ENOMEM, "calibrate: out of memory");
    for (size_t i = 0; i < c->grid.n; i++) {
        exec_op eo;
        cost_prof_row row;
        point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &row);
        uint64_t kv = 0;
        for (uint32_t s = 0; s < eo.n_seqs; s++)
            kv += (uint64_t)eo.seqs[s].c0 + eo.seqs[s].q;
        if (eo.op.tokens > lim.max_tokens)
            lim.max_tokens = eo.op.tokens;
        if (kv > lim.max_kv_tokens)
            lim.max_kv_tokens = kv;
        if (eo.op.n_seqs > lim.max_seqs)
            lim.max_seqs = eo.op.n_seqs;
        for (uint32_t s = 0; eo.op.kind == COST_OP_ATTN_PREFILL && s < eo.n_seqs; s++) {
            uint64_t sc = exec_prefill_scores(eo.seqs[s].q, eo.seqs[s].c0);
            lim.max_scores = sc > lim.max_scores ? sc : lim.max_scores;
        }
        if (eo.op.comm_bytes > (double)lim.max_copy_bytes)
            lim.max_copy_bytes = (uint64_t)eo.op.comm_bytes;
    }
    int rc = exec_prepare(c->x, c->m, c->o->tp, &lim, &c->eb);
    size_t done_before = 0;
    for (size_t i = 0; i < c->grid.n; i++) {
        exec_op eo;
        cost_prof_row row;
        point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &row);
        done_before += is_done(&c->done, &row);
    }
    time_t t0 = time(NULL);
    size_t pos = done_before;
    for (size_t i = 0; !rc && i < c->grid.n; i++) {
        exec_op eo;
        cost_prof_row row;
        char src[160];
        point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &row);
        if (is_done(&c->done, &row))
            continue;
        if (c->o->limit_points >= 0 && (long)c->measured >= c->o->limit_points)
            break;
        if ((rc = measure(c, &eo, &row, src, sizeof src)))
            break;
        cost_prof_write_row(part, &row);
        if (fflush(part))
            rc = ss_err(&c->eb, SS_EIO, "%s: cannot write: %s", c->partial_path,
                        strerror(errno));
        c->measured++;
        progress(c, ++pos, c->grid.n, &c->grid.v[i], t0, done_before);
    }
    ss_free(seqs);
    return rc;
}

static int run_calibrate(const cal_opts *o)
{
    cal_run c = {.o = o};
    catalog *cat = NULL;
    FILE *part = NULL;
    const char *dir = catalog_default_dir(o->profiles);
    int rc = catalog_load(&cat, dir, &c.eb);
    if (!rc && o->model)
        rc = catalog_model_find(cat, o->model, &c.m, &c.eb);
    if (!rc && o->gpu && (rc = catalog_gpu_find(cat, o->gpu, &c.gpu, &c.eb)))
        ss_err_prefix(&c.eb, rc, "--gpu");
    if (!rc && !c.gpu && !strcmp(o->backend, "sim"))
        rc = ss_err(&c.eb, SS_EINVAL, "--gpu: required with --backend sim (the catalog GPU the "
                                      "roofline models)");
    if (!rc && c.m && (o->tp < 1 || c.m->heads % o->tp || c.m->ffn % o->tp))
        rc = ss_err(&c.eb, SS_EINVAL, "--tp: %u does not divide the %u heads and FFN size %u of "
                                      "%s", o->tp, c.m->heads, c.m->ffn, c.m->name);
    /* The operator grid's roofline (and the sim executor) use the eager engine's floors: the
     * executor launches one kernel at a time, as an eager engine does. */
    const cat_engine *eng = NULL;
    if (!rc)
        rc = catalog_engine_find(cat, CAT_ENGINE_EAGER, &eng, &c.eb);
    exec_config cfg = {.gpu_index = o->gpu_index, .l2_cold = o->l2_cold, .gpu = c.gpu,
                       .engine = eng};
    int no_device = 0;
    if (!rc && (rc = exec_create(&c.x, o->backend, &cfg, &c.eb)) == SS_ENOTFOUND) {
        ss_err_prefix(&c.eb, SS_EIO, "calibrate: nothing measured");
        no_device = 1;
    }
    if (rc) {
        fprintf(stderr, "slicesim: %s\n", c.eb.msg);
        catalog_destroy(&cat);
        return no_device ? CLI_EFAIL : cli_status_of(rc);
    }
    const exec_device *d = exec_device_info(c.x);
    if (!o->quiet)
        fprintf(stderr, "slicesim: calibrate: %s (executor %s, timer %s)\n", d->name,
                exec_backend(c.x), d->timer);
    if ((o->selftest_only || !o->no_selftest) &&
        (rc = exec_selftest(c.x, o->quiet && !o->selftest_only ? NULL : stderr, &c.eb)) ==
            SS_ENOTSUP && !o->selftest_only)
        rc = SS_OK;
    if (rc == SS_EINVAL)
        rc = SS_EIO; /* a wrong kernel result is the device's failure, not the user's */
    if (o->selftest_only || rc)
        goto done;
    if (!c.gpu) {
        const char *g = exec_guess_gpu(d->name);
        if (!g) {
            rc = ss_err(&c.eb, SS_EINVAL, "--gpu: cannot tell which catalog GPU '%s' is; name "
                                          "it (slicesim list gpus)", d->name);
            goto done;
        }
        if ((rc = catalog_gpu_find(cat, g, &c.gpu, &c.eb)))
            goto done;
    }
    cost_params cp = {.gpu = c.gpu, .engine = eng, .model = c.m, .tp = o->tp};
    if ((rc = cost_model_create(&c.cm, "roofline", &cp, &c.eb)))
        goto done;
    if ((rc = build_grid(&c.grid, !strcmp(o->grid, "full"), c.cm, d, o->ops))) {
        ss_err(&c.eb, rc, "calibrate: out of memory");
        goto done;
    }
    if (!c.grid.n) {
        rc = ss_err(&c.eb, SS_EINVAL, "--ops: nothing to measure for %s on this device",
                    c.m->name);
        goto done;
    }
    char out_dir[1024];
    snprintf(out_dir, sizeof out_dir, "%s/%s", dir, c.gpu->name);
    const char *od = o->out ? o->out : out_dir;
    if ((rc = cost_prof_make_dirs(od, &c.eb)))
        goto done;
    snprintf(c.final_path, sizeof c.final_path, "%s/%s-tp%u.csv", od, c.m->name, o->tp);
    snprintf(c.partial_path, sizeof c.partial_path, "%s.partial", c.final_path);
    snprintf(c.settings, sizeof c.settings,
             "model=%s tp=%u gpu=%s grid=%s ops=%s backend=%s device=%s reps=%d warmup=%d l2=%s",
             c.m->name, o->tp, c.gpu->name, o->grid, o->ops ? o->ops : "all", exec_backend(c.x),
             d->name, o->reps, o->warmup, o->l2_cold ? "cold" : "hot");
    now_utc(c.started, sizeof c.started);
    exec_sensors_read(c.x, &c.before);
    if ((rc = open_partial(&c, &part)))
        goto done;
    rc = run_points(&c, part);
    if (fclose(part) && !rc)
        rc = ss_err(&c.eb, SS_EIO, "%s: cannot write: %s", c.partial_path, strerror(errno));
    if (rc)
        goto done;
    exec_sensors_read(c.x, &c.after);
    if (o->limit_points >= 0 && c.done.n + c.measured < c.grid.n) {
        fprintf(stderr, "slicesim: calibrate: stopped after %zu new points (--limit-points); "
                        "%zu of %zu measured, in %s; run again to resume\n",
                c.measured, c.done.n + c.measured, c.grid.n, c.partial_path);
        rc = SS_EIO;
        c.eb.msg[0] = 0;
        goto done;
    }
    if (!(rc = finish_table(&c)))
        rc = report(&c);
done:
    if (rc && c.eb.msg[0])
        fprintf(stderr, "slicesim: %s\n", c.eb.msg);
    cost_model_destroy(&c.cm);
    exec_destroy(&c.x);
    catalog_destroy(&cat);
    ss_free(c.grid.v);
    ss_free(c.done.rows);
    return rc == SS_EIO ? CLI_EFAIL : cli_status_of(rc);
}

int cmd_calibrate(int argc, char **argv)
{
    cal_opts o;
    int st = parse_args(argc, argv, &o);
    if (st || o.help) {
        if (o.help)
            usage(stdout);
        return st;
    }
    if ((st = check_ops(o.ops)))
        return st;
    return run_calibrate(&o);
}
