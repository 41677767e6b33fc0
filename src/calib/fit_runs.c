/* The replays of `slicesim fit`: one run replayed in process under a candidate engine as
 * bench/fidelity.sh does, with the per-stage figures it computes (client-side TTFT and E2E of
 * the completed requests that arrived in each stage; numpy's linear percentiles; ITL = (E2E
 * mean - TTFT mean) / (output_len - 1)), and every run of an evaluation replayed one after
 * the other or in child processes that send their figures back (and that a signal ending the
 * fit ends too). Not for reading the runs (fit_data.c) or the optimiser (fit.c). */
#include "calib/fit_int.h"

#include "runner/run.h"

#include "gsim/gsim.h"

#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_time.h"
#include "scenario/scenario.h"
#include "workload/workload.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <unistd.h>

/* {======================================================================
 * One replay and its per-stage figures
 * ======================================================================= */

double calib__fit_pct(const double *xs, size_t n, double q)
{
    if (!n)
        return NAN;
    double k = (double)(n - 1) * q / 100.0;
    double lo = floor(k), hi = ceil(k);
    double a = xs[(size_t)lo], b = xs[(size_t)hi];
    return a + (b - a) * (k - lo);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The commonest reason among rejected[0..METRICS_REJ__COUNT), or -1 when none was rejected. */
static int commonest_reject(const uint64_t *rejected)
{
    int why = -1;
    for (int k = 0; k < METRICS_REJ__COUNT; k++)
        if (rejected[k] && (why < 0 || rejected[k] > rejected[why]))
            why = k;
    return why;
}

/* The figures of stage s from its run's requests; t and e are scratch of n_reqs values. */
static void stage_figures(const calib_fit_run *r, calib_fit_stage *s, double *t,
                          double *e)
{
    double lo = r->starts[s->k], hi = s->k + 1 < r->n_starts ? r->starts[s->k + 1] : INFINITY;
    double sum_t = 0, sum_e = 0;
    size_t n = 0;
    uint64_t rejected[METRICS_REJ__COUNT] = {0};
    s->arrived = 0;
    for (size_t i = 0; i < r->n_reqs; i++) {
        const calib_fit_req *q = &r->reqs[i];
        if (!(lo <= q->arrival_s && q->arrival_s < hi))
            continue;
        s->arrived++;
        if (q->reject_why >= 0) {
            rejected[q->reject_why]++;
            continue;
        }
        sum_t += q->ttft_ms;
        sum_e += q->e2e_ms;
        t[n] = q->ttft_ms;
        e[n++] = q->e2e_ms;
    }
    s->completed = n;
    s->reject_why = commonest_reject(rejected);
    qsort(t, n, sizeof *t, cmp_double);
    qsort(e, n, sizeof *e, cmp_double);
    s->sim[CALIB_FIT_TTFT] = n ? sum_t / (double)n : NAN;
    s->sim[CALIB_FIT_E2E] = n ? sum_e / (double)n : NAN;
    s->sim[CALIB_FIT_TTFT90] = calib__fit_pct(t, n, 90);
    s->sim[CALIB_FIT_E2E90] = calib__fit_pct(e, n, 90);
    s->sim[CALIB_FIT_ITL] =
        (s->sim[CALIB_FIT_E2E] - s->sim[CALIB_FIT_TTFT]) / (double)(r->output_len - 1);
}

static int fill_stages(calib_fit_data *d, size_t i, ss_errbuf *eb)
{
    const calib_fit_run *r = &d->runs[i];
    double *t = ss_malloc((r->n_reqs + 1) * 2 * sizeof *t);
    if (!t)
        return ss_err(eb, SS_ENOMEM, "out of memory");
    for (size_t k = 0; k < d->n_stages; k++)
        if (d->stages[k].run == i)
            stage_figures(r, &d->stages[k], t, t + r->n_reqs + 1);
    ss_free(t);
    return SS_OK;
}

/* The sink: requests as the requests table stores them; a rejected one only with its arrival
 * and reason (that a stage could be replayed at all is checked from them). */
static int collect(void *ud, const metrics_req *m, ss_errbuf *eb)
{
    calib_fit_run *r = ud;
    if (ss_grow((void **)&r->reqs, &r->cap_reqs, r->n_reqs + 1, sizeof *r->reqs))
        return ss_err(eb, SS_ENOMEM, "out of memory");
    calib_fit_req *q = &r->reqs[r->n_reqs++];
    *q = (calib_fit_req){.arrival_s = ss_time_to_s(m->arrival), .ttft_ms = NAN, .e2e_ms = NAN,
                         .reject_why = -1};
    if (m->rejected)
        q->reject_why = m->reject_why < METRICS_REJ__COUNT ? m->reject_why : METRICS_REJ_OTHER;
    else {
        q->ttft_ms = ss_time_to_ms(m->first_token - m->arrival);
        q->e2e_ms = ss_time_to_ms(m->finish - m->arrival);
    }
    return SS_OK;
}

/* The requests of a run's replay: its trace_cache once complete, else from the file (each
 * kept in the cache as it comes). */
typedef struct cached_source {
    wl_source *ws;
    calib_fit_run *r;
    size_t next;
    int keep;                 /* still filling the cache */
} cached_source;

/* Keep *t in r's cache; 0, or -1 out of memory (the cache is then dropped). */
static int cache_keep(calib_fit_run *r, const trace_rec *t)
{
    if (ss_grow((void **)&r->trace_cache, &r->cap_cache, r->n_cache + 1, sizeof *r->trace_cache) ||
        ss_grow((void **)&r->block_at, &r->cap_block_at, r->n_cache + 1, sizeof *r->block_at) ||
        ss_grow((void **)&r->blocks, &r->cap_blocks, r->n_blocks + t->n_prefix_blocks + 1,
                sizeof *r->blocks))
        return -1;
    if (t->n_prefix_blocks)
        memcpy(r->blocks + r->n_blocks, t->prefix_blocks, t->n_prefix_blocks * sizeof *r->blocks);
    r->block_at[r->n_cache] = r->n_blocks;
    r->n_blocks += t->n_prefix_blocks;
    r->trace_cache[r->n_cache] = *t;
    r->trace_cache[r->n_cache++].prefix_blocks = NULL;
    return 0;
}

static int next_request(void *ud, trace_rec *out, ss_errbuf *eb)
{
    cached_source *src = ud;
    calib_fit_run *r = src->r;
    if (r->cached) {
        if (src->next == r->n_cache)
            return 0;
        size_t i = src->next++;
        *out = r->trace_cache[i];
        out->prefix_blocks = out->n_prefix_blocks ? r->blocks + r->block_at[i] : NULL;
        return 1;
    }
    int rc = wl_source_next(src->ws, out, eb);
    if (rc == 1 && src->keep && cache_keep(r, out))
        src->keep = 0;
    if (rc == 0 && src->keep)
        r->cached = 1;
    return rc;
}

/* The scenario replay would build from fidelity.sh's options for run r under engine `engine`. */
static int build_scenario(scn_scenario *sc, const calib_fit_run *r, const char *engine,
                          const char *cost, ss_errbuf *eb)
{
    char kv[12][SCN_PATH_MAX + 64];
    int n = 0;
    snprintf(kv[n++], sizeof kv[0], "tenant.fit.model=%s", r->model);
    snprintf(kv[n++], sizeof kv[0], "tenant.fit.trace=%s", r->trace);
    snprintf(kv[n++], sizeof kv[0], "tenant.fit.trace_format=native");
    snprintf(kv[n++], sizeof kv[0], "tenant.fit.replicas=1");
    snprintf(kv[n++], sizeof kv[0], "tenant.fit.tp=%u", r->tp);
    snprintf(kv[n++], sizeof kv[0], "tenant.fit.engine=%s", engine);
    snprintf(kv[n++], sizeof kv[0], "cluster.gpu=%s", r->gpu);
    snprintf(kv[n++], sizeof kv[0], "policy.batching=sarathi");
    snprintf(kv[n++], sizeof kv[0], "policy.token_budget=%u", r->max_num_batched_tokens);
    snprintf(kv[n++], sizeof kv[0], "policy.max_num_seqs=%u", r->max_num_seqs);
    snprintf(kv[n++], sizeof kv[0], "engine.max_model_len=%u", r->max_model_len);
    snprintf(kv[n++], sizeof kv[0], "engine.gpu_mem_util=%.17g", r->gpu_mem_util);
    int rc = SS_OK;
    for (int i = 0; !rc && i < n; i++)
        rc = scn_set(sc, kv[i], eb);
    if (!rc)
        rc = scn_set(sc, "run.db=none", eb);
    if (!rc && cost)
        rc = scn_set_option(sc, (snprintf(kv[0], sizeof kv[0], "policy.cost=%s", cost), kv[0]),
                            "--cost", eb);
    return rc ? rc : scn_check(sc, eb);
}

int calib__fit_replay_run(calib_fit_data *d, size_t i, const cat_engine *e,
                          const calib__fit_replay_opts *o, ss_errbuf *eb)
{
    calib_fit_run *r = &d->runs[i];
    r->n_reqs = 0;
    scn_scenario *sc = NULL;
    runner_run x = {0};
    runner_run_opts ro = {.profiles = o->profiles, .check = o->check, .catalog = o->catalog,
                          .engine = e};
    int rc = scn_create(&sc) ? ss_err(&x.eb, SS_ENOMEM, "out of memory") : SS_OK;
    if (!rc)
        rc = build_scenario(sc, r, e->name, o->cost, &x.eb);
    if (!rc)
        rc = runner_run_setup(&x, sc, &ro);
    if (!r->cached)
        r->n_cache = r->n_blocks = 0; /* a replay that ended early left part of it */
    cached_source src = {.ws = x.ws, .r = r, .keep = 1};
    if (!rc)
        rc = gsim_run(x.g, next_request, &src, collect, r, &x.eb);
    if (!rc)
        rc = fill_stages(d, i, &x.eb);
    if (rc) {
        int trace = !strncmp(x.eb.msg, r->trace, strlen(r->trace));
        ss_err(eb, rc, "%s:%u: %s: replaying run '%s': %s", d->runs_path, r->line,
               trace ? "trace" : "run", r->name, x.eb.msg);
    }
    runner_run_fini(&x);
    scn_destroy(&sc);
    return rc;
}

/* The column of runs.csv whose setting rejects a request for reason why (METRICS_REJ_*), and
 * what the request did, for "FIELD: all N requests ... are rejected (most for: WHAT)". */
static void reject_cause(const calib_fit_run *r, int why, const char **field, char *what,
                         size_t size)
{
    switch (why) {
    case METRICS_REJ_TOO_LONG:
        *field = "max_model_len";
        snprintf(what, size, "prompt longer than max_model_len %u", r->max_model_len);
        return;
    case METRICS_REJ_BATCH_TOKENS:
        *field = "max_num_batched_tokens";
        snprintf(what, size, "prompt longer than max_num_batched_tokens %u",
                 r->max_num_batched_tokens);
        return;
    case METRICS_REJ_KV:
        *field = "gpu_memory_utilization";
        snprintf(what, size, "more KV blocks than gpu_memory_utilization %g leaves",
                 r->gpu_mem_util);
        return;
    case METRICS_REJ_PREEMPTED:
        *field = "run";
        snprintf(what, size, "preempted too many times");
        return;
    default:
        *field = "run";
        snprintf(what, size, "rejected by the batching policy");
        return;
    }
}

int calib__fit_check_served(const calib_fit_data *d, ss_errbuf *eb)
{
    for (size_t i = 0; i < d->n_stages; i++) {
        const calib_fit_stage *s = &d->stages[i];
        const calib_fit_run *r = &d->runs[s->run];
        if (s->completed)
            continue;
        if (!s->arrived) {
            char until[48] = "on";
            if (s->k + 1 < r->n_starts)
                snprintf(until, sizeof until, "to %.9g s", r->starts[s->k + 1]);
            return ss_err(eb, SS_EINVAL, "%s:%u: stage: run '%s' has no request in stage %u: "
                          "%s has none from %.9g s %s", d->stages_path, s->line, r->name, s->k,
                          r->trace, r->starts[s->k], until);
        }
        const char *field;
        char what[96];
        reject_cause(r, s->reject_why, &field, what, sizeof what);
        return ss_err(eb, SS_EINVAL, "%s:%u: %s: all %llu requests of stage %u of run '%s' are "
                      "rejected in the replay (most for: %s)", d->runs_path, r->line, field,
                      (unsigned long long)s->arrived, s->k, r->name, what);
    }
    return SS_OK;
}

/* }====================================================================== */

/* {======================================================================
 * Every run, in this process or in child processes
 * ======================================================================= */

/* The stages of run i: [*first, *first + *n) of d->stages (sorted by run). */
static void run_stages(const calib_fit_data *d, size_t i, size_t *first, size_t *n)
{
    size_t a = 0;
    while (a < d->n_stages && d->stages[a].run != i)
        a++;
    size_t b = a;
    while (b < d->n_stages && d->stages[b].run == i)
        b++;
    *first = a;
    *n = b - a;
}

/* What a replay child sends back: its status and message, then each stage's figures. */
typedef struct child_head {
    int rc;
    char msg[SS_ERRBUF_LEN];
} child_head;

typedef struct child_stage {
    double sim[CALIB_FIT_METRICS];
    uint64_t completed, arrived;
    int reject_why;
} child_stage;

/* What a worker is sent: a run to replay under an engine. */
typedef struct worker_job {
    size_t run;
    cat_engine cand;          /* path NULL: nothing in it points outside it */
} worker_job;

/* In a worker: replay run i under x->cand and send the result down fd; 0, or -1 when fd is
 * gone. */
static int send_result(calib__fit_ctx *x, size_t i, int fd)
{
    child_head h = {0};
    h.rc = calib__fit_replay_run(&x->d, i, &x->cand, &x->ro, &x->eb);
    if (h.rc)
        memcpy(h.msg, x->eb.msg, sizeof h.msg);
    int bad = ss_fd_write_all(fd, &h, sizeof h);
    size_t first, n;
    run_stages(&x->d, i, &first, &n);
    for (size_t k = 0; !bad && !h.rc && k < n; k++) {
        const calib_fit_stage *s = &x->d.stages[first + k];
        child_stage c = {.completed = s->completed, .arrived = s->arrived,
                         .reject_why = s->reject_why};
        memcpy(c.sim, s->sim, sizeof c.sim);
        bad = ss_fd_write_all(fd, &c, sizeof c);
    }
    return bad;
}

/* A worker's life: replay each job read from cmd, answer on res, until cmd ends; never
 * returns. */
static void worker_main(calib__fit_ctx *x, int cmd, int res)
{
    worker_job j;
    while (!ss_fd_read_all(cmd, &j, sizeof j)) {
        x->cand = j.cand;
        if (j.run >= x->d.n_runs || send_result(x, j.run, res))
            _exit(1);
    }
    _exit(0); /* no stdio flush, no atexit: the parent owns the outputs */
}

/* A worker process: it replays one run at a time, for the whole fit. */
typedef struct child {
    size_t run;               /* the run it replays while busy */
    pid_t pid;                /* 0 once reaped */
    int fd;                   /* the read end of its result pipe */
    int cmd;                  /* the write end of its job pipe (-1: closed) */
    int busy;
} child;

/* {======================================================================
 * The children and the signals that end the fit
 * ======================================================================= */

/* A SIGINT, SIGTERM or SIGHUP that ends the fit while replays run in child processes first
 * sends the same signal to each child and waits for it, so that none goes on replaying after
 * the fit is gone; then the signal ends the fit as it would have without this handler (the
 * handler of core/ss_file.c, when one was there, removes the temporary outputs first). The
 * children are live_kids[0..n_live); the parent changes that list only with these signals
 * blocked, so the handler never sees half a change. */
static const int fwd_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction fwd_old[3]; /* what each did before forward_begin */
static child *live_kids;
static volatile sig_atomic_t n_live;

static void forward_signal(int sig)
{
    for (sig_atomic_t k = 0; k < n_live; k++)
        if (live_kids[k].pid > 0)
            kill(live_kids[k].pid, sig);
    for (sig_atomic_t k = 0; k < n_live; k++)
        if (live_kids[k].pid > 0)
            while (waitpid(live_kids[k].pid, NULL, 0) < 0 && errno == EINTR)
                ;
    for (int i = 0; i < 3; i++)
        if (fwd_signals[i] == sig)
            sigaction(sig, &fwd_old[i], NULL);
    raise(sig); /* delivered when this handler returns, under the old action */
}

/* Block (SIG_BLOCK) or unblock (SIG_SETMASK to *old) the forwarded signals. */
static void fwd_mask(int how, sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < 3; i++)
        sigaddset(&set, fwd_signals[i]);
    if (how == SIG_BLOCK)
        sigprocmask(SIG_BLOCK, &set, old);
    else
        sigprocmask(SIG_SETMASK, old, NULL);
}

/* Forward the signals to the children kept in kids (room for every one started). A signal
 * that is ignored (nohup's SIGHUP) stays ignored, in the children too. */
static void forward_begin(child *kids)
{
    live_kids = kids;
    n_live = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaddset(&sa.sa_mask, fwd_signals[i]); /* one handler at a time */
    for (int i = 0; i < 3; i++) {
        sigaction(fwd_signals[i], NULL, &fwd_old[i]);
        if (fwd_old[i].sa_handler != SIG_IGN)
            sigaction(fwd_signals[i], &sa, NULL);
    }
}

/* The signals do again what they did before forward_begin (every child is reaped). */
static void forward_end(void)
{
    for (int i = 0; i < 3; i++)
        sigaction(fwd_signals[i], &fwd_old[i], NULL);
    n_live = 0;
    live_kids = NULL;
}

/* In a child, before anything else: the signals as they were before the fit's handler. */
static void forward_child(const sigset_t *old_mask)
{
    for (int i = 0; i < 3; i++)
        sigaction(fwd_signals[i], &fwd_old[i], NULL);
    n_live = 0;
    sigprocmask(SIG_SETMASK, old_mask, NULL);
}

/* Reap child c once it has ended, and take it off the list in the same step. */
static int reap_child(child *c)
{
    siginfo_t si;
    while (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    sigset_t old;
    fwd_mask(SIG_BLOCK, &old);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->pid = 0;
    fwd_mask(SIG_SETMASK, &old);
    return status;
}

/* }====================================================================== */

/* In the parent: take child kid's result for its run from its pipe, and reap it. */
static int collect_child(calib__fit_ctx *x, child *kid, int *rc_run)
{
    size_t i = kid->run;
    int fd = kid->fd;
    child_head h;
    int bad = ss_fd_read_all(fd, &h, sizeof h);
    size_t first, n;
    run_stages(&x->d, i, &first, &n);
    for (size_t k = 0; !bad && !h.rc && k < n; k++) {
        child_stage c;
        if ((bad = ss_fd_read_all(fd, &c, sizeof c)))
            break;
        calib_fit_stage *s = &x->d.stages[first + k];
        memcpy(s->sim, c.sim, sizeof s->sim);
        s->completed = c.completed;
        s->arrived = c.arrived;
        s->reject_why = c.reject_why;
    }
    kid->busy = 0;
    if (bad)
        return ss_err(&x->eb, SS_EIO, "replaying run '%s': its process failed",
                      x->d.runs[i].name);
    *rc_run = h.rc;
    if (h.rc)
        memcpy(x->eb.msg, h.msg, sizeof x->eb.msg);
    return SS_OK;
}

/* Whether calib__fit_replay_all replays run r: it has stages, and fitted ones unless all are
 * wanted. */
static int wanted(const calib_fit_run *r, int all)
{
    return r->n_stages && (all || r->n_fitted);
}

/* The workers: pool_n processes, forked once, at the first replay that runs in parallel,
 * from this process as it is then (the runs read, the catalog loaded), each replaying the runs
 * it is sent under the candidate sent with each, until calib__fit_workers_end. They are
 * live_kids while they live. (A fork for every replay cost as much as the replay.) */
static child *pool;
static size_t pool_n;

void calib__fit_workers_end(void)
{
    if (!pool)
        return;
    for (size_t k = 0; k < pool_n; k++)
        if (pool[k].cmd >= 0) { /* its job pipe ends: it exits */
            close(pool[k].cmd);
            pool[k].cmd = -1;
        }
    for (size_t k = 0; k < pool_n; k++) {
        if (pool[k].pid > 0)
            reap_child(&pool[k]);
        if (pool[k].fd >= 0)
            close(pool[k].fd);
    }
    forward_end();
    ss_free(pool);
    pool = NULL;
    pool_n = 0;
}

/* Start `jobs` workers. 0, or the error with x->eb set (none is left running). */
static int pool_start(calib__fit_ctx *x, size_t jobs)
{
    if (!(pool = ss_calloc(jobs, sizeof *pool)))
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    for (size_t k = 0; k < jobs; k++)
        pool[k].fd = pool[k].cmd = -1;
    fflush(NULL); /* nothing buffered is written twice */
    forward_begin(pool);
    int rc = SS_OK;
    for (size_t k = 0; k < jobs && !rc; k++) {
        int jp[2], rp[2];
        if (pipe(jp)) {
            rc = ss_err(&x->eb, SS_EIO, "replays: pipe: %s", strerror(errno));
            break;
        }
        if (pipe(rp)) {
            rc = ss_err(&x->eb, SS_EIO, "replays: pipe: %s", strerror(errno));
            close(jp[0]);
            close(jp[1]);
            break;
        }
        sigset_t old;
        fwd_mask(SIG_BLOCK, &old); /* a signal now finds the worker on the list */
        pid_t parent = getpid(), pid = fork();
        if (pid == 0) {
#if defined(__linux__)
            /* A fit killed outright (SIGKILL: nothing to forward) takes its workers with it;
             * one that died before this call is no longer the parent. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(1);
#endif
            forward_child(&old);
            close(jp[1]);
            close(rp[0]);
            for (size_t m = 0; m < k; m++) { /* the other workers' pipes: theirs to end */
                close(pool[m].fd);
                close(pool[m].cmd);
            }
            worker_main(x, jp[0], rp[1]);
        }
        if (pid > 0) {
            pool[k] = (child){.pid = pid, .fd = rp[0], .cmd = jp[1]};
            pool_n = k + 1;
            n_live = (sig_atomic_t)pool_n;
        }
        fwd_mask(SIG_SETMASK, &old);
        close(jp[0]);
        close(rp[1]);
        if (pid < 0) {
            close(jp[1]);
            close(rp[0]);
            rc = ss_err(&x->eb, SS_EIO, "replays: fork: %s", strerror(errno));
        }
    }
    if (rc)
        calib__fit_workers_end();
    return rc;
}

/* Send run i under x->cand to idle worker w. */
static int dispatch(calib__fit_ctx *x, child *w, size_t i)
{
    worker_job j;
    memset(&j, 0, sizeof j);
    j.run = i;
    j.cand = x->cand;
    j.cand.path = NULL;
    w->run = i;
    w->busy = 1;
    if (ss_fd_write_all(w->cmd, &j, sizeof j))
        return ss_err(&x->eb, SS_EIO, "replaying run '%s': its process failed",
                      x->d.runs[i].name);
    return SS_OK;
}

/* A busy worker whose result has come (waiting for one); NULL when none is busy. */
static child *ready_worker(void)
{
    struct pollfd fds[64];
    size_t who[64], n = 0;
    for (size_t k = 0; k < pool_n && n < 64; k++)
        if (pool[k].busy) {
            fds[n] = (struct pollfd){.fd = pool[k].fd, .events = POLLIN};
            who[n++] = k;
        }
    if (!n)
        return NULL;
    int got;
    while ((got = poll(fds, n, -1)) < 0 && errno == EINTR)
        ;
    for (size_t m = 0; got > 0 && m < n; m++)
        if (fds[m].revents)
            return &pool[who[m]];
    return &pool[who[0]]; /* poll failed: the read says so */
}

/* Whether the runs before `done` (replayed) already make the objective at least stop_at. */
static int decided(const calib__fit_ctx *x, size_t done, double stop_at)
{
    return isfinite(stop_at) && done < x->d.n_runs &&
           calib__fit_objective_upto(&x->d, done) >= stop_at;
}

/* Replay the wanted runs in runs.csv order, stopping once decided: in this process one at a
 * time, or on the workers, each given the next run as soon as it is free (the runs under way
 * when it is decided end first); *done gets the runs before which every wanted one was
 * replayed. The error kept is the first in runs.csv order. */
static int replay(calib__fit_ctx *x, int all, double stop_at, size_t *done)
{
    size_t n = 0, jobs = x->o->jobs > 1 ? (size_t)x->o->jobs : 1;
    for (size_t i = 0; i < x->d.n_runs; i++)
        n += (size_t)wanted(&x->d.runs[i], all);
    *done = 0;
    if (jobs == 1 || n <= 1) {
        for (size_t i = 0; i < x->d.n_runs && !decided(x, i, stop_at); i++) {
            int rc = wanted(&x->d.runs[i], all)
                         ? calib__fit_replay_run(&x->d, i, &x->cand, &x->ro, &x->eb) : SS_OK;
            if (rc)
                return rc;
            *done = i + 1;
        }
        return SS_OK;
    }
    jobs = jobs < 64 ? jobs : 64;
    int rc = pool ? SS_OK : pool_start(x, jobs < n ? jobs : n);
    if (rc)
        return rc;
    uint8_t *fin = ss_calloc(x->d.n_runs, 1);
    if (!fin)
        return ss_err(&x->eb, SS_ENOMEM, "out of memory");
    size_t next = 0, prefix = 0, failed = SIZE_MAX;
    char msg[SS_ERRBUF_LEN] = "";
    for (;;) {
        for (; next < x->d.n_runs && !wanted(&x->d.runs[next], all); next++)
            fin[next] = 1;
        while (prefix < next && fin[prefix])
            prefix++;
        for (size_t k = 0; k < pool_n && failed == SIZE_MAX && next < x->d.n_runs &&
                           !decided(x, prefix, stop_at); k++) {
            if (pool[k].busy)
                continue;
            if ((rc = dispatch(x, &pool[k], next)) != SS_OK) {
                failed = next;
                memcpy(msg, x->eb.msg, sizeof msg);
            }
            for (next++; next < x->d.n_runs && !wanted(&x->d.runs[next], all); next++)
                fin[next] = 1;
        }
        child *w = ready_worker();
        if (!w)
            break;
        int rc_run = SS_OK, got = collect_child(x, w, &rc_run);
        int gone = got != SS_OK;
        if (!got)
            got = rc_run;
        fin[w->run] = 1;
        if (got && w->run < failed) {
            failed = w->run;
            rc = got;
            memcpy(msg, x->eb.msg, sizeof msg);
        }
        if (gone) { /* a worker is gone: wait for no more results */
            for (size_t k = 0; k < pool_n; k++)
                pool[k].busy = 0;
            break;
        }
    }
    while (prefix < x->d.n_runs && fin[prefix])
        prefix++;
    ss_free(fin);
    if (failed != SIZE_MAX) {
        memcpy(x->eb.msg, msg, sizeof msg);
        calib__fit_workers_end(); /* a worker may be gone: start afresh if asked again */
        return rc;
    }
    *done = prefix;
    return SS_OK;
}

int calib__fit_replay_all(calib__fit_ctx *x, int all)
{
    size_t done;
    return replay(x, all, INFINITY, &done);
}

int calib__fit_replay_until(calib__fit_ctx *x, double stop_at, size_t *n_done)
{
    return replay(x, 0, stop_at, n_done);
}

/* }====================================================================== */
