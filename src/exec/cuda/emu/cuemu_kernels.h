// kernels.cu compiled as host C++ for cuemu (cuemu.h): CUDA's headers give the types (bf16,
// dim3, uint4, cudaError_t); the device-side names below map to the emulator. Only what
// kernels.cu uses is here; a kernel that needs more fails to compile, not to run.
#ifndef SS_CUDA_EMU_CUEMU_KERNELS_H
#define SS_CUDA_EMU_CUEMU_KERNELS_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <tuple>
#include <type_traits>
#include <utility>

#include "exec/cuda/emu/cuemu.h"

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __shared__
#define __shared__ static // one block runs at a time: its threads share function statics
#undef __forceinline__
#define __forceinline__ inline

#define threadIdx (cuemu_cur()->tid)
#define blockIdx (cuemu_cur()->bid)
#define blockDim (cuemu_cur()->bdim)
#define gridDim (cuemu_cur()->gdim)
#define __syncthreads() cuemu_syncthreads()
#define __expf(x) expf(x)

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

static inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
    return cuemu_shfl_xor(mask, v, lane_mask);
}

// A warp barrier: every lane of the warp arrives (a shuffle that moves nothing).
static inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)cuemu_shfl_xor(mask, 0.0f, 0); }

// WMMA (mma.h) for 16x16x16 tiles: the warp's first lane holds the whole tile and does the
// work (the hardware spreads a tile over the warp in an unspecified order, so code that
// touches only whole fragments cannot tell). Loads and stores are warp-collective: the lanes
// meet first, so that no store lands before another lane's load of the same step.
// The memory rules are checked: 32-byte aligned pointers, a leading dimension of a multiple of
// 16 bytes.
namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
static inline bool leader()
{
    const cuemu_dims *d = cuemu_cur();
    return ((d->tid.x + d->bdim.x * (d->tid.y + d->bdim.y * d->tid.z)) & 31) == 0;
}
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "cuemu emulates 16x16x16 WMMA only");
    float x[256]; // element (r, c) at x[16 r + c], as values of T
};
// Check the rules, meet the warp; true in the lane that does the work.
static inline bool check(const void *p, unsigned ldm, size_t elem)
{
    if ((uintptr_t)p % 32 || (ldm * elem) % 16)
        cuemu_wmma_misuse(p, ldm);
    __syncwarp();
    return leader();
}
template <typename Use, typename T, typename L>
static inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p, unsigned ldm)
{
    if (!check(p, ldm, sizeof(T)))
        return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) {
            const T &v = std::is_same<L, row_major>::value ? p[r * ldm + c] : p[r + c * ldm];
            f.x[16 * r + c] = (float)v;
        }
}
static inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                                    unsigned ldm, layout_t l)
{
    if (!check(p, ldm, sizeof(float)))
        return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.x[16 * r + c] = l == mem_row_major ? p[r * ldm + c] : p[r + c * ldm];
}
static inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                                     unsigned ldm, layout_t l)
{
    if (!check(p, ldm, sizeof(float)))
        return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            (l == mem_row_major ? p[r * ldm + c] : p[r + c * ldm]) = f.x[16 * r + c];
}
template <typename Use, typename T, typename L>
static inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float v)
{
    for (int i = 0; i < 256; i++)
        f.x[i] = v;
}
template <typename T, typename LA, typename LB>
static inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                            const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                            const fragment<matrix_b, 16, 16, 16, T, LB> &b,
                            const fragment<accumulator, 16, 16, 16, float> &c)
{
    if (!leader())
        return;
    float out[256];
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 16; n++) {
            float acc = c.x[16 * r + n];
            for (int k = 0; k < 16; k++)
                acc += a.x[16 * r + k] * b.x[16 * k + n];
            out[16 * r + n] = acc;
        }
    for (int i = 0; i < 256; i++)
        d.x[i] = out[i];
}
} // namespace wmma
} // namespace nvcuda

// SSK_LAUNCH(kernel, grid, block, smem, stream)(args...): the arguments are converted to the
// kernel's parameter types once, as a launch does, and every emulated thread gets them.
template <typename... P> struct cuemu_launcher {
    const char *name;
    template <typename T> void check(int i, T *p) const { cuemu_check_arg(name, i, p); }
    template <typename T> void check(int, const T &) const {}
    void (*k)(P...);
    cuemu_u3 grid, block;
    size_t smem;
    template <typename... A> void operator()(A &&...a) const
    {
        struct call {
            void (*k)(P...);
            std::tuple<P...> args;
        } c{k, std::tuple<P...>(std::forward<A>(a)...)};
        int i = 0;
        std::apply([&](const auto &...x) { (check(i++, x), ...); }, c.args);
        int e = cuemu_launch(name, grid, block, smem,
                             [](void *p) {
                                 call *cp = static_cast<call *>(p);
                                 std::apply(cp->k, cp->args);
                             },
                             &c);
        if (e)
            cuemu_set_error(e);
    }
};

template <typename... P>
static inline cuemu_launcher<P...> cuemu_make(const char *name, void (*k)(P...), dim3 g, dim3 b,
                                              size_t smem)
{
    return cuemu_launcher<P...>{name, k, {g.x, g.y, g.z}, {b.x, b.y, b.z}, smem};
}

#define SSK_LAUNCH(k, g, b, s, st) ((void)(st), cuemu_make(#k, k, dim3(g), dim3(b), (size_t)(s)))

#endif
