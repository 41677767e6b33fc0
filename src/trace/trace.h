/* Request traces: streaming readers for the native, Azure LLM inference, Vidur and BurstGPT CSV
 * formats and the Mooncake JSONL format (auto-detected from the first line or forced by name),
 * the synthetic trace generator, and trace statistics. Readers hold one line at a time (plus,
 * with the spread option, the requests that share one timestamp), so memory does not grow with
 * trace length. Not for simulation state: a trace_rec is a plain description of one request. */
#ifndef SS_TRACE_TRACE_H
#define SS_TRACE_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "core/ss_err.h"
#include "core/ss_time.h"

#define TRACE_MAX_LINE 262144   /* longest accepted line in bytes, newline excluded: room for
                                   a Mooncake line with TRACE_MAX_PREFIX_BLOCKS ten-digit ids */
#define TRACE_MAX_TENANTS 65535 /* distinct tenant names per reader */
#define TRACE_MAX_TOKENS 10000000 /* prompt or output tokens per request */
/* Prefix-block ids per request (Mooncake hash_ids). 512-token blocks of TRACE_MAX_TOKENS need
 * 19,532, so every valid prompt fits. */
#define TRACE_MAX_PREFIX_BLOCKS 20000
/* Tokens one prefix-block id names (Mooncake's hash_ids: 512-token blocks; the last may be
 * partial). A request has at most ceil(prompt / TRACE_PREFIX_BLOCK_TOKENS) ids. */
#define TRACE_PREFIX_BLOCK_TOKENS 512
/* Spread option: the most requests, and the most prefix-block ids in total, that may share one
 * timestamp (the lookahead buffer); more is an error. */
#define TRACE_MAX_SPREAD_GROUP 65536
#define TRACE_MAX_SPREAD_BLOCKS (1u << 22)

/* What a "goes backwards" message adds: how to read such a trace anyway. */
#define TRACE_UNSORTED_HINT                                                                    \
    "the trace is not sorted by time (sort it, or read it whole with --sort, or trace_sort = "  \
    "true in a scenario)"

/* Memory trace_reader_set_sort holds per request (its record, which carries the offset of its
 * prefix blocks while sorting; the buffers grow by doubling, so up to twice that at worst). */
#define TRACE_SORT_BYTES_PER_REQUEST sizeof(trace_rec)

/* One request as read from a trace. */
typedef struct trace_rec {
    uint64_t id;          /* request_id column (native), else the 0-based index of the request
                           * among those read (skipped rows not counted) */
    ss_time arrival_ns;   /* arrival time, ns; Azure timestamps are rebased so the first is 0 */
    uint32_t prompt_tokens; /* >= 1 */
    uint32_t output_tokens; /* >= 1 (the prefill emits the first output token) */
    uint16_t tenant;      /* index into the reader's tenant-name table; 0 when absent */
    uint8_t tier;         /* SLA tier, 0 = highest; 0 when absent */
    uint8_t has_slo;      /* bit 0: slo_ttft_ns set, bit 1: slo_tbt_ns set */
    uint64_t session_id;  /* 0 when absent */
    ss_time slo_ttft_ns;  /* per-request TTFT bound, ns (valid when has_slo & 1) */
    ss_time slo_tbt_ns;   /* per-request TBT bound, ns (valid when has_slo & 2) */
    uint64_t line;        /* 1-based line number in the source file */
    /* Prefix-block ids (Mooncake hash_ids: one id per 512-token block of the prompt; equal ids
     * across requests are shared prefix KV-cache blocks). Borrowed from the reader: valid only
     * until the next trace_reader_next or trace_reader_close call; copy them to keep them.
     * NULL with n_prefix_blocks 0 for formats without them. */
    const uint32_t *prefix_blocks;
    uint32_t n_prefix_blocks; /* entries in prefix_blocks, <= TRACE_MAX_PREFIX_BLOCKS */
} trace_rec;

typedef struct trace_reader trace_reader;

/* Open a trace. format is "auto" (detect from the first non-blank line: a line starting with
 * '{' is Mooncake JSONL, anything else a CSV header), "native", "azure", "vidur", "burstgpt"
 * or "mooncake".
 * path "-" reads standard input (a pipe too, and so does a path naming it, such as
 * /dev/stdin); any other path must be a regular file: a FIFO, device or folder is SS_EPARSE
 * "PATH: not a regular file", refused before any read. gzip-compressed input (recognised by its first bytes, not
 * its name) is inflated as it is read, still one line at a time; line numbers count the
 * uncompressed lines, and truncated or corrupt data is "FILE:LINE: gzip: ...". On failure
 * returns SS_EIO / SS_EPARSE / SS_ENOTFOUND / SS_ENOMEM with a one-line "FILE:LINE: field:
 * what is wrong" message in eb, and writes
 * nothing to *r_out. The reader owns its FILE and closes it in trace_reader_close. */
int trace_reader_open(trace_reader **r_out, const char *path, const char *format, ss_errbuf *eb);
/* Same over an already-open stream (borrowed: not closed by the reader); name is used in
 * error messages. For tests and fuzzing (fmemopen). */
int trace_reader_open_stream(trace_reader **r_out, FILE *f, const char *name, const char *format,
                             ss_errbuf *eb);
/* Read the next request into *out. Returns 1 when a request was read, 0 at the end of the
 * trace, or a negative SS_E* code with "FILE:LINE: field: what is wrong" in eb. After an error
 * the reader stays in the error state (later calls return the same code). An empty file, or a
 * file with a header and no requests, is an error. Arrival times must not go backwards.
 * out->prefix_blocks is borrowed (see trace_rec). */
int trace_reader_next(trace_reader *r, trace_rec *out, ss_errbuf *eb);
/* Spread option, off by default; call before the first trace_reader_next. When on, requests
 * that share one arrival time (quantised timestamps, e.g. Mooncake's) are spread evenly over
 * the gap to the next distinct arrival time: k requests at t followed by one at u arrive at
 * t + i * (u - t) / k for i = 0..k-1 (integer ns, rounded down; deterministic). The last
 * group, which has no next time, keeps its time. The reader then buffers one group of equal
 * times (at most TRACE_MAX_SPREAD_GROUP requests and TRACE_MAX_SPREAD_BLOCKS prefix-block ids,
 * else SS_EPARSE from trace_reader_next), and a malformed row is reported when the group before
 * it is read, before that group's requests are returned. Works for every format.
 * Returns 0, or SS_EINVAL (NULL reader, or requests were already read). */
int trace_reader_set_spread(trace_reader *r, int on);
/* Sort the trace by arrival before returning it, instead of refusing a time that goes
 * backwards: the first trace_reader_next reads the whole file into memory (about
 * TRACE_SORT_BYTES_PER_REQUEST bytes per request, plus 4 per Mooncake hash id), sorts it
 * (requests with equal arrivals keep their file order) and later calls return it from there.
 * Errors in any row are reported by that first call. Combines with spread (which then sees
 * sorted times). Returns 0, or SS_EINVAL (NULL reader, or requests were already read). */
int trace_reader_set_sort(trace_reader *r, int on);
/* Rows the format dropped by rule, so far: BurstGPT rows with 0 response tokens (failed
 * requests). 0 for the other formats. Complete after trace_reader_next returned 0. */
uint64_t trace_reader_n_skipped(const trace_reader *r);
/* Close and free. NULL-safe; sets *r to NULL. */
void trace_reader_close(trace_reader **r);
/* Name of the detected or forced format ("native", "azure", "vidur", "burstgpt",
 * "mooncake"); borrowed. */
const char *trace_reader_format(const trace_reader *r);
/* Tenant names seen so far (native tenant column, BurstGPT Model column); index 0 is
 * "default" unless a file names its tenants. Borrowed, valid until close. NULL if idx is out
 * of range. */
const char *trace_reader_tenant_name(const trace_reader *r, uint16_t idx);
uint32_t trace_reader_n_tenants(const trace_reader *r);
/* 64-bit FNV-1a of every byte consumed so far; complete after trace_reader_next returned 0. */
uint64_t trace_reader_digest(const trace_reader *r);
/* Names of the formats, NULL-terminated, for --help and error messages. */
extern const char *const trace_format_names[];

/* ---- synthetic traces ---------------------------------------------------------------- */

typedef enum trace_arrival_kind {
    TRACE_ARRIVAL_POISSON, /* exponential inter-arrivals */
    TRACE_ARRIVAL_GAMMA,   /* Gamma inter-arrivals with the given coefficient of variation */
} trace_arrival_kind;

typedef enum trace_len_kind {
    TRACE_LEN_FIXED,     /* "fixed:N" */
    TRACE_LEN_UNIFORM,   /* "uniform:LO:HI" inclusive */
    TRACE_LEN_LOGNORMAL, /* "lognormal:MEDIAN:SIGMA[:MIN:MAX]" clamped to [MIN, MAX] */
    TRACE_LEN_ZIPF,      /* "zipf:S:MIN:MAX": P(k) ~ 1/(k-MIN+1)^S on [MIN, MAX] */
    TRACE_LEN_QUANTILES, /* "quantiles:P=V,P=V,..." piecewise-linear inverse CDF, P from 0 to 1 */
} trace_len_kind;

#define TRACE_MAX_KNOTS 32

typedef struct trace_len_dist {
    trace_len_kind kind;
    double a, b, c, d;              /* parameters in the order of the spec string */
    int n_knots;                    /* quantiles: number of (p, v) knots */
    double knot_p[TRACE_MAX_KNOTS]; /* increasing, first 0, last 1 */
    double knot_v[TRACE_MAX_KNOTS]; /* non-decreasing, >= 1 */
} trace_len_dist;

/* Length distributions of the default synthetic trace: the Azure LLM inference conversation
 * trace's published mean / p50 / p99 (traces/README.md explains the knots). */
#define TRACE_GEN_PROMPT_DEFAULT "quantiles:0=2,0.5=1020,0.9=1871.4,0.99=4142,1=5921"
#define TRACE_GEN_OUTPUT_DEFAULT "quantiles:0=7,0.5=129,0.9=478.3,0.99=601,1=819"

/* Prefix identity of generated traffic: the generator names its prompts' 512-token blocks with
 * ids as Mooncake's hash_ids do (equal id = equal tokens), so that the prefix cache can find
 * the blocks requests share. */
#define TRACE_GEN_BLOCK_TOKENS 512      /* tokens per prefix-block id */
#define TRACE_GEN_MAX_GROUPS 100000     /* system-prompt groups */
#define TRACE_GEN_MAX_TURNS 1000        /* largest value of the turns distribution */
/* Default max_context: the longest context among the shipped model profiles (Mistral-7B,
 * Mixtral-8x7B, Qwen2.5-7B/72B: their config.json's max_position_embeddings, 32,768). */
#define TRACE_GEN_MAX_CONTEXT_DEFAULT 32768

typedef struct trace_gen_spec {
    uint64_t seed;           /* all randomness derives from this */
    uint64_t n_requests;     /* stop after this many (0 = use duration_s) */
    double duration_s;       /* stop at the first arrival beyond this (0 = use n_requests) */
    double rate;             /* mean requests (turns) per second, > 0 */
    trace_arrival_kind arrival; /* of requests; of conversations' first turns with turns */
    double cv;               /* Gamma coefficient of variation, > 0 (1 = Poisson-like) */
    trace_len_dist prompt;   /* prompt-token distribution (a turn's new user message) */
    trace_len_dist output;   /* output-token distribution */
    const char *tenant;      /* tenant name written to the native CSV (borrowed) */
    /* Prefix identity; all zero (as in a zeroed spec) = none, every request independent. */
    uint32_t groups;         /* shared system prompts: number of groups, 0 = none */
    trace_len_dist system;   /* system-prompt tokens, drawn once per group (with groups) */
    double group_zipf;       /* group popularity: P(group g) ~ 1/(g+1)^S; 0 = uniform */
    trace_len_dist turns;    /* turns per conversation, <= TRACE_GEN_MAX_TURNS; zeroed =
                                fixed:1 (single requests) */
    double think_s;          /* mean think time, s (exponential): a turn arrives this long
                                after the previous turn's arrival; needed with turns */
    uint32_t max_context;    /* prompt-token cap: a later turn whose prompt would exceed it
                                ends its conversation, a first turn longer than it is cut to
                                it; 0 = TRACE_GEN_MAX_CONTEXT_DEFAULT */
} trace_gen_spec;

/* Parse a length distribution spec ("lognormal:1020:0.5", ...). 0 or SS_EPARSE with a
 * message naming what is wrong in eb. */
int trace_len_dist_parse(trace_len_dist *d, const char *spec, ss_errbuf *eb);
/* Check a generator spec: rate > 0, cv > 0, one of n_requests/duration_s set, valid
 * distributions, and the prefix-identity fields (system with groups, think with turns that
 * can exceed 1, each only where it applies). 0 or SS_EINVAL with eb set ("KEY: ..."). */
int trace_gen_spec_check(const trace_gen_spec *s, ss_errbuf *eb);
/* Set one prefix-identity field of s from its KEY=VALUE text, as the synthetic spec and
 * `trace gen` take it: groups (count), system (distribution), group_zipf (number >= 0), turns
 * (distribution), think (seconds > 0), max_context (tokens). 0; SS_EPARSE with a message
 * about the value (not naming the key: the caller does) in eb, s unchanged; or SS_ENOTFOUND
 * for any other key (eb and s unchanged). Cross-field checks are trace_gen_spec_check's. */
int trace_gen_spec_set(trace_gen_spec *s, const char *key, const char *val, ss_errbuf *eb);
/* The keys trace_gen_spec_set knows, comma-separated, for messages. */
extern const char trace_gen_prefix_keys[];
/* 1 when s gives its requests prefix identity (groups > 0, or turns that can exceed 1): the
 * generator then writes session_id and hash_ids; 0 for today's independent requests. */
int trace_gen_has_prefix(const trace_gen_spec *s);

typedef struct trace_gen trace_gen;
/* Create a generator; same spec gives the same sequence on every machine. Arrival, prompt and
 * output use separate rng streams (SS_RNG_STREAM_TRACE_*), and so does each draw of the
 * prefix identity (group, system length, turns, think time), so a spec without it gives the
 * same requests as before it existed. 0, SS_EINVAL or SS_ENOMEM. */
int trace_gen_create(trace_gen **g_out, const trace_gen_spec *spec, ss_errbuf *eb);
/* Next request: 1, 0 when the spec's count or duration is reached, or (only with prefix
 * identity) SS_ENOMEM, or SS_EINVAL when the 2^32 block ids are used up, with eb set; the
 * generator then stays in that state. Requests come in arrival order (equal times: turns of
 * running conversations before a new conversation). out->prefix_blocks is borrowed from the
 * generator, valid until the next call (see trace_rec). With prefix identity, out->session_id
 * is the conversation's number (1, 2, ...) and the prefix blocks are: the group's system-prompt
 * blocks (its full 512-token blocks only, shared by the group), then the conversation's own
 * (new ids; its later turns repeat them, as their prompts extend the earlier ones). */
int trace_gen_next(trace_gen *g, trace_rec *out, ss_errbuf *eb);
/* Free a generator; NULL-safe, sets *g to NULL. */
void trace_gen_destroy(trace_gen **g);
/* What trace_gen_write_csv wrote: its requests and the last one's arrival. */
typedef struct trace_gen_written {
    uint64_t requests;
    ss_time last_ns;
} trace_gen_written;
/* Write the whole generated trace as native CSV to f (header included; session_id and
 * hash_ids columns with prefix identity), and what it wrote into *out (may be NULL). 0, SS_EIO,
 * or trace_gen_next's error. */
int trace_gen_write_csv(const trace_gen_spec *spec, FILE *f, trace_gen_written *out,
                        ss_errbuf *eb);

/* ---- statistics ---------------------------------------------------------------------- */

typedef struct trace_dist_stats {
    double mean;
    uint32_t min, p50, p90, p99, max;
} trace_dist_stats;

typedef struct trace_stats {
    uint64_t count;        /* requests */
    ss_time first_ns, last_ns; /* first and last arrival */
    double span_s;         /* last - first arrival, s */
    double rate;           /* count / span (0 when span is 0) */
    double interarrival_cv; /* coefficient of variation of inter-arrival times */
    trace_dist_stats prompt, output;
    uint32_t n_tenants;
} trace_stats;

/* Read the whole trace from r and compute its statistics (percentiles are exact: nearest
 * rank over the sorted values). 0, or the reader's error / SS_ENOMEM with eb set. */
int trace_stats_compute(trace_reader *r, trace_stats *out, ss_errbuf *eb);

#endif
