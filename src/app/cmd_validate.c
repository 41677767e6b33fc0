/* `slicesim validate`: replay a short trace on one simulated container, record the batch of
 * every iteration, then run each iteration's operators on a GPU in execution order (embedding,
 * every layer's operators, final norm, LM head) and compare the measured device time with the
 * cost model's prediction, per operator kind and per iteration. Results are printed (or JSON)
 * and stored in the results database (validations, validation_ops, validation_iters). */
#include "app/cli.h"
#include "app/run.h"

#include "core/ss_alloc.h"
#include "core/ss_strbuf.h"
#include "exec/exec.h"
#include "gmg/gmg.h"
#include "store/store.h"
#include "config.h"
#include "version.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_TRACE "traces/azure-conv-synth.csv"
#define MAX_IOPS 24
#define N_WORST 5
#define MAX_REPS 64 /* executions of one iteration (--reps) */

typedef struct val_opts {
    const char *trace, *model, *gpu, *backend, *cost, *batching, *profiles, *db, *name;
    unsigned tp;
    long limit, iters, reps;
    const char *rate_scale;
    int gpu_index, l2_cold, json, quiet, help;
    char **sets;
    size_t n_sets, cap_sets;
} val_opts;

/* One simulated iteration and, after execution, its measurement. */
typedef struct val_iter {
    uint64_t seq;
    ss_time t_start, t_end;          /* simulated */
    cost_batch batch;
    uint32_t seq0, n_prefill, n_decode; /* its sequences in the pool: prefills, then decodes */
    cost_op ops[MAX_IOPS];           /* cost_iteration_ops of the batch */
    ss_time op_ns[MAX_IOPS];
    uint32_t n_ops;
    ss_time pred[COST_OP__COUNT];    /* predicted device time per kind (all executions) */
    ss_time meas[COST_OP__COUNT];    /* measured */
    uint32_t execs[COST_OP__COUNT];
    ss_time pred_host;               /* engine host time (not executed) */
    ss_time pred_total, meas_total;  /* over the kinds executed */
    ss_time meas_span;               /* first kernel start to last kernel end */
} val_iter;

typedef struct val_run {
    const val_opts *o;
    val_iter *it;
    size_t n_it, cap_it;
    exec_seq *seqs;
    size_t n_seqs, cap_seqs;
    int oom;
    gmg_id ctr;                      /* the container recorded (the first that iterates) */
    const cat_model *m;
    const cat_gpu *gpu;
    exec *x;
    ss_errbuf eb;
} val_run;

static void usage(FILE *f)
{
    fputs("usage: slicesim validate [--trace FILE] --model NAME [--gpu GPU] [--tp N]\n"
          "                         [--limit N] [--iters N] [options]\n\n"
          "Check the simulator's cost model against a GPU: replay the first --limit requests of\n"
          "--trace on one simulated container, record the batch of each of the first --iters\n"
          "iterations, run every iteration's operators on the GPU in execution order (embedding,\n"
          "each layer's norm, QKV, rotary, attention, output projection, residual, MLP, then the\n"
          "final norm and LM head), and report predicted vs measured device time per operator\n"
          "kind and per iteration: mean absolute percentage error (MAPE), bias, worst cases.\n\n"
          "  --trace FILE      trace (default: " DEFAULT_TRACE ")\n"
          "  --model NAME      catalog model (required)\n"
          "  --gpu GPU         catalog GPU whose cost model predicts (default: from the device's\n"
          "                    name; required with --backend sim)\n"
          "  --tp N            tensor-parallel degree; one rank's shard runs (default 1)\n"
          "  --limit N         requests replayed (default 64)\n"
          "  --iters N         iterations executed and compared (default 200)\n"
          "  --rate-scale X    arrival rate multiplier: larger batches (default 1)\n"
          "  --reps N          executions of each iteration; the median per operator is kept\n"
          "                    (default 3, at most 64)\n"
          "  --batching B      vllm (default), sarathi, orca, static\n"
          "  --cost C          cost model under test: roofline (default), profile, auto\n"
          "  --set K=V         any scenario key (experiments/README.md), e.g. engine.block_size=32;\n"
          "                    the simulated tenant is called 'validate'\n"
          "  --backend B       cuda (default when built with CUDA) or sim (the roofline plays\n"
          "                    the GPU; with --cost roofline every error is 0)\n"
          "  --gpu-index I     CUDA device (default 0)\n"
          "  --l2 hot|cold     leave the L2 cache as the previous operator left it (default hot,\n"
          "                    as in a real forward pass) or flush it before every operator\n"
          "  --db FILE         results database (default results/slicesim.db; none: no store)\n"
          "  --name LABEL      label stored with the validation\n"
          "  --profiles DIR    catalog directory (and profile tables for --cost profile)\n"
          "  --json            print the result as JSON\n"
          "  -q, --quiet       no progress line\n"
          "  -h, --help        this help\n\n"
          "Not executed (and left out of both sides): all_reduce (needs a TP group of GPUs) and\n"
          "the engine's host time per iteration (reported as predicted only).\n"
          "Exit status: 0 done, 1 no GPU / a device or database error, 2 bad usage or input.\n",
          f);
}

static int parse_args(int argc, char **argv, val_opts *o)
{
    static const struct option longopts[] = {
        {"trace", required_argument, NULL, 'T'},   {"model", required_argument, NULL, 'm'},
        {"gpu", required_argument, NULL, 'g'},     {"tp", required_argument, NULL, 't'},
        {"limit", required_argument, NULL, 'l'},   {"iters", required_argument, NULL, 'I'},
        {"reps", required_argument, NULL, 'r'},    {"batching", required_argument, NULL, 'B'},
        {"cost", required_argument, NULL, 'C'},    {"set", required_argument, NULL, 's'},
        {"backend", required_argument, NULL, 'b'}, {"gpu-index", required_argument, NULL, 'i'},
        {"l2", required_argument, NULL, 'L'},      {"db", required_argument, NULL, 'd'},
        {"name", required_argument, NULL, 'n'},    {"profiles", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},          {"quiet", no_argument, NULL, 'q'},
        {"rate-scale", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 0;
    long v = 0;
    if (cli_check_long_options("validate", argc, argv, ":hq", longopts))
        return CLI_EUSAGE;
    for (int ch; (ch = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1;) {
        int st = CLI_OK;
        switch (ch) {
        case 'T': o->trace = optarg; break;
        case 'm': o->model = optarg; break;
        case 'g': o->gpu = optarg; break;
        case 't': st = cli_parse_long("--tp", optarg, 1, 64, &v); o->tp = (unsigned)v; break;
        case 'l': st = cli_parse_long("--limit", optarg, 1, 100000000, &o->limit); break;
        case 'I': st = cli_parse_long("--iters", optarg, 1, 1000000, &o->iters); break;
        case 'r': st = cli_parse_long("--reps", optarg, 1, MAX_REPS, &o->reps); break;
        case 'B': o->batching = optarg; break;
        case 'R': o->rate_scale = optarg; break;
        case 'C': o->cost = optarg; break;
        case 's':
            if (ss_grow((void **)&o->sets, &o->cap_sets, o->n_sets + 1, sizeof *o->sets)) {
                fprintf(stderr, "slicesim: validate: out of memory\n");
                return CLI_EFAIL;
            }
            o->sets[o->n_sets++] = optarg;
            break;
        case 'b': o->backend = optarg; break;
        case 'i': st = cli_parse_long("--gpu-index", optarg, 0, 1023, &v); o->gpu_index = (int)v; break;
        case 'L':
            if (strcmp(optarg, "hot") && strcmp(optarg, "cold")) {
                fprintf(stderr, "slicesim: --l2: expected hot or cold, got '%s'\n", optarg);
                st = CLI_EUSAGE;
            }
            o->l2_cold = !strcmp(optarg, "cold");
            break;
        case 'd': o->db = optarg; break;
        case 'n': o->name = optarg; break;
        case 'p': o->profiles = optarg; break;
        case 'j': o->json = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': o->help = 1; break;
        default:
            fprintf(stderr, "slicesim: validate: bad option or missing argument '%s' (see "
                            "--help)\n", argv[optind - 1]);
            return CLI_EUSAGE;
        }
        if (st)
            return st;
    }
    if (optind < argc) {
        fprintf(stderr, "slicesim: validate: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return CLI_EUSAGE;
    }
    if (o->help)
        return CLI_OK;
    if (!o->model) {
        fprintf(stderr, "slicesim: --model: required (slicesim list models)\n");
        return CLI_EUSAGE;
    }
    if (strcmp(o->backend, "cuda") && strcmp(o->backend, "sim")) {
        fprintf(stderr, "slicesim: --backend: expected cuda or sim, got '%s'\n", o->backend);
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* {======================================================================
 * Recording the simulated schedule
 * ======================================================================= */

static int add_seq(val_run *v, uint32_t q, uint32_t c0)
{
    if (v->n_seqs == v->cap_seqs &&
        ss_grow((void **)&v->seqs, &v->cap_seqs, v->n_seqs + 1, sizeof *v->seqs))
        return SS_ENOMEM;
    v->seqs[v->n_seqs++] = (exec_seq){q, c0};
    return SS_OK;
}

static void on_iter(void *ud, const gmg *g, const gmg_container *c)
{
    val_run *v = ud;
    if (v->oom || v->n_it >= (size_t)v->o->iters)
        return;
    if (v->ctr == GMG_NONE)
        v->ctr = c->id;
    if (c->id != v->ctr)
        return;
    if (v->n_it == v->cap_it && ss_grow((void **)&v->it, &v->cap_it, v->n_it + 1, sizeof *v->it)) {
        v->oom = 1;
        return;
    }
    val_iter *it = &v->it[v->n_it];
    memset(it, 0, sizeof *it);
    it->seq = c->iter.seq;
    it->t_start = c->iter.start;
    it->t_end = c->iter.end;
    it->batch = c->iter.batch;
    it->seq0 = (uint32_t)v->n_seqs;
    cost_batch mine = {0};
    /* prefills first, then decodes: the order cost.c's attention operators take them */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < c->iter.n_reqs; i++) {
            const gmg_req *r = gmg_req_get(g, c->iter.reqs[i]);
            int decode = r->q_tokens == 1 && r->generated > 0 &&
                         r->prompt + r->generated - r->computed == 1;
            if (decode != pass || !r->q_tokens)
                continue;
            if (add_seq(v, r->q_tokens, r->computed)) {
                v->oom = 1;
                return;
            }
            if (decode) {
                it->n_decode++;
                cost_batch_add_decode(&mine, (uint64_t)r->computed + 1);
            } else {
                it->n_prefill++;
                cost_batch_add_prefill(&mine, r->q_tokens, r->computed);
            }
        }
    /* decodes the batch counts without a request (static batching's padding): same context */
    if (it->batch.n_decode > mine.n_decode) {
        uint32_t extra = it->batch.n_decode - mine.n_decode;
        uint64_t ctx = (it->batch.decode_ctx_tokens - mine.decode_ctx_tokens) / extra;
        for (uint32_t i = 0; i < extra; i++)
            if (add_seq(v, 1, (uint32_t)(ctx ? ctx - 1 : 0))) {
                v->oom = 1;
                return;
            }
        it->n_decode += extra;
    }
    size_t n = cost_iteration_ops(c->cost, &c->iter.batch, it->ops, it->op_ns, MAX_IOPS);
    it->n_ops = (uint32_t)(n < MAX_IOPS ? n : MAX_IOPS);
    for (uint32_t i = 0; i < it->n_ops; i++) {
        const cost_op *op = &it->ops[i];
        if (op->kind == COST_OP_HOST)
            it->pred_host += it->op_ns[i];
    }
    v->n_it++;
}

/* }====================================================================== */

/* {======================================================================
 * Executing an iteration
 * ======================================================================= */

/* The operator of kind k in iteration it (NULL when the batch has none). */
static const cost_op *iter_op(const val_iter *it, cost_op_kind k)
{
    for (uint32_t i = 0; i < it->n_ops; i++)
        if (it->ops[i].kind == k)
            return &it->ops[i];
    return NULL;
}

static ss_time iter_op_ns(const val_iter *it, cost_op_kind k)
{
    for (uint32_t i = 0; i < it->n_ops; i++)
        if (it->ops[i].kind == k)
            return it->op_ns[i];
    return 0;
}

typedef struct launch_ctx {
    val_run *v;
    const val_iter *it;
    cost_op_kind *kinds; /* kind of each tag - 1 */
    size_t n, cap;
} launch_ctx;

static int launch_kind(launch_ctx *lc, cost_op_kind k, uint32_t layer)
{
    const cost_op *op = iter_op(lc->it, k);
    if (!op)
        return SS_OK;
    exec_op eo = {.op = *op, .layer = layer};
    eo.op.count = 1;
    const exec_seq *s = lc->v->seqs + lc->it->seq0;
    if (k == COST_OP_ATTN_PREFILL) {
        eo.seqs = s;
        eo.n_seqs = lc->it->n_prefill;
    } else if (k == COST_OP_ATTN_DECODE) {
        eo.seqs = s + lc->it->n_prefill;
        eo.n_seqs = lc->it->n_decode;
    }
    if (lc->n == lc->cap && ss_grow((void **)&lc->kinds, &lc->cap, lc->n + 1, sizeof *lc->kinds))
        return ss_err(&lc->v->eb, SS_ENOMEM, "validate: out of memory");
    lc->kinds[lc->n++] = k;
    return exec_launch(lc->v->x, &eo, lc->n, &lc->v->eb);
}

/* Every operator of the iteration, in execution order. */
static int launch_iteration(launch_ctx *lc)
{
    static const cost_op_kind layer_ops[] = {
        COST_OP_NORM,     COST_OP_QKV,        COST_OP_ROPE,  COST_OP_ATTN_PREFILL,
        COST_OP_ATTN_DECODE, COST_OP_OPROJ,   COST_OP_RESIDUAL, COST_OP_NORM,
        COST_OP_MOE_ROUTER, COST_OP_MLP_UP,   COST_OP_ACT,   COST_OP_MLP_DOWN,
        COST_OP_RESIDUAL,
    };
    int rc = launch_kind(lc, COST_OP_EMBED, 0);
    for (uint32_t l = 0; !rc && l < lc->v->m->layers; l++)
        for (size_t i = 0; !rc && i < sizeof layer_ops / sizeof *layer_ops; i++)
            rc = launch_kind(lc, layer_ops[i], l);
    if (!rc)
        rc = launch_kind(lc, COST_OP_FINAL_NORM, 0);
    if (!rc)
        rc = launch_kind(lc, COST_OP_LM_HEAD, 0);
    return rc;
}

/* Run iteration it reps times; keep per kind the median over the repetitions. */
static int measure_iteration(val_run *v, val_iter *it)
{
    ss_time rep[COST_OP__COUNT][MAX_REPS], span[MAX_REPS];
    long reps = v->o->reps;
    launch_ctx lc = {.v = v, .it = it};
    int rc = SS_OK;
    for (long r = 0; !rc && r < reps; r++) {
        lc.n = 0;
        if ((rc = launch_iteration(&lc)))
            break;
        const exec_sample *s = NULL;
        size_t n = 0;
        if ((rc = exec_collect(v->x, &s, &n, &v->eb)))
            break;
        ss_time first = SS_TIME_MAX, last = 0;
        for (int k = 0; k < COST_OP__COUNT; k++)
            rep[k][r] = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i].tag < 1 || s[i].tag > lc.n)
                continue;
            rep[lc.kinds[s[i].tag - 1]][r] += s[i].ns;
            if (s[i].n_kernels && s[i].start < first)
                first = s[i].start;
            if (s[i].end > last)
                last = s[i].end;
        }
        span[r] = last > first ? last - first : 0;
    }
    if (!rc) {
        for (int k = 0; k < COST_OP__COUNT; k++) {
            qsort(rep[k], (size_t)reps, sizeof rep[k][0], cli_cmp_time);
            it->meas[k] = rep[k][reps / 2];
        }
        qsort(span, (size_t)reps, sizeof span[0], cli_cmp_time);
        it->meas_span = span[reps / 2];
        for (size_t i = 0; i < lc.n; i++) /* the launches of one repetition */
            it->execs[lc.kinds[i]]++;
        for (int k = 0; k < COST_OP__COUNT; k++) {
            it->pred[k] = iter_op_ns(it, (cost_op_kind)k) * it->execs[k];
            it->pred_total += it->pred[k];
            it->meas_total += it->meas[k];
        }
    }
    ss_free(lc.kinds);
    return rc;
}

static int execute_all(val_run *v)
{
    exec_limits lim = {0};
    for (size_t i = 0; i < v->n_it; i++) {
        const val_iter *it = &v->it[i];
        uint64_t tok = it->batch.prefill_tokens + it->batch.n_decode, kv = 0;
        for (uint32_t s = 0; s < it->n_prefill + it->n_decode; s++) {
            const exec_seq *q = &v->seqs[it->seq0 + s];
            kv += (uint64_t)q->c0 + q->q;
            uint64_t sc = s < it->n_prefill ? exec_prefill_scores(q->q, q->c0) : 0;
            lim.max_scores = sc > lim.max_scores ? sc : lim.max_scores;
        }
        uint32_t seqs = it->batch.n_prefill + it->batch.n_decode;
        const cost_op *up = iter_op(it, COST_OP_MLP_UP);
        if (up && up->tokens > tok)
            tok = up->tokens; /* MoE: routed tokens */
        lim.max_tokens = tok > lim.max_tokens ? tok : lim.max_tokens;
        lim.max_kv_tokens = kv > lim.max_kv_tokens ? kv : lim.max_kv_tokens;
        lim.max_seqs = seqs > lim.max_seqs ? seqs : lim.max_seqs;
    }
    int rc = exec_prepare(v->x, v->m, v->o->tp, &lim, &v->eb);
    /* warm-up: the first iteration once, untimed results discarded */
    if (!rc && v->n_it) {
        val_iter warm = v->it[0];
        rc = measure_iteration(v, &warm);
    }
    for (size_t i = 0; !rc && i < v->n_it; i++) {
        rc = measure_iteration(v, &v->it[i]);
        if (!v->o->quiet && isatty(2))
            fprintf(stderr, "\rslicesim: validate: iteration %zu/%zu   ", i + 1, v->n_it);
    }
    if (!v->o->quiet && isatty(2))
        fputc('\n', stderr);
    return rc;
}

/* }====================================================================== */

/* {======================================================================
 * Report and store
 * ======================================================================= */

typedef struct kind_stat {
    uint64_t execs;
    uint32_t iters;
    double pred_ms, meas_ms, ape, bias, worst;
    uint64_t worst_iter;
} kind_stat;

typedef struct val_sum {
    kind_stat k[COST_OP__COUNT];
    double mape, bias, pred_ms, meas_ms, span_ms, host_ms;
    size_t worst[N_WORST], n_worst;
} val_sum;

static double ape_of(ss_time pred, ss_time meas)
{
    return meas > 0 ? fabs((double)pred - (double)meas) / (double)meas : 0;
}

static double err_of(ss_time pred, ss_time meas)
{
    return meas > 0 ? ((double)pred - (double)meas) / (double)meas : 0;
}

static void summarise(const val_run *v, val_sum *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < v->n_it; i++) {
        const val_iter *it = &v->it[i];
        for (int k = 0; k < COST_OP__COUNT; k++) {
            if (!it->execs[k])
                continue;
            kind_stat *ks = &s->k[k];
            double a = ape_of(it->pred[k], it->meas[k]);
            ks->execs += it->execs[k];
            ks->iters++;
            ks->pred_ms += (double)it->pred[k] / 1e6;
            ks->meas_ms += (double)it->meas[k] / 1e6;
            ks->ape += a;
            ks->bias += err_of(it->pred[k], it->meas[k]);
            if (a >= ks->worst) {
                ks->worst = a;
                ks->worst_iter = it->seq;
            }
        }
        s->mape += ape_of(it->pred_total, it->meas_total);
        s->bias += err_of(it->pred_total, it->meas_total);
        s->pred_ms += (double)it->pred_total / 1e6;
        s->meas_ms += (double)it->meas_total / 1e6;
        s->span_ms += (double)it->meas_span / 1e6;
        s->host_ms += (double)it->pred_host / 1e6;
        /* keep the N_WORST iterations by absolute error, worst first */
        double a = ape_of(it->pred_total, it->meas_total);
        size_t at = s->n_worst;
        while (at > 0 && ape_of(v->it[s->worst[at - 1]].pred_total,
                                v->it[s->worst[at - 1]].meas_total) < a)
            at--;
        if (at < N_WORST) {
            size_t end = s->n_worst < N_WORST ? s->n_worst : N_WORST - 1;
            memmove(s->worst + at + 1, s->worst + at, (end - at) * sizeof *s->worst);
            s->worst[at] = i;
            if (s->n_worst < N_WORST)
                s->n_worst++;
        }
    }
    for (int k = 0; k < COST_OP__COUNT; k++)
        if (s->k[k].iters) {
            s->k[k].ape /= s->k[k].iters;
            s->k[k].bias /= s->k[k].iters;
        }
    if (v->n_it) {
        s->mape /= (double)v->n_it;
        s->bias /= (double)v->n_it;
    }
}

static void print_table(const val_run *v, const val_sum *s, const char *cost)
{
    const exec_device *d = exec_device_info(v->x);
    printf("slicesim validate: %zu iterations of %s TP %u, cost model '%s' for %s vs %s "
           "(executor %s, timer %s)\n",
           v->n_it, v->m->name, v->o->tp, cost, v->gpu->name, d->name, exec_backend(v->x),
           d->timer);
    printf("  %-13s %8s %12s %12s %8s %8s %10s\n", "OP", "EXECS", "PRED_MS", "MEAS_MS", "MAPE_%",
           "BIAS_%", "WORST_%");
    for (int k = 0; k < COST_OP__COUNT; k++) {
        const kind_stat *ks = &s->k[k];
        if (!ks->iters)
            continue;
        printf("  %-13s %8llu %12.3f %12.3f %8.1f %+8.1f %10.1f\n", cost_op_name((cost_op_kind)k),
               (unsigned long long)ks->execs, ks->pred_ms, ks->meas_ms, 100 * ks->ape,
               100 * ks->bias, 100 * ks->worst);
    }
    printf("  %-13s %8s %12.3f %12.3f %8.1f %+8.1f\n", "iteration", "", s->pred_ms, s->meas_ms,
           100 * s->mape, 100 * s->bias);
    printf("  measured span (first kernel start to last end, launch gaps included): %.3f ms; "
           "predicted host time, not executed: %.3f ms\n", s->span_ms, s->host_ms);
    printf("  worst iterations:  ITER  PREFILL_TOK  DECODES  PRED_MS  MEAS_MS  ERR_%%\n");
    for (size_t i = 0; i < s->n_worst; i++) {
        const val_iter *it = &v->it[s->worst[i]];
        printf("                   %6llu %12llu %8u %8.3f %8.3f %+6.1f\n",
               (unsigned long long)it->seq, (unsigned long long)it->batch.prefill_tokens,
               it->batch.n_decode, (double)it->pred_total / 1e6, (double)it->meas_total / 1e6,
               100 * err_of(it->pred_total, it->meas_total));
    }
}

static void print_json(const val_run *v, const val_sum *s, const char *cost, int64_t id)
{
    const exec_device *d = exec_device_info(v->x);
    ss_strbuf b = {0};
    ss_strbuf_printf(&b, "{\"validation_id\": %lld, \"model\": ", (long long)id);
    ss_strbuf_json_str(&b, v->m->name);
    ss_strbuf_printf(&b, ", \"tp\": %u, \"gpu\": ", v->o->tp);
    ss_strbuf_json_str(&b, v->gpu->name);
    ss_strbuf_printf(&b, ", \"device\": ");
    ss_strbuf_json_str(&b, d->name);
    ss_strbuf_printf(&b, ", \"backend\": \"%s\", \"timer\": \"%s\", \"cost_model\": ",
                     exec_backend(v->x), d->timer);
    ss_strbuf_json_str(&b, cost);
    ss_strbuf_printf(&b, ", \"iterations\": %zu, \"iteration_mape_pct\": %.4f, "
                         "\"iteration_bias_pct\": %.4f, \"predicted_ms\": %.6f, "
                         "\"measured_ms\": %.6f, \"measured_span_ms\": %.6f, \"ops\": [",
                     v->n_it, 100 * s->mape, 100 * s->bias, s->pred_ms, s->meas_ms, s->span_ms);
    int first = 1;
    for (int k = 0; k < COST_OP__COUNT; k++) {
        const kind_stat *ks = &s->k[k];
        if (!ks->iters)
            continue;
        ss_strbuf_printf(&b, "%s\n  {\"op\": \"%s\", \"executions\": %llu, \"predicted_ms\": "
                             "%.6f, \"measured_ms\": %.6f, \"mape_pct\": %.4f, \"bias_pct\": "
                             "%.4f, \"worst_pct\": %.4f, \"worst_iteration\": %llu}",
                         first ? "" : ",", cost_op_name((cost_op_kind)k),
                         (unsigned long long)ks->execs, ks->pred_ms, ks->meas_ms, 100 * ks->ape,
                         100 * ks->bias, 100 * ks->worst, (unsigned long long)ks->worst_iter);
        first = 0;
    }
    ss_strbuf_printf(&b, "], \"worst_iterations\": [");
    for (size_t i = 0; i < s->n_worst; i++) {
        const val_iter *it = &v->it[s->worst[i]];
        ss_strbuf_printf(&b, "%s{\"iteration\": %llu, \"predicted_ms\": %.6f, \"measured_ms\": "
                             "%.6f, \"error_pct\": %.4f}",
                         i ? ", " : "", (unsigned long long)it->seq,
                         (double)it->pred_total / 1e6, (double)it->meas_total / 1e6,
                         100 * err_of(it->pred_total, it->meas_total));
    }
    ss_strbuf_printf(&b, "]}\n");
    if (ss_strbuf_ok(&b))
        fputs(ss_strbuf_str(&b), stdout);
    ss_strbuf_fini(&b);
}

static int store_all(val_run *v, const val_sum *s, const char *cost, const char *trace,
                     const char *command, int64_t *id_out)
{
    *id_out = 0;
    if (!strcmp(v->o->db, "none"))
        return SS_OK;
    store *st = NULL;
    int rc = store_open(&st, v->o->db, &v->eb);
    if (rc)
        return rc;
    const exec_device *d = exec_device_info(v->x);
    store_validation info = {
        .command = command, .name = v->o->name ? v->o->name : "", .model = v->m->name,
        .tp = v->o->tp, .gpu = v->gpu->name, .device = d->name, .backend = exec_backend(v->x),
        .timer = d->timer, .cost_model = cost, .trace = trace, .requests = (uint64_t)v->o->limit,
        .iterations = v->n_it, .reps = (uint32_t)v->o->reps, .l2_cold = v->o->l2_cold,
        .mape_pct = 100 * s->mape, .bias_pct = 100 * s->bias, .predicted_ms = s->pred_ms,
        .measured_ms = s->meas_ms, .measured_span_ms = s->span_ms,
    };
    rc = store_validation_begin(st, &info, id_out, &v->eb);
    for (int k = 0; !rc && k < COST_OP__COUNT; k++) {
        const kind_stat *ks = &s->k[k];
        if (!ks->iters)
            continue;
        store_validation_op row = {
            .op = cost_op_name((cost_op_kind)k), .executions = ks->execs,
            .predicted_ms = ks->pred_ms, .measured_ms = ks->meas_ms, .mape_pct = 100 * ks->ape,
            .bias_pct = 100 * ks->bias, .worst_pct = 100 * ks->worst,
            .worst_iteration = ks->worst_iter};
        rc = store_validation_add_op(st, &row, &v->eb);
    }
    for (size_t i = 0; !rc && i < v->n_it; i++) {
        const val_iter *it = &v->it[i];
        store_validation_iter row = {
            .iteration = it->seq, .sim_start_s = ss_time_to_s(it->t_start),
            .sim_ms = (double)(it->t_end - it->t_start) / 1e6, .prefills = it->batch.n_prefill,
            .prefill_tokens = it->batch.prefill_tokens, .decodes = it->batch.n_decode,
            .decode_ctx_tokens = it->batch.decode_ctx_tokens,
            .predicted_ms = (double)it->pred_total / 1e6,
            .measured_ms = (double)it->meas_total / 1e6,
            .measured_span_ms = (double)it->meas_span / 1e6,
            .predicted_host_ms = (double)it->pred_host / 1e6,
            .error_pct = 100 * err_of(it->pred_total, it->meas_total)};
        rc = store_validation_add_iter(st, &row, &v->eb);
    }
    if (!rc)
        rc = store_validation_commit(st, &v->eb);
    store_close(&st); /* rolls back an unfinished validation */
    return rc;
}

/* }====================================================================== */

/* key = value as option opt gives it (NULL: a value of validate's own). */
static int set_key(scn_scenario *sc, const char *key, const char *value, const char *opt,
                   ss_errbuf *eb)
{
    char buf[SCN_PATH_MAX + 128];
    snprintf(buf, sizeof buf, "%s=%s", key, value);
    return opt ? scn_set_option(sc, buf, opt, eb) : scn_set(sc, buf, eb);
}

static int build_scenario(const val_opts *o, const char *gpu, scn_scenario *sc, ss_errbuf *eb)
{
    char num[32];
    const char *trace = o->trace ? o->trace
                        : access(DEFAULT_TRACE, R_OK) == 0 ? DEFAULT_TRACE
                                                           : SS_SOURCE_ROOT "/" DEFAULT_TRACE;
    int rc = set_key(sc, "cluster.gpu", gpu, o->gpu ? "--gpu" : NULL, eb);
    if (!rc)
        rc = set_key(sc, "tenant.validate.model", o->model, "--model", eb);
    snprintf(num, sizeof num, "%u", o->tp);
    if (!rc)
        rc = set_key(sc, "tenant.validate.tp", num, "--tp", eb);
    if (!rc)
        rc = set_key(sc, "tenant.validate.replicas", "1", NULL, eb);
    /* The executor launches one kernel at a time, as an eager engine does: the schedule is
     * simulated with that engine's floors too, unless --set names another. */
    if (!rc)
        rc = set_key(sc, "tenant.validate.engine", CAT_ENGINE_EAGER, NULL, eb);
    if (!rc)
        rc = set_key(sc, "tenant.validate.trace", trace, o->trace ? "--trace" : NULL, eb);
    snprintf(num, sizeof num, "%ld", o->limit);
    if (!rc)
        rc = set_key(sc, "tenant.validate.limit", num, "--limit", eb);
    if (!rc && o->batching)
        rc = set_key(sc, "policy.batching", o->batching, "--batching", eb);
    if (!rc && o->rate_scale)
        rc = set_key(sc, "tenant.validate.rate_scale", o->rate_scale, "--rate-scale",
                     eb);
    if (!rc && o->cost)
        rc = set_key(sc, "policy.cost", o->cost, "--cost", eb);
    if (!rc)
        rc = set_key(sc, "run.db", "none", NULL, eb);
    for (size_t i = 0; !rc && i < o->n_sets; i++)
        rc = scn_set(sc, o->sets[i], eb);
    return rc ? rc : scn_check(sc, eb);
}

static int run_validate(const val_opts *o, const char *command)
{
    val_run v = {.o = o, .ctr = GMG_NONE};
    catalog *cat = NULL;
    scn_scenario *sc = NULL;
    app_run x = {0};
    int rc = catalog_load(&cat, catalog_default_dir(o->profiles), &v.eb);
    if (!rc)
        rc = catalog_model_find(cat, o->model, &v.m, &v.eb);
    if (!rc && o->gpu && (rc = catalog_gpu_find(cat, o->gpu, &v.gpu, &v.eb)))
        ss_err_prefix(&v.eb, rc, "--gpu");
    if (!rc && !v.gpu && !strcmp(o->backend, "sim"))
        rc = ss_err(&v.eb, SS_EINVAL, "--gpu: required with --backend sim");
    cli_files files = {0};
    if (!rc)
        rc = cli_files_add(&files, "--trace", o->trace, 0, &v.eb);
    if (!rc && strcmp(o->db, "none"))
        rc = cli_files_add(&files, "the results database (--db)", o->db, 1, &v.eb);
    cli_files_fini(&files);
    if (rc) {
        fprintf(stderr, "slicesim: validate: %s\n", v.eb.msg);
        catalog_destroy(&cat);
        return cli_status_of(rc);
    }
    /* the executor launches one kernel at a time: the eager engine's floors, as the schedule
     * is simulated with (build_scenario; a --set of another engine compares across engines) */
    exec_config cfg = {.gpu_index = o->gpu_index, .l2_cold = o->l2_cold, .gpu = v.gpu,
                       .engine = catalog_engine(cat, CAT_ENGINE_EAGER)};
    if ((rc = exec_create(&v.x, o->backend, &cfg, &v.eb))) {
        fprintf(stderr, "slicesim: validate: nothing measured: %s\n", v.eb.msg);
        catalog_destroy(&cat);
        return rc == SS_ENOTFOUND ? CLI_EFAIL : cli_status_of(rc);
    }
    if (!v.gpu) {
        const char *g = exec_guess_gpu(exec_device_info(v.x)->name);
        if (!g)
            rc = ss_err(&v.eb, SS_EINVAL, "--gpu: cannot tell which catalog GPU '%s' is; name "
                                          "it (slicesim list gpus)", exec_device_info(v.x)->name);
        else
            rc = catalog_gpu_find(cat, g, &v.gpu, &v.eb);
    }
    app_run_opts ro = {.profiles = o->profiles, .command = command, .progress = 0};
    if (!rc && scn_create(&sc))
        rc = ss_err(&v.eb, SS_ENOMEM, "out of memory");
    if (!rc && (rc = build_scenario(o, v.gpu->name, sc, &v.eb)) == SS_EIO)
        rc = SS_EPARSE;
    if (!rc && (sc->n_tenants != 1 || sc->tenants[0].pp != 1 || sc->tenants[0].replicas != 1))
        rc = ss_err(&v.eb, SS_EINVAL, "validate: one tenant of one container without pipeline "
                                      "stages is executed (--set gave %u tenants, pp %u, %u "
                                      "replicas)", sc->n_tenants, sc->tenants[0].pp,
                    sc->tenants[0].replicas);
    if (!rc && (rc = app_run_setup(&x, sc, &ro)))
        memcpy(v.eb.msg, x.eb.msg, sizeof v.eb.msg);
    if (!rc) {
        gsim_observer obs = {.on_iter = on_iter, .ud = &v};
        gsim_set_observer(x.g, &obs);
        if ((rc = app_run_exec(&x)))
            memcpy(v.eb.msg, x.eb.msg, sizeof v.eb.msg);
    }
    if (!rc && v.oom)
        rc = ss_err(&v.eb, SS_ENOMEM, "validate: out of memory recording iterations");
    if (!rc && !v.n_it)
        rc = ss_err(&v.eb, SS_EINVAL, "validate: the replay ran no iteration (empty trace?)");
    if (!rc && !o->quiet)
        fprintf(stderr, "slicesim: validate: %zu iterations recorded; running them on %s\n",
                v.n_it, exec_device_info(v.x)->name);
    if (!rc && (rc = execute_all(&v)) == SS_EINVAL)
        rc = SS_EIO; /* a limit the device refused is not the user's input */
    const char *cost = o->cost ? o->cost : "roofline";
    int64_t id = 0;
    val_sum s;
    if (!rc) {
        summarise(&v, &s);
        rc = store_all(&v, &s, cost, sc->tenants[0].trace, command, &id);
    }
    if (!rc) {
        if (o->json)
            print_json(&v, &s, cost, id);
        else {
            print_table(&v, &s, cost);
            if (id)
                printf("  results: %s (validation %lld)\n", o->db, (long long)id);
        }
    } else {
        fprintf(stderr, "slicesim: validate: %s\n", v.eb.msg);
    }
    app_run_fini(&x);
    scn_destroy(&sc);
    exec_destroy(&v.x);
    catalog_destroy(&cat);
    ss_free(v.it);
    ss_free(v.seqs);
    return cli_status_of(rc);
}

int cmd_validate(int argc, char **argv)
{
    val_opts o = {.tp = 1, .limit = 64, .iters = 200, .reps = 3, .backend = "cuda",
                  .db = "results/slicesim.db"};
    int st = parse_args(argc, argv, &o);
    if (st || o.help) {
        if (o.help)
            usage(stdout);
        ss_free(o.sets);
        return st;
    }
    char *command = cli_join_args(argc, argv);
    st = run_validate(&o, command ? command : "slicesim validate");
    ss_free(command);
    ss_free(o.sets);
    return st;
}
