/* A validation: the simulated schedule recorded iteration by iteration (the batch, its
 * sequences, the cost model's operators and their predicted times), each iteration run on the
 * executor in execution order with the median per operator kind over the repetitions, then
 * the result (validate_out.c). Not for options (app/cmd_validate.c). */
#include "calib/validate.h"
#include "calib/validate_int.h"

#include "runner/run.h"

#include "gsim/gsim.h"

#include "core/ss_alloc.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* {======================================================================
 * Recording the simulated schedule
 * ======================================================================= */

static int add_seq(calib__val_run *v, uint32_t q, uint32_t c0)
{
    if (v->n_seqs == v->cap_seqs &&
        ss_grow((void **)&v->seqs, &v->cap_seqs, v->n_seqs + 1, sizeof *v->seqs))
        return SS_ENOMEM;
    v->seqs[v->n_seqs++] = (exec_seq){q, c0};
    return SS_OK;
}

static void on_iter(void *ud, const gmg *g, const gmg_container *c)
{
    calib__val_run *v = ud;
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
    calib__val_iter *it = &v->it[v->n_it];
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
    size_t n = cost_iteration_ops(c->cost, &c->iter.batch, it->ops, it->op_ns, CALIB__MAX_IOPS);
    it->n_ops = (uint32_t)(n < CALIB__MAX_IOPS ? n : CALIB__MAX_IOPS);
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
static const cost_op *iter_op(const calib__val_iter *it, cost_op_kind k)
{
    for (uint32_t i = 0; i < it->n_ops; i++)
        if (it->ops[i].kind == k)
            return &it->ops[i];
    return NULL;
}

static ss_time iter_op_ns(const calib__val_iter *it, cost_op_kind k)
{
    for (uint32_t i = 0; i < it->n_ops; i++)
        if (it->ops[i].kind == k)
            return it->op_ns[i];
    return 0;
}

typedef struct launch_ctx {
    calib__val_run *v;
    const calib__val_iter *it;
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
static int measure_iteration(calib__val_run *v, calib__val_iter *it)
{
    ss_time rep[COST_OP__COUNT][CALIB_VALIDATE_MAX_REPS], span[CALIB_VALIDATE_MAX_REPS];
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
            qsort(rep[k], (size_t)reps, sizeof rep[k][0], ss_time_cmp);
            it->meas[k] = rep[k][reps / 2];
        }
        qsort(span, (size_t)reps, sizeof span[0], ss_time_cmp);
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

static int execute_all(calib__val_run *v)
{
    exec_limits lim = {0};
    for (size_t i = 0; i < v->n_it; i++) {
        const calib__val_iter *it = &v->it[i];
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
        calib__val_iter warm = v->it[0];
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

/* key = value as option opt gives it (NULL: a value of validate's own). */
static int set_key(scn_scenario *sc, const char *key, const char *value, const char *opt,
                   ss_errbuf *eb)
{
    char buf[SCN_PATH_MAX + 128];
    snprintf(buf, sizeof buf, "%s=%s", key, value);
    return opt ? scn_set_option(sc, buf, opt, eb) : scn_set(sc, buf, eb);
}

static int build_scenario(const calib_validate_opts *o, const char *gpu, scn_scenario *sc,
                          ss_errbuf *eb)
{
    char num[32];
    const char *trace = o->trace ? o->trace
                        : access(CALIB_VALIDATE_DEFAULT_TRACE, R_OK) == 0
                            ? CALIB_VALIDATE_DEFAULT_TRACE
                            : SS_SOURCE_ROOT "/" CALIB_VALIDATE_DEFAULT_TRACE;
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


/* {======================================================================
 * The validation
 * ======================================================================= */

/* The model and GPU o names. */
static int find_names(calib__val_run *v, const catalog *cat)
{
    const calib_validate_opts *o = v->o;
    int rc = catalog_model_find(cat, o->model, &v->m, &v->eb);
    if (!rc && o->gpu && (rc = catalog_gpu_find(cat, o->gpu, &v->gpu, &v->eb)))
        ss_err_prefix(&v->eb, rc, "--gpu");
    if (!rc && !v->gpu && !strcmp(o->backend, "sim"))
        rc = ss_err(&v->eb, SS_EINVAL, "--gpu: required with --backend sim");
    return rc;
}

/* The executor, and the catalog GPU guessed from the device's name when o names none. No
 * device is a failed run (SS_EIO), not bad input. */
static int start_device(calib__val_run *v, const catalog *cat)
{
    const calib_validate_opts *o = v->o;
    /* the executor launches one kernel at a time: the eager engine's floors, as the schedule
     * is simulated with (build_scenario; a --set of another engine compares across engines) */
    exec_config cfg = {.gpu_index = o->gpu_index, .l2_cold = o->l2_cold, .gpu = v->gpu,
                       .engine = catalog_engine(cat, CAT_ENGINE_EAGER)};
    int rc = exec_create(&v->x, o->backend, &cfg, &v->eb);
    if (rc)
        return ss_err_prefix(&v->eb, rc == SS_ENOTFOUND ? SS_EIO : rc, "nothing measured");
    if (v->gpu)
        return SS_OK;
    const char *g = exec_guess_gpu(exec_device_info(v->x)->name);
    if (!g)
        return ss_err(&v->eb, SS_EINVAL, "--gpu: cannot tell which catalog GPU '%s' is; name "
                                         "it (slicesim list gpus)", exec_device_info(v->x)->name);
    return catalog_gpu_find(cat, g, &v->gpu, &v->eb);
}

/* Replay the scenario of o on one container and record its iterations; *sc_out is the
 * scenario (the caller destroys it). */
static int record(calib__val_run *v, const char *command, scn_scenario **sc_out)
{
    const calib_validate_opts *o = v->o;
    runner_run_opts ro = {.profiles = o->profiles, .command = command, .progress = 0};
    runner_run x = {0};
    scn_scenario *sc = NULL;
    int rc = scn_create(&sc) ? ss_err(&v->eb, SS_ENOMEM, "out of memory") : SS_OK;
    if (!rc && (rc = build_scenario(o, v->gpu->name, sc, &v->eb)) == SS_EIO)
        rc = SS_EPARSE;
    if (!rc && (sc->n_tenants != 1 || sc->tenants[0].pp != 1 || sc->tenants[0].replicas != 1))
        rc = ss_err(&v->eb, SS_EINVAL, "validate: one tenant of one container without pipeline "
                                       "stages is executed (--set gave %u tenants, pp %u, %u "
                                       "replicas)", sc->n_tenants, sc->tenants[0].pp,
                    sc->tenants[0].replicas);
    if (!rc && (rc = runner_run_setup(&x, sc, &ro)))
        memcpy(v->eb.msg, x.eb.msg, sizeof v->eb.msg);
    if (!rc) {
        gsim_observer obs = {.on_iter = on_iter, .ud = v};
        gsim_set_observer(x.g, &obs);
        if ((rc = runner_run_exec(&x)))
            memcpy(v->eb.msg, x.eb.msg, sizeof v->eb.msg);
    }
    if (!rc && v->oom)
        rc = ss_err(&v->eb, SS_ENOMEM, "validate: out of memory recording iterations");
    if (!rc && !v->n_it)
        rc = ss_err(&v->eb, SS_EINVAL, "validate: the replay ran no iteration (empty trace?)");
    runner_run_fini(&x);
    *sc_out = sc;
    return rc;
}

/* Summarise, store, and write the result to out. */
static int finish(calib__val_run *v, const char *trace, const char *command, FILE *out)
{
    const calib_validate_opts *o = v->o;
    const char *cost = o->cost ? o->cost : "roofline";
    int64_t id = 0;
    calib__val_sum s;
    calib__val_summarise(v, &s);
    int rc = calib__val_store(v, &s, cost, trace, command, &id);
    if (rc)
        return rc;
    if (o->json) {
        calib__val_print_json(out, v, &s, cost, id);
        return SS_OK;
    }
    calib__val_print_table(out, v, &s, cost);
    if (id)
        fprintf(out, "  results: %s (validation %lld)\n", o->db, (long long)id);
    return SS_OK;
}

int calib_validate(const calib_validate_opts *o, const char *command, FILE *out,
                   ss_errbuf *eb)
{
    calib__val_run v = {.o = o, .ctr = GMG_NONE};
    catalog *cat = NULL;
    scn_scenario *sc = NULL;
    int rc = catalog_load(&cat, catalog_default_dir(o->profiles), &v.eb);
    if (!rc)
        rc = find_names(&v, cat);
    if (!rc && o->check_files)
        rc = o->check_files(o->check_files_ud, &v.eb);
    if (!rc)
        rc = start_device(&v, cat);
    if (!rc)
        rc = record(&v, command, &sc);
    if (!rc && !o->quiet)
        fprintf(stderr, "slicesim: validate: %zu iterations recorded; running them on %s\n",
                v.n_it, exec_device_info(v.x)->name);
    if (!rc && (rc = execute_all(&v)) == SS_EINVAL)
        rc = SS_EIO; /* a limit the device refused is not the user's input */
    if (!rc)
        rc = finish(&v, sc->tenants[0].trace, command, out);
    if (rc)
        *eb = v.eb;
    scn_destroy(&sc);
    exec_destroy(&v.x);
    catalog_destroy(&cat);
    ss_free(v.it);
    ss_free(v.seqs);
    return rc;
}

/* }====================================================================== */
