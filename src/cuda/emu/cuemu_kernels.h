// kernels.cu compiled as host C++ for cuemu (cuemu.h): CUDA's headers give the types (bf16,
// dim3, uint4, cudaError_t); the device-side names below map to the emulator. Only what
// kernels.cu uses is here; a kernel that needs more fails to compile, not to run.
#ifndef SS_CUDA_EMU_CUEMU_KERNELS_H
#define SS_CUDA_EMU_CUEMU_KERNELS_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <tuple>
#include <utility>

#include "cuda/emu/cuemu.h"

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
