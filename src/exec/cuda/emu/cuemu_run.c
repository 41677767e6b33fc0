/* cuemu's kernel runner (cuemu.h): the threads of one block are fibers on the calling thread.
 * The scheduler runs every runnable fiber until it blocks (barrier, shuffle) or returns; then
 * it completes the shuffles of warps whose 32 lanes all wait at one, or, when only barriers are
 * left, releases the barrier. Anything else is a divergence a GPU would hang on or leave
 * undefined, and stops the program.
 * On x86-64 a fiber switch is a few instructions (cuemu_switch below); elsewhere it is
 * swapcontext, which also saves the signal mask with a system call each time. */
#include "exec/cuda/emu/cuemu.h"

#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CUEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUEMU_ASAN 1
#endif
#endif
#ifndef CUEMU_ASAN
#define CUEMU_ASAN 0
#endif
#if CUEMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define STACK_BYTES ((size_t)256 << 10)
#define PAGE ((size_t)4096)

enum { F_RUN, F_BAR, F_SHFL, F_DONE };

#if defined(__x86_64__)
/* Save the callee-saved registers and the SSE and x87 control words on the current stack,
   store the stack pointer in *from, continue on the stack `to` (which holds the same frame). */
void cuemu_switch(void **from, void *to);
__asm__(".text\n"
        ".globl cuemu_switch\n"
        ".hidden cuemu_switch\n"
        ".type cuemu_switch, @function\n"
        "cuemu_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size cuemu_switch, .-cuemu_switch\n");
#define FAST_SWITCH 1
typedef void *cuemu_ctx;
#else
#define FAST_SWITCH 0
typedef ucontext_t cuemu_ctx;
#endif

typedef struct fiber {
    cuemu_ctx uc;
    char *stack;
    int state;
    cuemu_dims d;
    unsigned shfl_mask;
    int shfl_lane_mask;
    float shfl_in, shfl_out;
    void *fake_stack;
} fiber;

static struct {
    fiber *f;
    char *stacks;
    size_t cap;      /* fibers (and stacks) allocated */
    unsigned n;      /* threads of the running block */
    int cur;         /* running fiber; -1: none (direct calls, or outside a kernel) */
    int in_kernel, synced;
    cuemu_dims direct;
    const char *name;
    void (*body)(void *);
    void *ctx;
    cuemu_ctx sched;
    void *sched_fake;
    const void *main_bottom;
    size_t main_size;
} E = {.cur = -1};

static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cuemu: kernel %s, block (%u,%u,%u): ", E.name ? E.name : "?",
            E.direct.bid.x, E.direct.bid.y, E.direct.bid.z);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

const cuemu_dims *cuemu_cur(void) { return E.cur >= 0 ? &E.f[E.cur].d : &E.direct; }

static void asan_start(void **save, const void *bottom, size_t size)
{
#if CUEMU_ASAN
    __sanitizer_start_switch_fiber(save, bottom, size);
#else
    (void)save;
    (void)bottom;
    (void)size;
#endif
}

static void asan_finish(void *save, const void **bottom, size_t *size)
{
#if CUEMU_ASAN
    __sanitizer_finish_switch_fiber(save, bottom, size);
#else
    (void)save;
    (void)bottom;
    (void)size;
#endif
}

static void fiber_main(void)
{
    asan_finish(NULL, &E.main_bottom, &E.main_size);
    E.body(E.ctx);
    fiber *f = &E.f[E.cur];
    f->state = F_DONE;
    asan_start(NULL, E.main_bottom, E.main_size); /* this fiber's stack is finished with */
#if FAST_SWITCH
    cuemu_switch(&f->uc, E.sched);
#else
    setcontext(&E.sched);
#endif
    abort();
}

/* A fresh context that starts fiber_main on the fiber's stack. */
static void start_ctx(fiber *f)
{
#if FAST_SWITCH
    /* the frame cuemu_switch pops: control words, r15 r14 r13 r12 rbx rbp, return address;
       the return address sits 16-byte aligned, so fiber_main starts as if called */
    uint64_t *top = (uint64_t *)(f->stack + STACK_BYTES) - 2;
    top[1] = 0;                              /* no caller */
    top[0] = (uint64_t)(uintptr_t)fiber_main; /* popped by ret */
    uint64_t *sp = top - 7;
    memset(sp, 0, 7 * sizeof *sp);
    uint32_t cw[2] = {0x1f80, 0x037f}; /* MXCSR and x87 control word at their defaults */
    memcpy(sp, cw, sizeof cw);
    f->uc = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = STACK_BYTES;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, fiber_main, 0);
#endif
}

/* From the running fiber back to the scheduler, until the scheduler resumes it. */
static void yield(void)
{
    fiber *f = &E.f[E.cur];
    asan_start(&f->fake_stack, E.main_bottom, E.main_size);
#if FAST_SWITCH
    cuemu_switch(&f->uc, E.sched);
#else
    swapcontext(&f->uc, &E.sched);
#endif
    asan_finish(f->fake_stack, &E.main_bottom, &E.main_size);
}

static void resume(int t)
{
    E.cur = t;
    asan_start(&E.sched_fake, E.f[t].stack, STACK_BYTES);
#if FAST_SWITCH
    cuemu_switch(&E.sched, E.f[t].uc);
#else
    swapcontext(&E.sched, &E.f[t].uc);
#endif
    asan_finish(E.sched_fake, NULL, NULL);
    E.cur = -1;
}

static int reserve(unsigned n)
{
    if (n <= E.cap)
        return 0;
    if (E.stacks)
        munmap(E.stacks, E.cap * (STACK_BYTES + PAGE));
    free(E.f);
    E.cap = 0;
    E.f = calloc(n, sizeof *E.f);
    E.stacks = mmap(NULL, n * (STACK_BYTES + PAGE), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!E.f || E.stacks == MAP_FAILED) {
        free(E.f);
        E.f = NULL;
        E.stacks = NULL;
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        char *base = E.stacks + i * (STACK_BYTES + PAGE);
        mprotect(base, PAGE, PROT_NONE); /* a guard page below each stack */
        E.f[i].stack = base + PAGE;
    }
    E.cap = n;
    return 0;
}

static const char *state_name(int s)
{
    return s == F_BAR ? "at __syncthreads" : s == F_SHFL ? "at a shuffle" : "exited";
}

/* Complete the shuffles of one warp whose live lanes all wait at one (the lowest such warp, or
 * with `last` the highest); 1 if one did. Releasing one warp at a time lets it run ahead of
 * the others up to the next block barrier, as a GPU may schedule it: a block that reads shared
 * memory another warp may still overwrite gets wrong results here too. */
static int shuffle_warps(int last)
{
    int pick = -1;
    for (unsigned w = 0; w * 32 < E.n; w++) {
        unsigned lo = w * 32, hi = lo + 32 < E.n ? lo + 32 : E.n, waiting = 0;
        for (unsigned t = lo; t < hi; t++)
            waiting += E.f[t].state == F_SHFL;
        if (!waiting)
            continue;
        for (unsigned t = lo; t < hi; t++) {
            fiber *f = &E.f[t];
            if (f->state != F_SHFL)
                die("warp %u: lane %u %s while lane %u is at a shuffle (divergent "
                    "__shfl_xor_sync)", w, t - lo, state_name(f->state), lo);
            if (f->shfl_mask != 0xffffffffu)
                die("warp %u: shuffle mask %#x: only full-warp shuffles are emulated", w,
                    f->shfl_mask);
        }
        if (hi - lo != 32)
            die("warp %u has %u threads: a full-mask shuffle needs 32", w, hi - lo);
        if (pick < 0 || last)
            pick = (int)w;
    }
    if (pick < 0)
        return 0;
    unsigned lo = (unsigned)pick * 32, hi = lo + 32;
    for (unsigned t = lo; t < hi; t++) {
        unsigned src = (t - lo) ^ (unsigned)E.f[t].shfl_lane_mask;
        E.f[t].shfl_out = src < 32 ? E.f[lo + src].shfl_in : E.f[t].shfl_in;
    }
    for (unsigned t = lo; t < hi; t++)
        E.f[t].state = F_RUN;
    return 1;
}

static void run_block_fibers(void)
{
    for (unsigned t = 0; t < E.n; t++) {
        fiber *f = &E.f[t];
        f->d = E.direct;
        f->d.tid.x = t % E.direct.bdim.x;
        f->d.tid.y = t / E.direct.bdim.x % E.direct.bdim.y;
        f->d.tid.z = t / (E.direct.bdim.x * E.direct.bdim.y);
        f->state = F_RUN;
        f->fake_stack = NULL;
        start_ctx(f);
    }
    for (;;) {
        for (unsigned t = 0; t < E.n; t++)
            if (E.f[t].state == F_RUN)
                resume((int)t);
        unsigned done = 0, bar = 0;
        for (unsigned t = 0; t < E.n; t++) {
            done += E.f[t].state == F_DONE;
            bar += E.f[t].state == F_BAR;
        }
        if (done == E.n)
            return;
        /* odd blocks let their last ready warp run ahead, even ones their first */
        const cuemu_u3 *bi = &E.direct.bid, *gd = &E.direct.gdim;
        if (shuffle_warps((int)((bi->x + gd->x * (bi->y + gd->y * bi->z)) & 1)))
            continue;
        /* only barriers and exited threads are left: exited threads do not hold a barrier */
        if (bar + done != E.n)
            die("threads neither at a barrier nor exited");
        for (unsigned t = 0; t < E.n; t++)
            if (E.f[t].state == F_BAR)
                E.f[t].state = F_RUN;
    }
}

void cuemu_syncthreads(void)
{
    if (!E.in_kernel)
        die("__syncthreads outside a kernel");
    if (E.cur < 0)
        die("__syncthreads, where the launch's first block ran without one (the emulator then "
            "runs threads as plain calls)");
    E.synced = 1;
    E.f[E.cur].state = F_BAR;
    yield();
}

float cuemu_shfl_xor(unsigned mask, float v, int lane_mask)
{
    if (!E.in_kernel)
        die("__shfl_xor_sync outside a kernel");
    if (E.cur < 0)
        die("__shfl_xor_sync, where the launch's first block ran without one (the emulator "
            "then runs threads as plain calls)");
    fiber *f = &E.f[E.cur];
    E.synced = 1;
    f->shfl_mask = mask;
    f->shfl_lane_mask = lane_mask;
    f->shfl_in = v;
    f->state = F_SHFL;
    yield();
    return f->shfl_out;
}

void cuemu_wmma_misuse(const void *p, unsigned ldm)
{
    die("WMMA load or store at %p with leading dimension %u: needs a 32-byte aligned pointer and "
        "a leading dimension of a multiple of 16 bytes", p, ldm);
}

int cuemu_launch(const char *name, cuemu_u3 grid, cuemu_u3 block, size_t smem,
                 void (*body)(void *), void *ctx)
{
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (!threads || threads > 1024 || block.z > 64 || !grid.x || !grid.y || !grid.z ||
        grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535 || smem > 48 * 1024)
        return (int)cudaErrorInvalidConfiguration;
    if (E.in_kernel)
        die("a launch from inside a kernel");
    if (reserve((unsigned)threads))
        return (int)cudaErrorMemoryAllocation;
    E.in_kernel = 1;
    E.name = name;
    E.body = body;
    E.ctx = ctx;
    E.n = (unsigned)threads;
    E.synced = 0;
    int direct = 0;
    memset(&E.direct, 0, sizeof E.direct);
    E.direct.bdim = block;
    E.direct.gdim = grid;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                E.direct.bid = (cuemu_u3){x, y, z};
                if (!direct) {
                    run_block_fibers();
                    direct = !E.synced; /* no barrier or shuffle: plain calls from now on */
                    continue;
                }
                for (unsigned t = 0; t < E.n; t++) {
                    E.direct.tid.x = t % block.x;
                    E.direct.tid.y = t / block.x % block.y;
                    E.direct.tid.z = t / (block.x * block.y);
                    body(ctx);
                }
            }
    memset(&E.direct, 0, sizeof E.direct);
    E.in_kernel = 0;
    uint64_t total = threads * grid.x * grid.y * grid.z;
    cuemu_work(name, 1500 + total / 4);
    return 0;
}
