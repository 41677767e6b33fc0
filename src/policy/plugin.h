/* What a policy plug-in built outside the tree defines, for `slicesim ... --plugin FILE.so`:
 * the plug-in ABI it was built for, and an init function that registers its policies with
 * pol_route_register, pol_batch_register, pol_cluster_register or pol_place_register
 * (policy/policy.h). slicesim loads the file with every symbol resolved at once, refuses it
 * when its ABI differs from its own, then calls its init once, before any run. The template
 * in plugins/template shows the whole of it. */
#ifndef SS_POLICY_PLUGIN_H
#define SS_POLICY_PLUGIN_H

#include "policy/policy.h"

#include <stdint.h>

/* The ABI a plug-in is built for: the policy ABI (POL_ABI_VERSION), which changes whenever a
 * policy's hooks, decisions or the cluster state they read change. */
#define SLICESIM_PLUGIN_ABI POL_ABI_VERSION

/* The two symbols a plug-in defines. SLICESIM_PLUGIN_DECLARE() defines the first. */
extern const uint32_t slicesim_plugin_abi;
/* Register the plug-in's policies: 0, or an SS_E* code with eb saying what failed (a
 * register call's SS_EINVAL: a name taken). */
int slicesim_plugin_init(ss_errbuf *eb);

#define SLICESIM_PLUGIN_DECLARE() const uint32_t slicesim_plugin_abi = SLICESIM_PLUGIN_ABI

#endif
