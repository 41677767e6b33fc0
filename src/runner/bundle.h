/* runner/: policy bundles, the "policies" that compare and sweep set side by side. A
 * bundle is a built-in name (container, realloc, infaas, llumnix, llumnix-tiers, slice,
 * static-best: the container policy on an allocation searched for at each load; slice-sized:
 * SliceScheduler on an allocation searched for the same way, each candidate replayed with
 * SliceScheduler; compare and capacity run the search, runner/static_best.h) or
 * LABEL:SECTION.KEY=VALUE[+SECTION.KEY=VALUE...], scenario assignments under a label of one's
 * own (e.g. "sarathi-slice:policy.batching=sarathi+policy.ops=slice"). */
#ifndef SS_RUNNER_BUNDLE_H
#define SS_RUNNER_BUNDLE_H

#include "core/ss_err.h"
#include "scenario/scenario.h"

#include <stddef.h>

#define RUNNER_LABEL_MAX 48

/* Check a bundle spec and write its label to label (RUNNER_LABEL_MAX bytes). 0 or SS_EPARSE. */
int runner_bundle_label(const char *spec, char *label, ss_errbuf *eb);
/* Apply the bundle's assignments to sc; where names their origin in messages ("--policies",
 * "exp.ini:4: grid"; see scn_set_from). 0, or the scenario's error (SS_EPARSE...). */
int runner_bundle_apply(scn_scenario *sc, const char *spec, const char *where, ss_errbuf *eb);
/* A --policies list (arg) split in place in text, a copy of it: up to max bundles into
 * policy[], each checked and its label in label[], labels distinct. The number of bundles, or
 * SS_EPARSE with what is wrong in eb (the list's shape, a bundle, a label twice). */
int runner_bundles_parse(const char *arg, char *text, char **policy,
                         char (*label)[RUNNER_LABEL_MAX], int max, ss_errbuf *eb);
/* The scenario a bundle runs: config with the --set assignments (sets[0..n_sets-1]), the
 * database path (NULL: the scenario's) and the bundle applied, not yet checked or scaled. 0, or
 * SS_ENOMEM / the scenario's error with eb set. */
int runner_bundle_scenario(const char *config, const char *const *sets, size_t n_sets,
                           const char *db, const char *spec, scn_scenario **out, ss_errbuf *eb);
/* Whether spec is a bundle whose scenario is searched for at each point: an allocation search
 * (static-best, slice-sized, llumnix-sized; runner_bundle_searches_alloc) or a knob search
 * (slice-tuned, or any bundle with an assignment KEY=V1|V2|...; runner/knob_search.h). The
 * command runs the search (runner_bundle_search) on the point's scenario, its assignments
 * applied, before the run. */
int runner_bundle_searches(const char *spec);
/* Whether spec's search is the allocation search of runner/static_best.h. */
int runner_bundle_searches_alloc(const char *spec);
/* The kind of GPU share ("mig", "mps", "mux") the allocation search of bundle spec lays out, or NULL
 * (whole GPUs, or no allocation search). */
const char *runner_bundle_share(const char *spec);

/* A bundle's searched keys: each assignment KEY=V1|V2|... (runner_bundle_apply sets V1). */
#define RUNNER_KNOBS_MAX 8
#define RUNNER_KNOB_VALUES_MAX 16
typedef struct runner_knob {
    char key[128];                            /* "policy.slice_period_ms" */
    char value[RUNNER_KNOB_VALUES_MAX][64];   /* value[0]: the starting one */
    int n;                                    /* 2 to RUNNER_KNOB_VALUES_MAX */
} runner_knob;
typedef struct runner_knobs {
    runner_knob knob[RUNNER_KNOBS_MAX];
    int n;                                    /* 0: nothing searched */
} runner_knobs;
/* spec's searched keys into out, in the order they appear. 0, or SS_EPARSE (an unknown
 * bundle, an empty value, too many keys or values, a key twice). */
int runner_bundle_knobs(const char *spec, runner_knobs *out, ss_errbuf *eb);
/* Whether scenario sc (a bundle applied) asks for re-allocation (cluster container with
 * realloc_period_s > 0) or auto-scaling (a llumnix cluster with scale_period_s > 0), which act
 * only on a tenant whose max_replicas is above its replicas, while no tenant has any: then 1
 * with a one-line note for stderr in buf (size n), naming label and how to give headroom;
 * else 0. Reads the two parameters from sc->params (marking them used: call it on a scenario
 * built for checks, not on the one that runs). */
int runner_bundle_headroom_note(scn_scenario *sc, const char *label, char *buf, size_t n);
/* The built-in bundle names, comma-separated, for messages and --help. */
const char *runner_bundle_names(void);

/* Split a comma-separated list in place: fills up to max pointers into s; returns the count, or
 * -1 when there are more than max items or an item is empty. */
int runner_split_list(char *s, char **items, int max);

#endif
