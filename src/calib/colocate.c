/* `slicesim validate --colocate MODE`: two processes' kernels on one GPU, each alone and then
 * together, under MPS or time slicing, against what the simulator's sharing model predicts
 * (gsim_share_slowdown, docs/guide/gpu-sharing.md). A prefill-shaped GEMM (the model's gate+up
 * projection of --prefill-tokens tokens) runs in one process, a decode-shaped one (of
 * --decode-tokens tokens) in the other; each process has its own executor, made after the fork
 * (a CUDA context does not survive one), and under MPS its CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
 * The parent only orders the phases and compares: it never touches the device. */
#include "calib/validate.h"

#include "catalog/catalog.h"
#include "core/ss_file.h"
#include "core/ss_json.h"
#include "cost/cost.h"
#include "exec/exec.h"
#include "gsim/gsim.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 200000

/* What a worker says back: once ready (its device), then after each run. */
typedef struct reply {
    int rc;               /* 0, or the SS_E* code of what failed (err says) */
    double median_ns;     /* a run: the median time of its operator */
    uint64_t n;           /* a run: operators timed */
    char device[128];     /* ready: the device's name */
    char err[600];
} reply;

typedef struct worker {
    pid_t pid;
    int to, from;         /* command pipe to it, reply pipe from it */
} worker;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_ns(const void *a, const void *b)
{
    ss_time x = *(const ss_time *)a, y = *(const ss_time *)b;
    return (x > y) - (x < y);
}

/* The worker's run: op timed again and again, ten at a time, for `seconds` of wall time. */
static void worker_run(exec *x, const exec_op *op, double seconds, ss_time *ns, reply *rp)
{
    double until = now_s() + seconds;
    uint64_t n = 0;
    while (n + 10 <= MAX_SAMPLES && (n == 0 || now_s() < until)) {
        ss_errbuf eb;
        for (uint64_t i = 0; i < 10 && !rp->rc; i++)
            if ((rp->rc = exec_launch(x, op, i + 1, &eb)))
                snprintf(rp->err, sizeof rp->err, "%s", eb.msg);
        const exec_sample *s;
        size_t k;
        if (!rp->rc && (rp->rc = exec_collect(x, &s, &k, &eb)))
            snprintf(rp->err, sizeof rp->err, "%s", eb.msg);
        if (rp->rc)
            return;
        for (size_t i = 0; i < k; i++)
            ns[n++] = s[i].ns;
    }
    qsort(ns, n, sizeof *ns, cmp_ns);
    rp->n = n;
    rp->median_ns = n ? (double)ns[n / 2] : 0;
}

/* The worker process: its executor, then a run for every 'r' until 'q'. Never returns. */
static void worker_main(const calib_colocate_opts *o, const cat_model *m, const cat_gpu *gpu,
                        const cat_engine *eng, const cost_op *shape, int in, int out)
{
    reply rp = {0};
    char pct[16];
    if (!strcmp(o->mode, "mps")) { /* MPS reads it when the client's context is made */
        snprintf(pct, sizeof pct, "%g", 100 * o->sm_share);
        setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct, 1);
    }
    exec *x = NULL;
    ss_errbuf eb;
    exec_config cfg = {.gpu_index = o->gpu_index, .gpu = gpu, .engine = eng};
    exec_limits lim = {.max_tokens = shape->tokens, .max_kv_tokens = shape->tokens,
                       .max_seqs = shape->n_seqs ? shape->n_seqs : 1};
    ss_time *ns = calloc(MAX_SAMPLES, sizeof *ns);
    if (!ns)
        rp.rc = SS_ENOMEM, snprintf(rp.err, sizeof rp.err, "out of memory");
    if (!rp.rc && (rp.rc = exec_create(&x, o->backend, &cfg, &eb)))
        snprintf(rp.err, sizeof rp.err, "%s", eb.msg);
    if (!rp.rc && (rp.rc = exec_prepare(x, m, 1, &lim, &eb)))
        snprintf(rp.err, sizeof rp.err, "%s", eb.msg);
    exec_op op = {.op = *shape};
    op.op.count = 1;
    for (int i = 0; !rp.rc && i < 5; i++) /* warm-up, untimed */
        if ((rp.rc = exec_launch(x, &op, 0, &eb)))
            snprintf(rp.err, sizeof rp.err, "%s", eb.msg);
    if (!rp.rc)
        snprintf(rp.device, sizeof rp.device, "%s", exec_device_info(x)->name);
    int alive = !ss_fd_write_all(out, &rp, sizeof rp) && !rp.rc;
    char cmd;
    while (alive && !ss_fd_read_all(in, &cmd, 1) && cmd == 'r') {
        reply run = {0};
        worker_run(x, &op, o->seconds, ns, &run);
        alive = !ss_fd_write_all(out, &run, sizeof run) && !run.rc;
    }
    exec_destroy(&x);
    free(ns);
    _exit(0);
}

static int start_worker(const calib_colocate_opts *o, const cat_model *m, const cat_gpu *gpu,
                        const cat_engine *eng, const cost_op *shape, worker *w, ss_errbuf *eb)
{
    int to[2], from[2];
    if (pipe(to))
        return ss_err(eb, SS_EIO, "--colocate: pipe: %s", strerror(errno));
    if (pipe(from)) {
        close(to[0]);
        close(to[1]);
        return ss_err(eb, SS_EIO, "--colocate: pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        return ss_err(eb, SS_EIO, "--colocate: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(to[1]);
        close(from[0]);
        worker_main(o, m, gpu, eng, shape, to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);
    *w = (worker){.pid = pid, .to = to[1], .from = from[0]};
    return SS_OK;
}

static void stop_worker(worker *w)
{
    if (w->pid <= 0)
        return;
    char q = 'q';
    (void)ss_fd_write_all(w->to, &q, 1);
    close(w->to);
    close(w->from);
    int st;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    w->pid = 0;
}

static int get_reply(worker *w, const char *what, reply *rp, ss_errbuf *eb)
{
    if (ss_fd_read_all(w->from, rp, sizeof *rp))
        return ss_err(eb, SS_EIO, "--colocate: the %s process ended without a word", what);
    if (rp->rc)
        return ss_err(eb, rp->rc == SS_ENOTFOUND ? SS_EIO : rp->rc, "--colocate: the %s "
                      "process: %s", what, rp->err);
    return SS_OK;
}

/* Runs in the phases: A alone, B alone, both at once. */
static int measure(worker *w, reply alone[2], reply both[2], ss_errbuf *eb)
{
    static const char *const who[2] = {"prefill", "decode"};
    char r = 'r';
    int rc = SS_OK;
    for (int i = 0; !rc && i < 2; i++) {
        if (ss_fd_write_all(w[i].to, &r, 1))
            return ss_err(eb, SS_EIO, "--colocate: the %s process is gone", who[i]);
        rc = get_reply(&w[i], who[i], &alone[i], eb);
    }
    for (int i = 0; !rc && i < 2; i++)
        if (ss_fd_write_all(w[i].to, &r, 1))
            rc = ss_err(eb, SS_EIO, "--colocate: the %s process is gone", who[i]);
    for (int i = 0; !rc && i < 2; i++)
        rc = get_reply(&w[i], who[i], &both[i], eb);
    return rc;
}

int calib_colocate(const calib_colocate_opts *o, FILE *out, ss_errbuf *eb)
{
    int kind = !strcmp(o->mode, "mps") ? GMG_SHARE_MPS : !strcmp(o->mode, "time")
                                                              ? GMG_SHARE_TIME : -1;
    if (kind < 0)
        return ss_err(eb, SS_EINVAL, "--colocate: expected mps or time, got '%s'", o->mode);
    catalog *cat = NULL;
    const cat_model *m = NULL;
    const cat_gpu *gpu = NULL;
    int rc = catalog_load(&cat, catalog_default_dir(o->profiles), eb);
    if (!rc)
        rc = catalog_model_find(cat, o->model, &m, eb);
    if (!rc && (rc = catalog_gpu_find(cat, o->gpu, &gpu, eb)))
        ss_err_prefix(eb, rc, "--gpu");
    const cat_engine *eng = cat ? catalog_engine(cat, CAT_ENGINE_EAGER) : NULL;
    cost_model *cm = NULL;
    cost_params cp = {.gpu = gpu, .engine = eng, .model = m, .tp = 1};
    if (!rc)
        rc = cost_model_create(&cm, "roofline", &cp, eb);
    cost_op shape[2];
    cost_batch b[2] = {{0}, {0}};
    cost_batch_add_prefill(&b[0], o->prefill_tokens, 0);
    for (unsigned i = 0; i < o->decode_tokens; i++)
        cost_batch_add_decode(&b[1], 1024);
    for (int i = 0; !rc && i < 2; i++)
        rc = cost_op_shape(cm, COST_OP_MLP_UP, &b[i], &shape[i]);
    worker w[2] = {{0}, {0}};
    for (int i = 0; !rc && i < 2; i++)
        rc = start_worker(o, m, gpu, eng, &shape[i], &w[i], eb);
    reply ready[2], alone[2], both[2];
    for (int i = 0; !rc && i < 2; i++)
        rc = get_reply(&w[i], i ? "decode" : "prefill", &ready[i], eb);
    if (!rc)
        rc = measure(w, alone, both, eb);
    for (int i = 0; i < 2; i++)
        stop_worker(&w[i]);
    if (rc) {
        cost_model_destroy(&cm);
        catalog_destroy(&cat);
        return rc;
    }
    /* the model's prediction: each op's memory part of its measured alone time */
    gsim_config gc;
    gsim_config_defaults(&gc);
    gc.mps_interference = o->mps_interference;
    double mu[2], pred[2], meas[2];
    uint8_t pre[2] = {1, 0};
    for (int i = 0; i < 2; i++) {
        double mem_ns = shape[i].bytes / (gpu->hbm_bw * gpu->eff_memory) * 1e9;
        mu[i] = alone[i].median_ns > 0 && mem_ns < alone[i].median_ns
                    ? mem_ns / alone[i].median_ns : 1;
        meas[i] = alone[i].median_ns > 0 ? both[i].median_ns / alone[i].median_ns : 0;
    }
    for (uint32_t i = 0; i < 2; i++)
        pred[i] = gsim_share_slowdown(&gc, kind, mu, pre, 2, i);
    static const char *const names[2] = {"prefill", "decode"};
    if (o->json) {
        fprintf(out, "{\"mode\": \"%s\", \"device\": ", o->mode);
        ss_json_fputs(out, ready[0].device);
        fprintf(out, ", \"gpu\": \"%s\", \"model\": \"%s\", \"backend\": \"%s\", \"sm_share\": "
                     "%.6f, \"seconds\": %.3f, \"ops\": [",
                gpu->name, m->name, o->backend, !strcmp(o->mode, "mps") ? o->sm_share : 1.0,
                o->seconds);
        for (int i = 0; i < 2; i++)
            fprintf(out, "%s{\"op\": \"%s\", \"tokens\": %llu, \"alone_ms\": %.6f, "
                         "\"together_ms\": %.6f, \"slowdown\": %.6f, \"predicted\": %.6f, "
                         "\"memory_part\": %.6f, \"samples_alone\": %llu, "
                         "\"samples_together\": %llu}",
                    i ? ", " : "", names[i], (unsigned long long)shape[i].tokens,
                    alone[i].median_ns / 1e6, both[i].median_ns / 1e6, meas[i], pred[i], mu[i],
                    (unsigned long long)alone[i].n, (unsigned long long)both[i].n);
        fputs("]}\n", out);
    } else {
        fprintf(out, "slicesim validate --colocate %s: %s on %s (%s), %s's gate+up GEMM in two "
                     "processes%s\n",
                o->mode, o->backend, ready[0].device, gpu->name, m->name,
                !strcmp(o->mode, "mps") ? ", each capped at its SM share" : "");
        fprintf(out, "  op        tokens   alone ms  together ms  slow-down  predicted  error   "
                     "memory part\n");
        for (int i = 0; i < 2; i++)
            fprintf(out, "  %-8s %7llu %10.4f %12.4f %10.3f %10.3f %6.1f%% %8.2f\n", names[i],
                    (unsigned long long)shape[i].tokens, alone[i].median_ns / 1e6,
                    both[i].median_ns / 1e6, meas[i], pred[i],
                    meas[i] > 0 ? 100 * (pred[i] - meas[i]) / meas[i] : 0.0, mu[i]);
        if (!strcmp(o->backend, "sim"))
            fputs("  (sim plays the GPU with the roofline: its processes do not contend, so "
                  "their slow-down is 1)\n", out);
    }
    cost_model_destroy(&cm);
    catalog_destroy(&cat);
    return SS_OK;
}
