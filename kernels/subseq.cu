// subseq.cu -- launch wrapper of the subsequence-support kernel (logic in subseq.cuh).
#include "subseq.cuh"

// out[e] += weights[s] for every sequence s containing pattern e (prefix of
// its group followed by ext_item[e]); a 1-D grid of any size loops
// grid-stride over the work items t = s * n_groups + g.  out is the int64
// support vector seen as unsigned 64-bit for atomicAdd.
extern "C" __global__ void dpgpu_subseq_supports(
    const int* __restrict__ items, const long long* __restrict__ offsets,
    const long long* __restrict__ weights, long long n_seq,
    const int* __restrict__ pre_flat, const long long* __restrict__ pre_off,
    const long long* __restrict__ grp_off, const int* __restrict__ ext_item,
    long long n_groups, unsigned long long* out) {
  const long long total = n_seq * n_groups;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < total; t += step) {
    const int* seq = nullptr;
    long long len = 0;
    const long long end = dpgpu_group_match(items, offsets, pre_flat, pre_off,
                                            n_groups, t, &seq, &len);
    if (end >= len) continue;
    const long long g = t % n_groups;
    const unsigned long long w =
        static_cast<unsigned long long>(weights[t / n_groups]);
    for (long long e = grp_off[g]; e < grp_off[g + 1]; ++e) {
      if (dpgpu_occurs_after(seq, len, end, ext_item[e])) atomicAdd(out + e, w);
    }
  }
}
