/* Core utilities: exact decimal-seconds parsing, strict number parsing, the log-linear
 * histogram's percentile accuracy against exact sorting, rng determinism and distribution
 * moments, parameter lists, the allocator's accounting and failure injection, and one-line error
 * messages. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_csv.h"
#include "core/ss_hist.h"
#include "core/ss_input.h"
#include "core/ss_params.h"
#include "core/ss_parse.h"
#include "core/ss_rng.h"
#include "core/ss_stats.h"
#include "core/ss_strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ss_time secs(const char *s)
{
    ss_time t = -1;
    assert_int_equal(ss_parse_seconds_ns(s, strlen(s), &t), 0);
    return t;
}

static void test_seconds_exact(void **state)
{
    (void)state;
    assert_int_equal(secs("0.1"), 100000000);
    assert_int_equal(secs("12"), 12000000000LL);
    assert_int_equal(secs(" 3501.721937179 "), 3501721937179LL);
    assert_int_equal(secs("1.5e-3"), 1500000);
    assert_int_equal(secs("2.5E2"), 250000000000LL);
    assert_int_equal(secs("0.0000000004"), 0);
    assert_int_equal(secs("0.0000000005"), 1); /* half away from zero */
    assert_int_equal(secs("-0.25"), -250000000);
    assert_int_equal(secs("1234567.1234567891"), 1234567123456789LL);
    assert_int_equal(secs(".5"), 500000000);
    ss_time t;
    const char *bad[] = {"", "abc", "1.2.3", "1e", "nan", "inf", "1e400", "9.3e9", "0x10", "1,5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (ss_parse_seconds_ns(bad[i], strlen(bad[i]), &t) == 0)
            fail_msg("'%s' parsed as %lld", bad[i], (long long)t);
}

static void test_strict_numbers(void **state)
{
    (void)state;
    int64_t i;
    double d;
    assert_int_equal(ss_parse_i64z("42", &i), 0);
    assert_int_equal(i, 42);
    assert_int_equal(ss_parse_i64z("-7 ", &i), 0);
    assert_int_equal(i, -7);
    assert_int_equal(ss_parse_i64z("4x", &i), SS_EPARSE);
    assert_int_equal(ss_parse_i64z("99999999999999999999", &i), SS_EPARSE);
    assert_int_equal(ss_parse_doublez("0.25", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(ss_parse_doublez("nan", &d), SS_EPARSE);
    assert_int_equal(ss_parse_doublez("1e999", &d), SS_EPARSE);
    assert_int_equal(ss_parse_doublez("", &d), SS_EPARSE);
}

/* ss_parse_decimal takes the numbers the trace readers take (ss_parse_seconds_ns's syntax) at
 * strtod's value, and refuses what they refuse: hex above all, which strtod reads. */
static void test_decimal_numbers(void **state)
{
    (void)state;
    const char *good[] = {"0.25", " 12 ", "1.5e-3", "2.5E2", "-0.25", ".5", "7.", "+3", "1e+2"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        double d = NAN;
        ss_time t;
        if (ss_parse_decimalz(good[i], &d) != 0)
            fail_msg("'%s' refused", good[i]);
        assert_true(d == strtod(good[i], NULL));
        assert_int_equal(ss_parse_seconds_ns(good[i], strlen(good[i]), &t), 0);
    }
    const char *bad[] = {"", " ", "abc", "1.2.3", "1e", "nan", "inf", "-infinity", "1e999",
                         "0x10", "0X1A", "0x1p3", "-0x2", "1,5", "1e0x2", ". ", "+-1", "1e401"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double d = NAN;
        ss_time t;
        if (ss_parse_decimalz(bad[i], &d) == 0)
            fail_msg("'%s' parsed as %g", bad[i], d);
        assert_true(isnan(d)); /* not written on failure */
        assert_int_not_equal(ss_parse_seconds_ns(bad[i], strlen(bad[i]), &t), 0);
    }
    double d;
    assert_int_equal(ss_parse_doublez("0x10", &d), 0); /* what the strict reader still allows */
    assert_true(d == 16);
    assert_int_equal(ss_parse_decimal("2.5xyz", 3, &d), 0); /* only len bytes are read */
    assert_true(d == 2.5);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_hist_percentiles_within_tolerance(void **state)
{
    (void)state;
    enum { N = 200000 };
    int64_t *v = malloc(N * sizeof *v);
    ss_rng r;
    ss_rng_seed(&r, 5, 5);
    ss_hist h = {0};
    for (int i = 0; i < N; i++) {
        v[i] = (int64_t)(2e7 * exp(1.5 * ss_rng_normal(&r))); /* ~20 ms lognormal, in ns */
        assert_int_equal(ss_hist_add(&h, v[i]), 0);
    }
    qsort(v, N, sizeof *v, cmp_i64);
    const double qs[] = {0.01, 0.5, 0.9, 0.99, 0.999};
    for (size_t k = 0; k < 5; k++) {
        int64_t exact = v[(size_t)ceil(qs[k] * N) - 1], got = ss_hist_quantile(&h, qs[k]);
        double rel = fabs((double)(got - exact)) / (double)exact;
        if (rel > 0.001)
            fail_msg("q%.3f: %lld vs exact %lld (%.4f %%)", qs[k], (long long)got,
                     (long long)exact, rel * 100);
    }
    assert_int_equal(ss_hist_quantile(&h, 1.0), v[N - 1]);
    assert_int_equal(ss_hist_quantile(&h, 0.0), v[0]);
    /* small values are exact */
    ss_hist s = {0};
    for (int i = 1; i <= 100; i++)
        ss_hist_add(&s, i);
    assert_int_equal(ss_hist_quantile(&s, 0.5), 50);
    assert_int_equal(ss_hist_quantile(&s, 0.99), 99);
    ss_hist m = {0};
    assert_int_equal(ss_hist_merge(&m, &h), 0);
    assert_int_equal(ss_hist_merge(&m, &s), 0);
    assert_int_equal(m.n, N + 100);
    assert_int_equal(m.min, 1);
    /* moving into an empty histogram takes the buckets; into a full one it merges; either
     * way the source is left empty and the result is what merging gives */
    ss_hist mv = {0}, cp = {0};
    assert_int_equal(ss_hist_merge(&cp, &m), 0);
    assert_int_equal(ss_hist_merge(&cp, &s), 0);
    assert_int_equal(ss_hist_merge_move(&mv, &m), 0);
    assert_int_equal(m.n, 0);
    assert_null(m.counts);
    assert_int_equal(ss_hist_merge_move(&mv, &s), 0);
    assert_int_equal(s.n, 0);
    assert_null(s.counts);
    assert_int_equal(mv.n, cp.n);
    assert_int_equal(mv.min, cp.min);
    assert_int_equal(mv.max, cp.max);
    assert_true(mv.sum == cp.sum);
    for (int q = 0; q <= 100; q++)
        assert_int_equal(ss_hist_quantile(&mv, q / 100.0), ss_hist_quantile(&cp, q / 100.0));
    ss_hist_fini(&mv);
    ss_hist_fini(&cp);
    ss_hist_fini(&h);
    ss_hist_fini(&s);
    ss_hist_fini(&m);
    free(v);
    tu_assert_no_leaks();
}

static void test_rng_streams(void **state)
{
    (void)state;
    ss_rng a, b, c;
    ss_rng_seed(&a, 1, 1);
    ss_rng_seed(&b, 1, 1);
    ss_rng_seed(&c, 1, 2);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = ss_rng_u64(&a);
        assert_true(x == ss_rng_u64(&b));
        same_c += x == ss_rng_u64(&c);
    }
    assert_int_equal(same_c, 0);
    enum { N = 400000 };
    double se = 0, sg = 0, sg2 = 0, sn = 0, sn2 = 0;
    for (int i = 0; i < N; i++) {
        se += ss_rng_exp(&a, 2.0);
        double g = ss_rng_gamma(&a, 0.25, 4.0); /* mean 1, cv 2 */
        sg += g;
        sg2 += g * g;
        double n = ss_rng_normal(&a);
        sn += n;
        sn2 += n * n;
        uint64_t k = ss_rng_below(&a, 7);
        assert_true(k < 7);
    }
    assert_true(fabs(se / N - 2.0) < 0.02);
    double gm = sg / N, gcv = sqrt(sg2 / N - gm * gm) / gm;
    assert_true(fabs(gm - 1.0) < 0.02);
    assert_true(fabs(gcv - 2.0) < 0.05);
    assert_true(fabs(sn / N) < 0.01);
    assert_true(fabs(sn2 / N - 1.0) < 0.01);
}

static void test_params(void **state)
{
    (void)state;
    ss_params *p = NULL;
    ss_errbuf eb;
    assert_int_equal(ss_params_create(&p), 0);
    assert_int_equal(ss_params_set_kv(p, "a=5", &eb), 0);
    assert_int_equal(ss_params_set_kv(p, "b=0.5", &eb), 0);
    assert_int_equal(ss_params_set_kv(p, "a=6", &eb), 0);
    assert_int_equal(ss_params_set_kv(p, "novalue", &eb), SS_EPARSE);
    assert_int_equal(ss_params_set_kv(p, "=1", &eb), SS_EPARSE);
    uint64_t u;
    double d;
    assert_int_equal(ss_params_get_u64(p, "t", "a", 1, 0, 10, &u, &eb), 0);
    assert_int_equal(u, 6);
    assert_int_equal(ss_params_get_u64(p, "t", "zz", 9, 0, 10, &u, &eb), 0);
    assert_int_equal(u, 9);
    assert_int_equal(ss_params_check_unused(p, "t", &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "'b'"));
    assert_int_equal(ss_params_get_double(p, "t", "b", 0, 0.6, 1, &d, &eb), SS_EINVAL);
    assert_int_equal(ss_params_check_unused(p, "t", &eb), 0);
    assert_int_equal(ss_params_count(p), 2);
    ss_params_destroy(&p);
    assert_null(p);
    tu_assert_no_leaks();
}

static void test_alloc_accounting_and_injection(void **state)
{
    (void)state;
    size_t base = ss_alloc_live_bytes();
    char *a = ss_malloc(100);
    assert_int_equal(ss_alloc_live_bytes(), base + 100);
    a = ss_realloc(a, 1000);
    assert_int_equal(ss_alloc_live_bytes(), base + 1000);
    ss_alloc_fail_after(2);
    char *b = ss_strdup("x");
    assert_non_null(b);
    assert_null(ss_realloc(a, 5000)); /* fails, a untouched */
    ss_alloc_fail_after(0);
    ss_free(a);
    ss_free(b);
    assert_int_equal(ss_alloc_live_bytes(), base);
    ss_strbuf sb = {0};
    ss_strbuf_printf(&sb, "%d:", 7);
    ss_strbuf_json_str(&sb, "q\"\n\\");
    assert_string_equal(ss_strbuf_str(&sb), "7:\"q\\\"\\u000a\\\\\"");
    ss_strbuf_fini(&sb);
    char *p = ss_path_join("profiles", "h100-sxm");
    assert_string_equal(p, "profiles/h100-sxm");
    ss_free(p);
    ss_alloc_fail_after(1);
    assert_null(ss_path_join("a", "b"));
    ss_alloc_fail_after(0);
    tu_assert_no_leaks();
}

/* A CSV file saved with a UTF-8 byte-order mark reads as without one (as traces do): the mark
 * is not part of the first column's name. Only the first line's is dropped. */
static void test_csv_bom(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    const char *path = tu_write_file(dir, "bom.csv", "\xEF\xBB\xBFrun,stage\r\na,1\r\n"
                                                     "\xEF\xBB\xBF,2\n");
    ss_csv c;
    ss_errbuf eb = {""};
    assert_int_equal(ss_csv_open(&c, path, 0, &eb), 0);
    assert_int_equal(ss_csv_col(&c, "run"), 0);
    assert_int_equal(ss_csv_col(&c, "stage"), 1);
    assert_int_equal(ss_csv_next(&c, &eb), 1);
    assert_string_equal(ss_csv_get(&c, 0), "a");
    assert_int_equal(ss_csv_next(&c, &eb), 1);
    assert_string_equal(ss_csv_get(&c, 0), "\xEF\xBB\xBF");
    assert_int_equal(c.line, 3);
    assert_int_equal(ss_csv_next(&c, &eb), 0);
    ss_csv_close(&c);
    /* a mark alone is an empty file: no header row */
    path = tu_write_file(dir, "bom-only.csv", "\xEF\xBB\xBF\n");
    assert_int_equal(ss_csv_open(&c, path, 0, &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, "no header row"));
    tu_tmpdir_cleanup();
    tu_assert_no_leaks();
}

/* Error messages stay one line whatever the input carried into them (fuzzing found bare CRs
 * from INI values, CSV headers and JSON strings printed raw). */
static void test_errbuf_one_line(void **state)
{
    (void)state;
    ss_errbuf eb = {""};
    assert_int_equal(ss_err(&eb, SS_EPARSE, "f.ini:4: gpu.name: '%s' is bad", "a\rb\nc\td\x7f"),
                     SS_EPARSE);
    assert_string_equal(eb.msg, "f.ini:4: gpu.name: 'a\\x0db\\x0ac\td\\x7f' is bad");
    assert_int_equal(ss_err_prefix(&eb, SS_EIO, "tenant %s", "x\ny"), SS_EIO);
    assert_string_equal(eb.msg,
                        "tenant x\\x0ay: f.ini:4: gpu.name: 'a\\x0db\\x0ac\td\\x7f' is bad");
    /* A message filling the buffer is cut short, never split inside an escape. */
    char crs[SS_ERRBUF_LEN];
    memset(crs, '\r', sizeof crs - 1);
    crs[sizeof crs - 1] = '\0';
    ss_err(&eb, SS_EPARSE, "x%s", crs);
    size_t n = strlen(eb.msg);
    assert_true(n < SS_ERRBUF_LEN && n > SS_ERRBUF_LEN - 6);
    assert_null(strchr(eb.msg, '\r'));
    assert_int_equal((n - 1) % 4, 0);
    assert_string_equal(eb.msg + n - 4, "\\x0d");
    /* Messages formatted by hand get the same treatment. */
    snprintf(eb.msg, sizeof eb.msg, "a\r");
    ss_errbuf_oneline(&eb);
    assert_string_equal(eb.msg, "a\\x0d");
    ss_errbuf_oneline(NULL);
    /* Bytes that are not UTF-8 text (a binary INI's, Latin-1) are escaped too; well-formed
     * UTF-8 stays as it is. Overlong, surrogate and truncated sequences are not well-formed. */
    ss_err(&eb, SS_EPARSE, "k: '%s'",
           "\xff\xfe\x89PNG caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(eb.msg,
                        "k: '\\xff\\xfe\\x89PNG caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80'");
    ss_err(&eb, SS_EPARSE, "%s", "\xc0\xaf \xed\xa0\x80 \xe2\x82 caf\xe9");
    assert_string_equal(eb.msg, "\\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82 caf\\xe9");
}

/* Names printed outside an error buffer (a sweep's, a tenant's, from a database made elsewhere)
 * are shown by the same rule, cut to fit; names given on the command line are checked for
 * control characters. */
static void test_str_visible(void **state)
{
    (void)state;
    char buf[16];
    assert_string_equal(ss_str_visible(buf, sizeof buf, "caf\xc3\xa9 ok"), "caf\xc3\xa9 ok");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "a\nb\x1b[1m"), "a\\x0ab\\x1b[1m");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "0123456789abcde"), "0123456789abcde");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "0123456789abcdef"), "0123456789ab...");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "0123456789\n"), "0123456789\\x0a");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "01234567890\n"), "01234567890\\x0a");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "012345678901\n"), "012345678901...");
    assert_string_equal(ss_str_visible(buf, sizeof buf, "0123456789\n\n"), "0123456789...");
    assert_string_equal(ss_str_visible(buf, 4, "\n\n"), "...");
    assert_string_equal(ss_str_visible(buf, 4, ""), "");
    assert_false(ss_str_has_control("plain name, caf\xc3\xa9"));
    assert_true(ss_str_has_control("a\tb"));
    assert_true(ss_str_has_control("a\x1b[31m"));
    assert_true(ss_str_has_control("x\x7f"));
}

/* ss_input_open(path) is refused with SS_EPARSE, "PATH: not a regular file". */
static void expect_not_regular(const char *path, int flags)
{
    char want[800];
    snprintf(want, sizeof want, "%s: not a regular file", path);
    FILE *f = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(ss_input_open(&f, path, flags, &eb), SS_EPARSE);
    assert_null(f);
    assert_string_equal(eb.msg, want);
}

/* Inputs must be regular files: a FIFO without a writer is refused at once (a plain fopen
 * waits for a writer forever; the alarm fails the test instead of hanging it), and so are a
 * device and a folder; a missing file is SS_EIO with errno kept; standard input may be a pipe
 * where the caller says so. */
static void test_input_regular_only(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char fifo[700], missing[700];
    const char *reg = tu_write_file(dir, "a.csv", "x\n1\n");
    snprintf(fifo, sizeof fifo, "%s/f.csv", dir);
    snprintf(missing, sizeof missing, "%s/nope.csv", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20);
    FILE *f = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(ss_input_open(&f, reg, 0, &eb), SS_OK);
    char line[16];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "x\n");
    fclose(f);
    expect_not_regular(fifo, 0);
    expect_not_regular(fifo, SS_INPUT_STDIN); /* a FIFO that is not standard input */
    expect_not_regular(dir, 0);
    expect_not_regular("/dev/null", 0);
    f = NULL;
    assert_int_equal(ss_input_open(&f, missing, 0, &eb), SS_EIO);
    assert_int_equal(errno, ENOENT);
    assert_null(f);
    char want[800];
    snprintf(want, sizeof want, "%s: cannot open: %s", missing, strerror(ENOENT));
    assert_string_equal(eb.msg, want);
    int fd = -1;
    assert_int_equal(ss_input_open_fd(&fd, reg, 0, &eb), SS_OK);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(ss_input_open_fd(&fd, fifo, 0, &eb), SS_EPARSE);

    /* standard input on a pipe: /dev/stdin opens with SS_INPUT_STDIN, is refused without */
    int saved = dup(STDIN_FILENO), p[2];
    assert_true(saved >= 0);
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "piped\n", 6), 6);
    close(p[1]);
    assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
    close(p[0]);
    expect_not_regular("/dev/stdin", 0);
    assert_int_equal(ss_input_open(&f, "/dev/stdin", SS_INPUT_STDIN, &eb), SS_OK);
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "piped\n");
    fclose(f);
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    alarm(0);
    tu_tmpdir_cleanup();
}

/* The 95 % t interval: a hand-worked case, the t quantiles against published values, and on
 * draws of known mean and variance the share of intervals that cover the mean (95 % of them,
 * give or take the binomial spread of 4000 trials: 94.3 % to 95.7 % is +-2 standard errors). */
static void test_ci95(void **state)
{
    (void)state;
    /* 1..5: mean 3, sd sqrt(2.5), half-width t(0.975, 4) sqrt(2.5) / sqrt(5) */
    const double x[5] = {1, 2, 3, 4, 5};
    ss_ci c;
    ss_ci95(x, 5, &c);
    assert_true(c.has_interval && c.n == 5);
    assert_true(fabs(c.mean - 3) < 1e-12);
    assert_true(fabs(c.sd - 1.5811388) < 1e-6);
    assert_true(fabs(c.hi - 3 - 1.9632) < 1e-3 && fabs(3 - c.lo - 1.9632) < 1e-3);
    char txt[64];
    ss_ci_text(txt, sizeof txt, &c, 1, "%.2f");
    assert_string_equal(txt, "3.00 [1.04, 4.96]");
    ss_ci_text(txt, sizeof txt, &c, 100, "%.4g");
    assert_string_equal(txt, "300 [103.7, 496.3]");
    ss_ci95(x, 1, &c); /* one value: its mean, no interval */
    assert_true(!c.has_interval && c.mean == 1 && c.lo == 1 && c.hi == 1);
    assert_string_equal(ss_ci_verdict(&c), "one seed");
    ss_ci_text(txt, sizeof txt, &c, 1, "%.1f");
    assert_string_equal(txt, "1.0"); /* no interval: the mean alone */
    ss_ci95(x, 0, &c);
    assert_true(!c.has_interval && c.n == 0);
    /* t(0.975, df), published: df 1, 4, 30, 40, 60, 120 */
    assert_true(fabs(ss_t975(1) - 12.706) < 1e-3);
    assert_true(fabs(ss_t975(4) - 2.776) < 1e-3);
    assert_true(fabs(ss_t975(30) - 2.042) < 1e-3);
    assert_true(fabs(ss_t975(40) - 2.021) < 1e-3);
    assert_true(fabs(ss_t975(60) - 2.000) < 1e-3);
    assert_true(fabs(ss_t975(120) - 1.980) < 1e-3);
    /* coverage: 4000 intervals of 5 normal draws, mean 10, sd 3 */
    ss_rng r;
    ss_rng_seed(&r, 7, 1);
    int cover = 0, trials = 4000;
    double width = 0;
    for (int t = 0; t < trials; t++) {
        double y[5];
        for (int i = 0; i < 5; i++)
            y[i] = 10 + 3 * ss_rng_normal(&r);
        ss_ci95(y, 5, &c);
        cover += c.lo <= 10 && 10 <= c.hi;
        width += c.hi - c.lo;
    }
    assert_true(cover >= 0.943 * trials && cover <= 0.957 * trials);
    /* the mean width is 2 t(0.975, 4) E[s] / sqrt(5), E[s] = 0.9400 sigma for n = 5 */
    assert_true(fabs(width / trials - 2 * 2.7764 * 0.9400 * 3 / sqrt(5)) < 0.1);
    /* verdicts */
    const double up[3] = {1.10, 1.12, 1.11}, down[3] = {0.90, 0.91, 0.89}, mid[3] = {0.9, 1.1, 1.0};
    ss_ci95(up, 3, &c);
    assert_string_equal(ss_ci_verdict(&c), "higher");
    ss_ci95(down, 3, &c);
    assert_string_equal(ss_ci_verdict(&c), "lower");
    ss_ci95(mid, 3, &c);
    assert_string_equal(ss_ci_verdict(&c), "no difference");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seconds_exact),
        cmocka_unit_test(test_strict_numbers),
        cmocka_unit_test(test_decimal_numbers),
        cmocka_unit_test(test_csv_bom),
        cmocka_unit_test(test_hist_percentiles_within_tolerance),
        cmocka_unit_test(test_rng_streams),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_alloc_accounting_and_injection),
        cmocka_unit_test(test_errbuf_one_line),
        cmocka_unit_test(test_str_visible),
        cmocka_unit_test(test_input_regular_only),
        cmocka_unit_test(test_ci95),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
