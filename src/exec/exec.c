/* The executor registry and the wrappers every caller goes through: one place checks the
 * plug-in's ABI, allocates its private state, and turns "backend not built in" into one clear
 * line. */
#include "exec/exec.h"

#include "core/ss_alloc.h"
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct exec {
    const exec_ops *ops;
    exec_device dev;
    void *priv; /* points into tail */
    _Alignas(16) unsigned char tail[];
};

static const exec_ops *const backends[] = {&exec_sim, NULL};
static const char *const names[] = {
#if HAVE_CUDA_EXEC
    "cuda",
#endif
    "sim", NULL,
};

/* $SLICESIM_CUDA_MODULE, when set: also honoured by a build without the CUDA executor, so that
 * one built apart (the tests' CPU stand-in, libslicesim-cudaemu.so) can be plugged in. */
static const char *module_env(void)
{
    const char *env = getenv("SLICESIM_CUDA_MODULE");
    return env && *env ? env : NULL;
}

/* The CUDA executor module: $SLICESIM_CUDA_MODULE, else the build tree's, else the one beside
 * the executable, else the installed one. Loaded once, never unloaded. */
static const exec_ops *load_cuda(ss_errbuf *eb)
{
    static const exec_ops *ops;
    if (ops || (!HAVE_CUDA_EXEC && !module_env()))
        return ops;
    char beside[4200] = "";
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(beside, sizeof beside, "%s/libslicesim-cuda.so", exe);
        }
    }
    const char *paths[] = {module_env(), HAVE_CUDA_EXEC ? SS_CUDA_MODULE_BUILD : NULL,
                           HAVE_CUDA_EXEC ? beside : NULL,
                           HAVE_CUDA_EXEC ? SS_CUDA_MODULE_INSTALL : NULL};
    char why[300] = "not found";
    void *lib = NULL;
    for (size_t i = 0; !lib && i < sizeof paths / sizeof *paths; i++) {
        if (!paths[i] || !*paths[i] || (i > 0 && access(paths[i], R_OK)))
            continue;
        if (!(lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)))
            snprintf(why, sizeof why, "%s", dlerror());
    }
    if (!lib) {
        ss_err(eb, SS_ENOTFOUND, "cannot load the CUDA executor module libslicesim-cuda.so (%s)",
               why);
        return NULL;
    }
    const exec_ops *(*get)(void) = NULL;
    void *sym = dlsym(lib, "slicesim_exec_cuda_ops");
    memcpy(&get, &sym, sizeof sym); /* POSIX: object pointer to function pointer */
    if (!get || !(ops = get()) || ops->abi_version != EXEC_ABI_VERSION) {
        ops = NULL;
        ss_err(eb, SS_ENOTFOUND, "the CUDA executor module does not match this slicesim");
    }
    return ops;
}

const exec_ops *exec_find(const char *name)
{
    if (!strcmp(name, "cuda"))
        return load_cuda(NULL);
    for (int i = 0; backends[i]; i++)
        if (!strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}

const char *const *exec_backend_names(void) { return names; }

int exec_have_cuda(void) { return HAVE_CUDA_EXEC; }

int exec_create(exec **x_out, const char *backend, const exec_config *cfg, ss_errbuf *eb)
{
    *x_out = NULL;
    int cuda = !strcmp(backend, "cuda");
    const exec_ops *ops = cuda ? load_cuda(eb) : exec_find(backend);
    if (!ops && cuda && (HAVE_CUDA_EXEC || module_env()))
        return SS_ENOTFOUND; /* eb says why the module did not load */
    if (!ops && cuda)
        return ss_err(eb, SS_ENOTFOUND,
                      "no GPU executor in this build: slicesim was built without CUDA "
                      "(-Dcuda=disabled or no CUDA toolkit at configure time); "
                      "--backend sim models the GPU instead");
    if (!ops)
        return ss_err(eb, SS_ENOTFOUND, "--backend: unknown executor '%s' (known: %s%s)",
                      backend, HAVE_CUDA_EXEC ? "cuda, " : "", "sim");
    if (ops->abi_version != EXEC_ABI_VERSION || !ops->init || !ops->prepare || !ops->launch ||
        !ops->collect)
        return ss_err(eb, SS_EINVAL, "executor '%s': incompatible plug-in", backend);
    exec *x = ss_calloc(1, sizeof *x + ops->priv_size);
    if (!x)
        return ss_err(eb, SS_ENOMEM, "executor: out of memory");
    x->ops = ops;
    x->priv = x->tail;
    int rc = ops->init(x->priv, cfg, &x->dev, eb);
    if (rc) {
        if (ops->fini)
            ops->fini(x->priv);
        ss_free(x);
        return rc;
    }
    *x_out = x;
    return SS_OK;
}

void exec_destroy(exec **x)
{
    if (!x || !*x)
        return;
    if ((*x)->ops->fini)
        (*x)->ops->fini((*x)->priv);
    ss_free(*x);
    *x = NULL;
}

const exec_device *exec_device_info(const exec *x) { return &x->dev; }
const char *exec_backend(const exec *x) { return x->ops->name; }

int exec_prepare(exec *x, const cat_model *m, uint32_t tp, const exec_limits *lim, ss_errbuf *eb)
{
    if (tp < 1 || m->heads % tp || m->ffn % tp)
        return ss_err(eb, SS_EINVAL, "executor: TP %u does not split %s evenly", tp, m->name);
    return x->ops->prepare(x->priv, m, tp, lim, eb);
}

int exec_launch(exec *x, const exec_op *op, uint64_t tag, ss_errbuf *eb)
{
    return x->ops->launch(x->priv, op, tag, eb);
}

int exec_collect(exec *x, const exec_sample **out, size_t *n_out, ss_errbuf *eb)
{
    return x->ops->collect(x->priv, out, n_out, eb);
}

int exec_selftest(exec *x, FILE *log, ss_errbuf *eb)
{
    if (!x->ops->selftest)
        return ss_err(eb, SS_ENOTSUP, "executor '%s' has no self-test", x->ops->name);
    return x->ops->selftest(x->priv, log, eb);
}

void exec_sensors_read(exec *x, exec_sensors *out)
{
    memset(out, 0, sizeof *out);
    if (x->ops->sensors)
        x->ops->sensors(x->priv, out);
}

int exec_runs_op(const exec_device *d, cost_op_kind k)
{
    switch (k) {
    case COST_OP_HOST:
    case COST_OP_KV_SWAP:
    case COST_OP_ALLREDUCE: /* needs a TP group of GPUs and NCCL */
        return 0;
    case COST_OP_PP_SEND:
        return d->peer;
    default:
        return (unsigned)k < COST_OP__COUNT;
    }
}

const char *exec_guess_gpu(const char *device)
{
    static const struct {
        const char *needle, *gpu;
    } map[] = {{"H200", "h200"}, {"H100", "h100-sxm"}, {"A100", "a100-80g"}, {"L40S", "l40s"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strstr(device, map[i].needle))
            return map[i].gpu;
    return NULL;
}
