// grams.cu -- launch wrappers of the gram kernels (logic in grams.cuh).
//
// Each kernel takes a 1-D grid of any size and loops grid-stride over its
// work items: the flat windows t = row * n_windows + pos, or the words.
#include "grams.cuh"

// keys[t] = packed key of window t, for an (n_rows, n_windows) int64 matrix.
extern "C" __global__ void dpgpu_packed_keys(const int* __restrict__ tokens,
                                             long long row_stride,
                                             long long n_rows,
                                             long long n_windows, int n,
                                             long long radix,
                                             long long* __restrict__ keys) {
  const long long total = n_rows * n_windows;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < total; t += step) {
    keys[t] = dpgpu_packed_key_at(tokens, row_stride, n_windows, n, radix, t);
  }
}

// out[ctx * n_symbols + x] += occurrences of context ctx followed by x, over
// the windows of length m + 1 of an (n_rows, n_windows + m) token block.
// out is the int64 histogram seen as unsigned 64-bit for atomicAdd.
extern "C" __global__ void dpgpu_level_histogram(
    const int* __restrict__ tokens, long long row_stride,
    const int* __restrict__ lengths, long long n_rows, long long n_windows,
    int m, long long radix, const long long* __restrict__ sorted_keys,
    const long long* __restrict__ ctx_order, long long n_ctx, int n_symbols,
    unsigned long long* out) {
  const long long total = n_rows * n_windows;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < total; t += step) {
    const long long bin =
        dpgpu_level_bin_at(tokens, row_stride, lengths, n_windows, m, radix,
                           sorted_keys, ctx_order, n_ctx, n_symbols, t);
    if (bin >= 0) atomicAdd(out + bin, 1ULL);
  }
}

// grams[i] = symbols of the key of packed[i], counts[i] = its count, for
// words (key << count_bits) | count (0 < count_bits < 64).
extern "C" __global__ void dpgpu_unpack_counts(const unsigned long long* __restrict__ packed,
                                               long long size, int count_bits, int n,
                                               long long radix, int* __restrict__ grams,
                                               long long* __restrict__ counts) {
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
       i += step) {
    counts[i] = dpgpu_unpack_word(packed[i], count_bits, n,
                                  static_cast<unsigned long long>(radix), grams + i * n);
  }
}
