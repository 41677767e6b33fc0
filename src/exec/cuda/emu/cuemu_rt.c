/* cuemu's stand-ins for the parts of cudart, cuBLASLt and CUPTI that exec_cuda.c and
 * cu_timer.c call, declared by CUDA's own headers so that every signature is checked.
 *
 * Device memory is host memory (one allocation each, so AddressSanitizer bounds every buffer)
 * registered by device; copies, GEMM operands and kernel pointer arguments must lie in memory
 * of the right kind. Streams run their work at once, in order. cuBLASLt's matmul is a plain
 * column-major GEMM with fp32 accumulation that checks what the real one checks: operand shapes
 * against op(A) op(B), leading dimensions, types, and the alignment the heuristic was promised.
 * CUPTI hands back a kernel record per launch and GEMM, a memcpy record per copy and an
 * external-correlation record for each under a pushed id.
 *
 * Time is an emulated clock: a launch costs 1.5 us plus 0.25 ns a thread, a GEMM 2 us plus
 * 1 ns per 1000 multiply-adds x 2, a copy 1 us plus 0.25 ns a byte. The figures only grow
 * with the work; they say nothing about any GPU.
 *
 * Environment: CUEMU_DEVICES (0, 1 or 2; default 1), CUEMU_CUPTI=0 (CUPTI refuses, as without
 * permission, so the timer falls back to events), CUEMU_DRIVER=0 (no driver installed: the
 * runtime's device count fails with cudaErrorInsufficientDriver and the driver version is 0, as
 * the CUDA runtime does on a machine without the NVIDIA driver). */
#include "exec/cuda/emu/cuemu.h"
#include "exec/exec.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEV_MEM ((size_t)8 << 30)
#define L2_BYTES (1 << 20)

/* {======================================================================
 * Memory registry, errors, clock
 * ======================================================================= */

typedef struct region {
    char *p;
    size_t n;
    int dev; /* -1: pinned host memory */
} region;

static region *regions;
static size_t n_regions, cap_regions;
static size_t used[2];
static int cur_dev, last_error;
static uint64_t clock_ns = 1000000000ull;

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cuemu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static int no_driver(void)
{
    const char *s = getenv("CUEMU_DRIVER");
    return s && !strcmp(s, "0");
}

static int n_devices(void)
{
    const char *s = getenv("CUEMU_DEVICES");
    int n = s && *s ? atoi(s) : 1;
    return n < 0 ? 0 : n > 2 ? 2 : n;
}

void cuemu_set_error(int e)
{
    if (!last_error)
        last_error = e;
}

static cudaError_t fail(cudaError_t e)
{
    cuemu_set_error((int)e);
    return e;
}

static const region *find(const void *ptr)
{
    const char *c = ptr;
    for (size_t i = 0; i < n_regions; i++)
        if (c >= regions[i].p && c < regions[i].p + regions[i].n)
            return &regions[i];
    return NULL;
}

/* [ptr, ptr + bytes) inside one allocation of device dev (-2: any device; -1: pinned host). */
static int in_region(const void *ptr, size_t bytes, int dev)
{
    const region *r = find(ptr);
    if (!r || (size_t)((const char *)ptr - r->p) + bytes > r->n)
        return 0;
    return dev == -2 ? r->dev >= 0 : r->dev == dev;
}

static cudaError_t add_region(void **out, size_t bytes, int dev)
{
    *out = NULL;
    if (dev >= 0 && used[dev] + bytes > DEV_MEM)
        return fail(cudaErrorMemoryAllocation);
    if (n_regions == cap_regions) {
        size_t cap = cap_regions ? 2 * cap_regions : 64;
        region *r = realloc(regions, cap * sizeof *r);
        if (!r)
            return fail(cudaErrorMemoryAllocation);
        regions = r;
        cap_regions = cap;
    }
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1))
        return fail(cudaErrorMemoryAllocation);
    regions[n_regions++] = (region){p, bytes, dev};
    if (dev >= 0)
        used[dev] += bytes;
    *out = p;
    return cudaSuccess;
}

static cudaError_t drop_region(void *p, int host)
{
    if (!p)
        return cudaSuccess;
    for (size_t i = 0; i < n_regions; i++)
        if (regions[i].p == p) {
            if ((regions[i].dev < 0) != host)
                die("%s of a pointer from %s", host ? "cudaFreeHost" : "cudaFree",
                    host ? "cudaMalloc" : "cudaMallocHost");
            if (regions[i].dev >= 0)
                used[regions[i].dev] -= regions[i].n;
            free(p);
            regions[i] = regions[--n_regions];
            return cudaSuccess;
        }
    die("%s of %p, which was never allocated (or freed twice)", host ? "cudaFreeHost" : "cudaFree",
        p);
}

void cuemu_check_arg(const char *kernel, int index, const void *p)
{
    if (p && !in_region(p, 0, -2))
        die("kernel %s: argument %d (%p) is not device memory", kernel, index, p);
}

/* }====================================================================== */

/* {======================================================================
 * CUPTI activity records
 * ======================================================================= */

typedef union act {
    CUpti_Activity any;
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 m;
    CUpti_ActivityExternalCorrelation e;
} act;

static struct {
    CUpti_BuffersCallbackRequestFunc req;
    CUpti_BuffersCallbackCompleteFunc done;
    uint64_t enabled; /* bit per CUpti_ActivityKind below 64 */
    uint64_t ext[64];
    CUpti_ExternalCorrelationKind ext_kind[64];
    int n_ext;
    uint32_t corr;
    act *rec;
    size_t n_rec, cap_rec;
} cupti;

static int on(CUpti_ActivityKind k) { return (int)k < 64 && (cupti.enabled >> k & 1); }

static act *new_rec(void)
{
    if (cupti.n_rec == cupti.cap_rec) {
        size_t cap = cupti.cap_rec ? 2 * cupti.cap_rec : 1024;
        act *r = realloc(cupti.rec, cap * sizeof *r);
        if (!r)
            die("out of memory for activity records");
        cupti.rec = r;
        cupti.cap_rec = cap;
    }
    act *a = &cupti.rec[cupti.n_rec++];
    memset(a, 0, sizeof *a);
    return a;
}

/* Device work of ns nanoseconds: a kernel (name) or, with bytes set, a copy. */
static void work(const char *name, uint64_t ns, int copy, int peer)
{
    uint64_t start = clock_ns;
    clock_ns += ns;
    CUpti_ActivityKind kind = copy ? (peer ? CUPTI_ACTIVITY_KIND_MEMCPY2 : CUPTI_ACTIVITY_KIND_MEMCPY)
                                   : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if (!on(kind))
        return;
    uint32_t corr = ++cupti.corr;
    if (cupti.n_ext && on(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
        act *e = new_rec();
        e->e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        e->e.externalKind = cupti.ext_kind[cupti.n_ext - 1];
        e->e.externalId = cupti.ext[cupti.n_ext - 1];
        e->e.correlationId = corr;
    }
    act *a = new_rec();
    if (copy && peer) {
        CUpti_ActivityMemcpyPtoP4 *m = (CUpti_ActivityMemcpyPtoP4 *)a;
        _Static_assert(sizeof *m <= sizeof(act), "peer copy record fits");
        m->kind = kind;
        m->start = start;
        m->end = clock_ns;
        m->correlationId = corr;
    } else if (copy) {
        a->m.kind = kind;
        a->m.start = start;
        a->m.end = clock_ns;
        a->m.correlationId = corr;
    } else {
        a->k.kind = kind;
        a->k.start = start;
        a->k.end = clock_ns;
        a->k.correlationId = corr;
        a->k.name = name;
    }
}

void cuemu_work(const char *name, uint64_t ns) { work(name, ns, 0, 0); }

static size_t rec_size(CUpti_ActivityKind k)
{
    size_t s = k == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ? sizeof(CUpti_ActivityExternalCorrelation)
               : k == CUPTI_ACTIVITY_KIND_MEMCPY             ? sizeof(CUpti_ActivityMemcpy6)
               : k == CUPTI_ACTIVITY_KIND_MEMCPY2            ? sizeof(CUpti_ActivityMemcpyPtoP4)
                                                             : sizeof(CUpti_ActivityKernel10);
    return (s + 7) & ~(size_t)7;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done)
{
    const char *s = getenv("CUEMU_CUPTI");
    if (s && !strcmp(s, "0"))
        return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
    if (!req || !done)
        return CUPTI_ERROR_INVALID_PARAMETER;
    cupti.req = req;
    cupti.done = done;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (!cupti.req)
        return CUPTI_ERROR_NOT_INITIALIZED;
    if ((int)kind < 0 || (int)kind >= 64)
        return CUPTI_ERROR_NOT_SUPPORTED;
    cupti.enabled |= (uint64_t)1 << kind;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((int)kind >= 0 && (int)kind < 64)
        cupti.enabled &= ~((uint64_t)1 << kind);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t id)
{
    if (cupti.n_ext == 64)
        return CUPTI_ERROR_OUT_OF_MEMORY;
    cupti.ext_kind[cupti.n_ext] = kind;
    cupti.ext[cupti.n_ext++] = id;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                           uint64_t *last)
{
    if (!cupti.n_ext || cupti.ext_kind[cupti.n_ext - 1] != kind)
        return CUPTI_ERROR_QUEUE_EMPTY;
    cupti.n_ext--;
    if (last)
        *last = cupti.ext[cupti.n_ext];
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    size_t i = 0;
    while (i < cupti.n_rec) {
        if (!cupti.req)
            return CUPTI_ERROR_NOT_INITIALIZED;
        uint8_t *buf = NULL;
        size_t size = 0, max_records = 0;
        cupti.req(&buf, &size, &max_records);
        if (!buf || ((uintptr_t)buf & 7) || size < sizeof(act))
            die("CUPTI buffer request returned %p of %zu bytes (needs 8-byte alignment)",
                (void *)buf, size);
        size_t valid = 0, n = 0;
        while (i < cupti.n_rec && (!max_records || n < max_records)) {
            size_t s = rec_size(cupti.rec[i].any.kind);
            if (valid + s > size)
                break;
            memcpy(buf + valid, &cupti.rec[i], s < sizeof(act) ? s : sizeof(act));
            valid += s;
            i++;
            n++;
        }
        cupti.done(NULL, 0, buf, size, valid);
    }
    cupti.n_rec = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **record)
{
    uint8_t *next = *record ? (uint8_t *)*record + rec_size((*record)->kind) : buffer;
    if (next >= buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
                                                       size_t *dropped)
{
    (void)context;
    (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    *str = result == CUPTI_SUCCESS                       ? "CUPTI_SUCCESS"
           : result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
           : result == CUPTI_ERROR_NOT_INITIALIZED        ? "CUPTI_ERROR_NOT_INITIALIZED"
           : result == CUPTI_ERROR_QUEUE_EMPTY            ? "CUPTI_ERROR_QUEUE_EMPTY"
                                                          : "CUPTI_ERROR (cuemu)";
    return CUPTI_SUCCESS;
}

/* }====================================================================== */

/* {======================================================================
 * CUDA runtime
 * ======================================================================= */

static int stream_token;
static int check_dev(int d) { return d >= 0 && d < n_devices(); }

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
    if (no_driver())
        return fail(cudaErrorInsufficientDriver);
    *count = n_devices();
    return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t CUDARTAPI cudaSetDevice(int device)
{
    if (!check_dev(device))
        return fail(cudaErrorInvalidDevice);
    cur_dev = device;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!check_dev(device))
        return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "cuemu %d (CPU emulation, not a GPU)", device);
    prop->totalGlobalMem = DEV_MEM;
    prop->multiProcessorCount = 4;
    prop->l2CacheSize = L2_BYTES;
    prop->major = 9;
    prop->minor = 0;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!check_dev(device))
        return fail(cudaErrorInvalidDevice);
    *value = attr == cudaDevAttrL2CacheSize         ? L2_BYTES
             : attr == cudaDevAttrClockRate         ? 1000000
             : attr == cudaDevAttrMultiProcessorCount ? 4
                                                    : 0;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int *v)
{
    *v = no_driver() ? 0 : 13000;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char *bus, int len, int device)
{
    if (!check_dev(device))
        return fail(cudaErrorInvalidDevice);
    snprintf(bus, (size_t)len, "0000:ee:%02x.0", device);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *can, int device, int peer)
{
    if (!check_dev(device) || !check_dev(peer))
        return fail(cudaErrorInvalidDevice);
    *can = device != peer;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    if (!check_dev(peer) || peer == cur_dev || flags)
        return fail(cudaErrorInvalidDevice);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    *s = (cudaStream_t)&stream_token;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t s)
{
    return s == (cudaStream_t)&stream_token ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMalloc(void **p, size_t bytes) { return add_region(p, bytes, cur_dev); }
cudaError_t CUDARTAPI cudaFree(void *p) { return drop_region(p, 0); }
cudaError_t CUDARTAPI cudaMallocHost(void **p, size_t bytes) { return add_region(p, bytes, -1); }
cudaError_t CUDARTAPI cudaFreeHost(void *p) { return drop_region(p, 1); }

cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free_b, size_t *total)
{
    *free_b = DEV_MEM - used[cur_dev];
    *total = DEV_MEM;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemset(void *p, int value, size_t bytes)
{
    if (!in_region(p, bytes, -2))
        die("cudaMemset of %zu bytes at %p: not inside one device allocation", bytes, p);
    memset(p, value, bytes);
    work("memset", 1000 + bytes / 4, 0, 0);
    return cudaSuccess;
}

static void copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    int dd = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyHostToDevice;
    int sd = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDeviceToHost;
    if (kind == cudaMemcpyDefault) {
        dd = in_region(dst, bytes, -2);
        sd = in_region(src, bytes, -2);
    }
    if (dd && !in_region(dst, bytes, -2))
        die("copy of %zu bytes to %p: not inside one device allocation", bytes, dst);
    if (sd && !in_region(src, bytes, -2))
        die("copy of %zu bytes from %p: not inside one device allocation", bytes, src);
    if (!dd && in_region(dst, 1, -2))
        die("copy kind %d writes to device memory at %p as host memory", (int)kind, dst);
    if (!sd && in_region(src, 1, -2))
        die("copy kind %d reads device memory at %p as host memory", (int)kind, src);
    memmove(dst, src, bytes);
    work(NULL, 1000 + bytes / 4, 1, 0);
}

cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    copy(dst, src, bytes, kind);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                      enum cudaMemcpyKind kind, cudaStream_t s)
{
    (void)s;
    copy(dst, src, bytes, kind);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev,
                                          size_t bytes, cudaStream_t s)
{
    (void)s;
    if (!in_region(dst, bytes, dst_dev) || !in_region(src, bytes, src_dev))
        die("peer copy of %zu bytes from %p (device %d) to %p (device %d): not inside one "
            "allocation of each device", bytes, src, src_dev, dst, dst_dev);
    memmove(dst, src, bytes);
    work(NULL, 1000 + bytes / 4, 1, 1);
    return cudaSuccess;
}

typedef struct cuemu_event {
    uint64_t t;
    int recorded;
} cuemu_event;

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *e)
{
    cuemu_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return fail(cudaErrorMemoryAllocation);
    *e = (cudaEvent_t)ev;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)s;
    if (!e)
        return fail(cudaErrorInvalidResourceHandle);
    ((cuemu_event *)e)->t = clock_ns;
    ((cuemu_event *)e)->recorded = 1;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    const cuemu_event *x = (const cuemu_event *)a, *y = (const cuemu_event *)b;
    if (!x || !y || !x->recorded || !y->recorded)
        return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)(((double)y->t - (double)x->t) / 1e6);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetLastError(void)
{
    cudaError_t e = (cudaError_t)last_error;
    last_error = 0;
    return e;
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    default: return "cuemu: an error the emulator does not name";
    }
}

/* }====================================================================== */

/* {======================================================================
 * cuBLASLt
 * ======================================================================= */

typedef struct lt_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t ta, tb;
} lt_desc;

typedef struct lt_layout {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld, stride;
    int32_t batch;
} lt_layout;

typedef struct lt_pref {
    uint64_t ws;
    uint32_t align[4];
} lt_pref;

static int lt_handle;

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *h)
{
    if (!n_devices())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *h = (cublasLtHandle_t)&lt_handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t h)
{
    return h == (cublasLtHandle_t)&lt_handle ? CUBLAS_STATUS_SUCCESS
                                              : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN (cuemu)";
    }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d,
                                                     cublasComputeType_t compute,
                                                     cudaDataType_t scale)
{
    lt_desc *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    x->compute = compute;
    x->scale = scale;
    *d = (cublasLtMatmulDesc_t)x;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

/* An attribute's value from buf, which must be exactly `want` bytes: cuBLASLt refuses an
   attribute given in a buffer of another size. */
static cublasStatus_t attr_in(void *dst, const void *buf, size_t n, size_t want)
{
    if (!buf || n != want)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(dst, buf, n);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void *buf, size_t n)
{
    lt_desc *x = (lt_desc *)d;
    if (attr == CUBLASLT_MATMUL_DESC_TRANSA || attr == CUBLASLT_MATMUL_DESC_TRANSB) {
        int32_t v;
        if (attr_in(&v, buf, n, sizeof v) || (v != CUBLAS_OP_N && v != CUBLAS_OP_T))
            return CUBLAS_STATUS_INVALID_VALUE;
        *(attr == CUBLASLT_MATMUL_DESC_TRANSA ? &x->ta : &x->tb) = v == CUBLAS_OP_T;
        return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_NOT_SUPPORTED; /* not emulated */
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld)
{
    if (type != CUDA_R_16BF && type != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    lt_layout *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    *x = (lt_layout){.type = type, .rows = rows, .cols = cols, .ld = ld, .batch = 1};
    *l = (cublasLtMatrixLayout_t)x;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void *buf, size_t n)
{
    lt_layout *x = (lt_layout *)l;
    if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) {
        int32_t b;
        if (attr_in(&b, buf, n, sizeof b) || b < 1)
            return CUBLAS_STATUS_INVALID_VALUE;
        x->batch = b;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
        return attr_in(&x->stride, buf, n, sizeof x->stride);
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    lt_pref *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    for (int i = 0; i < 4; i++)
        x->align[i] = 256; /* cuBLASLt assumes 256-byte aligned operands unless told */
    *p = (cublasLtMatmulPreference_t)x;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t n)
{
    lt_pref *x = (lt_pref *)p;
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
        return attr_in(&x->ws, buf, n, sizeof x->ws);
    int i = attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
            : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
            : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
            : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ? 3
                                                                  : -1;
    return i < 0 ? CUBLAS_STATUS_NOT_SUPPORTED : attr_in(&x->align[i], buf, n, sizeof x->align[i]);
}

/* The shape checks of a matmul D = op(A) op(B) (+ C): 0 or the status cuBLASLt gives. */
static cublasStatus_t shapes(const lt_desc *d, const lt_layout *a, const lt_layout *b,
                             const lt_layout *c, const lt_layout *o)
{
    if (d->compute != CUBLAS_COMPUTE_32F || d->scale != CUDA_R_32F || a->type != CUDA_R_16BF ||
        b->type != CUDA_R_16BF || c->type != o->type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    uint64_t m = d->ta ? a->cols : a->rows, k = d->ta ? a->rows : a->cols;
    uint64_t kb = d->tb ? b->cols : b->rows, n = d->tb ? b->rows : b->cols;
    const lt_layout *all[4] = {a, b, c, o};
    for (int i = 0; i < 4; i++)
        if (all[i]->ld < (int64_t)(all[i]->rows ? all[i]->rows : 1) || all[i]->batch != o->batch)
            return CUBLAS_STATUS_INVALID_VALUE;
    if (k != kb || m != o->rows || n != o->cols || c->rows != o->rows || c->cols != o->cols ||
        !m || !n || !k)
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
    cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t res[],
    int *returned)
{
    (void)h;
    *returned = 0;
    if (requested < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t s = shapes((const lt_desc *)desc, (const lt_layout *)A, (const lt_layout *)B,
                              (const lt_layout *)C, (const lt_layout *)D);
    if (s)
        return s;
    memset(&res[0], 0, sizeof res[0]);
    /* the algorithm remembers the alignment it was chosen for */
    memcpy(res[0].algo.data, ((const lt_pref *)pref)->align, sizeof(uint32_t) * 4);
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

static int aligned(const void *p, int64_t stride, int batch, size_t elem, uint32_t al)
{
    return (uintptr_t)p % al == 0 && (batch <= 1 || ((uint64_t)stride * elem) % al == 0);
}

/* Bytes from the first to one past the last element of a layout, over its batches. */
static size_t extent(const lt_layout *l)
{
    size_t e = l->type == CUDA_R_32F ? 4 : 2;
    size_t one = ((size_t)(l->cols - 1) * (size_t)l->ld + l->rows) * e;
    return one + (size_t)(l->batch - 1) * (size_t)l->stride * e;
}

/* x . y over k floats, in eight sums the compiler can keep in one vector. Only the GEMM's own
   scratch is read here (the operands were bounds-checked as they were copied in), so the
   sanitizer build leaves this loop, most of an emulated GEMM's time, uninstrumented. */
#if defined(__GNUC__)
__attribute__((no_sanitize_address))
#endif
static float dot(const float *x, const float *y, uint64_t k)
{
    float part[8] = {0};
    uint64_t p = 0;
    for (; p + 8 <= k; p += 8)
        for (int u = 0; u < 8; u++)
            part[u] += x[p + u] * y[p + u];
    float acc = 0;
    for (; p < k; p++)
        acc += x[p] * y[p];
    for (int u = 0; u < 8; u++)
        acc += part[u];
    return acc;
}

static float get(const void *p, cudaDataType t, size_t i)
{
    return t == CUDA_R_32F ? ((const float *)p)[i] : exec_bf16_to_float(((const uint16_t *)p)[i]);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                           const void *alpha, const void *A,
                                           cublasLtMatrixLayout_t Ad, const void *B,
                                           cublasLtMatrixLayout_t Bd, const void *beta,
                                           const void *C, cublasLtMatrixLayout_t Cd, void *D,
                                           cublasLtMatrixLayout_t Dd,
                                           const cublasLtMatmulAlgo_t *algo, void *ws,
                                           size_t ws_bytes, cudaStream_t stream)
{
    (void)h;
    (void)stream;
    const lt_desc *d = (const lt_desc *)desc;
    const lt_layout *a = (const lt_layout *)Ad, *b = (const lt_layout *)Bd,
                    *c = (const lt_layout *)Cd, *o = (const lt_layout *)Dd;
    cublasStatus_t s = shapes(d, a, b, c, o);
    if (s)
        return s;
    if (!algo)
        return CUBLAS_STATUS_INVALID_VALUE;
    uint32_t al[4];
    memcpy(al, algo->data, sizeof al);
    size_t eo = o->type == CUDA_R_32F ? 4 : 2;
    if (!aligned(A, a->stride, a->batch, 2, al[0]) || !aligned(B, b->stride, b->batch, 2, al[1]) ||
        !aligned(C, c->stride, c->batch, eo, al[2]) || !aligned(D, o->stride, o->batch, eo, al[3]))
        return CUBLAS_STATUS_NOT_SUPPORTED; /* as the real one does for a broken promise */
    if (!in_region(A, extent(a), -2) || !in_region(B, extent(b), -2) ||
        !in_region(D, extent(o), -2) || (ws_bytes && !in_region(ws, ws_bytes, -2)))
        die("cublasLtMatmul: an operand reaches outside its device allocation (A %p, B %p, D %p, "
            "workspace %p of %zu bytes)", A, B, D, ws, ws_bytes);
    float al_f, be_f;
    memcpy(&al_f, alpha, sizeof al_f);
    memcpy(&be_f, beta, sizeof be_f);
    uint64_t m = o->rows, n = o->cols, k = d->ta ? a->rows : a->cols;
    float *ar = malloc(m * k * sizeof *ar), *br = malloc(n * k * sizeof *br);
    if (!ar || !br)
        die("out of memory for a GEMM of %llu x %llu x %llu", (unsigned long long)m,
            (unsigned long long)n, (unsigned long long)k);
    for (int32_t bt = 0; bt < o->batch; bt++) {
        const char *pa = (const char *)A + (size_t)bt * (size_t)a->stride * 2;
        const char *pb = (const char *)B + (size_t)bt * (size_t)b->stride * 2;
        const char *pc = (const char *)C + (size_t)bt * (size_t)c->stride * eo;
        char *pd = (char *)D + (size_t)bt * (size_t)o->stride * eo;
        /* op(A)(i, p) into ar[i k + p]; op(B)(p, j) into br[j k + p] */
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t p = 0; p < k; p++)
                ar[i * k + p] = get(pa, a->type, d->ta ? i * (size_t)a->ld + p : p * (size_t)a->ld + i);
        for (uint64_t j = 0; j < n; j++)
            for (uint64_t p = 0; p < k; p++)
                br[j * k + p] = get(pb, b->type, d->tb ? p * (size_t)b->ld + j : j * (size_t)b->ld + p);
        for (uint64_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < m; i++) {
                float v = al_f * dot(ar + i * k, br + j * k, k);
                size_t ic = i + j * (size_t)c->ld, io = i + j * (size_t)o->ld;
                if (be_f != 0.0f)
                    v += be_f * get(pc, c->type, ic);
                if (o->type == CUDA_R_32F)
                    ((float *)pd)[io] = v;
                else
                    ((uint16_t *)pd)[io] = exec_bf16_from_float(v);
            }
    }
    free(ar);
    free(br);
    work("cuemu_gemm", 2000 + 2 * m * n * k * (uint64_t)o->batch / 1000, 0, 0);
    return CUBLAS_STATUS_SUCCESS;
}

/* }====================================================================== */
