// common.cuh -- portability macros shared by every dpgpu kernel header.
//
// Compiles under NVRTC (CuPy RawModule), under nvcc and under a host C++
// compiler: on the host, DPGPU_HD drops __host__ __device__ so that the
// per-element functions can be unit-tested by a plain g++ build.
#ifndef DPGPU_COMMON_CUH
#define DPGPU_COMMON_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define DPGPU_HD __host__ __device__ __forceinline__
#else
#define DPGPU_HD inline
#endif

// Builtin types only (NVRTC has no <cstdint>); dpgpu relies on their widths.
static_assert(sizeof(int) == 4, "dpgpu kernels need a 32-bit int");
static_assert(sizeof(long long) == 8, "dpgpu kernels need a 64-bit long long");

#endif  // DPGPU_COMMON_CUH
