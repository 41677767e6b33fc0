/* runner/: the knob search of a bundle whose assignments list alternatives (slice-tuned, or
 * LABEL:...+KEY=V1|V2|...): at each probed load, a coordinate search over those values, each
 * candidate judged by a replay of the point's scenario under the same criterion and cap on
 * candidate replays as static-best's allocation search, and the dispatch of a searching
 * bundle to its search. Not for parsing the alternatives (runner/bundle.h). */
#ifndef SS_RUNNER_KNOB_SEARCH_H
#define SS_RUNNER_KNOB_SEARCH_H

#include "runner/bundle.h"
#include "runner/static_best.h"

/* What a knob search found. */
typedef struct runner_knob_result {
    int choice[RUNNER_KNOBS_MAX]; /* the chosen value of each knob (an index into value[]) */
    runner_alloc_score score;     /* the chosen candidate's */
    int n_replays;                /* candidates replayed */
    int capped;                   /* the search stopped at the cap */
} runner_knob_result;

/* Judge candidate choice[0..k->n) (value indices): fill out. The search needs the exact score
 * only while the candidate's judged miss is at most `above` (+INFINITY: always); a judge may
 * stop as runner_alloc_judge_fn's may. 0 or an SS_E* code with eb set, which stops the
 * search. */
typedef int runner_knob_judge_fn(void *ud, const int *choice, double above,
                                 runner_alloc_score *out, ss_errbuf *eb);

/**
 * The coordinate search over knobs k: judge the start (every knob at its first value), then
 * for each knob in order judge every other value of it with the others at the best found so
 * far, and keep the best. It stops when the best's miss under p's criterion is 0, when every
 * knob has been tried, or at p->max_replays candidates (each tenant's miss and p's criterion
 * as in runner_alloc_search; p's GPUs and units are not read). Best: the lowest miss by the
 * criterion, then the lowest worst miss, then the highest goodput, then the earlier judged.
 * A candidate after the start is judged with `above` the best's judged miss: one certain to
 * exceed it cannot become the best, so stopping it leaves the search's path and choice as
 * they are with every candidate judged in full.
 * @return 0 with *out filled; SS_EINVAL when k has no knob or p's cap is out of range; or
 *         fn's error.
 */
int runner_knob_search(const runner_knobs *k, const runner_alloc_problem *p,
                       runner_knob_judge_fn *fn, void *ud, runner_knob_result *out,
                       ss_errbuf *eb);

/* Check every listed value of bundle spec's knobs on scenario sc (checked, spec applied): each
 * set in turn, the others at their first, and the scenario and its run set up
 * (runner_run_check with ro), so that a value the policy refuses fails before anything runs;
 * sc is left at the first values; a bundle with no listed values checks nothing. 0, or the
 * error with the key and value in eb. */
int runner_bundle_check_knobs(scn_scenario *sc, const char *spec, const runner_run_opts *ro,
                              ss_errbuf *eb);

/**
 * Run bundle spec's search on scenario sc (checked, spec applied and its load scaled): the
 * allocation search (runner_static_best) for static-best, slice-sized and llumnix-sized, the
 * knob search for a bundle with alternatives, each candidate a replay of sc storing nothing;
 * then leave sc set to the chosen candidate for the caller to run and store. A line
 * "slicesim: ...: POINT: chose ..." goes to stderr; note (size n) gets what was chosen and the
 * candidate replays ("policy.slice_period_ms=5 policy.slice_max_whatifs=16 ..., 7 candidate
 * replays"), for the run's parameters, and *n_replays (when not NULL) the candidates replayed.
 * @return 0, or an SS_E* code with eb set (sc is then undefined: discard it).
 */
int runner_bundle_search(scn_scenario *sc, const char *spec, const runner_static_best_opts *o,
                         char *note, size_t n, int *n_replays, ss_errbuf *eb);

#endif
