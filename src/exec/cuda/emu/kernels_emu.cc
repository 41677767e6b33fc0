// kernels.cu as host C++ for cuemu, the CPU stand-in for the GPU (cuemu.h).
#define SS_CUDA_EMU 1
#include "exec/cuda/kernels.cu"
