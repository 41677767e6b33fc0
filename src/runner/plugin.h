/* runner/: loading a policy plug-in (policy/plugin.h) from a shared object. Not for parsing
 * options (app/cli_plugin.c). */
#ifndef SS_RUNNER_PLUGIN_H
#define SS_RUNNER_PLUGIN_H

#include "core/ss_err.h"

/* Load the plug-in at path (a bare name is taken in the current folder): every symbol resolved
 * now, its ABI (slicesim_plugin_abi) checked against this slicesim's, its slicesim_plugin_init
 * called once; the library stays loaded. Not thread-safe: before the first run. 0, or SS_EPARSE
 * with eb saying "PATH: why" (cannot be loaded, no plug-in, another ABI, or its init's message;
 * after a failed init some of its policies may be registered: run nothing then). */
int runner_plugin_load(const char *path, ss_errbuf *eb);

#endif
