// gram_readout.cu -- the nonzero entries of a counting table, in index order.
//
// A dense histogram (bin = packed key) or a hash table of packed slots is
// read out in two passes over chunks of 32 * DPGPU_CHUNK_STEPS consecutive
// entries, one warp a chunk: dpgpu_nonzero_chunks_* counts each chunk's
// nonzero entries, the caller turns the counts into end offsets (an
// inclusive cumulative sum), and dpgpu_pack_chunks_* writes each chunk's
// nonzero entries from its offset, in index order -- so a dense histogram
// comes out sorted by key, with no sort.  Entries are written packed
// (dpgpu_pack_entry in grams.cuh).  Lane l reads entries l, l + 32, ... of
// its chunk, so every load of a warp is one contiguous stretch; a ballot
// tells each lane how many nonzero entries come before its own.
//
// Every lane of a warp runs the same loops (the chunk loop is per warp, the
// step loop fixed), so the full-warp ballots are exact.  Launch with 32
// threads per chunk (blockDim.x a multiple of 32).
#include "grams.cuh"

#define DPGPU_CHUNK_STEPS 16

namespace {

// visit(first entry of the chunk, chunk index) for every chunk of this
// warp, grid-stride over warps.
template <typename Visit>
__device__ __forceinline__ void dpgpu_for_each_chunk(long long size, Visit visit) {
  const long long chunk = 32LL * DPGPU_CHUNK_STEPS;
  const long long chunks = (size + chunk - 1) / chunk;
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) / 32;
  for (long long c = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       c < chunks; c += warps) {
    visit(c * chunk, c);
  }
}

// found[c] = nonzero entries of chunk c.
template <typename Value>
__device__ __forceinline__ void dpgpu_nonzero_chunks(const Value* values, long long size,
                                                     int* found) {
  const long long lane = threadIdx.x & 31u;
  dpgpu_for_each_chunk(size, [&](long long first, long long c) {
    int total = 0;
    for (int k = 0; k < DPGPU_CHUNK_STEPS; ++k) {
      const long long i = first + 32LL * k + lane;
      total += __popc(__ballot_sync(0xffffffffu, i < size && values[i] != 0));
    }
    if (lane == 0) found[c] = total;
  });
}

// Chunk c's nonzero entries, in order, to out[ends[c - 1] ..).
template <typename Value>
__device__ __forceinline__ void dpgpu_pack_chunks(const Value* values, long long size,
                                                  const long long* ends, int index_shift,
                                                  unsigned long long* out) {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int before = (1u << lane) - 1u;  // lanes below this one
  dpgpu_for_each_chunk(size, [&](long long first, long long c) {
    long long at = c > 0 ? ends[c - 1] : 0;
    for (int k = 0; k < DPGPU_CHUNK_STEPS; ++k) {
      const long long i = first + 32LL * k + lane;
      const Value v = i < size ? values[i] : 0;
      const unsigned int hits = __ballot_sync(0xffffffffu, v != 0);
      if (v != 0) out[at + __popc(hits & before)] = dpgpu_pack_entry(i, v, index_shift);
      at += __popc(hits);
    }
  });
}

}  // namespace

#define DPGPU_READOUT_KERNELS(suffix, Value)                                                 \
  extern "C" __global__ void dpgpu_nonzero_chunks_##suffix(                                 \
      const Value* __restrict__ values, long long size, int* __restrict__ found) {          \
    dpgpu_nonzero_chunks(values, size, found);                                               \
  }                                                                                          \
  extern "C" __global__ void dpgpu_pack_chunks_##suffix(                                    \
      const Value* __restrict__ values, long long size, const long long* __restrict__ ends, \
      int index_shift, unsigned long long* __restrict__ out) {                              \
    dpgpu_pack_chunks(values, size, ends, index_shift, out);                                 \
  }

DPGPU_READOUT_KERNELS(u32, unsigned int)
DPGPU_READOUT_KERNELS(u64, unsigned long long)
