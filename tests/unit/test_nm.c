/* Nelder-Mead (core/ss_nm): Rosenbrock's valley and a quadratic with known minima, a minimum
 * outside the bounds that must end on the bound, the iteration cap, determinism to the bit,
 * errors from the function and from the allocator, bad arguments, and values stopped at
 * stop_at that leave the search as it is. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "core/ss_nm.h"

#include <math.h>
#include <string.h>

typedef struct probe {
    size_t calls;
    size_t fail_at;      /* fail the n-th call (0: never) */
    double min_seen[4];  /* smallest value passed for each variable */
    double max_seen[4];  /* largest value passed for each variable */
} probe;

static int rosenbrock(void *ud, const double *x, double stop_at, double *f_out)
{
    (void)stop_at;
    probe *p = ud;
    p->calls++;
    double a = 1 - x[0], b = x[1] - x[0] * x[0];
    *f_out = a * a + 100 * b * b;
    return SS_OK;
}

/* (x0 - 3)^2 + 2 (x1 + 1)^2 + (x2 + 0.5)^2 + 5: minimum at (3, -1, -0.5); with lower bounds at 0,
 * at (3, 0, 0). Records the smallest values it was called with. */
static int quad(void *ud, const double *x, double stop_at, double *f_out)
{
    (void)stop_at;
    probe *p = ud;
    if (p->fail_at && ++p->calls == p->fail_at)
        return SS_EIO;
    for (int i = 0; i < 3; i++)
        if (x[i] < p->min_seen[i])
            p->min_seen[i] = x[i];
    for (int i = 0; i < 3; i++)
        if (x[i] > p->max_seen[i])
            p->max_seen[i] = x[i];
    double a = x[0] - 3, b = x[1] + 1, c = x[2] + 0.5;
    *f_out = a * a + 2 * b * b + c * c + 5;
    return SS_OK;
}

static void test_rosenbrock(void **state)
{
    (void)state;
    double x[2] = {-1.2, 1}, step[2] = {0.5, 0.5};
    probe p = {0};
    ss_nm_opts o = {.max_iter = 5000, .ftol = 1e-14, .max_restarts = 2};
    ss_nm_result r;
    assert_int_equal(ss_nm_minimize(&r, x, 2, step, NULL, rosenbrock, &p, &o), 0);
    assert_true(r.converged);
    assert_true(fabs(x[0] - 1) < 1e-4 && fabs(x[1] - 1) < 1e-4);
    assert_true(r.f < 1e-8);
    assert_int_equal(r.evaluations, p.calls);
    assert_true(r.iterations < 5000);
    tu_assert_no_leaks();
}

static void test_quadratic(void **state)
{
    (void)state;
    double x[3] = {10, 10, 10}, step[3] = {1, 1, 1};
    probe p = {0};
    ss_nm_opts o = {.max_iter = 2000, .ftol = 1e-12, .max_restarts = 3};
    ss_nm_result r;
    assert_int_equal(ss_nm_minimize(&r, x, 3, step, NULL, quad, &p, &o), 0);
    assert_true(fabs(x[0] - 3) < 1e-4 && fabs(x[1] + 1) < 1e-4 && fabs(x[2] + 0.5) < 1e-4);
    assert_true(fabs(r.f - 5) < 1e-8);
    tu_assert_no_leaks();
}

/* The unconstrained minimum is below the bounds in two variables: the search ends on them and
 * never calls the function below them. */
static void test_bounds(void **state)
{
    (void)state;
    double x[3] = {10, 10, 10}, step[3] = {2, 2, 2}, lo[3] = {0, 0, 0};
    probe p = {.min_seen = {INFINITY, INFINITY, INFINITY}};
    ss_nm_opts o = {.max_iter = 2000, .ftol = 1e-12, .max_restarts = 3};
    ss_nm_result r;
    assert_int_equal(ss_nm_minimize(&r, x, 3, step, lo, quad, &p, &o), 0);
    assert_true(r.converged);
    assert_true(fabs(x[0] - 3) < 1e-4);
    assert_true(x[1] >= 0 && x[1] < 1e-4 && x[2] >= 0 && x[2] < 1e-4);
    assert_true(fabs(r.f - (5 + 2 + 0.25)) < 1e-6);
    for (int i = 0; i < 3; i++)
        assert_true(p.min_seen[i] >= 0);
    /* a start below its bound is refused */
    double bad[3] = {1, -1, 1};
    assert_int_equal(ss_nm_minimize(&r, bad, 3, step, lo, quad, &p, &o), SS_EINVAL);
    tu_assert_no_leaks();
}

/* Upper bounds (ss_nm_opts.hi): the minimum at x0 = 3 lies above x0's bound 2, so the search
 * ends on it and never calls the function above it, also from a start on the bound (its first
 * step goes down); a start above its bound is refused. */
static void test_upper_bounds(void **state)
{
    (void)state;
    double step[3] = {2, 2, 2}, lo[3] = {0, 0, 0}, hi[3] = {2, INFINITY, INFINITY};
    double starts[2][3] = {{1.5, 10, 10}, {2, 10, 10}};
    for (int k = 0; k < 2; k++) {
        probe p = {.min_seen = {INFINITY, INFINITY, INFINITY},
                   .max_seen = {-INFINITY, -INFINITY, -INFINITY}};
        ss_nm_opts o = {.max_iter = 2000, .ftol = 1e-12, .max_restarts = 3, .hi = hi};
        ss_nm_result r;
        double *x = starts[k];
        assert_int_equal(ss_nm_minimize(&r, x, 3, step, lo, quad, &p, &o), 0);
        assert_true(fabs(x[0] - 2) < 1e-6);
        assert_true(x[1] >= 0 && x[1] < 1e-4 && x[2] >= 0 && x[2] < 1e-4);
        assert_true(fabs(r.f - (1 + 2 + 0.25 + 5)) < 1e-6);
        assert_true(p.max_seen[0] <= 2);
        assert_true(p.min_seen[0] >= 0 && p.min_seen[1] >= 0 && p.min_seen[2] >= 0);
        double above[3] = {2.5, 1, 1};
        assert_int_equal(ss_nm_minimize(&r, above, 3, step, lo, quad, &p, &o), SS_EINVAL);
    }
    tu_assert_no_leaks();
}

/* Two searches from the same start give the same points, to the bit; the cap is kept. */
static void test_deterministic_and_cap(void **state)
{
    (void)state;
    double x1[2] = {-1.2, 1}, x2[2] = {-1.2, 1}, step[2] = {0.3, 0.7};
    probe p1 = {0}, p2 = {0};
    ss_nm_opts o = {.max_iter = 37};
    ss_nm_result r1, r2;
    assert_int_equal(ss_nm_minimize(&r1, x1, 2, step, NULL, rosenbrock, &p1, &o), 0);
    assert_int_equal(ss_nm_minimize(&r2, x2, 2, step, NULL, rosenbrock, &p2, &o), 0);
    assert_memory_equal(x1, x2, sizeof x1);
    assert_memory_equal(&r1.f, &r2.f, sizeof r1.f);
    assert_int_equal(r1.iterations, 37);
    assert_false(r1.converged);
    assert_int_equal(r1.evaluations, r2.evaluations);
    tu_assert_no_leaks();
}

typedef struct counter {
    size_t iterations, calls;
} counter;

static void on_progress(void *ud, size_t iterations, size_t evaluations, double f_best)
{
    counter *c = ud;
    assert_int_equal(iterations, c->iterations + 1);
    assert_true(evaluations > c->calls && isfinite(f_best));
    c->iterations = iterations;
    c->calls = evaluations;
}

/* An error of the function stops the search with that error and leaves x as it was; so does
 * a failed allocation; progress is reported once per iteration. */
static void test_errors(void **state)
{
    (void)state;
    double x[3] = {10, 10, 10}, step[3] = {1, 1, 1};
    probe p = {.fail_at = 9, .min_seen = {INFINITY, INFINITY, INFINITY}};
    assert_int_equal(ss_nm_minimize(NULL, x, 3, step, NULL, quad, &p, NULL), SS_EIO);
    assert_true(x[0] == 10 && x[1] == 10 && x[2] == 10);
    ss_alloc_fail_after(1);
    p = (probe){.min_seen = {INFINITY, INFINITY, INFINITY}};
    assert_int_equal(ss_nm_minimize(NULL, x, 3, step, NULL, quad, &p, NULL), SS_ENOMEM);
    ss_alloc_fail_after(0);
    assert_int_equal(p.calls, 0);
    counter c = {0};
    ss_nm_opts o = {.max_iter = 20, .progress = on_progress, .progress_ud = &c};
    assert_int_equal(ss_nm_minimize(NULL, x, 3, step, NULL, quad, &p, &o), 0);
    assert_int_equal(c.iterations, 20);
    double zero[3] = {0, 1, 1};
    assert_int_equal(ss_nm_minimize(NULL, x, 3, zero, NULL, quad, &p, NULL), SS_EINVAL);
    assert_int_equal(ss_nm_minimize(NULL, x, 0, step, NULL, quad, &p, NULL), SS_EINVAL);
    tu_assert_no_leaks();
}

/* Rosenbrock's value rounded down to a multiple of 1/4: plateaus, so that equal values (and
 * contractions no better than their reflection) are common. */
static int terraced(void *ud, const double *x, double stop_at, double *f_out)
{
    int rc = rosenbrock(ud, x, stop_at, f_out);
    *f_out = floor(4 * *f_out) / 4;
    return rc;
}

/* A function that stops where the search allows (ss_nm_fn): at a point whose value is at least
 * stop_at it gives stop_at itself, the least it may, or twice its value; the points it is
 * called at are hashed in order. */
typedef struct stopper {
    ss_nm_fn *inner;
    size_t n;            /* variables */
    int mode;            /* 0: exact; 1: stop_at; 2: the value doubled (>= stop_at too) */
    uint64_t h;          /* FNV-1a of every point called, in order */
    size_t calls, stopped;
} stopper;

static int stopping(void *ud, const double *x, double stop_at, double *f_out)
{
    stopper *s = ud;
    probe p = {.min_seen = {INFINITY, INFINITY, INFINITY}};
    for (size_t i = 0; i < s->n * sizeof *x; i++) {
        s->h ^= ((const unsigned char *)x)[i];
        s->h *= 1099511628211ull;
    }
    s->calls++;
    int rc = s->inner(&p, x, INFINITY, f_out);
    if (!rc && s->mode && *f_out >= stop_at) {
        s->stopped++;
        *f_out = s->mode == 1 ? stop_at : fmax(2 * *f_out, stop_at);
    }
    return rc;
}

/* A value given instead of the exact one where the search allows it changes nothing: the same
 * points in the same order, the same result to the bit, on Rosenbrock (with restarts), the
 * bounded quadratic and a terraced Rosenbrock (ties); and the search allows it at many points. */
static void test_stop_at(void **state)
{
    (void)state;
    static const struct {
        ss_nm_fn *fn;
        size_t n;
        int bounded;
    } cases[] = {{rosenbrock, 2, 0}, {quad, 3, 0}, {quad, 3, 1}, {terraced, 2, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double lo[3] = {0, 0, 0}, step[3] = {0.5, 0.7, 0.3};
        ss_nm_opts o = {.max_iter = 300, .ftol = 1e-12, .max_restarts = 2};
        double x[3][3];
        ss_nm_result r[3];
        stopper st[3];
        for (int mode = 0; mode < 3; mode++) {
            double start[3] = {-1.2, 1, 2};
            memcpy(x[mode], start, sizeof start);
            if (cases[c].bounded)
                x[mode][0] = x[mode][1] = x[mode][2] = 4;
            st[mode] = (stopper){.inner = cases[c].fn, .n = cases[c].n, .mode = mode,
                                 .h = 14695981039346656037ull};
            assert_int_equal(ss_nm_minimize(&r[mode], x[mode], cases[c].n, step,
                                             cases[c].bounded ? lo : NULL, stopping, &st[mode],
                                             &o), 0);
        }
        for (int mode = 1; mode < 3; mode++) {
            assert_true(st[mode].h == st[0].h);
            assert_int_equal(st[mode].calls, st[0].calls);
            assert_memory_equal(x[mode], x[0], sizeof x[0]);
            assert_memory_equal(&r[mode], &r[0], sizeof r[0]);
            assert_true(st[mode].stopped * 5 > st[mode].calls); /* over a fifth of the points */
        }
    }
    tu_assert_no_leaks();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rosenbrock),
        cmocka_unit_test(test_quadratic),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_upper_bounds),
        cmocka_unit_test(test_deterministic_and_cap),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_stop_at),
    };
    return cmocka_run_group_tests_name("nm", tests, NULL, NULL);
}
