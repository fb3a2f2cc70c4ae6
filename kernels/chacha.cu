// chacha.cu -- keyed counter-mode words on the GPU (logic in chacha.cuh).
#include "chacha.cuh"

// words[k, i] = word k of identity ids[i] under (key, tag), for an
// (n_words, m) uint64 matrix; one work item per (block, identity).
extern "C" __global__ void dpgpu_chacha_words(const unsigned int* __restrict__ key,
                                              const unsigned long long* __restrict__ ids,
                                              long long m, long long tag,
                                              int n_words,
                                              unsigned long long* __restrict__ words) {
  const long long n_blocks = (n_words + 7) / 8;
  const long long total = n_blocks * m;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  unsigned int k[8];
  for (int i = 0; i < 8; ++i) k[i] = key[i];
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < total; t += step) {
    const long long i = t % m;
    dpgpu_chacha_words_of_block(k, static_cast<unsigned int>(tag), ids[i],
                                static_cast<int>(t / m), n_words, words + i, m);
  }
}
