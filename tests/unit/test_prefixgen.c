/* Prefix identity in generated traffic (src/trace/trace_gen_conv.c): the known structure of
 * shared system prompts (every request of a group shares exactly the system prompt's full
 * 512-token blocks, nothing else is shared, the requests are today's with the system prompt in
 * front) and of multi-turn conversations (each turn's prompt and block ids extend the previous
 * turn's), arrival order, the turn rate and think times, max_context, group popularity, exact
 * mean of the turns distribution, determinism and the CSV round trip, the spec's checks and
 * keys, the end of the 32-bit id space, allocation failures and bounded memory. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_rng.h"
#include "trace/trace.h"
#include "trace/trace_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------ */

/* One generated request with its own copy of the prefix blocks. */
typedef struct grec {
    trace_rec r;
    uint32_t *blocks; /* malloc'd copy (NULL when none) */
} grec;

static void set(trace_gen_spec *s, const char *key, const char *val)
{
    ss_errbuf eb = {""};
    int rc = trace_gen_spec_set(s, key, val, &eb);
    if (rc == SS_ENOTFOUND) {
        if (!strcmp(key, "prompt"))
            rc = trace_len_dist_parse(&s->prompt, val, &eb);
        else if (!strcmp(key, "output"))
            rc = trace_len_dist_parse(&s->output, val, &eb);
    }
    if (rc)
        fail_msg("%s=%s: %d %s", key, val, rc, eb.msg);
}

/* A spec of n requests (or duration d when n is 0) at rate, then KEY=VALUE pairs, NULL-ended. */
static trace_gen_spec spec_of(uint64_t n, double d, double rate, ...)
{
    trace_gen_spec s = {.seed = 7, .n_requests = n, .duration_s = d, .rate = rate, .cv = 1};
    set(&s, "prompt", "uniform:1:900");
    set(&s, "output", "uniform:1:400");
    va_list ap;
    va_start(ap, rate);
    for (const char *k; (k = va_arg(ap, const char *));)
        set(&s, k, va_arg(ap, const char *));
    va_end(ap);
    return s;
}

/* Generate all of s (at most cap requests) into a malloc'd array; returns the count. */
static size_t collect(const trace_gen_spec *s, grec **out, size_t cap)
{
    trace_gen *g = NULL;
    ss_errbuf eb = {""};
    if (trace_gen_create(&g, s, &eb))
        fail_msg("create: %s", eb.msg);
    grec *v = calloc(cap, sizeof *v);
    assert_non_null(v);
    size_t n = 0;
    int rc;
    while (n < cap && (rc = trace_gen_next(g, &v[n].r, &eb)) == 1) {
        if (v[n].r.n_prefix_blocks) {
            v[n].blocks = malloc(v[n].r.n_prefix_blocks * sizeof *v[n].blocks);
            assert_non_null(v[n].blocks);
            memcpy(v[n].blocks, v[n].r.prefix_blocks,
                   v[n].r.n_prefix_blocks * sizeof *v[n].blocks);
        }
        v[n].r.prefix_blocks = NULL;
        n++;
    }
    assert_true(n < cap); /* the spec ended the trace */
    assert_int_equal(rc, 0);
    trace_gen_destroy(&g);
    *out = v;
    return n;
}

static void release(grec *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].blocks);
    free(v);
}

static uint32_t ceil_blocks(uint32_t tokens)
{
    return (tokens + TRACE_GEN_BLOCK_TOKENS - 1) / TRACE_GEN_BLOCK_TOKENS;
}

/* How many requests carry each block id (ids are numbered from 0 up; a request never repeats
 * one): a calloc'd array of *n_out counts. */
static uint32_t *id_users(const grec *v, size_t n, size_t *n_out)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < v[i].r.n_prefix_blocks; j++)
            if (v[i].blocks[j] >= top)
                top = (size_t)v[i].blocks[j] + 1;
    uint32_t *users = calloc(top + 1, sizeof *users);
    assert_non_null(users);
    for (size_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < v[i].r.n_prefix_blocks; j++)
            users[v[i].blocks[j]]++;
    *n_out = top;
    return users;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void assert_sorted(const grec *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        assert_true(v[i].r.arrival_ns >= v[i - 1].r.arrival_ns);
        assert_int_equal(v[i].r.id, i);
    }
}

/* ---- shared system prompts ---------------------------------------------------------------- */

/* One group, one turn: the plain generator's requests with the system prompt in front; every
 * request shares exactly the system prompt's full blocks (2 of 1,300 tokens; the partial third
 * is each request's own), and no other id is shared. */
static void test_one_group(void **state)
{
    (void)state;
    enum { N = 400 };
    const char *systems[] = {"fixed:1300", "fixed:1024", "fixed:100"};
    const uint32_t sys_tokens[] = {1300, 1024, 100};
    trace_gen_spec plain = spec_of(N, 0, 5, NULL);
    grec *p, *v;
    assert_int_equal(collect(&plain, &p, N + 1), N);
    for (int k = 0; k < 3; k++) {
        trace_gen_spec s = spec_of(N, 0, 5, "groups", "1", "system", systems[k], NULL);
        assert_true(trace_gen_has_prefix(&s));
        assert_int_equal(collect(&s, &v, N + 1), N);
        uint32_t n_sys = sys_tokens[k] / TRACE_GEN_BLOCK_TOKENS;
        size_t n_ids;
        uint32_t *users = id_users(v, N, &n_ids);
        for (size_t i = 0; i < N; i++) {
            assert_int_equal(v[i].r.arrival_ns, p[i].r.arrival_ns);
            assert_int_equal(v[i].r.output_tokens, p[i].r.output_tokens);
            assert_int_equal(v[i].r.prompt_tokens, p[i].r.prompt_tokens + sys_tokens[k]);
            assert_int_equal(v[i].r.session_id, i + 1);
            assert_int_equal(v[i].r.n_prefix_blocks, ceil_blocks(v[i].r.prompt_tokens));
            for (uint32_t j = 0; j < v[i].r.n_prefix_blocks; j++) {
                if (j < n_sys)
                    assert_int_equal(v[i].blocks[j], v[0].blocks[j]);
                assert_int_equal(users[v[i].blocks[j]], j < n_sys ? N : 1);
            }
        }
        free(users);
        release(v, N);
    }
    release(p, N);
    tu_assert_no_leaks();
}

/* The group of a request: the index of its first system id among the groups' (ids are handed
 * out in group order, so a smaller first id is a lower group). */
static int group_of(const grec *r, const uint32_t *firsts, int n_groups)
{
    for (int g = 0; g < n_groups; g++)
        if (r->blocks[0] == firsts[g])
            return g;
    return -1;
}

/* Several groups with drawn lengths: each request shares with the others of its group exactly
 * the leading ids all of them have, with no other request; uniform picks spread evenly, Zipf
 * picks follow P(g) ~ 1/(g+1)^S. */
static void test_groups_popularity(void **state)
{
    (void)state;
    enum { N = 20000, G = 5 };
    const char *zipf[] = {"0", "1"};
    for (int z = 0; z < 2; z++) {
        trace_gen_spec s = spec_of(N, 0, 50, "groups", "5", "system", "uniform:600:4000",
                                   "group_zipf", zipf[z], NULL);
        grec *v;
        assert_int_equal(collect(&s, &v, N + 1), N);
        assert_sorted(v, N);
        uint32_t firsts[G];
        int n_groups = 0;
        for (size_t i = 0; i < N && n_groups < G; i++)
            if (group_of(&v[i], firsts, n_groups) < 0)
                firsts[n_groups++] = v[i].blocks[0];
        assert_int_equal(n_groups, G);
        qsort(firsts, G, sizeof *firsts, cmp_u32);
        size_t count[G] = {0}, last[G] = {0};
        uint32_t shared[G]; /* leading ids every member of the group has in common */
        for (size_t i = 0; i < N; i++) {
            int g = group_of(&v[i], firsts, G);
            assert_true(g >= 0);
            if (count[g]++ == 0) {
                shared[g] = v[i].r.n_prefix_blocks;
                last[g] = i;
                continue;
            }
            const grec *f = &v[last[g]];
            uint32_t j = 0;
            while (j < shared[g] && j < v[i].r.n_prefix_blocks && v[i].blocks[j] == f->blocks[j])
                j++;
            shared[g] = j;
            last[g] = i;
        }
        for (int g = 0; g < G; g++) {
            assert_true(shared[g] >= 1 && shared[g] <= 4000 / TRACE_GEN_BLOCK_TOKENS);
            double p = z ? (1.0 / (g + 1)) / (1 + 1 / 2.0 + 1 / 3.0 + 1 / 4.0 + 1 / 5.0) : 0.2;
            assert_true(fabs((double)count[g] / N - p) < 0.02);
        }
        /* an id is shared by the whole group when it is one of its system ids, else by none */
        size_t n_ids;
        uint32_t *users = id_users(v, N, &n_ids);
        for (size_t i = 0; i < N; i++) {
            int g = group_of(&v[i], firsts, G);
            for (uint32_t j = 0; j < v[i].r.n_prefix_blocks; j++)
                assert_int_equal(users[v[i].blocks[j]], j < shared[g] ? count[g] : 1);
        }
        free(users);
        release(v, N);
    }
    tu_assert_no_leaks();
}

/* ---- conversations -------------------------------------------------------------------------- */

/* The turns of session `sess` in arrival order, into idx (returns how many). */
static size_t turns_of(const grec *v, size_t n, uint64_t sess, size_t *idx, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++)
        if (v[i].r.session_id == sess)
            idx[k++] = i;
    return k;
}

/* Four turns a conversation: turn k+1's prompt is turn k's prompt, its output and a new user
 * message from the prompt distribution; its ids start with all of turn k's; no id is shared
 * across conversations. Think gaps average the mean, and the turn rate is the spec's rate. */
static void test_turns_extend(void **state)
{
    (void)state;
    const double dur = 4000, rate = 2, think = 5;
    trace_gen_spec s = spec_of(0, dur, rate, "turns", "fixed:4", "think", "5", "prompt",
                               "uniform:20:700", "max_context", "10000000", NULL);
    grec *v;
    size_t n = collect(&s, &v, 20000);
    assert_sorted(v, n);
    assert_true(fabs(n / dur - rate) < 0.05 * rate);
    uint64_t n_sess = 0;
    for (size_t i = 0; i < n; i++) { /* numbered in order of their first turns */
        assert_true(v[i].r.session_id >= 1 && v[i].r.session_id <= n_sess + 1);
        if (v[i].r.session_id > n_sess)
            n_sess = v[i].r.session_id;
    }
    size_t n_ids;
    uint32_t *users = id_users(v, n, &n_ids);
    double gap_sum = 0;
    size_t n_gaps = 0, full = 0, idx[8];
    for (uint64_t sess = 1; sess <= n_sess; sess++) {
        size_t k = turns_of(v, n, sess, idx, 8);
        assert_true(k >= 1 && k <= 4);
        full += k == 4;
        for (size_t t = 1; t < k; t++) {
            const trace_rec *a = &v[idx[t - 1]].r, *b = &v[idx[t]].r;
            uint32_t user = b->prompt_tokens - a->prompt_tokens - a->output_tokens;
            assert_true(b->prompt_tokens > a->prompt_tokens + a->output_tokens);
            assert_true(user >= 20 && user <= 700);
            assert_int_equal(b->n_prefix_blocks, ceil_blocks(b->prompt_tokens));
            assert_memory_equal(v[idx[t]].blocks, v[idx[t - 1]].blocks,
                                a->n_prefix_blocks * sizeof(uint32_t));
            gap_sum += (double)(b->arrival_ns - a->arrival_ns) / 1e9;
            n_gaps++;
        }
        /* a conversation that started well before the end has all its turns */
        if (v[idx[0]].r.arrival_ns < ss_time_from_s(dur - 200))
            assert_int_equal(k, 4);
        /* its ids are its own: position j's id is used by its turns that reach j, only */
        for (uint32_t j = 0; j < v[idx[k - 1]].r.n_prefix_blocks; j++) {
            uint32_t reach = 0;
            for (size_t t = 0; t < k; t++)
                reach += v[idx[t]].r.n_prefix_blocks > j;
            assert_int_equal(users[v[idx[k - 1]].blocks[j]], reach);
        }
    }
    free(users);
    assert_true(full > n_sess * 9 / 10);
    assert_true(fabs(gap_sum / (double)n_gaps - think) < 0.05 * think);
    /* conversations start at rate / 4 */
    assert_true(fabs((double)n_sess / dur - rate / 4) < 0.05 * rate / 4);
    release(v, n);
    tu_assert_no_leaks();
}

/* max_context ends a conversation before a turn that would pass it, and cuts a first turn that
 * is longer (that conversation then has one turn, all of it the group's system prompt). */
static void test_max_context(void **state)
{
    (void)state;
    trace_gen_spec s = spec_of(0, 2000, 2, "groups", "2", "system", "fixed:3000", "turns",
                               "fixed:50", "think", "1", "prompt", "fixed:500", "output",
                               "fixed:500", "max_context", "8000", NULL);
    grec *v;
    size_t n = collect(&s, &v, 20000), idx[64];
    uint64_t n_sess = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].r.session_id > n_sess)
            n_sess = v[i].r.session_id;
    for (uint64_t sess = 1; sess <= n_sess; sess++) {
        size_t k = turns_of(v, n, sess, idx, 64);
        for (size_t t = 0; t < k; t++) /* 3500, 4500, ..., 7500; 8500 > 8000 ends it */
            assert_int_equal(v[idx[t]].r.prompt_tokens, 3500 + 1000 * t);
        if (k && v[idx[0]].r.arrival_ns < ss_time_from_s(1900))
            assert_int_equal(k, 5);
    }
    for (size_t i = 0; i < n; i++)
        assert_true(v[i].r.prompt_tokens <= 8000);
    release(v, n);

    s = spec_of(300, 0, 2, "groups", "1", "system", "fixed:9000", "turns", "fixed:3", "think",
                "1", "max_context", "8000", NULL);
    assert_int_equal(collect(&s, &v, 301), 300);
    for (size_t i = 0; i < 300; i++) {
        assert_int_equal(v[i].r.prompt_tokens, 8000);
        assert_int_equal(v[i].r.session_id, i + 1);
        assert_int_equal(v[i].r.n_prefix_blocks, 16);
        assert_memory_equal(v[i].blocks, v[0].blocks, 16 * sizeof(uint32_t));
    }
    release(v, 300);
    tu_assert_no_leaks();
}

/* The mean of the turns distribution, which sets the conversations' start rate, is exact: equal
 * to hand-computed values and to the mean of many draws. */
static void test_len_mean(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        double exact; /* < 0: not known in closed form */
    } cases[] = {
        {"fixed:3", 3},
        {"uniform:1:6", 3.5},
        {"quantiles:0=1,1=3", 2},   /* 1 for u < 1/4, 2 up to 3/4, 3 after */
        {"quantiles:0=1,1=2", 1.5}, /* 1 for u < 1/2 */
        {"quantiles:0=1,0.5=1,1=5", 1 + 0.5 * 2}, /* half 1, half uniform-ish over 1..5 */
        {"lognormal:4:0:1:10", 4},
        {"zipf:1:1:2", 1 + 1.0 / 3}, /* P(1) = 2/3, P(2) = 1/3 */
        {"lognormal:3:0.8:1:40", -1},
        {"zipf:1.5:2:60", -1},
        {"quantiles:0=1,0.5=2,0.9=7,1=30", -1},
    };
    ss_errbuf eb = {""};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        trace_len_dist d;
        trace__zipf z;
        ss_rng r;
        assert_int_equal(trace_len_dist_parse(&d, cases[c].spec, &eb), 0);
        double mean = trace__len_mean_small(&d);
        if (cases[c].exact >= 0)
            assert_true(fabs(mean - cases[c].exact) < 1e-9);
        trace__len_prepare(&d, &z);
        ss_rng_seed(&r, 3, 99);
        double sum = 0;
        enum { DRAWS = 400000 };
        for (int i = 0; i < DRAWS; i++)
            sum += trace__len_sample(&d, &z, &r);
        if (fabs(sum / DRAWS - mean) > 0.01 * mean)
            fail_msg("%s: mean %g, %d draws average %g", cases[c].spec, mean, DRAWS,
                     sum / DRAWS);
    }
    tu_assert_no_leaks();
}

/* ---- determinism, streams, CSV ---------------------------------------------------------------- */

static void assert_same(const grec *a, const grec *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i].r.id, b[i].r.id);
        assert_int_equal(a[i].r.arrival_ns, b[i].r.arrival_ns);
        assert_int_equal(a[i].r.prompt_tokens, b[i].r.prompt_tokens);
        assert_int_equal(a[i].r.output_tokens, b[i].r.output_tokens);
        assert_int_equal(a[i].r.session_id, b[i].r.session_id);
        assert_int_equal(a[i].r.n_prefix_blocks, b[i].r.n_prefix_blocks);
        assert_memory_equal(a[i].blocks, b[i].blocks, a[i].r.n_prefix_blocks * sizeof(uint32_t));
    }
}

/* Same spec, same trace; another seed, another trace; and the CSV reads back to exactly the
 * generated records, session ids and block ids included. */
static void test_determinism_and_csv(void **state)
{
    (void)state;
    enum { N = 3000 };
    trace_gen_spec s = spec_of(N, 0, 8, "groups", "7", "system", "lognormal:1500:0.6:100:6000",
                               "group_zipf", "0.8", "turns", "zipf:1.2:1:12", "think", "30",
                               NULL);
    s.arrival = TRACE_ARRIVAL_GAMMA;
    s.cv = 2;
    s.tenant = "chat";
    grec *a, *b;
    assert_int_equal(collect(&s, &a, N + 1), N);
    assert_int_equal(collect(&s, &b, N + 1), N);
    assert_sorted(a, N);
    assert_same(a, b, N);
    release(b, N);
    trace_gen_spec s2 = s;
    s2.seed++;
    assert_int_equal(collect(&s2, &b, N + 1), N);
    size_t differ = 0;
    for (size_t i = 0; i < N; i++)
        differ += a[i].r.arrival_ns != b[i].r.arrival_ns;
    assert_true(differ > N / 2);
    release(b, N);

    char *buf = NULL;
    size_t len = 0;
    ss_errbuf eb = {""};
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(trace_gen_write_csv(&s, f, NULL, &eb), 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(strncmp(buf, "request_id,arrival_s,tenant,prompt_tokens,output_tokens,"
                             "session_id,hash_ids\n", 76), 0);
    f = fmemopen(buf, len, "rb");
    assert_non_null(f);
    trace_reader *r = NULL;
    assert_int_equal(trace_reader_open_stream(&r, f, "gen.csv", "auto", &eb), 0);
    for (size_t i = 0; i < N; i++) {
        grec got = {0};
        assert_int_equal(trace_reader_next(r, &got.r, &eb), 1);
        got.blocks = (uint32_t *)got.r.prefix_blocks;
        assert_same(&a[i], &got, 1);
    }
    trace_rec end;
    assert_int_equal(trace_reader_next(r, &end, &eb), 0);
    assert_string_equal(trace_reader_tenant_name(r, 0), "chat");
    trace_reader_close(&r);
    fclose(f);
    free(buf);
    release(a, N);
    tu_assert_no_leaks();
}

/* A spec without prefix identity, or with it explicitly off (groups 0, one turn), is the plain
 * generator: no session ids, no blocks, and the same requests. */
static void test_off_is_plain(void **state)
{
    (void)state;
    enum { N = 2000 };
    trace_gen_spec plain = spec_of(N, 0, 3, NULL);
    trace_gen_spec off = spec_of(N, 0, 3, "groups", "0", "turns", "fixed:1", NULL);
    assert_false(trace_gen_has_prefix(&plain));
    assert_false(trace_gen_has_prefix(&off));
    grec *a, *b;
    assert_int_equal(collect(&plain, &a, N + 1), N);
    assert_int_equal(collect(&off, &b, N + 1), N);
    assert_same(a, b, N);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(a[i].r.session_id, 0);
        assert_int_equal(a[i].r.n_prefix_blocks, 0);
    }
    release(a, N);
    release(b, N);
    tu_assert_no_leaks();
}

/* ---- bad input -------------------------------------------------------------------------------- */

static void expect_set_error(const char *key, const char *val, const char *msg)
{
    trace_gen_spec s = spec_of(10, 0, 1, NULL), before = s;
    ss_errbuf eb = {""};
    assert_int_equal(trace_gen_spec_set(&s, key, val, &eb), SS_EPARSE);
    if (!strstr(eb.msg, msg))
        fail_msg("%s=%s: '%s' lacks '%s'", key, val, eb.msg, msg);
    assert_memory_equal(&s, &before, sizeof s);
}

static void expect_check_error(trace_gen_spec s, const char *msg)
{
    ss_errbuf eb = {""};
    trace_gen *g = NULL;
    assert_int_equal(trace_gen_spec_check(&s, &eb), SS_EINVAL);
    if (strncmp(eb.msg, msg, strlen(msg)))
        fail_msg("'%s' does not start with '%s'", eb.msg, msg);
    assert_int_equal(trace_gen_create(&g, &s, &eb), SS_EINVAL);
    assert_null(g);
}

static void test_bad_input(void **state)
{
    (void)state;
    expect_set_error("groups", "x", "expected an integer in [0, 100000], got 'x'");
    expect_set_error("groups", "-1", "got '-1'");
    expect_set_error("groups", "100001", "got '100001'");
    expect_set_error("groups", "2.5", "got '2.5'");
    expect_set_error("system", "fixed:0", "'fixed:0': N: must be in [1, 10000000]");
    expect_set_error("system", "normal:3", "unknown distribution");
    expect_set_error("group_zipf", "-1", "expected a number in [0, 100], got '-1'");
    expect_set_error("group_zipf", "many", "got 'many'");
    expect_set_error("turns", "uniform:3:1", "LO must be <= HI");
    expect_set_error("think", "0", "expected seconds in (0, 1e6], got '0'");
    expect_set_error("think", "1e7", "got '1e7'");
    expect_set_error("max_context", "0", "expected an integer in [1, 10000000], got '0'");
    trace_gen_spec s = spec_of(10, 0, 1, NULL), before = s;
    ss_errbuf eb = {""};
    assert_int_equal(trace_gen_spec_set(&s, "rate", "3", &eb), SS_ENOTFOUND);
    assert_memory_equal(&s, &before, sizeof s);

    expect_check_error(spec_of(10, 0, 1, "groups", "2", NULL), "system: groups need");
    expect_check_error(spec_of(10, 0, 1, "system", "fixed:5", NULL), "system: a system-prompt");
    expect_check_error(spec_of(10, 0, 1, "group_zipf", "1", NULL), "group_zipf: needs groups");
    expect_check_error(spec_of(10, 0, 1, "turns", "fixed:2", NULL), "think: turns can exceed");
    expect_check_error(spec_of(10, 0, 1, "think", "3", NULL), "think: needs turns");
    expect_check_error(spec_of(10, 0, 1, "turns", "fixed:1", "think", "3", NULL),
                       "think: needs turns");
    expect_check_error(spec_of(10, 0, 1, "turns", "lognormal:3:1", "think", "3", NULL),
                       "turns: the largest value must be <= 1000, got 10000000");
    expect_check_error(spec_of(10, 0, 1, "turns", "uniform:1:1001", "think", "3", NULL),
                       "turns: the largest value");
    expect_check_error(spec_of(10, 0, 1, "max_context", "900", NULL), "max_context: needs");
    s = spec_of(10, 0, 1, "groups", "1", "system", "fixed:5", NULL);
    s.groups = TRACE_GEN_MAX_GROUPS + 1;
    expect_check_error(s, "groups: must be in [0, 100000]");
    s = spec_of(10, 0, 1, "groups", "1", "system", "fixed:5", NULL);
    s.max_context = TRACE_MAX_TOKENS + 1;
    expect_check_error(s, "max_context: must be in [1, 10000000]");
    s.max_context = 0;
    s.group_zipf = NAN;
    expect_check_error(s, "group_zipf: must be in [0, 100]");
    s = spec_of(10, 0, 1, "turns", "fixed:2", NULL);
    s.think_s = -1;
    expect_check_error(s, "think: must be in (0, 1e6] s, got -1");
    tu_assert_no_leaks();
}

/* The 32-bit block ids run out: a clear error, sticky, and nothing leaks. */
static void test_ids_run_out(void **state)
{
    (void)state;
    trace_gen_spec s = spec_of(100, 0, 1, "groups", "1", "system", "fixed:1024", "prompt",
                               "fixed:1000", NULL);
    trace_gen *g = NULL;
    ss_errbuf eb = {""};
    trace_rec r;
    assert_int_equal(trace_gen_create(&g, &s, &eb), 0);
    trace__conv_set_next_block(g, (uint64_t)UINT32_MAX - 3);
    assert_int_equal(trace_gen_next(g, &r, &eb), 1); /* ids ...-3 and ...-2 */
    assert_int_equal(r.prefix_blocks[3], UINT32_MAX - 2);
    assert_int_equal(trace_gen_next(g, &r, &eb), 1); /* ...-1 and the last, UINT32_MAX */
    assert_int_equal(r.prefix_blocks[3], UINT32_MAX);
    assert_int_equal(trace_gen_next(g, &r, &eb), SS_EINVAL);
    assert_non_null(strstr(eb.msg, "more than 2^32 distinct 512-token prefix blocks"));
    assert_int_equal(trace_gen_next(g, &r, &eb), SS_EINVAL);
    trace_gen_destroy(&g);
    tu_assert_no_leaks();
}

/* Every allocation of creating and running a generator with conversations can fail: a clean
 * SS_ENOMEM and no leak, or (once the failure falls past the last allocation) the full trace. */
static void test_alloc_failures(void **state)
{
    (void)state;
    trace_gen_spec s = spec_of(600, 0, 20, "groups", "3", "system", "fixed:700", "turns",
                               "uniform:1:5", "think", "2", NULL);
    int done = 0;
    for (uint64_t k = 1; k < 500 && !done; k++) {
        trace_gen *g = NULL;
        ss_errbuf eb = {""};
        trace_rec r;
        ss_alloc_fail_after(k);
        int rc = trace_gen_create(&g, &s, &eb);
        size_t n = 0;
        if (!rc)
            while ((rc = trace_gen_next(g, &r, &eb)) == 1)
                n++;
        ss_alloc_fail_after(0);
        if (rc == 0 && n == 600)
            done = 1;
        else {
            assert_int_equal(rc, SS_ENOMEM);
            assert_non_null(strstr(eb.msg, "out of memory"));
        }
        trace_gen_destroy(&g);
        tu_assert_no_leaks();
    }
    assert_true(done);
}

/* Memory follows the conversations in flight, not the trace's length. */
static void test_bounded_memory(void **state)
{
    (void)state;
    trace_gen_spec s = spec_of(0, 1e6, 50, "groups", "4", "system", "fixed:2000", "turns",
                               "uniform:1:9", "think", "20", NULL);
    trace_gen *g = NULL;
    ss_errbuf eb = {""};
    trace_rec r;
    assert_int_equal(trace_gen_create(&g, &s, &eb), 0);
    size_t at_10k = 0;
    for (int i = 1; i <= 400000; i++) {
        assert_int_equal(trace_gen_next(g, &r, &eb), 1);
        if (i == 10000)
            at_10k = ss_alloc_live_bytes();
    }
    size_t at_400k = ss_alloc_live_bytes();
    if (at_400k > 2 * at_10k)
        fail_msg("live bytes %zu after 10,000 requests, %zu after 400,000", at_10k, at_400k);
    trace_gen_destroy(&g);
    tu_assert_no_leaks();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_group),
        cmocka_unit_test(test_groups_popularity),
        cmocka_unit_test(test_turns_extend),
        cmocka_unit_test(test_max_context),
        cmocka_unit_test(test_len_mean),
        cmocka_unit_test(test_determinism_and_csv),
        cmocka_unit_test(test_off_is_plain),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_ids_run_out),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_bounded_memory),
    };
    return cmocka_run_group_tests_name("prefixgen", tests, NULL, NULL);
}
