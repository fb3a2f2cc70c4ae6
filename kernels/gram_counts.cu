// gram_counts.cu -- n-gram histograms in one pass over a padded block.
//
// Work item t = row * n_windows + pos is the length-n window at (row, pos);
// it counts when it lies inside its sequence, under its packed key
// (grams.cuh).  Dense kernels index counts[0 .. radix**n) by the key, with
// 32-bit counters (suffix _u32) where the caller knows fewer than 2**32
// windows, else 64-bit ones (_u64); the hash kernels add to an
// open-addressing table for key spaces too large to hold.  Keys of windows
// inside a sequence have no zero digit: no padding key is ever counted, and
// no key is 0.
//
// Hot keys are common (Zipf-like alphabets), so the kernels that add to
// global memory first merge the lanes of a warp holding the same key
// (dpgpu_peers) and one lane adds their number: a key shared by a whole
// warp costs one atomic, not 32.  Every warp runs the
// grid-stride loop the same number of times (blockDim.x is a multiple of 32;
// a lane past the end carries key -1), so the full-warp mask is exact.
#include "grams.cuh"

namespace {

// Lanes of this warp holding the same key as this lane (this lane included).
// __match_any_sync needs compute capability 7.0; before it, every lane is its
// own group (one atomic per window, same counts).
// Dense key spaces are below 2**31: their keys match as int, the cheaper instruction.
template <typename Key>
__device__ __forceinline__ unsigned int dpgpu_peers(Key key) {
#if __CUDA_ARCH__ >= 700
  return __match_any_sync(0xffffffffu, key);
#else
  (void)key;
  return 1u << (threadIdx.x & 31u);
#endif
}

// visit(key) for every work item of this thread, grid-stride, with key -1
// for a window outside its sequence and for lanes past the end, so that every
// lane of a warp makes the same number of calls (warp intrinsics inside).
template <typename Visit>
__device__ __forceinline__ void dpgpu_for_each_key(const int* tokens, long long row_stride,
                                                   const int* lengths, long long n_rows,
                                                   long long n_windows, int n, long long radix,
                                                   Visit visit) {
  const long long total = n_rows * n_windows;
  if (total <= 0) return;  // the same for every thread; n_windows > 0 below
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long lane = threadIdx.x & 31u;
  long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  DpgpuCursor at = dpgpu_cursor(t, step, n_windows);
  for (; t - lane < total; t += step, dpgpu_cursor_advance(&at)) {
    visit(t < total ? dpgpu_gram_key_rc(tokens, row_stride, lengths, n, radix, at.row, at.pos)
                    : -1LL);
  }
}

// The same merged within the warp: visit(key, lanes) runs on the lowest lane
// of each group of lanes holding the same valid key, with the group's size.
// Keys are matched as Key (int where the key space is below 2**31).
template <typename Key, typename Visit>
__device__ __forceinline__ void dpgpu_for_each_merged_key(const int* tokens, long long row_stride,
                                                          const int* lengths, long long n_rows,
                                                          long long n_windows, int n,
                                                          long long radix, Visit visit) {
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                     [&](long long key) {
    const unsigned int peers = dpgpu_peers(static_cast<Key>(key));
    if (key >= 0 && static_cast<int>(threadIdx.x & 31u) == __ffs(peers) - 1) {
      visit(key, static_cast<unsigned int>(__popc(peers)));
    }
  });
}

// counts[k] += occurrences of key k, atomics straight to global memory.
template <typename Count>
__device__ __forceinline__ void dpgpu_gram_counts(const int* tokens, long long row_stride,
                                                  const int* lengths, long long n_rows,
                                                  long long n_windows, int n, long long radix,
                                                  Count* counts) {
  dpgpu_for_each_merged_key<int>(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                                 [&](long long key, unsigned int lanes) {
    atomicAdd(counts + key, static_cast<Count>(lanes));
  });
}

// The same with one private histogram of `space` 32-bit counters per block in
// shared memory (dynamic size 4 * space bytes), added to counts at the end.
// Shared-memory atomics on one address cost less than merging the warp's
// keys first (measured on an H100 for spaces of 101 and 10,201 bins).
// Each block must see fewer than 2**32 work items.
template <typename Count>
__device__ __forceinline__ void dpgpu_gram_counts_shared(const int* tokens, long long row_stride,
                                                         const int* lengths, long long n_rows,
                                                         long long n_windows, int n,
                                                         long long radix, int space,
                                                         Count* counts) {
  extern __shared__ unsigned int local[];
  for (int i = static_cast<int>(threadIdx.x); i < space; i += static_cast<int>(blockDim.x)) {
    local[i] = 0u;
  }
  __syncthreads();
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix, [&](long long key) {
    if (key >= 0) atomicAdd(local + key, 1u);
  });
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < space; i += static_cast<int>(blockDim.x)) {
    if (local[i] != 0u) atomicAdd(counts + i, static_cast<Count>(local[i]));
  }
}

}  // namespace

#define DPGPU_DENSE_KERNELS(suffix, Count)                                                  \
  extern "C" __global__ void dpgpu_gram_counts_##suffix(                                   \
      const int* __restrict__ tokens, long long row_stride, const int* __restrict__ lengths, \
      long long n_rows, long long n_windows, int n, long long radix, Count* counts) {      \
    dpgpu_gram_counts(tokens, row_stride, lengths, n_rows, n_windows, n, radix, counts);   \
  }                                                                                         \
  extern "C" __global__ void dpgpu_gram_counts_shared_##suffix(                            \
      const int* __restrict__ tokens, long long row_stride, const int* __restrict__ lengths, \
      long long n_rows, long long n_windows, int n, long long radix, int space,            \
      Count* counts) {                                                                      \
    dpgpu_gram_counts_shared(tokens, row_stride, lengths, n_rows, n_windows, n, radix,     \
                             space, counts);                                               \
  }

DPGPU_DENSE_KERNELS(u32, unsigned int)
DPGPU_DENSE_KERNELS(u64, unsigned long long)

// The same into an open-addressing hash table of `capacity` single-word
// slots (linear probing from dpgpu_hash_slot), for keys and counts that fit
// 64 bits together: a slot holds (key << count_bits) | count, 0 while empty.
// A key claims an empty slot with atomicCAS, its first count included, and
// later adds to the low bits (counts stay below 2**count_bits).  Sorting the
// nonzero slots sorts by key.  The caller makes capacity exceed the number
// of distinct keys, so every probe ends.
extern "C" __global__ void dpgpu_gram_hash_packed(const int* __restrict__ tokens,
                                                  long long row_stride,
                                                  const int* __restrict__ lengths,
                                                  long long n_rows, long long n_windows,
                                                  int n, long long radix, long long capacity,
                                                  int count_bits, unsigned long long* table) {
  const unsigned long long slots = static_cast<unsigned long long>(capacity);
  dpgpu_for_each_merged_key<long long>(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                                       [&](long long key, unsigned int lanes) {
    const unsigned long long add = lanes;
    const unsigned long long mine = static_cast<unsigned long long>(key);
    for (unsigned long long slot = dpgpu_hash_slot(key, slots);;
         slot = dpgpu_next_slot(slot, slots)) {
      // A claimed slot's key bits never change, so a stale read is safe.
      unsigned long long held = *reinterpret_cast<volatile unsigned long long*>(table + slot);
      if (held == 0ULL) {
        held = atomicCAS(table + slot, 0ULL, (mine << count_bits) | add);
        if (held == 0ULL) return;
      }
      if ((held >> count_bits) == mine) {
        atomicAdd(table + slot, add);
        return;
      }
    }
  });
}

// The same for keys and counts too wide for one word: slot i is table[2i]
// (the key; -1 while empty) and table[2i + 1] (its count), one 16-byte pair,
// so a window touches one cache line.
extern "C" __global__ void dpgpu_gram_hash_counts(const int* __restrict__ tokens,
                                                  long long row_stride,
                                                  const int* __restrict__ lengths,
                                                  long long n_rows, long long n_windows,
                                                  int n, long long radix, long long capacity,
                                                  unsigned long long* table) {
  const unsigned long long empty = ~0ULL;
  const unsigned long long slots = static_cast<unsigned long long>(capacity);
  dpgpu_for_each_merged_key<long long>(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                                       [&](long long key, unsigned int lanes) {
    const unsigned long long want = static_cast<unsigned long long>(key);
    for (unsigned long long slot = dpgpu_hash_slot(key, slots);;
         slot = dpgpu_next_slot(slot, slots)) {
      const unsigned long long held = atomicCAS(table + 2 * slot, empty, want);
      if (held == empty || held == want) {
        atomicAdd(table + 2 * slot + 1, static_cast<unsigned long long>(lanes));
        return;
      }
    }
  });
}
