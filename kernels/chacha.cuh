// chacha.cuh -- the ChaCha20 block function and dpgpu's word layout.
//
// Per-element logic of kernels/chacha.cu, shared with the host unit test.
// Bit for bit the same as dpgpu.privacy.rng.chacha20_blocks / words_xp:
// state = constants, key (8 words), counter, tag, identity low, identity
// high; word k of an identity is output words (2j, 2j+1), j = k % 8, of
// block k / 8, as a little-endian 64-bit pair.
#ifndef DPGPU_CHACHA_CUH
#define DPGPU_CHACHA_CUH

#include "common.cuh"

DPGPU_HD unsigned int dpgpu_rotl32(unsigned int v, int n) {
  return (v << n) | (v >> (32 - n));
}

DPGPU_HD void dpgpu_quarter_round(unsigned int* x, int a, int b, int c, int d) {
  x[a] += x[b]; x[d] = dpgpu_rotl32(x[d] ^ x[a], 16);
  x[c] += x[d]; x[b] = dpgpu_rotl32(x[b] ^ x[c], 12);
  x[a] += x[b]; x[d] = dpgpu_rotl32(x[d] ^ x[a], 8);
  x[c] += x[d]; x[b] = dpgpu_rotl32(x[b] ^ x[c], 7);
}

// out[0..16) = ChaCha20 block (20 rounds, input added) of one state.
DPGPU_HD void dpgpu_chacha20_block(const unsigned int* key, unsigned int counter,
                                   unsigned int tag, unsigned long long identity,
                                   unsigned int* out) {
  unsigned int init[16] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u,
                           key[0], key[1], key[2], key[3],
                           key[4], key[5], key[6], key[7],
                           counter, tag,
                           static_cast<unsigned int>(identity & 0xFFFFFFFFull),
                           static_cast<unsigned int>(identity >> 32)};
  for (int i = 0; i < 16; ++i) out[i] = init[i];
  for (int r = 0; r < 10; ++r) {
    dpgpu_quarter_round(out, 0, 4, 8, 12);
    dpgpu_quarter_round(out, 1, 5, 9, 13);
    dpgpu_quarter_round(out, 2, 6, 10, 14);
    dpgpu_quarter_round(out, 3, 7, 11, 15);
    dpgpu_quarter_round(out, 0, 5, 10, 15);
    dpgpu_quarter_round(out, 1, 6, 11, 12);
    dpgpu_quarter_round(out, 2, 7, 8, 13);
    dpgpu_quarter_round(out, 3, 4, 9, 14);
  }
  for (int i = 0; i < 16; ++i) out[i] += init[i];
}

// Words 8 * block .. min(8 * block + 8, n_words) of one identity, written to
// words[k * stride] (the (n_words, M) output's column of that identity).
DPGPU_HD void dpgpu_chacha_words_of_block(const unsigned int* key, unsigned int tag,
                                          unsigned long long identity, int block,
                                          int n_words, unsigned long long* words,
                                          long long stride) {
  unsigned int x[16];
  dpgpu_chacha20_block(key, static_cast<unsigned int>(block), tag, identity, x);
  for (int j = 0; j < 8 && 8 * block + j < n_words; ++j) {
    const unsigned long long word =
        static_cast<unsigned long long>(x[2 * j]) |
        (static_cast<unsigned long long>(x[2 * j + 1]) << 32);
    words[static_cast<long long>(8 * block + j) * stride] = word;
  }
}

#endif  // DPGPU_CHACHA_CUH
