/* runner/: the static-best baseline, a container-level cluster sized to the load at hand: a
 * search over integer allocations of the cluster's GPUs to the tenants (whole containers of
 * tp x pp GPUs, at least one per tenant), each candidate judged by a full replay under the
 * container policy, for the allocation with the lowest worst-tenant SLA miss. The search
 * itself (runner_alloc_search) takes a judge callback, so it runs on any function of the
 * allocation. Not for reading options, nor for storing the candidates (only the chosen run is
 * stored, by the command that runs it). */
#ifndef SS_RUNNER_STATIC_BEST_H
#define SS_RUNNER_STATIC_BEST_H

#include "runner/run.h"

#include "core/ss_limits.h"

#include <stdint.h>

/* Candidate replays of one static-best search by default (3 tenants on 8 GPUs take 5 to 10),
 * and the most that may be asked for (--search-replays). */
#define RUNNER_STATIC_BEST_REPLAYS 24
#define RUNNER_STATIC_BEST_MAX_REPLAYS 200

/* What a judge found of one allocation. */
typedef struct runner_alloc_score {
    double miss[SS_MAX_TENANTS]; /* each tenant's SLA violations / requests judged (0 to 1) */
    double goodput_tok_per_s;    /* every tenant's output tokens of SLA-meeting requests /
                                    window */
    double pooled;               /* every tenant's requests together: SLA violations /
                                    requests (0 to 1) */
    double violations[SS_MAX_TENANTS]; /* each tenant's requests that missed their SLA (or a
                                    figure in proportion: what the pooled miss is made of) */
    double worst;                /* set by the search: the highest of miss[] */
    int stopped;                 /* the judge stopped once the judged miss was certain to
                                    exceed its `above`: the misses and violations are those so
                                    far (lower bounds), the goodput is not measured (0) */
} runner_alloc_score;

/* Judge allocation containers[0..n_tenants): fill out's miss[] and goodput_tok_per_s. The
 * search needs the exact score only while the miss it judges by (runner_alloc_judged) is at
 * most `above` (+INFINITY: always): beyond it the candidate cannot be chosen nor change the
 * climb's path (see runner_alloc_search), so a judge may stop as soon as that miss is certain
 * to exceed `above`, with out->stopped set and the misses so far, the judged one above
 * `above`. 0, or an SS_E* code with eb set, which stops the search. */
typedef int runner_alloc_judge_fn(void *ud, const uint32_t *containers, double above,
                                  runner_alloc_score *out, ss_errbuf *eb);

typedef struct runner_alloc_problem {
    uint32_t n_tenants;                       /* 1 to SS_MAX_TENANTS */
    uint32_t gpus;                            /* the cluster's GPUs */
    uint32_t unit[SS_MAX_TENANTS];            /* GPUs of one container of each tenant (tp x
                                                 pp), >= 1 */
    double demand_tok_per_s[SS_MAX_TENANTS];  /* offered load of each tenant (prompt and
                                                 output tokens its trace asks for / s), >= 0 */
    int max_replays;                          /* 1 to RUNNER_STATIC_BEST_MAX_REPLAYS */
    runner_criterion criterion;               /* what the chosen allocation is best by: the
                                                 worst tenant's miss (0, the default), the
                                                 pooled miss, or tenant i_tenant's */
    uint32_t i_tenant;                        /* under RUNNER_CRIT_TENANT */
    /* Whether allocation a can be laid out at all (GPU shares: their placements may need more
     * GPUs than the units add up to); NULL: every allocation within the GPUs can. The search
     * neither starts from nor judges one that cannot. */
    int (*fits)(void *ud, const uint32_t *a);
    void *fits_ud;
    int multi_take;  /* a neighbour may take several containers of a smaller size from one
                        tenant to give one larger container to another (GPU shares beside
                        whole GPUs); 0: one container for one */
} runner_alloc_problem;

typedef struct runner_alloc_result {
    uint32_t start[SS_MAX_TENANTS];      /* containers of the proportional start */
    uint32_t containers[SS_MAX_TENANTS]; /* containers of the chosen allocation */
    runner_alloc_score score;            /* the chosen allocation's */
    int n_replays;                       /* judge calls made */
    int capped;                          /* the search stopped at max_replays */
} runner_alloc_result;

/* The miss score s is judged by under p's criterion: s->worst (set by the search), s->pooled
 * or tenant p->i_tenant's. */
double runner_alloc_judged(const runner_alloc_problem *p, const runner_alloc_score *s);

/**
 * Search the allocations of p->gpus GPUs to the tenants: start from the allocation
 * proportional to each tenant's demand (at least one container each, then whole containers
 * by largest shortfall while any fits), then hill-climb: judge every allocation one container
 * away that gives the worst tenant(s) a container (taken from another tenant that keeps at
 * least one, or from free GPUs; under p->multi_take as many of the other's containers as
 * make room for it), move to the best of them while that lowers the tenants'
 * misses sorted from the highest down, compared lexicographically (leximin: the worst miss
 * first, so a tie for the worst is a step when one of the tied tenants gains), and stop when
 * none does or after p->max_replays judge calls. No allocation is judged twice.
 * The chosen one is the best judged: the lowest miss of p->criterion (the worst tenant's, the
 * pooled one or one tenant's), then the lowest worst miss, then the highest goodput, then
 * the lexicographically smallest containers[]. A neighbour is judged with `above` the judged
 * miss of the allocation it neighbours: one certain to exceed it is worse than that allocation
 * by both orders (the climb's and the choice's compare that miss first; the climb's judged
 * miss never grows), so it is neither stepped to nor chosen, then or later, and the
 * search's path and choice are those of judging every candidate in full. fn and ud are
 * borrowed.
 * @return 0 with *out filled; SS_EINVAL when p is out of range or one container of every
 *         tenant does not fit in p->gpus; or fn's error.
 */
int runner_alloc_search(const runner_alloc_problem *p, runner_alloc_judge_fn *fn, void *ud,
                        runner_alloc_result *out, ss_errbuf *eb);

typedef struct runner_static_best_opts {
    const char *profiles;      /* catalog directory (NULL: catalog_default_dir) */
    const char *config;        /* the scenario file, for labels (NULL: none) */
    const char *point;         /* the point searched, for stderr ("policy=static-best;rate=1") */
    int progress;              /* a line per candidate on a terminal */
    int quiet;                 /* no "chose ..." line when the search ends (its caller says
                                  what it found its own way: capacity --progress searches) */
    int max_replays;           /* candidate replays at most (0: RUNNER_STATIC_BEST_REPLAYS) */
    runner_criterion criterion; /* what the chosen allocation is best by (0: the worst
                                   tenant's miss) */
    const char *tenant;        /* the tenant of RUNNER_CRIT_TENANT (a tenant of the scenario) */
    int full;                  /* replay every candidate to its end (0: stop one as soon as it
                                  cannot be chosen: runner_alloc_judge_fn) */
    const char *share;         /* "mig", "mps", "mux": lay the containers out as GPU shares of that
                                  kind (runner_bundle_share); NULL: whole GPUs */
} runner_static_best_opts;

/* One replay of scenario sc (checked, its bundle applied and its load scaled) that stores
 * nothing and shows no warnings (they are a candidate's, not the run's), scored into out:
 * each tenant's miss and violations, the worst and pooled miss and the goodput. With a finite
 * `above`, the replay stops as soon as the miss p's criterion judges is certain to exceed it
 * (runner_stop; out->stopped, the misses so far). 0, or the replay's SS_E* code with eb set. */
int runner_replay_score(scn_scenario *sc, const runner_run_opts *ro,
                        const runner_alloc_problem *p, double above, runner_alloc_score *out,
                        ss_errbuf *eb);

/* A search's progress line for candidate n (what: its allocation or values), on stderr:
 * "slicesim: WHO: candidate N: WHAT: SLA miss X% (all tenants), goodput Y tok/s". */
void runner_candidate_line(const char *who, int n, const char *what,
                           const runner_alloc_score *s);

/* The end of a search's "chose" line on stderr: ", N stopped early" when n_stopped of its
 * candidates were (runner_alloc_judge_fn), and the newline. */
void runner_stopped_note(int n_stopped);

/* The problem of scenario sc (checked, its bundle applied and its load scaled): the cluster's
 * GPUs (nodes x GPUs per node, or the GPUs of the scenario's own containers when it names no
 * nodes), each tenant's container size, and with demand its offered load (the workload read
 * once, tokens over the run's window; else 0). 0, or an SS_E* code with eb set: SS_EINVAL when
 * one container of every tenant does not fit. */
int runner_static_best_problem(const scn_scenario *sc, const runner_static_best_opts *o,
                               int demand, runner_alloc_problem *p_out, ss_errbuf *eb);

/**
 * Run the static-best search on scenario sc (checked, its bundle applied and its load scaled),
 * each candidate a replay of sc with its tenants' replicas (and max_replicas) set and nothing
 * stored, then set sc's tenants to the chosen allocation, so that the caller runs and stores
 * it. A line "slicesim: static-best: POINT: chose ..." goes to stderr; note (size n) gets
 * "chat=3 code=3 assist=2 containers, 7 candidate replays" for the run's parameters.
 * @return 0, or an SS_E* code with eb set (sc's replicas are then undefined: discard it).
 */
int runner_static_best(scn_scenario *sc, const runner_static_best_opts *o,
                       runner_alloc_result *out, char *note, size_t n, ss_errbuf *eb);

#endif
