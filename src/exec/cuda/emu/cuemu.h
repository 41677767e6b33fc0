/* cuemu: a CPU stand-in for the GPU, so that the CUDA executor's own code (kernels.cu,
 * exec_cuda.c, cu_timer.c) runs and is checked on machines without one.
 *
 * Kernels run one block at a time; every thread of a block is a fiber (ucontext) on the
 * calling thread, switched at __syncthreads and warp shuffles, so that shared memory, block
 * barriers and shuffles behave as on the GPU. A block whose threads never synchronise lets
 * the rest of the launch run its threads as plain calls. Divergent barriers or shuffles,
 * which hang or misbehave on a GPU, stop the program with a message. Memory is the host's
 * (cuemu_rt.c), so AddressSanitizer sees every out-of-bounds access a kernel makes.
 * Times are made up (cuemu_rt.c): they only grow with the work. */
#ifndef SS_CUDA_EMU_CUEMU_H
#define SS_CUDA_EMU_CUEMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuemu_u3 {
    unsigned x, y, z;
} cuemu_u3;

typedef struct cuemu_dims {
    cuemu_u3 tid, bid, bdim, gdim;
} cuemu_dims;

/* The running thread's indices. */
const cuemu_dims *cuemu_cur(void);
/* Run body(ctx) once per thread of grid x block; name is the kernel's, for messages and the
   activity records. Returns 0 or a cudaError_t (a bad launch configuration). */
int cuemu_launch(const char *name, cuemu_u3 grid, cuemu_u3 block, size_t smem,
                 void (*body)(void *), void *ctx);
void cuemu_syncthreads(void);
float cuemu_shfl_xor(unsigned mask, float v, int lane_mask);
/* Set by cuemu_launch and by cuemu_rt.c's API calls; cudaGetLastError returns and clears it. */
void cuemu_set_error(int e);
/* Stop with a message: a WMMA load or store at p with leading dimension ldm breaks its rules. */
void cuemu_wmma_misuse(const void *p, unsigned ldm);
/* Stop with a message unless p is NULL or device memory (a kernel's pointer argument). */
void cuemu_check_arg(const char *kernel, int index, const void *p);
/* Account for device work (cuemu_rt.c): advances the emulated clock, writes activity records. */
void cuemu_work(const char *name, uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif
