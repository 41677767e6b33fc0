/* Nelder-Mead minimisation of a function of a few real variables: derivative-free,
 * deterministic (the same function gives the same points in the same order), with optional
 * bounds, for calibrating simulator coefficients against measurements (slicesim fit).
 * Not for many variables or smooth problems with gradients. */
#ifndef SS_CORE_SS_NM_H
#define SS_CORE_SS_NM_H

#include <stddef.h>

/* The function to minimise at x[0..n): its value into *f_out (NaN counts as +infinity), and
 * 0, or a negative SS_E* code that stops the search and is returned by ss_nm_minimize. The
 * search needs the exact value only below stop_at (+INFINITY: always): once fn knows that
 * f >= stop_at it may stop computing and give any value >= stop_at (a lower bound reached,
 * say). The search then takes the steps the exact value gives, since such a point is only
 * compared with stop_at's own reference and never kept: a reflection against the worst
 * vertex (stop_at = its value), an expansion against the reflection (its value), an outside
 * contraction against the reflection (the next double above it: only f > the reflection's
 * value decides), an inside one against the worst vertex. The first point, the first simplex
 * and a shrink's points are kept: those get +INFINITY. */
typedef int ss_nm_fn(void *ud, const double *x, double stop_at, double *f_out);
/* Called after every iteration with the count so far and the best value. */
typedef void ss_nm_progress_fn(void *ud, size_t iterations, size_t evaluations, double f_best);

typedef struct ss_nm_opts {
    size_t max_iter;        /* iterations at most (one reflection and what follows it each);
                               0: 200 */
    double ftol;            /* converged when the simplex's values differ by less (best to
                               worst, absolute); 0: 1e-6 */
    unsigned max_restarts;  /* after converging, rebuild the simplex around the best point with
                               the first steps and go on, this many times at most, while a
                               restart improves the best value by at least ftol: a simplex that
                               collapsed onto a bound or a ridge gets out again */
    const double *hi;       /* n upper bounds, every point tried clamped to them as to lo
                               (NULL: none; INFINITY: none for that variable; borrowed) */
    ss_nm_progress_fn *progress; /* NULL: none */
    void *progress_ud;
} ss_nm_opts;

typedef struct ss_nm_result {
    double f;               /* the best value found (at x) */
    size_t iterations;      /* iterations made, restarts included */
    size_t evaluations;     /* calls of the function */
    unsigned restarts;      /* restarts made */
    int converged;          /* 1: stopped on ftol; 0: on max_iter */
} ss_nm_result;

/**
 * Minimise fn over n variables from x. The first simplex is x and x + step[i] along each
 * axis i; every point tried is first clamped to lo[i] (NULL: no bounds; -INFINITY: none for
 * that variable), so fn is never called below a bound. Standard coefficients (reflection 1,
 * expansion 2, contraction 1/2, shrink 1/2); ties keep the older point first.
 *
 * @param res_out the result, written on success (may be NULL)
 * @param x       in: the start (n values, each >= its bound); out: the best point, on success
 *                only (x is unchanged on failure)
 * @param step    n positive initial steps (borrowed)
 * @param o       options (NULL: the defaults)
 * @return 0; SS_EINVAL for n = 0, a step <= 0 or a start outside its bounds; SS_ENOMEM; or
 *         fn's error
 */
int ss_nm_minimize(ss_nm_result *res_out, double *x, size_t n, const double *step,
                   const double *lo, ss_nm_fn *fn, void *ud, const ss_nm_opts *o);

#endif
