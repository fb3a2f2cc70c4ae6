// gram_counts.cu -- n-gram histograms in one pass over a padded block.
//
// Work item t = row * n_windows + pos is the length-n window at (row, pos);
// it counts when it lies inside its sequence, under its packed key
// (grams.cuh).  Dense kernels index counts[0 .. radix**n >> shift) by the
// key shifted right by `shift` bits (0: by the key itself), with
// 32-bit counters (suffix _u32) where the caller knows fewer than 2**32
// windows, else 64-bit ones (_u64); the hash kernels add to an
// open-addressing table for key spaces too large to hold.  Keys of windows
// inside a sequence have no zero digit: no padding key is ever counted, and
// no key is 0.
//
// Radix-partitioned counting (dpgpu_partition_*) sorts nothing and hashes
// nothing: partition p holds the keys k with k >> shift == p.  A dense
// histogram with that shift sizes the partitions; dpgpu_partition_scatter
// writes every window's low `shift` key bits into its partition's stretch
// of a buffer; dpgpu_partition_counts_small sorts each partition of at most
// 32 keys in a warp, and dpgpu_partition_counts counts each larger one in a
// shared-memory histogram of 2**shift bins, both writing the distinct keys
// in key order with their counts; dpgpu_partition_gather closes the gaps.
// Partitions come in key order, so the result is sorted.
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

// The same merged within the warp: visit(key >> shift, lanes) runs on the
// lowest lane of each group of lanes holding the same valid key >> shift,
// with the group's size.  Keys are matched as Key (int where the shifted key
// space is below 2**31).
template <typename Key, typename Visit>
__device__ __forceinline__ void dpgpu_for_each_merged_key(const int* tokens, long long row_stride,
                                                          const int* lengths, long long n_rows,
                                                          long long n_windows, int n,
                                                          long long radix, int shift,
                                                          Visit visit) {
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                     [&](long long key) {
    const long long bin = key < 0 ? -1LL : key >> shift;
    const unsigned int peers = dpgpu_peers(static_cast<Key>(bin));
    if (bin >= 0 && static_cast<int>(threadIdx.x & 31u) == __ffs(peers) - 1) {
      visit(bin, static_cast<unsigned int>(__popc(peers)));
    }
  });
}

// counts[k >> shift] += occurrences of key k, atomics straight to global memory.
template <typename Count>
__device__ __forceinline__ void dpgpu_gram_counts(const int* tokens, long long row_stride,
                                                  const int* lengths, long long n_rows,
                                                  long long n_windows, int n, long long radix,
                                                  int shift, Count* counts) {
  dpgpu_for_each_merged_key<int>(tokens, row_stride, lengths, n_rows, n_windows, n, radix,
                                 shift, [&](long long bin, unsigned int lanes) {
    atomicAdd(counts + bin, static_cast<Count>(lanes));
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
                                                         long long radix, int shift, int space,
                                                         Count* counts) {
  extern __shared__ unsigned int local[];
  for (int i = static_cast<int>(threadIdx.x); i < space; i += static_cast<int>(blockDim.x)) {
    local[i] = 0u;
  }
  __syncthreads();
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix, [&](long long key) {
    if (key >= 0) atomicAdd(local + (key >> shift), 1u);
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
      long long n_rows, long long n_windows, int n, long long radix, int shift,            \
      Count* counts) {                                                                      \
    dpgpu_gram_counts(tokens, row_stride, lengths, n_rows, n_windows, n, radix, shift,     \
                      counts);                                                              \
  }                                                                                         \
  extern "C" __global__ void dpgpu_gram_counts_shared_##suffix(                            \
      const int* __restrict__ tokens, long long row_stride, const int* __restrict__ lengths, \
      long long n_rows, long long n_windows, int n, long long radix, int shift, int space, \
      Count* counts) {                                                                      \
    dpgpu_gram_counts_shared(tokens, row_stride, lengths, n_rows, n_windows, n, radix,     \
                             shift, space, counts);                                        \
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
                                       0, [&](long long key, unsigned int lanes) {
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
                                       0, [&](long long key, unsigned int lanes) {
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

// Radix-partitioned counting (see the top of the file).
//
// Every window's low `shift` key bits go to out[cursors[p]++], p = key >> shift
// (cursors start at each partition's offset).  The lanes of a warp with the
// same partition take their places with one atomic: the lowest adds their
// number and hands the old value to the others.  The order within a
// partition varies from run to run; the counts do not.  Partitions are
// matched as int: the caller keeps their number below 2**31.
extern "C" __global__ void dpgpu_partition_scatter(const int* __restrict__ tokens,
                                                   long long row_stride,
                                                   const int* __restrict__ lengths,
                                                   long long n_rows, long long n_windows, int n,
                                                   long long radix, int shift,
                                                   unsigned long long* cursors,
                                                   unsigned int* __restrict__ out) {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned long long low = (1ULL << shift) - 1ULL;
  dpgpu_for_each_key(tokens, row_stride, lengths, n_rows, n_windows, n, radix, [&](long long key) {
    const long long part = key < 0 ? -1LL : key >> shift;
    const unsigned int peers = dpgpu_peers(static_cast<int>(part));
    const int leader = __ffs(peers) - 1;
    unsigned long long base = 0ULL;
    if (part >= 0 && static_cast<int>(lane) == leader) {
      base = atomicAdd(cursors + part, static_cast<unsigned long long>(__popc(peers)));
    }
    base = __shfl_sync(0xffffffffu, base, leader);
    if (part >= 0) {
      out[base + __popc(peers & ((1u << lane) - 1u))] =
          static_cast<unsigned int>(static_cast<unsigned long long>(key) & low);
    }
  });
}

// One warp a partition of at most 32 keys (grid-stride; the others are the
// block kernel's): lane l holds key l (lanes past the end hold ~0u), a
// bitonic network of shuffles sorts them, and the lane starting each run of
// equal keys writes the key and the run's length at the key's rank, so the
// words come in key order; distinct[p] = the number of runs.
__device__ __forceinline__ void dpgpu_count_small_partitions(const unsigned int* keys,
                                                             const unsigned long long* starts,
                                                             long long n_parts, int shift,
                                                             int count_bits,
                                                             unsigned long long* words,
                                                             unsigned int* distinct) {
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) / 32;
  const unsigned int lane = threadIdx.x & 31u;
  for (long long p = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       p < n_parts; p += warps) {
    const unsigned long long lo = starts[p];
    const unsigned long long m = starts[p + 1] - lo;
    if (m > 32ULL) continue;  // the same for every lane of the warp
    if (m == 0ULL) {
      if (lane == 0u) distinct[p] = 0u;
      continue;
    }
    unsigned int v = lane < m ? keys[lo + lane] : ~0u;
    for (unsigned int k = 2; k <= 32; k <<= 1) {
      for (unsigned int j = k >> 1; j > 0; j >>= 1) {
        const unsigned int other = __shfl_xor_sync(0xffffffffu, v, static_cast<int>(j));
        const bool up = (lane & k) == 0u, low = (lane & j) == 0u;
        v = (low == up) ? (v < other ? v : other) : (v < other ? other : v);
      }
    }
    const unsigned int before = __shfl_up_sync(0xffffffffu, v, 1);
    const bool first = lane < m && (lane == 0u || before != v);
    const unsigned int runs = __ballot_sync(0xffffffffu, first);
    if (first) {
      const unsigned int later = runs & ~((2u << lane) - 1u);  // run starts after this lane
      const unsigned int end = later ? static_cast<unsigned int>(__ffs(later) - 1)
                                     : static_cast<unsigned int>(m);
      const long long key = (p << shift) | static_cast<long long>(v);
      words[lo + __popc(runs & ((1u << lane) - 1u))] = dpgpu_pack_entry(key, end - lane,
                                                                         count_bits);
    }
    if (lane == 0u) distinct[p] = static_cast<unsigned int>(__popc(runs));
  }
}

// One block a partition of more than 32 keys, grid-stride: partition p's low key bits
// keys[starts[p] .. starts[p + 1]) counted in a shared-memory histogram of
// 2**shift bins (dynamic size 4 * (2**shift + 32) bytes), whose nonzero bins
// are written in bin order as words ((p << shift | bin) << count_bits) | count
// to words[starts[p] ..), and their number to distinct[p].  A tile of
// blockDim.x bins at a time: a ballot ranks the nonzero bins within each
// warp, and the warps' totals (after the bins) place the warps.  Every
// thread runs the same loops (blockDim.x a multiple of 32), so the
// barriers and full-warp ballots are exact.  A partition holds fewer than
// 2**32 keys.
namespace {

__device__ __forceinline__ void dpgpu_count_partitions(const unsigned int* keys,
                                                       const unsigned long long* starts,
                                                       long long n_parts, int shift,
                                                       int count_bits, unsigned long long* words,
                                                       unsigned int* distinct) {
  extern __shared__ unsigned int local[];
  const int bins = 1 << shift;
  unsigned int* totals = local + bins;  // one per warp
  const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (long long p = blockIdx.x; p < n_parts; p += gridDim.x) {
    const unsigned long long lo = starts[p], hi = starts[p + 1];
    if (hi - lo <= 32ULL) continue;  // the warp kernel's (the same for every thread)
    for (int i = static_cast<int>(threadIdx.x); i < bins; i += static_cast<int>(blockDim.x)) {
      local[i] = 0u;
    }
    __syncthreads();
    for (unsigned long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      atomicAdd(local + keys[i], 1u);
    }
    __syncthreads();
    unsigned long long at = lo;
    for (int first = 0; first < bins; first += static_cast<int>(blockDim.x)) {
      const int bin = first + static_cast<int>(threadIdx.x);
      const unsigned int count = bin < bins ? local[bin] : 0u;
      const unsigned int hits = __ballot_sync(0xffffffffu, count != 0u);
      if (lane == 0u) totals[warp] = static_cast<unsigned int>(__popc(hits));
      __syncthreads();
      unsigned long long before = 0ULL, tile = 0ULL;
      for (unsigned int w = 0; w < (blockDim.x >> 5); ++w) {
        before += w < warp ? totals[w] : 0u;
        tile += totals[w];
      }
      if (count != 0u) {
        const long long key = (p << shift) | bin;
        words[at + before + __popc(hits & ((1u << lane) - 1u))] =
            dpgpu_pack_entry(key, count, count_bits);
      }
      at += tile;
      __syncthreads();  // totals and the bins are read before they change
    }
    if (threadIdx.x == 0) distinct[p] = static_cast<unsigned int>(at - lo);
  }
}

}  // namespace

extern "C" __global__ void dpgpu_partition_counts(const unsigned int* __restrict__ keys,
                                                  const unsigned long long* __restrict__ starts,
                                                  long long n_parts, int shift, int count_bits,
                                                  unsigned long long* __restrict__ words,
                                                  unsigned int* __restrict__ distinct) {
  dpgpu_count_partitions(keys, starts, n_parts, shift, count_bits, words, distinct);
}

extern "C" __global__ void dpgpu_partition_counts_small(
    const unsigned int* __restrict__ keys, const unsigned long long* __restrict__ starts,
    long long n_parts, int shift, int count_bits, unsigned long long* __restrict__ words,
    unsigned int* __restrict__ distinct) {
  dpgpu_count_small_partitions(keys, starts, n_parts, shift, count_bits, words, distinct);
}

// One warp a partition, grid-stride: words[starts[p] .. + distinct[p]) to
// out[ends[p] - distinct[p] ..) (ends: the inclusive running sum of distinct).
extern "C" __global__ void dpgpu_partition_gather(const unsigned long long* __restrict__ words,
                                                  const unsigned long long* __restrict__ starts,
                                                  const unsigned int* __restrict__ distinct,
                                                  const long long* __restrict__ ends,
                                                  long long n_parts,
                                                  unsigned long long* __restrict__ out) {
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) / 32;
  const unsigned int lane = threadIdx.x & 31u;
  for (long long p = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       p < n_parts; p += warps) {
    const long long size = distinct[p], to = ends[p] - size;
    const unsigned long long from = starts[p];
    for (long long i = lane; i < size; i += 32) out[to + i] = words[from + i];
  }
}
