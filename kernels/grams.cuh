// grams.cuh -- per-element logic of the gram kernels (host and device).
//
// Conventions (see dpgpu/ops/keys.py, the reference):
//   tokens   int32, row r starts at tokens + r * row_stride; symbols are
//            0 .. n_symbols-1, padding is -1;
//   window   (row, pos) covers tokens[row][pos .. pos+n-1];
//   key      sum((s_i + 1) * radix**(n-1-i)), computed with unsigned 64-bit
//            wraparound, so it equals NumPy's int64 arithmetic bit for bit
//            (exact, collision-free, whenever radix**n < 2**63);
//   flat     work item t = row * n_windows + pos (row-major, coalesced).
#ifndef DPGPU_GRAMS_CUH
#define DPGPU_GRAMS_CUH

#include "common.cuh"

// Packed key of the n symbols at row[pos], row[pos+1], ...
DPGPU_HD long long dpgpu_window_key(const int* row, long long pos, int n,
                                    long long radix) {
  unsigned long long key = 0ULL;
  for (int i = 0; i < n; ++i) {
    const long long symbol = static_cast<long long>(row[pos + i]) + 1LL;
    key = key * static_cast<unsigned long long>(radix) +
          static_cast<unsigned long long>(symbol);
  }
  return static_cast<long long>(key);
}

// Packed key of flat work item t of an (n_rows, n_windows) key matrix.
DPGPU_HD long long dpgpu_packed_key_at(const int* tokens, long long row_stride,
                                       long long n_windows, int n,
                                       long long radix, long long t) {
  const long long row = t / n_windows;
  const long long pos = t - row * n_windows;
  return dpgpu_window_key(tokens + row * row_stride, pos, n, radix);
}

// Packed key of the length-n window at (row, pos) when it lies inside the
// sequence (pos + n <= lengths[row]), else -1.
DPGPU_HD long long dpgpu_gram_key_rc(const int* tokens, long long row_stride,
                                     const int* lengths, int n, long long radix,
                                     long long row, long long pos) {
  if (pos + n > static_cast<long long>(lengths[row])) return -1LL;
  return dpgpu_window_key(tokens + row * row_stride, pos, n, radix);
}

// The same for flat work item t = row * n_windows + pos.
DPGPU_HD long long dpgpu_gram_key_at(const int* tokens, long long row_stride,
                                     const int* lengths, long long n_windows,
                                     int n, long long radix, long long t) {
  const long long row = t / n_windows;
  return dpgpu_gram_key_rc(tokens, row_stride, lengths, n, radix, row, t - row * n_windows);
}

// (row, pos) of flat work item t = row * n_windows + pos along a grid-stride
// loop t, t + step, t + 2 step, ...: two divisions when made, none per step
// (a 64-bit division is a long instruction sequence on a GPU).
struct DpgpuCursor {
  long long row, pos, step_rows, step_pos, n_windows;
};

DPGPU_HD DpgpuCursor dpgpu_cursor(long long t, long long step, long long n_windows) {
  DpgpuCursor c;
  c.n_windows = n_windows;
  c.row = t / n_windows;
  c.pos = t - c.row * n_windows;
  c.step_rows = step / n_windows;
  c.step_pos = step - c.step_rows * n_windows;
  return c;
}

// Move the cursor from work item t to t + step.
DPGPU_HD void dpgpu_cursor_advance(DpgpuCursor* c) {
  c->row += c->step_rows;
  c->pos += c->step_pos;
  if (c->pos >= c->n_windows) {
    c->pos -= c->n_windows;
    c->row += 1;
  }
}

// The splitmix64 finaliser: spreads keys that differ in low digits.
DPGPU_HD unsigned long long dpgpu_mix64(long long key) {
  unsigned long long z = static_cast<unsigned long long>(key);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// High 64 bits of the 128-bit product a * b.
DPGPU_HD unsigned long long dpgpu_mul_high(unsigned long long a, unsigned long long b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  const unsigned long long low = 0xffffffffULL;
  const unsigned long long a0 = a & low, a1 = a >> 32, b0 = b & low, b1 = b >> 32;
  const unsigned long long middle = (a0 * b0 >> 32) + (a1 * b0 & low) + a0 * b1;
  return a1 * b1 + (a1 * b0 >> 32) + (middle >> 32);
#endif
}

// Home slot of a key in a hash table of `capacity` slots (any size > 0):
// the high word of mix64(key) * capacity, a multiply instead of a modulo.
DPGPU_HD unsigned long long dpgpu_hash_slot(long long key, unsigned long long capacity) {
  return dpgpu_mul_high(dpgpu_mix64(key), capacity);
}

// Slot after `slot` in linear probing (wrapping at capacity).
DPGPU_HD unsigned long long dpgpu_next_slot(unsigned long long slot,
                                            unsigned long long capacity) {
  return slot + 1ULL == capacity ? 0ULL : slot + 1ULL;
}

// Symbols of an exact packed key of n digits: row[i] = digit i - 1
// (the inverse of dpgpu_window_key; a zero digit, padding, gives -1).
// Digits come off in 32-bit arithmetic once the rest fits it (a 64-bit
// division is a long instruction sequence on a GPU).
DPGPU_HD void dpgpu_decode_key(unsigned long long key, int n, unsigned long long radix,
                               int* row) {
  int i = n - 1;
  for (; i >= 0 && (key > 0xffffffffULL || radix > 0xffffffffULL); --i) {
    row[i] = static_cast<int>(key % radix) - 1;
    key /= radix;
  }
  unsigned int rest = static_cast<unsigned int>(key);
  const unsigned int base = static_cast<unsigned int>(radix);
  for (; i >= 0; --i) {
    row[i] = static_cast<int>(rest % base) - 1;
    rest /= base;
  }
}

// Entry i of a counting table as written by the read-out:
// (i << index_shift) | value, or the bare value when index_shift < 0.
DPGPU_HD unsigned long long dpgpu_pack_entry(long long i, unsigned long long value,
                                             int index_shift) {
  if (index_shift < 0) return value;
  return (static_cast<unsigned long long>(i) << index_shift) | value;
}

// Count and gram row of a packed word (key << count_bits) | count
// (0 < count_bits < 64), the key's n digits decoded as dpgpu_decode_key does.
DPGPU_HD long long dpgpu_unpack_word(unsigned long long word, int count_bits, int n,
                                     unsigned long long radix, int* row) {
  dpgpu_decode_key(word >> count_bits, n, radix, row);
  return static_cast<long long>(word & ((1ULL << count_bits) - 1ULL));
}

// First index i with sorted[i] >= key (NumPy searchsorted, side="left").
DPGPU_HD long long dpgpu_lower_bound(const long long* sorted, long long size,
                                     long long key) {
  long long lo = 0;
  long long hi = size;
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (sorted[mid] < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Index of key in sorted, or -1 when absent.
DPGPU_HD long long dpgpu_find_key(const long long* sorted, long long size,
                                  long long key) {
  const long long i = dpgpu_lower_bound(sorted, size, key);
  return (i < size && sorted[i] == key) ? i : -1LL;
}

// Histogram bin of flat work item t of the level histogram, or -1.
//
// Work item t is the window (row, pos) of length m + 1, pos < n_windows.  It
// counts when it lies inside the sequence (pos + m + 1 <= lengths[row]), its
// m-prefix key is one of the n_ctx sorted context keys, and its last symbol
// is a valid id; its bin is then ctx_order[i] * n_symbols + next_symbol,
// where i is the prefix key's index in sorted_keys and ctx_order maps sorted
// positions back to the caller's context rows.
DPGPU_HD long long dpgpu_level_bin_at(const int* tokens, long long row_stride,
                                      const int* lengths, long long n_windows,
                                      int m, long long radix,
                                      const long long* sorted_keys,
                                      const long long* ctx_order,
                                      long long n_ctx, int n_symbols,
                                      long long t) {
  const long long row = t / n_windows;
  const long long pos = t - row * n_windows;
  if (pos + m + 1 > static_cast<long long>(lengths[row])) return -1LL;
  const int* seq = tokens + row * row_stride;
  const long long i =
      dpgpu_find_key(sorted_keys, n_ctx, dpgpu_window_key(seq, pos, m, radix));
  if (i < 0) return -1LL;
  const int next = seq[pos + m];
  if (next < 0 || next >= n_symbols) return -1LL;
  return ctx_order[i] * n_symbols + next;
}

#endif  // DPGPU_GRAMS_CUH
