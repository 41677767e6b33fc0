/* Operator timing for the CUDA executor. With CUPTI, every kernel and copy launched between
 * cu_timer_begin and cu_timer_end carries the operator's external correlation id; after the
 * device finishes, the activity buffers are flushed and each operator's time is the sum of its
 * kernels' durations (one cuBLASLt call may launch several kernels). Without CUPTI, a pair of
 * CUDA events brackets each operator. Also the NVML sensors, loaded with dlopen.
 * CUPTI may hand buffers back on a thread of its own: what its callbacks touch (the buffers,
 * the kernel records, the correlation map, the names) is allocated with the C library's
 * thread-safe allocator, not ss_alloc's counting one, and guarded by a mutex. */
#include "exec/cuda/cuda_int.h"

#include "core/ss_alloc.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (4u << 20)
#define EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0

typedef struct krec {
    uint32_t corr;
    uint64_t start, end;
    uint32_t name; /* index into names */
} krec;

typedef struct op_rec {
    uint64_t tag;
    cudaEvent_t ev[2]; /* events timer */
} op_rec;

struct cu_timer {
    cudaStream_t stream;
    int cupti;
    /* CUPTI records of the current window */
    krec *k;
    size_t n_k, cap_k;
    uint32_t *map_key; /* correlation id -> external id (open addressing, 0 = empty) */
    uint64_t *map_val;
    size_t map_cap, map_n;
    char **names;
    size_t n_names, cap_names;
    int oom;
    /* operators of the current window */
    op_rec *ops;
    size_t n_ops, cap_ops;
    uint64_t ext_base; /* external id of ops[0] */
    exec_sample *s;
    size_t cap_s;
};

/* CUPTI's buffer callbacks carry no user pointer: one timer records at a time. */
static cu_timer *active;
/* Guards `active` and the active timer's k, map_*, names and oom against the CUPTI callbacks
   (one lock outliving every timer, so a late callback never takes a destroyed mutex). */
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = malloc(BUF_BYTES); /* malloc's alignment (16) exceeds the 8 CUPTI needs */
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static int map_put(cu_timer *t, uint32_t key, uint64_t val)
{
    if (!key)
        return 0; /* 0 marks an empty slot; CUPTI numbers correlations from 1 */
    if (2 * (t->map_n + 1) > t->map_cap) {
        size_t cap = t->map_cap ? 2 * t->map_cap : 4096;
        uint32_t *k = calloc(cap, sizeof *k);
        uint64_t *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return -1;
        }
        for (size_t i = 0; i < t->map_cap; i++)
            if (t->map_key[i]) {
                size_t j = (t->map_key[i] * 2654435761u) & (cap - 1);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = t->map_key[i];
                v[j] = t->map_val[i];
            }
        free(t->map_key);
        free(t->map_val);
        t->map_key = k;
        t->map_val = v;
        t->map_cap = cap;
    }
    size_t j = (key * 2654435761u) & (t->map_cap - 1);
    while (t->map_key[j] && t->map_key[j] != key)
        j = (j + 1) & (t->map_cap - 1);
    if (!t->map_key[j])
        t->map_n++;
    t->map_key[j] = key;
    t->map_val[j] = val;
    return 0;
}

static uint64_t map_get(const cu_timer *t, uint32_t key)
{
    if (!t->map_cap || !key)
        return 0;
    size_t j = (key * 2654435761u) & (t->map_cap - 1);
    while (t->map_key[j]) {
        if (t->map_key[j] == key)
            return t->map_val[j];
        j = (j + 1) & (t->map_cap - 1);
    }
    return 0;
}

static uint32_t intern(cu_timer *t, const char *name)
{
    if (!name)
        name = "?";
    for (size_t i = t->n_names; i-- > 0;)
        if (!strcmp(t->names[i], name))
            return (uint32_t)i;
    if (t->n_names == t->cap_names) {
        size_t cap = t->cap_names ? 2 * t->cap_names : 64;
        char **n = realloc(t->names, cap * sizeof *n);
        if (!n)
            return UINT32_MAX;
        t->names = n;
        t->cap_names = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return UINT32_MAX;
    t->names[t->n_names] = copy;
    return (uint32_t)t->n_names++;
}

static void add_krec(cu_timer *t, uint32_t corr, uint64_t start, uint64_t end, const char *name)
{
    if (t->n_k == t->cap_k) {
        size_t cap = t->cap_k ? 2 * t->cap_k : 4096;
        krec *k = realloc(t->k, cap * sizeof *k);
        if (!k) {
            t->oom = 1;
            return;
        }
        t->k = k;
        t->cap_k = cap;
    }
    t->k[t->n_k++] = (krec){.corr = corr, .start = start, .end = end, .name = intern(t, name)};
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                   size_t size, size_t valid)
{
    (void)ctx;
    (void)stream_id;
    (void)size;
    pthread_mutex_lock(&active_lock);
    cu_timer *t = active;
    CUpti_Activity *rec = NULL;
    while (t && valid && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const CUpti_ActivityKernel10 *k = (const void *)rec;
            add_krec(t, k->correlationId, k->start, k->end, k->name);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const void *)rec;
            add_krec(t, m->correlationId, m->start, m->end, "memcpy");
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2: {
            const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
            add_krec(t, m->correlationId, m->start, m->end, "memcpy_peer");
            break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            const CUpti_ActivityExternalCorrelation *e = (const void *)rec;
            if (e->externalKind == EXT_KIND && map_put(t, e->correlationId, e->externalId))
                t->oom = 1;
            break;
        }
        default:
            break;
        }
    }
    pthread_mutex_unlock(&active_lock);
    free(buffer);
}

static const char *cupti_str(CUptiResult r)
{
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

static int enable_cupti(char note[160])
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
        CUPTI_ACTIVITY_KIND_DRIVER,            CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    };
    CUptiResult r = cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
    if (r != CUPTI_SUCCESS) {
        snprintf(note, 160, "CUPTI unavailable (cuptiActivityRegisterCallbacks: %s)",
                 cupti_str(r));
        return -1;
    }
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if ((r = cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS) {
            snprintf(note, 160, "CUPTI unavailable (cuptiActivityEnable(%d): %s)", (int)kinds[i],
                     cupti_str(r));
            for (size_t j = 0; j < i; j++)
                cuptiActivityDisable(kinds[j]);
            return -1;
        }
    return 0;
}

int cu_timer_open(cu_timer **t_out, void *stream, int want_cupti, char kind_out[16],
                  char note[160], ss_errbuf *eb)
{
    *t_out = NULL;
    note[0] = 0;
    cu_timer *t = ss_calloc(1, sizeof *t);
    if (!t)
        return ss_err(eb, SS_ENOMEM, "timer: out of memory");
    t->stream = stream;
    t->ext_base = 1; /* external ids start at 1: 0 is "no operator" */
    pthread_mutex_lock(&active_lock);
    cu_timer *busy = active;
    if (want_cupti && !busy)
        active = t; /* before any buffer can come back */
    pthread_mutex_unlock(&active_lock);
    if (want_cupti && !busy) {
        if (enable_cupti(note) == 0) {
            t->cupti = 1;
        } else {
            pthread_mutex_lock(&active_lock);
            active = NULL;
            pthread_mutex_unlock(&active_lock);
        }
    } else if (want_cupti) {
        snprintf(note, 160, "CUPTI is in use by another executor");
    }
    snprintf(kind_out, 16, "%s", t->cupti ? "cupti" : "events");
    *t_out = t;
    return SS_OK;
}

static int grow_ops(cu_timer *t)
{
    if (t->n_ops < t->cap_ops)
        return 0;
    size_t cap = t->cap_ops ? 2 * t->cap_ops : 256;
    op_rec *o = ss_realloc(t->ops, cap * sizeof *o);
    if (!o)
        return -1;
    memset(o + t->cap_ops, 0, (cap - t->cap_ops) * sizeof *o);
    t->ops = o;
    t->cap_ops = cap;
    return 0;
}

int cu_timer_begin(cu_timer *t, uint64_t tag, ss_errbuf *eb)
{
    if (grow_ops(t))
        return ss_err(eb, SS_ENOMEM, "timer: out of memory");
    op_rec *o = &t->ops[t->n_ops];
    o->tag = tag;
    if (t->cupti) {
        CUptiResult r = cuptiActivityPushExternalCorrelationId(EXT_KIND, t->ext_base + t->n_ops);
        if (r != CUPTI_SUCCESS)
            return ss_err(eb, SS_EIO, "CUPTI: push external correlation id: %s", cupti_str(r));
    } else {
        for (int i = 0; i < 2; i++)
            if (!o->ev[i] && cudaEventCreate(&o->ev[i]) != cudaSuccess)
                return ss_err(eb, SS_EIO, "cudaEventCreate: %s",
                              cudaGetErrorString(cudaGetLastError()));
        cudaError_t e = cudaEventRecord(o->ev[0], t->stream);
        if (e != cudaSuccess)
            return ss_err(eb, SS_EIO, "cudaEventRecord: %s", cudaGetErrorString(e));
    }
    t->n_ops++;
    return SS_OK;
}

int cu_timer_end(cu_timer *t, ss_errbuf *eb)
{
    if (t->cupti) {
        uint64_t last = 0;
        CUptiResult r = cuptiActivityPopExternalCorrelationId(EXT_KIND, &last);
        if (r != CUPTI_SUCCESS)
            return ss_err(eb, SS_EIO, "CUPTI: pop external correlation id: %s", cupti_str(r));
        return SS_OK;
    }
    cudaError_t e = cudaEventRecord(t->ops[t->n_ops - 1].ev[1], t->stream);
    return e == cudaSuccess ? SS_OK
                            : ss_err(eb, SS_EIO, "cudaEventRecord: %s", cudaGetErrorString(e));
}

int cu_timer_collect(cu_timer *t, const exec_sample **out, size_t *n_out, ss_errbuf *eb)
{
    *out = NULL;
    *n_out = 0;
    if (t->n_ops > t->cap_s) {
        exec_sample *s = ss_realloc(t->s, t->n_ops * sizeof *s);
        if (!s)
            return ss_err(eb, SS_ENOMEM, "timer: out of memory");
        t->s = s;
        t->cap_s = t->n_ops;
    }
    size_t n = t->n_ops;
    memset(t->s, 0, n * sizeof *t->s);
    for (size_t i = 0; i < n; i++)
        t->s[i].tag = t->ops[i].tag;
    int rc = SS_OK;
    if (t->cupti) {
        CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS)
            rc = ss_err(eb, SS_EIO, "CUPTI: flush: %s", cupti_str(r));
        size_t dropped = 0;
        if (!rc && cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS &&
            dropped)
            rc = ss_err(eb, SS_EIO, "CUPTI dropped %zu activity records", dropped);
        pthread_mutex_lock(&active_lock);
        if (!rc && t->oom)
            rc = ss_err(eb, SS_ENOMEM, "timer: out of memory while reading CUPTI records");
        uint64_t *longest = ss_calloc(n ? n : 1, sizeof *longest);
        if (!rc && !longest)
            rc = ss_err(eb, SS_ENOMEM, "timer: out of memory");
        for (size_t i = 0; !rc && i < t->n_k; i++) {
            uint64_t ext = map_get(t, t->k[i].corr);
            if (ext < t->ext_base || ext >= t->ext_base + n)
                continue; /* untimed work: warm-ups, L2 flushes, uploads */
            exec_sample *s = &t->s[ext - t->ext_base];
            const krec *k = &t->k[i];
            if (!k->start || !k->end || k->end < k->start) {
                /* 0 means CUPTI could not take the timestamp: never count it as 0 ns */
                rc = ss_err(eb, SS_EIO, "CUPTI: incomplete kernel record for timed operator %llu "
                                        "(start %llu, end %llu)",
                            (unsigned long long)(ext - t->ext_base),
                            (unsigned long long)k->start, (unsigned long long)k->end);
                break;
            }
            uint64_t d = k->end - k->start;
            s->ns += (ss_time)d;
            if (!s->n_kernels || (ss_time)k->start < s->start)
                s->start = (ss_time)k->start;
            if ((ss_time)k->end > s->end)
                s->end = (ss_time)k->end;
            s->n_kernels++;
            if (d >= longest[ext - t->ext_base] && k->name < t->n_names) {
                longest[ext - t->ext_base] = d;
                snprintf(s->kernel, sizeof s->kernel, "%s", t->names[k->name]);
            }
        }
        ss_free(longest);
        for (size_t i = 0; !rc && i < n; i++)
            if (!t->s[i].n_kernels)
                rc = ss_err(eb, SS_EIO, "CUPTI: no kernel records for timed operator %zu", i);
        t->n_k = 0;
        t->oom = 0;
        if (t->map_cap) {
            memset(t->map_key, 0, t->map_cap * sizeof *t->map_key);
            t->map_n = 0;
        }
        pthread_mutex_unlock(&active_lock);
        t->ext_base += n;
    } else {
        /* start and end relative to the first operator's start event */
        for (size_t i = 0; !rc && i < n; i++) {
            float ms = 0, a = 0, b = 0;
            cudaError_t e = cudaEventElapsedTime(&ms, t->ops[i].ev[0], t->ops[i].ev[1]);
            if (e == cudaSuccess)
                e = cudaEventElapsedTime(&a, t->ops[0].ev[0], t->ops[i].ev[0]);
            if (e == cudaSuccess)
                e = cudaEventElapsedTime(&b, t->ops[0].ev[0], t->ops[i].ev[1]);
            if (e != cudaSuccess)
                rc = ss_err(eb, SS_EIO, "cudaEventElapsedTime: %s", cudaGetErrorString(e));
            t->s[i].ns = (ss_time)((double)ms * 1e6 + 0.5);
            t->s[i].start = (ss_time)((double)a * 1e6 + 0.5);
            t->s[i].end = (ss_time)((double)b * 1e6 + 0.5);
            t->s[i].n_kernels = 1; /* unknown: the events bracket the operator's whole work */
        }
    }
    for (size_t i = 0; i < n; i++)
        for (char *c = t->s[i].kernel; *c; c++)
            if (*c == ',' || *c == '\n' || *c == '\r')
                *c = ';';
    t->n_ops = 0;
    if (rc)
        return rc;
    *out = t->s;
    *n_out = n;
    return SS_OK;
}

void cu_timer_close(cu_timer **tp)
{
    if (!tp || !*tp)
        return;
    cu_timer *t = *tp;
    if (t->cupti) {
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY2);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
        pthread_mutex_lock(&active_lock);
        active = NULL;
        pthread_mutex_unlock(&active_lock);
    }
    for (size_t i = 0; i < t->cap_ops; i++)
        for (int j = 0; j < 2; j++)
            if (t->ops[i].ev[j])
                cudaEventDestroy(t->ops[i].ev[j]);
    for (size_t i = 0; i < t->n_names; i++)
        free(t->names[i]);
    free(t->names);
    free(t->k);
    free(t->map_key);
    free(t->map_val);
    ss_free(t->ops);
    ss_free(t->s);
    ss_free(t);
    *tp = NULL;
}

/* {======================================================================
 * NVML through dlopen: the handful of calls the sensors need, declared here with NVML's
 * documented C types (nvmlReturn_t is an int enum, a device handle an opaque pointer).
 * ======================================================================= */

typedef void *nvml_dev;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_pci_fn)(const char *, nvml_dev *);
typedef int (*nvml_clock_fn)(nvml_dev, int, unsigned *);
typedef int (*nvml_temp_fn)(nvml_dev, int, unsigned *);
typedef int (*nvml_power_fn)(nvml_dev, unsigned *);
typedef int (*nvml_reasons_fn)(nvml_dev, unsigned long long *);
typedef int (*nvml_str_fn)(char *, unsigned);
typedef int (*nvml_dev_str_fn)(nvml_dev, char *, unsigned);

struct cu_nvml {
    void *lib;
    nvml_dev dev;
    nvml_clock_fn clock;
    nvml_temp_fn temp;
    nvml_power_fn power;
    nvml_reasons_fn reasons;
    nvml_str_fn driver;
    nvml_dev_str_fn uuid;
    int (*shutdown)(void);
};

#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0
/* clocks-event reasons that are settings, not slowdowns: GPU idle, applications clocks set,
   display clock set */
#define NVML_REASON_GPU_IDLE 0x1ull
#define NVML_REASON_APP_CLOCKS 0x2ull
#define NVML_REASON_DISPLAY_CLOCK 0x100ull

static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    return p || !b ? p : dlsym(lib, b);
}

/* POSIX's way to turn dlsym's object pointer into a function pointer without a cast ISO C
 * forbids. */
#define LOAD(dst, lib, a, b)                                                                     \
    do {                                                                                         \
        void *p_ = sym(lib, a, b);                                                               \
        memcpy(&(dst), &p_, sizeof p_);                                                          \
    } while (0)

cu_nvml *cu_nvml_open(const char *pci_bus_id)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    cu_nvml *n = ss_calloc(1, sizeof *n);
    nvml_init_fn init;
    nvml_by_pci_fn by_pci;
    LOAD(init, lib, "nvmlInit_v2", "nvmlInit");
    LOAD(by_pci, lib, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    if (!n || !init || !by_pci || init() != 0 || by_pci(pci_bus_id, &n->dev) != 0) {
        ss_free(n);
        dlclose(lib);
        return NULL;
    }
    n->lib = lib;
    LOAD(n->clock, lib, "nvmlDeviceGetClockInfo", NULL);
    LOAD(n->temp, lib, "nvmlDeviceGetTemperature", NULL);
    LOAD(n->power, lib, "nvmlDeviceGetPowerUsage", NULL);
    LOAD(n->reasons, lib, "nvmlDeviceGetCurrentClocksEventReasons",
         "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(n->driver, lib, "nvmlSystemGetDriverVersion", NULL);
    LOAD(n->uuid, lib, "nvmlDeviceGetUUID", NULL);
    LOAD(n->shutdown, lib, "nvmlShutdown", NULL);
    return n;
}

void cu_nvml_read(cu_nvml *n, exec_sensors *out)
{
    memset(out, 0, sizeof *out);
    if (!n)
        return;
    unsigned v = 0;
    unsigned long long r = 0;
    out->valid = 1;
    if (n->clock && n->clock(n->dev, NVML_CLOCK_SM, &v) == 0)
        out->sm_mhz = v;
    if (n->clock && n->clock(n->dev, NVML_CLOCK_MEM, &v) == 0)
        out->mem_mhz = v;
    if (n->temp && n->temp(n->dev, NVML_TEMPERATURE_GPU, &v) == 0)
        out->temp_c = v;
    if (n->power && n->power(n->dev, &v) == 0)
        out->power_w = v / 1000.0;
    if (n->reasons && n->reasons(n->dev, &r) == 0)
        out->throttle = r & ~(NVML_REASON_GPU_IDLE | NVML_REASON_APP_CLOCKS |
                              NVML_REASON_DISPLAY_CLOCK);
}

void cu_nvml_ids(cu_nvml *n, char *driver, size_t driver_len, char *uuid, size_t uuid_len)
{
    driver[0] = uuid[0] = 0;
    if (!n)
        return;
    if (n->driver && n->driver(driver, (unsigned)driver_len) != 0)
        driver[0] = 0;
    char u[96] = ""; /* NVML's recommended UUID buffer size */
    if (n->uuid && n->uuid(n->dev, u, (unsigned)sizeof u) == 0)
        snprintf(uuid, uuid_len, "%s", u);
}

void cu_nvml_close(cu_nvml **np)
{
    if (!np || !*np)
        return;
    if ((*np)->shutdown)
        (*np)->shutdown();
    dlclose((*np)->lib);
    ss_free(*np);
    *np = NULL;
}

/* }====================================================================== */
