// gram_counts.cu -- n-gram histograms in one pass over a padded block.
//
// Work item t = row * n_windows + pos is the length-n window at (row, pos);
// it counts when it lies inside its sequence, under its packed key
// (grams.cuh).  Dense kernels index counts[0 .. radix**n) by the key; the
// hash kernel adds to an open-addressing table for key spaces too large to
// hold.  Keys of windows inside a sequence have no zero digit, so no padding
// key is ever counted.
//
// Hot keys are common (Zipf-like alphabets), so lanes of a warp holding the
// same key are merged (dpgpu_peers) and one lane adds their number:
// a key shared by a whole warp costs one atomic, not 32.  Every warp runs the
// grid-stride loop the same number of times (blockDim.x is a multiple of 32;
// a lane past the end carries key -1), so the full-warp mask is exact.
#include "grams.cuh"

namespace {

// Lanes of this warp holding the same key as this lane (this lane included).
// __match_any_sync needs compute capability 7.0; before it, every lane is its
// own group (one atomic per window, same counts).
__device__ __forceinline__ unsigned int dpgpu_peers(long long key) {
#if __CUDA_ARCH__ >= 700
  return __match_any_sync(0xffffffffu, key);
#else
  (void)key;
  return 1u << (threadIdx.x & 31u);
#endif
}

// counts[key] += number of lanes of this warp holding key (key >= 0).
template <typename Count>
__device__ __forceinline__ void dpgpu_warp_add(Count* counts, long long key) {
  const unsigned int peers = dpgpu_peers(key);
  const int lane = static_cast<int>(threadIdx.x & 31u);
  if (key >= 0 && lane == __ffs(peers) - 1) {
    atomicAdd(counts + key, static_cast<Count>(__popc(peers)));
  }
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

}  // namespace

// counts[k] += occurrences of key k, atomics straight to global memory.
extern "C" __global__ void dpgpu_gram_counts(const int* __restrict__ tokens,
                                             long long row_stride,
                                             const int* __restrict__ lengths,
                                             long long n_rows, long long n_windows,
                                             int n, long long radix,
                                             unsigned long long* counts) {
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                     [&](long long key) { dpgpu_warp_add(counts, key); });
}

// The same with one private histogram of `space` 32-bit counters per block in
// shared memory (dynamic size 4 * space bytes), added to counts at the end.
// Each block must see fewer than 2**32 work items.
extern "C" __global__ void dpgpu_gram_counts_shared(const int* __restrict__ tokens,
                                                    long long row_stride,
                                                    const int* __restrict__ lengths,
                                                    long long n_rows, long long n_windows,
                                                    int n, long long radix, int space,
                                                    unsigned long long* counts) {
  extern __shared__ unsigned int local[];
  for (int i = static_cast<int>(threadIdx.x); i < space; i += static_cast<int>(blockDim.x)) {
    local[i] = 0u;
  }
  __syncthreads();
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                     [&](long long key) { dpgpu_warp_add(local, key); });
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < space; i += static_cast<int>(blockDim.x)) {
    if (local[i] != 0u) atomicAdd(counts + i, static_cast<unsigned long long>(local[i]));
  }
}

// The same into an open-addressing hash table of mask + 1 slots (linear
// probing from dpgpu_hash_slot).  Slot i is table[2i] (the key; -1 while
// empty) and table[2i + 1] (its count), one 16-byte pair, so a window
// touches one cache line: a key claims a slot with atomicCAS and adds to the
// count beside it.  The caller sizes the table above the number of distinct
// keys, so every probe ends.
extern "C" __global__ void dpgpu_gram_hash_counts(const int* __restrict__ tokens,
                                                  long long row_stride,
                                                  const int* __restrict__ lengths,
                                                  long long n_rows, long long n_windows,
                                                  int n, long long radix,
                                                  long long mask,
                                                  unsigned long long* table) {
  const unsigned long long empty = ~0ULL;
  const unsigned long long wrap = static_cast<unsigned long long>(mask);
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                     [&](long long key) {
    const unsigned int peers = dpgpu_peers(key);
    const int lane = static_cast<int>(threadIdx.x & 31u);
    if (key < 0 || lane != __ffs(peers) - 1) return;
    const unsigned long long want = static_cast<unsigned long long>(key);
    for (unsigned long long slot = dpgpu_hash_slot(key, wrap);; slot = (slot + 1ULL) & wrap) {
      const unsigned long long held = atomicCAS(table + 2 * slot, empty, want);
      if (held == empty || held == want) {
        atomicAdd(table + 2 * slot + 1, static_cast<unsigned long long>(__popc(peers)));
        return;
      }
    }
  });
}
