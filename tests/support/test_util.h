/* Helpers shared by the cmocka unit tests: temporary directories, file writing, paths to the
 * source tree and to ../shared/data, the allocator leak check every test ends with, and an
 * in-memory request source for the simulator. */
#ifndef SS_TESTS_TEST_UTIL_H
#define SS_TESTS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "catalog/catalog.h"
#include "core/ss_params.h"
#include "gsim/gsim.h"
#include "trace/trace.h"

/* Path under the source tree (SS_SOURCE_ROOT env or the configured one); static buffer. */
const char *tu_src_path(const char *rel);
/* Path under the public data folder ($SLICESIM_DATA, else ../shared/data beside the source
 * tree; tools/get-data.sh fetches it), or NULL when that data is not present. */
const char *tu_shared_path(const char *rel);
/* A fresh empty directory under $TMPDIR; removed by tu_tmpdir_cleanup. Static buffer. */
const char *tu_tmpdir(void);
void tu_tmpdir_cleanup(void);
/* Write text to dir/name; returns the full path in a static rotating buffer. */
const char *tu_write_file(const char *dir, const char *name, const char *text);
/* Fail the test unless every byte allocated through ss_alloc has been freed. */
void tu_assert_no_leaks(void);
/* The first column of the first row of sql on the SQLite database at path, read with plain
 * SQLite (not the store); fails the test when the query cannot run or returns no row. */
int64_t tu_sql_int(const char *path, const char *sql);

/* Requests from an array, for gsim_run: pass tu_recs_next and a tu_recs {recs, n, 0}. */
typedef struct tu_recs {
    const trace_rec *recs;
    size_t n, i;
} tu_recs;
int tu_recs_next(void *ud, trace_rec *out, ss_errbuf *eb);

/* Completed requests collected by trace id, for gsim_run's sink: pass tu_collect_req and a
 * tu_collect whose r has room for every trace id (the caller allocates and frees it). */
typedef struct tu_collect {
    metrics_req *r; /* by trace id */
    size_t n_calls;
    size_t dup;     /* calls for a trace id that had finished already (reported twice) */
} tu_collect;
int tu_collect_req(void *ud, const metrics_req *r, ss_errbuf *eb);
/* A tu_collect with room for trace ids 0..n-1 (free its r). */
tu_collect tu_collect_new(size_t n);

/* The start of a simulator fixture: the source tree's catalog, a parameter set, and cfg at
 * gsim's defaults on an A100-80G with those parameters (the model or tenants are the test's).
 * 0, or -1 when the catalog does not load. */
int tu_sim_setup(catalog **cat, ss_params **params, gsim_config *cfg);

/* The simulator fixture the unit tests share: tu_sim_setup's catalog, parameters and cfg (with
 * llama-2-7b as the single tenant's model), and room for the test's tenants (cfg.tenants points
 * at none until the test sets it). */
typedef struct tu_sim {
    catalog *cat;
    ss_params *params;
    gsim_config cfg;
    gsim_tenant ten[4];
} tu_sim;
/* cmocka setup and teardown for it: *state gets a fresh tu_sim; teardown frees it, removes
 * the temporary directories and fails the test on a leak. */
int tu_sim_fixture_setup(void **state);
int tu_sim_fixture_teardown(void **state);

/* One request: id, arrival at t_s seconds, prompt and output tokens, session id (0: none). */
static inline trace_rec tu_rec(uint64_t id, double t_s, uint32_t prompt, uint32_t output,
                               uint64_t session)
{
    return (trace_rec){.id = id, .arrival_ns = ss_time_from_s(t_s), .prompt_tokens = prompt,
                       .output_tokens = output, .session_id = session};
}

/* A whole replay of recs[0..n) with f's configuration, results to c when set (NULL: none); fails
 * the test on an error. The caller destroys the returned simulator. */
gsim *tu_sim_run(tu_sim *f, const trace_rec *recs, size_t n, tu_collect *c);

/* n requests of tu_synth_conv's load in 23 sessions whose prompts (600 to 2,099 tokens) a
 * session repeats, so that prefix caching has something to find. calloc'd: the caller frees. */
trace_rec *tu_synth_sessions(size_t n, double rate, uint64_t seed);

/* Replay recs[0..n) to just past the last arrival, fork every container there, and run the fork
 * and the replay to the end: every request that finishes after the fork point must have the same
 * first token and end in both (asserted). *checked gets how many did, *fork_calls the fork's
 * sink calls. Returns the finished replay (the caller destroys it). */
gsim *tu_fork_matches_replay(tu_sim *f, const trace_rec *recs, size_t n, size_t *checked,
                             uint64_t *fork_calls);

/* n requests of an Azure-conversation-like load: Poisson arrivals at rate req/s, lognormal
 * prompts (median ~1020 tokens) and outputs (median ~129 + min_output); deterministic in seed.
 * calloc'd: the caller frees. */
trace_rec *tu_synth_conv(size_t n, double rate, uint64_t seed, uint32_t min_output);

#endif
