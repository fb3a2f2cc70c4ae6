// subseq.cuh -- per-element logic of the subsequence-support kernel (host and device).
//
// Same steps as the Numba kernel of dpgpu.eval.truth.subsequence_supports:
// patterns are grouped by their prefix (all items but the last); for one
// (sequence, group) work item the prefix is matched greedily (leftmost
// match, which ends earliest), and each pattern of the group is contained
// iff its last item occurs after that end.
//
// Conventions:
//   sequence s   items[offsets[s] .. offsets[s+1]), ids >= 0;
//   group g      prefix pre_flat[pre_off[g] .. pre_off[g+1]) (may be empty),
//                extensions ext_item[grp_off[g] .. grp_off[g+1]);
//   flat         work item t = s * n_groups + g.
#ifndef DPGPU_SUBSEQ_CUH
#define DPGPU_SUBSEQ_CUH

#include "common.cuh"

// Index in seq of the item matching pat[m-1] in the leftmost match of
// pat[0 .. m) (-1 for the empty prefix), or len when pat is not a subsequence.
DPGPU_HD long long dpgpu_match_end(const int* seq, long long len,
                                   const int* pat, long long m) {
  long long pos = -1;
  for (long long j = 0; j < m; ++j) {
    const int x = pat[j];
    do {
      ++pos;
    } while (pos < len && seq[pos] != x);
    if (pos >= len) return len;
  }
  return pos;
}

// True when item x occurs in seq at an index > pos.
DPGPU_HD bool dpgpu_occurs_after(const int* seq, long long len, long long pos,
                                 int x) {
  for (long long i = pos + 1; i < len; ++i) {
    if (seq[i] == x) return true;
  }
  return false;
}

// End of the group prefix's match in the sequence of work item t, or the
// sequence's length when the prefix does not occur (then no pattern of the
// group is contained).  *seq_out and *len_out receive the sequence.
DPGPU_HD long long dpgpu_group_match(const int* items, const long long* offsets,
                                     const int* pre_flat, const long long* pre_off,
                                     long long n_groups, long long t,
                                     const int** seq_out, long long* len_out) {
  const long long s = t / n_groups;
  const long long g = t - s * n_groups;
  const long long a = offsets[s];
  const long long len = offsets[s + 1] - a;
  *seq_out = items + a;
  *len_out = len;
  const long long m = pre_off[g + 1] - pre_off[g];
  if (m >= len) return len;  // a pattern of m + 1 items needs a longer sequence
  return dpgpu_match_end(items + a, len, pre_flat + pre_off[g], m);
}

#endif  // DPGPU_SUBSEQ_CUH
