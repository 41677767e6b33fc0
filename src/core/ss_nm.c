/* Nelder-Mead simplex search (Nelder and Mead 1965, with the usual inside and outside
 * contractions), points clamped to their bounds, and restarts from the best point. Pure
 * computation: no I/O, no global state. Not for choosing what to minimise (calib/fit.c). */
#include "core/ss_nm.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"

#include <math.h>
#include <string.h>

/* The search's state: n + 1 vertices of n values each, their function values, and scratch
 * points, all in one allocation. */
typedef struct nm {
    size_t n;
    double *v;            /* vertex i at v + i * n, kept sorted by f (best first) */
    double *f;            /* f[i] of vertex i */
    double *c;            /* centroid of the best n vertices */
    double *xr, *xe;      /* trial points */
    const double *lo;     /* lower bounds or NULL (borrowed) */
    const double *hi;     /* upper bounds or NULL (borrowed) */
    ss_nm_fn *fn;
    void *ud;
    size_t evals;
} nm;

static double *vert(nm *s, size_t i) { return s->v + i * s->n; }

/* Evaluate fn at p (already clamped), exactly below stop_at (ss_nm_fn); NaN becomes +infinity
 * so that it always loses. */
static int eval(nm *s, const double *p, double stop_at, double *f_out)
{
    double f = 0;
    int rc = s->fn(s->ud, p, stop_at, &f);
    s->evals++;
    *f_out = isnan(f) ? INFINITY : f;
    return rc;
}

/* p = a + t * (b - a), clamped to the bounds. */
static void along(nm *s, double *p, const double *a, const double *b, double t)
{
    for (size_t j = 0; j < s->n; j++) {
        p[j] = a[j] + t * (b[j] - a[j]);
        if (s->lo && p[j] < s->lo[j])
            p[j] = s->lo[j];
        if (s->hi && p[j] > s->hi[j])
            p[j] = s->hi[j];
    }
}

/* Insertion sort of the vertices by f: stable, so that among equal values the older vertex
 * stays first (deterministic, and the usual tie rule). */
static void sort_vertices(nm *s)
{
    double *tmp = s->xe; /* free between iterations */
    for (size_t i = 1; i <= s->n; i++) {
        double fi = s->f[i];
        memcpy(tmp, vert(s, i), s->n * sizeof *tmp);
        size_t k = i;
        for (; k > 0 && s->f[k - 1] > fi; k--) {
            s->f[k] = s->f[k - 1];
            memcpy(vert(s, k), vert(s, k - 1), s->n * sizeof *tmp);
        }
        s->f[k] = fi;
        memcpy(vert(s, k), tmp, s->n * sizeof *tmp);
    }
}

/* A fresh simplex around vertex 0 (its value f[0] known): one step along each axis. */
static int build_simplex(nm *s, const double *step)
{
    for (size_t i = 1; i <= s->n; i++) {
        double *p = vert(s, i);
        memcpy(p, vert(s, 0), s->n * sizeof *p);
        p[i - 1] += step[i - 1];
        if (s->hi && p[i - 1] > s->hi[i - 1]) { /* a start near its upper bound steps down */
            p[i - 1] = vert(s, 0)[i - 1] - step[i - 1];
            if (s->lo && p[i - 1] < s->lo[i - 1])
                p[i - 1] = s->lo[i - 1];
        }
        int rc = eval(s, p, INFINITY, &s->f[i]);
        if (rc)
            return rc;
    }
    sort_vertices(s);
    return SS_OK;
}

static void centroid(nm *s)
{
    memset(s->c, 0, s->n * sizeof *s->c);
    for (size_t i = 0; i < s->n; i++)
        for (size_t j = 0; j < s->n; j++)
            s->c[j] += vert(s, i)[j] / (double)s->n;
}

static void replace_worst(nm *s, const double *p, double f)
{
    memcpy(vert(s, s->n), p, s->n * sizeof *p);
    s->f[s->n] = f;
}

/* Move every vertex but the best halfway towards it. */
static int shrink(nm *s)
{
    for (size_t i = 1; i <= s->n; i++) {
        along(s, vert(s, i), vert(s, 0), vert(s, i), 0.5);
        int rc = eval(s, vert(s, i), INFINITY, &s->f[i]);
        if (rc)
            return rc;
    }
    return SS_OK;
}

/* One iteration: reflect the worst vertex through the centroid, then expand, contract or
 * shrink. Each trial point is evaluated exactly only where its value decides (ss_nm_fn). */
static int iterate(nm *s)
{
    size_t n = s->n;
    double fr, fe;
    centroid(s);
    along(s, s->xr, s->c, vert(s, n), -1.0);
    int rc = eval(s, s->xr, s->f[n], &fr);
    if (rc)
        return rc;
    if (fr < s->f[0]) {
        along(s, s->xe, s->c, vert(s, n), -2.0);
        if ((rc = eval(s, s->xe, fr, &fe)))
            return rc;
        if (fe < fr)
            replace_worst(s, s->xe, fe);
        else
            replace_worst(s, s->xr, fr);
    } else if (fr < s->f[n - 1]) {
        replace_worst(s, s->xr, fr);
    } else {
        int outside = fr < s->f[n];
        /* outside: halfway from the centroid to the reflection; inside: to the worst */
        along(s, s->xe, s->c, outside ? s->xr : vert(s, n), 0.5);
        if ((rc = eval(s, s->xe, outside ? nextafter(fr, INFINITY) : s->f[n], &fe)))
            return rc;
        if (outside ? fe <= fr : fe < s->f[n])
            replace_worst(s, s->xe, fe);
        else if ((rc = shrink(s)))
            return rc;
    }
    sort_vertices(s);
    return SS_OK;
}

static int check_args(const double *x, size_t n, const double *step, const double *lo,
                      const double *hi)
{
    if (!x || !n || !step)
        return SS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!(step[i] > 0) || (lo && !(x[i] >= lo[i])) || (hi && !(x[i] <= hi[i])) ||
            !isfinite(x[i]))
            return SS_EINVAL;
    return SS_OK;
}

/* Iterate until converged or out of iterations; restart while restarts help. */
static int search(nm *s, const double *step, const ss_nm_opts *o, ss_nm_result *r)
{
    double f_at_restart = INFINITY;
    for (;;) {
        if (s->f[s->n] - s->f[0] < o->ftol) {
            int helped = f_at_restart - s->f[0] >= o->ftol;
            if (r->restarts >= o->max_restarts || !helped || r->iterations >= o->max_iter) {
                r->converged = 1;
                return SS_OK;
            }
            r->restarts++;
            f_at_restart = s->f[0];
            int rc = build_simplex(s, step);
            if (rc)
                return rc;
            continue;
        }
        if (r->iterations >= o->max_iter)
            return SS_OK;
        int rc = iterate(s);
        if (rc)
            return rc;
        r->iterations++;
        if (o->progress)
            o->progress(o->progress_ud, r->iterations, s->evals, s->f[0]);
    }
}

int ss_nm_minimize(ss_nm_result *res_out, double *x, size_t n, const double *step,
                   const double *lo, ss_nm_fn *fn, void *ud, const ss_nm_opts *opts)
{
    ss_nm_opts o = opts ? *opts : (ss_nm_opts){0};
    if (check_args(x, n, step, lo, o.hi) || !fn)
        return SS_EINVAL;
    if (!o.max_iter)
        o.max_iter = 200;
    if (!(o.ftol > 0))
        o.ftol = 1e-6;
    nm s = {.n = n, .lo = lo, .hi = o.hi, .fn = fn, .ud = ud};
    /* vertices (n + 1) x n, f (n + 1), c, xr, xe (n each) */
    double *mem = ss_calloc((n + 1) * n + (n + 1) + 3 * n, sizeof *mem);
    if (!mem)
        return SS_ENOMEM;
    s.v = mem;
    s.f = s.v + (n + 1) * n;
    s.c = s.f + n + 1;
    s.xr = s.c + n;
    s.xe = s.xr + n;
    memcpy(vert(&s, 0), x, n * sizeof *x);
    ss_nm_result r = {0};
    int rc = eval(&s, vert(&s, 0), INFINITY, &s.f[0]);
    if (!rc)
        rc = build_simplex(&s, step);
    if (!rc)
        rc = search(&s, step, &o, &r);
    if (!rc) {
        memcpy(x, vert(&s, 0), n * sizeof *x);
        r.f = s.f[0];
        r.evaluations = s.evals;
        if (res_out)
            *res_out = r;
    }
    ss_free(mem);
    return rc;
}
