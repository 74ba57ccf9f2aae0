// CPU kernels of roi_align, roi_pool and their backward ops, structured ops
// (Note [Structured ops]). The generated code hands them their 4-D inputs as
// (N, H, W, C) (roi::nhwc_kernels in opforge/roi/meta.h), so that a bilinear
// sample or a pooled pixel is a run of C contiguous channels: the box geometry
// and the sample weights are computed once per box, and the loops over the
// channels vectorize (torchvision's CPU kernels walk one channel plane at a time
// and gather). Forward ops run over boxes, writing (K, C, oh, ow) from a
// per-box (bins, C) buffer; backward ops run over ranges of channels, each task
// owning its channels of the whole input gradient (deterministic, no atomics).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/roi_align.h>
#include <opforge/ops/roi_align_backward.h>
#include <opforge/ops/roi_pool.h>
#include <opforge/ops/roi_pool_backward.h>

#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>
#include <opforge/roi/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cfloat>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;
// Channels per backward task: one 64-byte line of float accumulators per pixel.
constexpr int64_t k_chunk = 16;

template <typename T>
int64_t batch_of(const T* box) {
  return math::roi_batch_index(static_cast<double>(math::cast_to<math::opmath_t<T>>(box[0])));
}

// Whether every box names an image of the batch; reports the first that does
// not (the backward ops check them all before their tasks start).
template <typename T>
bool batches_valid(const T* boxes, const roi_dims& d, const index_report& report) {
  for (int64_t k = 0; k < d.rois; ++k) {
    const int64_t b = batch_of(boxes + 5 * k);
    if (b < 0 || b >= d.batch) {
      record_bad_index(report, b);
      return false;
    }
  }
  return true;
}

// One bilinear sample: the pixels (h * W + w) of its four neighbours and their weights.
template <typename A>
struct tap4 {
  int64_t p[4];
  A w[4];
  bool valid;  // false: more than a pixel outside the image, reads 0
};

// The samples of one box, bin-major ((ph, pw), then (iy, ix)); `per_bin` samples
// each, averaged with weight 1 / count.
template <typename A>
struct align_taps {
  std::vector<math::lerp<A>> ys, xs;
  std::vector<tap4<A>> taps;
  int64_t per_bin = 0;
  A count = 1;

  template <typename T>
  void build(const T* box, const roi_align_plan& p) {
    const roi_dims& d = p.d;
    const math::align_box<A> g = math::align_geometry<A>(box, p);
    const int64_t gh = std::max<int64_t>(g.grid_h, 0);
    const int64_t gw = std::max<int64_t>(g.grid_w, 0);
    per_bin = gh * gw;
    count = g.count;
    // Rows and columns of samples interpolate independently: once each.
    ys.resize(d.out_h * gh);
    xs.resize(d.out_w * gw);
    for (int64_t ph = 0; ph < d.out_h; ++ph) {
      for (int64_t i = 0; i < gh; ++i) {
        ys[ph * gh + i] = math::lerp_at(math::sample_at(g.start_h, g.bin_h, ph, i, gh), d.height);
      }
    }
    for (int64_t pw = 0; pw < d.out_w; ++pw) {
      for (int64_t i = 0; i < gw; ++i) {
        xs[pw * gw + i] = math::lerp_at(math::sample_at(g.start_w, g.bin_w, pw, i, gw), d.width);
      }
    }
    taps.resize(d.bins() * per_bin);
    tap4<A>* t = taps.data();
    for (int64_t ph = 0; ph < d.out_h; ++ph) {
      for (int64_t pw = 0; pw < d.out_w; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const math::lerp<A>& y = ys[ph * gh + iy];
          for (int64_t ix = 0; ix < gw; ++ix, ++t) {
            const math::lerp<A>& x = xs[pw * gw + ix];
            const int64_t lo = y.lo * d.width;
            const int64_t hi = y.hi * d.width;
            *t = {{lo + x.lo, lo + x.hi, hi + x.lo, hi + x.hi},
                  {y.w_lo * x.w_lo, y.w_lo * x.w_hi, y.w_hi * x.w_lo, y.w_hi * x.w_hi},
                  y.valid && x.valid};
          }
        }
      }
    }
  }
};

// v[c] = the sample's value at channels [0, n) of the (H, W, C) image `img`.
template <typename A, typename T>
inline void interpolate(A* v, const T* img, int64_t C, const tap4<A>& t, int64_t n) {
  const T* p0 = img + t.p[0] * C;
  const T* p1 = img + t.p[1] * C;
  const T* p2 = img + t.p[2] * C;
  const T* p3 = img + t.p[3] * C;
  const A w0 = t.w[0], w1 = t.w[1], w2 = t.w[2], w3 = t.w[3];
  for (int64_t c = 0; c < n; ++c) {
    v[c] = w0 * math::cast_to<A>(p0[c]) + w1 * math::cast_to<A>(p1[c]) + w2 * math::cast_to<A>(p2[c]) +
           w3 * math::cast_to<A>(p3[c]);
  }
}

// 'avg': the mean of the bin's samples (invalid ones add 0), summed straight
// into the bin's channel run.
template <typename A, typename T>
void align_avg_bin(A* a, const T* img, int64_t C, const tap4<A>* t, int64_t n, A count) {
  std::fill(a, a + C, A(0));
  for (int64_t s = 0; s < n; ++s) {
    if (!t[s].valid) {
      continue;
    }
    const T* p0 = img + t[s].p[0] * C;
    const T* p1 = img + t[s].p[1] * C;
    const T* p2 = img + t[s].p[2] * C;
    const T* p3 = img + t[s].p[3] * C;
    const A w0 = t[s].w[0], w1 = t[s].w[1], w2 = t[s].w[2], w3 = t[s].w[3];
    for (int64_t c = 0; c < C; ++c) {
      a[c] += w0 * math::cast_to<A>(p0[c]) + w1 * math::cast_to<A>(p1[c]) + w2 * math::cast_to<A>(p2[c]) +
              w3 * math::cast_to<A>(p3[c]);
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    a[c] /= count;
  }
}

// A later sample wins only when larger, or NaN where the maximum is not: NaN
// propagates and the first of equal samples wins.
template <typename A>
inline bool replaces(A v, A m) {
  return (v > m) | ((v != v) & (m == m));
}

// Sample s's value over channels [0, n): invalid samples read 0.
template <typename A, typename T>
inline void sample_values(A* v, const T* img, int64_t C, const tap4<A>& t, int64_t n) {
  if (t.valid) {
    interpolate(v, img, C, t, n);
  } else {
    std::fill(v, v + n, A(0));
  }
}

// 'max': the largest of the bin's samples; 0 for a bin without samples.
template <typename A, typename T>
void align_max_bin(A* a, A* v, const T* img, int64_t C, const tap4<A>* t, int64_t n) {
  if (n == 0) {
    std::fill(a, a + C, A(0));
    return;
  }
  sample_values(a, img, C, t[0], C);
  for (int64_t s = 1; s < n; ++s) {
    sample_values(v, img, C, t[s], C);
    for (int64_t c = 0; c < C; ++c) {
      a[c] = math::select_(replaces(v[c], a[c]), v[c], a[c]);
    }
  }
}

// out (C, bins) of one box from its (bins, C) buffer.
template <typename T, typename A>
void write_box(T* out, const A* acc, int64_t C, int64_t bins) {
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < bins; ++i) {
      out[c * bins + i] = math::cast_to<T>(acc[i * C + c]);
    }
  }
}

// Runs f(c0, n, acc) for ranges [c0, c0 + n) of the channels in parallel, acc
// a zeroed (N, H, W, n) buffer, and writes each into the (N, C, H, W) output.
template <typename A, typename T, typename F>
void by_channel_ranges(T* out, const roi_dims& d, const F& f) {
  const int64_t C = d.channels;
  const int64_t plane = d.plane();
  at::parallel_for(0, (C + k_chunk - 1) / k_chunk, 1, [&](int64_t i0, int64_t i1) {
    std::vector<A> acc;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c0 = i * k_chunk;
      const int64_t n = std::min(k_chunk, C - c0);
      acc.assign(d.batch * plane * n, A(0));
      f(c0, n, acc.data());
      for (int64_t b = 0; b < d.batch; ++b) {
        for (int64_t c = 0; c < n; ++c) {
          T* o = out + (b * C + c0 + c) * plane;
          const A* a = acc.data() + b * plane * n + c;
          for (int64_t j = 0; j < plane; ++j) {
            o[j] = math::cast_to<T>(a[j * n]);
          }
        }
      }
    }
  });
}

template <typename T>
void roi_align_forward(T* out, const T* x, const T* boxes, const roi_align_plan& p) {
  using A = math::opmath_t<T>;
  const roi_dims& d = p.d;
  const int64_t C = d.channels;
  const int64_t bins = d.bins();
  const int64_t work = std::max<int64_t>(1, bins * C * 4);
  at::parallel_for(0, d.rois, std::max<int64_t>(1, k_grain / work), [&](int64_t k0, int64_t k1) {
    align_taps<A> s;
    std::vector<A> acc(bins * C);
    std::vector<A> v(C);
    for (int64_t k = k0; k < k1; ++k) {
      const T* box = boxes + 5 * k;
      const int64_t b = batch_of(box);
      if (b < 0 || b >= d.batch) {
        record_bad_index(p.bad_index, b);
        continue;
      }
      if (C == 0) {
        continue;
      }
      s.build(box, p);
      const T* img = x + b * d.plane() * C;
      for (int64_t i = 0; i < bins; ++i) {
        const tap4<A>* t = s.taps.data() + i * s.per_bin;
        if (p.max) {
          align_max_bin(acc.data() + i * C, v.data(), img, C, t, s.per_bin);
        } else {
          align_avg_bin(acc.data() + i * C, img, C, t, s.per_bin, s.count);
        }
      }
      write_box(out + k * C * bins, acc.data(), C, bins);
    }
  });
}

// Every box's samples, built once (in parallel) for all the channel tasks.
template <typename A, typename T>
std::vector<align_taps<A>> all_taps(const T* boxes, const roi_align_plan& p) {
  std::vector<align_taps<A>> all(p.d.rois);
  at::parallel_for(0, p.d.rois, 16, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      all[k].build(boxes + 5 * k, p);
    }
  });
  return all;
}

// grad (K, bins, C) spread over channels [c0, c0 + n) of acc (N, H, W, n).
template <typename A, typename T>
void align_avg_backward(A* acc, const T* grad, const T* boxes, const std::vector<align_taps<A>>& all,
                        const roi_dims& d, int64_t c0, int64_t n) {
  const int64_t C = d.channels;
  for (int64_t k = 0; k < d.rois; ++k) {
    const align_taps<A>& s = all[k];
    A* img = acc + batch_of(boxes + 5 * k) * d.plane() * n;
    for (int64_t i = 0; i < d.bins(); ++i) {
      const T* g = grad + (k * d.bins() + i) * C + c0;
      const tap4<A>* t = s.taps.data() + i * s.per_bin;
      for (int64_t j = 0; j < s.per_bin; ++j) {
        if (!t[j].valid) {
          continue;
        }
        for (int q = 0; q < 4; ++q) {
          A* a = img + t[j].p[q] * n;
          const A w = t[j].w[q] / s.count;
          for (int64_t c = 0; c < n; ++c) {
            a[c] += w * math::cast_to<A>(g[c]);
          }
        }
      }
    }
  }
}

// 'max': each channel's gradient to the four neighbours of its bin's maximum
// sample, found again from the (N, H, W, C) input as the forward found it.
template <typename A, typename T>
void align_max_backward(A* acc, const T* grad, const T* x, const T* boxes,
                        const std::vector<align_taps<A>>& all, const roi_dims& d, int64_t c0, int64_t n) {
  const int64_t C = d.channels;
  std::vector<A> best(n), v(n);
  std::vector<int64_t> arg(n);
  for (int64_t k = 0; k < d.rois; ++k) {
    const align_taps<A>& s = all[k];
    const int64_t b = batch_of(boxes + 5 * k);
    const T* img = x + b * d.plane() * C + c0;
    A* img_acc = acc + b * d.plane() * n;
    for (int64_t i = 0; i < d.bins() && s.per_bin > 0; ++i) {
      const tap4<A>* t = s.taps.data() + i * s.per_bin;
      sample_values(best.data(), img, C, t[0], n);
      std::fill(arg.begin(), arg.end(), 0);
      for (int64_t j = 1; j < s.per_bin; ++j) {
        sample_values(v.data(), img, C, t[j], n);
        for (int64_t c = 0; c < n; ++c) {
          const bool r = replaces(v[c], best[c]);
          best[c] = math::select_(r, v[c], best[c]);
          arg[c] = r ? j : arg[c];
        }
      }
      const T* g = grad + (k * d.bins() + i) * C + c0;
      for (int64_t c = 0; c < n; ++c) {
        const tap4<A>& m = t[arg[c]];
        if (m.valid) {
          for (int q = 0; q < 4; ++q) {
            img_acc[m.p[q] * n + c] += m.w[q] * math::cast_to<A>(g[c]);
          }
        }
      }
    }
  }
}

template <typename T>
void roi_align_backward(T* grad_input, const T* grad, const T* boxes, const T* x, const roi_align_plan& p) {
  using A = math::opmath_t<T>;
  if (!batches_valid(boxes, p.d, p.bad_index)) {
    return;
  }
  const std::vector<align_taps<A>> all = all_taps<A>(boxes, p);
  by_channel_ranges<A>(grad_input, p.d, [&](int64_t c0, int64_t n, A* acc) {
    if (p.max) {
      align_max_backward(acc, grad, x, boxes, all, p.d, c0, n);
    } else {
      align_avg_backward(acc, grad, boxes, all, p.d, c0, n);
    }
  });
}

// roi_pool over one bin: the max and its pixel per channel, over rows
// [h0, h1) and columns [w0, w1) of the (H, W, C) image; torchvision's strict
// comparison from -FLT_MAX (NaN never wins; an all -inf bin keeps -FLT_MAX and -1).
template <typename A, typename T>
void pool_bin_max(A* m, int64_t* arg, const T* img, int64_t C, int64_t W, int64_t h0, int64_t h1, int64_t w0,
                  int64_t w1) {
  std::fill(m, m + C, static_cast<A>(-FLT_MAX));
  std::fill(arg, arg + C, int64_t{-1});
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t idx = h * W + w;
      const T* px = img + idx * C;
      for (int64_t c = 0; c < C; ++c) {
        const A v = math::cast_to<A>(px[c]);
        const bool gt = v > m[c];
        m[c] = math::select_(gt, v, m[c]);
        arg[c] = gt ? idx : arg[c];
      }
    }
  }
}

template <typename T>
void roi_pool_forward(T* out, int64_t* argmax, const T* x, const T* boxes, const roi_pool_plan& p) {
  using A = math::opmath_t<T>;
  const roi_dims& d = p.d;
  const int64_t C = d.channels;
  const int64_t bins = d.bins();
  at::parallel_for(0, d.rois, std::max<int64_t>(1, k_grain / std::max<int64_t>(1, bins * C * 4)),
                   [&](int64_t k0, int64_t k1) {
    std::vector<A> m(bins * C);
    std::vector<int64_t> arg(bins * C);
    for (int64_t k = k0; k < k1; ++k) {
      const T* box = boxes + 5 * k;
      const int64_t b = batch_of(box);
      if (b < 0 || b >= d.batch) {
        record_bad_index(p.bad_index, b);
        continue;
      }
      if (C == 0) {
        continue;
      }
      const math::pool_box g = math::pool_geometry<A>(box, p.spatial_scale);
      const T* img = x + b * d.plane() * C;
      for (int64_t ph = 0; ph < d.out_h; ++ph) {
        int64_t h0 = 0, h1 = 0;
        math::pool_bin<A>(ph, d.out_h, g.start_h, g.h, d.height, h0, h1);
        for (int64_t pw = 0; pw < d.out_w; ++pw) {
          int64_t w0 = 0, w1 = 0;
          math::pool_bin<A>(pw, d.out_w, g.start_w, g.w, d.width, w0, w1);
          const int64_t i = (ph * d.out_w + pw) * C;
          if (h1 <= h0 || w1 <= w0) {  // an empty bin: 0, and no maximum
            std::fill(m.data() + i, m.data() + i + C, A(0));
            std::fill(arg.data() + i, arg.data() + i + C, int64_t{-1});
          } else {
            pool_bin_max(m.data() + i, arg.data() + i, img, C, d.width, h0, h1, w0, w1);
          }
        }
      }
      write_box(out + k * C * bins, m.data(), C, bins);
      write_box(argmax + k * C * bins, arg.data(), C, bins);
    }
  });
}

// grad and argmax (K, bins, C): each gradient added at its argmax's pixel.
template <typename T>
void roi_pool_backward(T* grad_input, const T* grad, const T* boxes, const int64_t* argmax,
                       const roi_pool_plan& p) {
  using A = math::opmath_t<T>;
  const roi_dims& d = p.d;
  if (!batches_valid(boxes, d, p.bad_index)) {
    return;
  }
  const int64_t C = d.channels;
  by_channel_ranges<A>(grad_input, d, [&](int64_t c0, int64_t n, A* acc) {
    for (int64_t k = 0; k < d.rois; ++k) {
      A* img = acc + batch_of(boxes + 5 * k) * d.plane() * n;
      for (int64_t i = 0; i < d.bins(); ++i) {
        const int64_t at = (k * d.bins() + i) * C + c0;
        for (int64_t c = 0; c < n; ++c) {
          const int64_t a = argmax[at + c];
          if (a >= 0 && a < d.plane()) {
            img[a * n + c] += math::cast_to<A>(grad[at + c]);
          }
        }
      }
    }
  });
}

}  // namespace

template <typename scalar_t>
void roi_align_cpu(scalar_t* result, const scalar_t* input, const scalar_t* boxes, const roi_align_plan& plan) {
  roi_align_forward(result, input, boxes, plan);
}

template <typename scalar_t>
void roi_align_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* boxes,
                            const scalar_t* input, const roi_align_plan& plan) {
  roi_align_backward(result, grad_output, boxes, input, plan);
}

template <typename scalar_t>
void roi_pool_cpu(scalar_t* result0, int64_t* result1, const scalar_t* input, const scalar_t* boxes,
                  const roi_pool_plan& plan) {
  roi_pool_forward(result0, result1, input, boxes, plan);
}

template <typename scalar_t>
void roi_pool_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* boxes,
                           const int64_t* argmax, const roi_pool_plan& plan) {
  roi_pool_backward(result, grad_output, boxes, argmax, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
