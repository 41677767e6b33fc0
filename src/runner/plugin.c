/* Policy plug-ins built outside the tree (policy/plugin.h): loaded, checked and initialised
 * once, before any run, so that their policies are found by name like the built-ins. */
#include "runner/plugin.h"

#include "policy/plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int runner_plugin_load(const char *path, ss_errbuf *eb)
{
    /* dlopen searches the library path for a bare name: a file in this folder needs "./" */
    char buf[4096];
    const char *file = path;
    if (!strchr(path, '/')) {
        if (snprintf(buf, sizeof buf, "./%s", path) >= (int)sizeof buf)
            return ss_err(eb, SS_EPARSE, "%.200s...: name too long", path);
        file = buf;
    }
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return ss_err(eb, SS_EPARSE, "%s: cannot load: %s", path, why ? why : "?");
    }
    const uint32_t *abi = dlsym(h, "slicesim_plugin_abi");
    int (*init)(ss_errbuf *) = NULL;
    *(void **)&init = dlsym(h, "slicesim_plugin_init");
    if (!abi || !init) {
        dlclose(h);
        return ss_err(eb, SS_EPARSE, "%s: not a slicesim plug-in (it defines no %s; see "
                      "plugins/template)", path,
                      abi ? "slicesim_plugin_init" : "slicesim_plugin_abi");
    }
    if (*abi != SLICESIM_PLUGIN_ABI) {
        uint32_t had = *abi;
        dlclose(h);
        return ss_err(eb, SS_EPARSE, "%s: built for plug-in ABI %u, this slicesim has %u: "
                      "rebuild it against this slicesim's source", path, (unsigned)had,
                      (unsigned)SLICESIM_PLUGIN_ABI);
    }
    eb->msg[0] = '\0';
    if (init(eb)) { /* its registrations may be half done: the caller runs nothing */
        if (!eb->msg[0])
            return ss_err(eb, SS_EPARSE, "%s: its init failed without saying why", path);
        return ss_err_prefix(eb, SS_EPARSE, "%s", path);
    }
    return SS_OK;
}

