/* `slicesim calibrate`'s measurement: the partial table (its settings line and the rows measured
 * so far, for resuming), each point's warm-up and timed runs on the executor, the final table
 * with its metadata (device, method, sensors before, during and after) and the summary against
 * the roofline. Not for the grid (calibrate_grid.c) or options (app/cmd_calibrate.c). */
#include "calib/calibrate.h"
#include "calib/calibrate_int.h"

#include "core/ss_alloc.h"
#include "core/ss_file.h"
#include "core/ss_time.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
    /* The partial table is a file this command wrote: a link or anything but a regular file
     * there (planted, or left by something else) is refused, never followed nor waited on. */
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? SS_OK
                               : ss_err(eb, SS_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ss_err(eb, SS_EINVAL, "%s: not a regular file (%s), so not a partial table this "
                                     "command wrote: remove it or choose another -o",
                      path, S_ISLNK(st.st_mode) ? "a symbolic link" : "a FIFO, device or folder");
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
    const calib_calibrate_opts *o;
    const cat_model *m;
    const cat_gpu *gpu;
    exec *x;
    cost_model *cm;     /* shapes (and the roofline the report compares with) */
    calib__points grid;
    done_set done;
    char final_path[1100], partial_path[1110];
    char settings[1024];
    exec_sensors before, after;
    exec_sensors busy;  /* while points ran: lowest clocks, highest temperature and power */
    char started[32];
    size_t measured;    /* points measured in this run */
    FILE *out;          /* the summary's stream */
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
    const calib_calibrate_opts *o = c->o;
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
    /* never through a link: one planted since read_partial looked fails here (ELOOP) */
    int fd = open(c->partial_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
                                       (found ? O_APPEND : O_TRUNC), 0666);
    FILE *f = fd >= 0 ? fdopen(fd, found ? "a" : "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ss_err(&c->eb, SS_EIO, "%s: cannot write: %s", c->partial_path, strerror(e));
    }
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
    qsort(ns, n, sizeof *ns, ss_time_cmp);
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

static void progress(const cal_run *c, size_t i, size_t n, const calib__point *pt, time_t t0,
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
    exec_seq *seqs = ss_malloc(CALIB__MAX_SEQS * sizeof *seqs);
    if (!seqs)
        rc = ss_err(&c->eb, SS_ENOMEM, "calibrate: out of memory");
    while (!rc && (rc = cost_prof_reader_next(r, &row, &c->eb)) == 1) {
        rc = SS_OK;
        for (size_t i = 0; i < c->grid.n; i++) {
            exec_op eo;
            cost_prof_row want;
            calib__point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &want);
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
    fprintf(c->out, "%s: %s at TP %u on %s (%s)\n", c->final_path, c->m->name, c->o->tp,
            c->gpu->name, exec_device_info(c->x)->name);
    fprintf(c->out, "  %-13s %6s %-22s %16s %16s\n", "OP", "POINTS", "MEDIAN_US",
            "ROOFLINE_MAPE_%", "ROOFLINE_BIAS_%");
    for (int k = 0; k < COST_OP__COUNT; k++) {
        if (!st[k].n)
            continue;
        char med[32];
        snprintf(med, sizeof med, "%.4g..%.4g", st[k].lo, st[k].hi);
        fprintf(c->out, "  %-13s %6zu %-22s %16.1f %+16.1f\n", cost_op_name((cost_op_kind)k),
                st[k].n, med, 100 * st[k].ape / (double)st[k].n,
                100 * st[k].bias / (double)st[k].n);
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
    exec_seq *seqs = ss_malloc(CALIB__MAX_SEQS * sizeof *seqs);
    if (!seqs)
        return ss_err(&c->eb, SS_ENOMEM, "calibrate: out of memory");
    for (size_t i = 0; i < c->grid.n; i++) {
        exec_op eo;
        cost_prof_row row;
        calib__point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &row);
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
        calib__point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &row);
        done_before += is_done(&c->done, &row);
    }
    time_t t0 = time(NULL);
    size_t pos = done_before;
    for (size_t i = 0; !rc && i < c->grid.n; i++) {
        exec_op eo;
        cost_prof_row row;
        char src[160];
        calib__point_op(c->cm, c->m, c->o->tp, &c->grid.v[i], &eo, seqs, &row);
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

/* {======================================================================
 * The run
 * ======================================================================= */

/* The model and GPU o names, checked, and the eager engine. */
static int find_names(cal_run *c, const catalog *cat, const cat_engine **eng)
{
    const calib_calibrate_opts *o = c->o;
    int rc = SS_OK;
    if (o->model)
        rc = catalog_model_find(cat, o->model, &c->m, &c->eb);
    if (!rc && o->gpu && (rc = catalog_gpu_find(cat, o->gpu, &c->gpu, &c->eb)))
        ss_err_prefix(&c->eb, rc, "--gpu");
    if (!rc && !c->gpu && !strcmp(o->backend, "sim"))
        rc = ss_err(&c->eb, SS_EINVAL, "--gpu: required with --backend sim (the catalog GPU "
                                       "the roofline models)");
    if (!rc && c->m && (o->tp < 1 || c->m->heads % o->tp || c->m->ffn % o->tp))
        rc = ss_err(&c->eb, SS_EINVAL, "--tp: %u does not divide the %u heads and FFN size %u "
                                       "of %s", o->tp, c->m->heads, c->m->ffn, c->m->name);
    /* The operator grid's roofline (and the sim executor) use the eager engine's floors: the
     * executor launches one kernel at a time, as an eager engine does. */
    if (!rc)
        rc = catalog_engine_find(cat, CAT_ENGINE_EAGER, eng, &c->eb);
    return rc;
}

/* The executor, its self-test, and the catalog GPU the table is for (guessed from the
 * device's name when o does not name one). No device is a failed run (SS_EIO), not bad
 * input; nor is a kernel that gives a wrong result. */
static int start_device(cal_run *c, const catalog *cat, const cat_engine *eng)
{
    const calib_calibrate_opts *o = c->o;
    exec_config cfg = {.gpu_index = o->gpu_index, .l2_cold = o->l2_cold, .gpu = c->gpu,
                       .engine = eng};
    int rc = exec_create(&c->x, o->backend, &cfg, &c->eb);
    if (rc == SS_ENOTFOUND)
        return ss_err_prefix(&c->eb, SS_EIO, "calibrate: nothing measured");
    if (rc)
        return rc;
    const exec_device *d = exec_device_info(c->x);
    if (!o->quiet)
        fprintf(stderr, "slicesim: calibrate: %s (executor %s, timer %s)\n", d->name,
                exec_backend(c->x), d->timer);
    if ((o->selftest_only || !o->no_selftest) &&
        (rc = exec_selftest(c->x, o->quiet && !o->selftest_only ? NULL : stderr, &c->eb)) ==
            SS_ENOTSUP && !o->selftest_only)
        rc = SS_OK;
    if (rc == SS_EINVAL)
        rc = SS_EIO; /* a wrong kernel result is the device's failure, not the user's */
    if (o->selftest_only || rc || c->gpu)
        return rc;
    const char *g = exec_guess_gpu(d->name);
    if (!g)
        return ss_err(&c->eb, SS_EINVAL, "--gpu: cannot tell which catalog GPU '%s' is; name "
                                         "it (slicesim list gpus)", d->name);
    return catalog_gpu_find(cat, g, &c->gpu, &c->eb);
}

/* The roofline of the shapes, the grid, the table's paths and settings, and the partial
 * table opened for appending (read first when it exists). */
static int prepare_table(cal_run *c, const char *dir, const cat_engine *eng, FILE **part)
{
    const calib_calibrate_opts *o = c->o;
    const exec_device *d = exec_device_info(c->x);
    cost_params cp = {.gpu = c->gpu, .engine = eng, .model = c->m, .tp = o->tp};
    int rc = cost_model_create(&c->cm, "roofline", &cp, &c->eb);
    if (rc)
        return rc;
    if ((rc = calib__build_grid(&c->grid, !strcmp(o->grid, "full"), c->cm, d, o->ops)))
        return ss_err(&c->eb, rc, "calibrate: out of memory");
    if (!c->grid.n)
        return ss_err(&c->eb, SS_EINVAL, "--ops: nothing to measure for %s on this device",
                      c->m->name);
    char out_dir[1024];
    snprintf(out_dir, sizeof out_dir, "%s/%s", dir, c->gpu->name);
    const char *od = o->out ? o->out : out_dir;
    if ((rc = cost_prof_make_dirs(od, &c->eb)))
        return rc;
    snprintf(c->final_path, sizeof c->final_path, "%s/%s-tp%u.csv", od, c->m->name, o->tp);
    snprintf(c->partial_path, sizeof c->partial_path, "%s.partial", c->final_path);
    snprintf(c->settings, sizeof c->settings,
             "model=%s tp=%u gpu=%s grid=%s ops=%s backend=%s device=%s reps=%d warmup=%d l2=%s",
             c->m->name, o->tp, c->gpu->name, o->grid, o->ops ? o->ops : "all",
             exec_backend(c->x), d->name, o->reps, o->warmup, o->l2_cold ? "cold" : "hot");
    now_utc(c->started, sizeof c->started);
    exec_sensors_read(c->x, &c->before);
    return open_partial(c, part);
}

/* Measure the points not in the partial table yet; then, unless limit_points stopped the
 * run, the final table and the summary. */
static int measure_table(cal_run *c, FILE *part)
{
    const calib_calibrate_opts *o = c->o;
    int rc = run_points(c, part);
    if (fclose(part) && !rc)
        rc = ss_err(&c->eb, SS_EIO, "%s: cannot write: %s", c->partial_path, strerror(errno));
    if (rc)
        return rc;
    exec_sensors_read(c->x, &c->after);
    if (o->limit_points >= 0 && c->done.n + c->measured < c->grid.n) {
        fprintf(stderr, "slicesim: calibrate: stopped after %zu new points (--limit-points); "
                        "%zu of %zu measured, in %s; run again to resume\n",
                c->measured, c->done.n + c->measured, c->grid.n, c->partial_path);
        c->eb.msg[0] = 0;
        return SS_EIO;
    }
    if (!(rc = finish_table(c)))
        rc = report(c);
    return rc;
}

int calib_calibrate(const calib_calibrate_opts *o, FILE *out, ss_errbuf *eb)
{
    cal_run c = {.o = o, .out = out};
    catalog *cat = NULL;
    const cat_engine *eng = NULL;
    FILE *part = NULL;
    const char *dir = catalog_default_dir(o->profiles);
    int rc = catalog_load(&cat, dir, &c.eb);
    if (!rc)
        rc = find_names(&c, cat, &eng);
    if (!rc)
        rc = start_device(&c, cat, eng);
    if (!rc && !o->selftest_only && !(rc = prepare_table(&c, dir, eng, &part)))
        rc = measure_table(&c, part);
    if (rc)
        *eb = c.eb;
    cost_model_destroy(&c.cm);
    exec_destroy(&c.x);
    catalog_destroy(&cat);
    ss_free(c.grid.v);
    ss_free(c.done.rows);
    return rc;
}

/* }====================================================================== */
