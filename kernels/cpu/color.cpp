// CPU kernels of the color ops (schemas/color.yaml; structured ops, Note [Structured
// ops]) over the per-pixel arithmetic of opforge/color/plan.h (Note [Color
// arithmetic]). Parallel over runs of pixels of one image; in NCHW each channel of
// a run is contiguous, so the per-pixel functors (branch-free) vectorize.
// channels_last buffers (the ops that keep that layout) are read NHWC in place.
// adjust_contrast's per-image sums go in fixed chunks summed in order (deterministic).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/color/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 8192;  // pixels or elements per parallel task

template <typename T>
using acc = color::acc_t<T>;

// The clamp's upper bound of the adjustments: 1 for floating images, 255 for uint8.
template <typename T>
constexpr acc<T> bound_of() {
  return std::is_same_v<T, uint8_t> ? acc<T>(255) : acc<T>(1);
}

// f(std::true_type) for NHWC buffers, else f(std::false_type).
template <typename F>
void with_layout(bool channels_last, const F& f) {
  if (channels_last) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

// f(n, p0, p1) over runs [p0, p1) of pixels of image n, in parallel.
template <typename F>
void pixel_runs(int64_t images, int64_t pixels, const F& f) {
  at::parallel_for(0, images * pixels, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end;) {
      const int64_t n = k / pixels;
      const int64_t p0 = k - n * pixels;
      const int64_t p1 = std::min(pixels, p0 + (end - k));
      f(n, p0, p1);
      k += p1 - p0;
    }
  });
}

// Image values to and from the compute type. Scaled: adjust_hue's uint8 path,
// torchvision's x * (1 / 255) in and x * 255.999 out (truncated by the conversion).
template <typename T, bool Scaled = false>
struct image_io {
  using A = acc<T>;
  static A load(T v) {
    if constexpr (Scaled) {
      return color::mul_rn(static_cast<A>(v), static_cast<A>(1.0 / 255));
    } else {
      return math::cast_to<A>(v);
    }
  }
  static T store(A v) {
    if constexpr (Scaled) {
      return static_cast<T>(v * static_cast<A>(256.0 - 1e-3));
    } else {
      return math::cast_to<T>(v);
    }
  }
};

// The pixels [p0, p1) of image n: out = px(in), In channels in, Out out. A
// function, with __restrict parameters and px by value: GCC honours restrict on
// parameters only, and without it a pixel's loads, stores and px's fields need
// more run-time alias checks than it versions a loop for, so the loop stayed
// scalar (adjust_saturation ran 5x torchvision's time).
template <int In, int Out, bool CL, typename IO, typename T, typename Px>
void map_run(T* __restrict dst, const T* __restrict src, int64_t n, int64_t p0, int64_t p1, int64_t pixels,
             const Px f) {
  using A = acc<T>;
  for (int64_t p = p0; p < p1; ++p) {
    A x[In], y[Out];
    for (int c = 0; c < In; ++c) {
      x[c] = IO::load(src[color::at<CL>(n, c, p, In, pixels)]);
    }
    f(x, y);
    for (int c = 0; c < Out; ++c) {
      dst[color::at<CL>(n, c, p, Out, pixels)] = IO::store(y[c]);
    }
  }
}

template <int In, int Out, typename IO, typename T, typename Px>
void map_pixels(T* out, const T* in, const color_plan& plan, const Px& px) {
  with_layout(plan.channels_last, [&](auto layout) {
    constexpr bool CL = decltype(layout)::value;
    pixel_runs(plan.images, plan.pixels, [&](int64_t n, int64_t p0, int64_t p1) {
      map_run<In, Out, CL, IO>(out, in, n, p0, p1, plan.pixels, px);
    });
  });
}

// grad_image = J^T grad_output over the pixels [p0, p1) of image n
// (color::pixel_grad): a 3-channel image, grad_output of Out channels. A function
// for map_run's reason.
template <int Out, bool CL, typename T, typename Px>
void grad_run(T* __restrict grad_image, const T* __restrict grad_output, const T* __restrict image, int64_t n,
              int64_t p0, int64_t p1, int64_t pixels, const Px f) {
  using A = acc<T>;
  for (int64_t p = p0; p < p1; ++p) {
    color::pixel_grad_at<CL, Out, A>(grad_image, grad_output, image, n, p, pixels, f);
  }
}

template <int Out, typename T, typename Px>
void grad_pixels(T* grad_image, const T* grad_output, const T* image, const color_plan& plan, const Px& px) {
  with_layout(plan.channels_last, [&](auto layout) {
    constexpr bool CL = decltype(layout)::value;
    pixel_runs(plan.images, plan.pixels, [&](int64_t n, int64_t p0, int64_t p1) {
      grad_run<Out, CL>(grad_image, grad_output, image, n, p0, p1, plan.pixels, px);
    });
  });
}

// out[i] = f(i); f captures by value, so that its state is local to the loop.
template <typename T, typename F>
void elementwise(T* out, int64_t numel, const F& f) {
  at::parallel_for(0, numel, k_grain, [&](int64_t b, int64_t e) {
    T* __restrict dst = out;
    const F g = f;
    for (int64_t i = b; i < e; ++i) {
      dst[i] = g(i);
    }
  });
}

template <typename T>
void copy(T* out, const T* in, int64_t numel) {
  elementwise(out, numel, [=](int64_t i) { return in[i]; });
}

// Per image n, the sum of term(n, j) over j in [0, items), in double: chunks of
// color::k_chunk items in parallel, then each image's chunks in order.
template <typename F>
std::vector<double> image_sums(int64_t images, int64_t items, const F& term) {
  const int64_t chunks = color::chunks(items);
  std::vector<double> partial(static_cast<size_t>(images * chunks));
  at::parallel_for(0, images * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / chunks;
      const int64_t j0 = (t - n * chunks) * color::k_chunk;
      const int64_t j1 = std::min(items, j0 + color::k_chunk);
      // Eight independent lanes, so the terms vectorize (one double chain would
      // serialize on the add's latency), summed in a fixed order.
      double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t j = j0;
      for (; j + 8 <= j1; j += 8) {
        for (int64_t l = 0; l < 8; ++l) {
          lane[l] += term(n, j + l);
        }
      }
      for (; j < j1; ++j) {
        lane[0] += term(n, j);
      }
      double s = 0;
      for (const double v : lane) {
        s += v;
      }
      partial[t] = s;
    }
  });
  std::vector<double> sums(static_cast<size_t>(images), 0.0);
  for (int64_t n = 0; n < images; ++n) {
    for (int64_t c = 0; c < chunks; ++c) {
      sums[n] += partial[n * chunks + c];
    }
  }
  return sums;
}

// adjust_contrast's per-image means of the grayscale (floored for uint8; the image
// itself when C = 1), rounded to the compute type as torch's mean is.
template <typename T>
std::vector<acc<T>> contrast_means(const T* image, const color_plan& plan) {
  using A = acc<T>;
  const int64_t pixels = plan.pixels;
  std::vector<double> sums;
  with_layout(plan.channels_last, [&](auto layout) {
    constexpr bool CL = decltype(layout)::value;
    sums = image_sums(plan.images, pixels, [&](int64_t n, int64_t p) {
      if (plan.channels == 1) {
        return static_cast<double>(math::cast_to<A>(image[n * pixels + p]));
      }
      A l = color::gray(math::cast_to<A>(image[color::at<CL>(n, 0, p, 3, pixels)]),
                        math::cast_to<A>(image[color::at<CL>(n, 1, p, 3, pixels)]),
                        math::cast_to<A>(image[color::at<CL>(n, 2, p, 3, pixels)]));
      if constexpr (std::is_integral_v<T>) {
        l = color::floor_(l);
      }
      return static_cast<double>(l);
    });
  });
  std::vector<A> means(sums.size());
  for (size_t n = 0; n < sums.size(); ++n) {
    means[n] = static_cast<A>(sums[n] / static_cast<double>(pixels));
  }
  return means;
}

}  // namespace

template <typename scalar_t>
void rgb_to_grayscale_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using IO = image_io<scalar_t>;
  if (plan.out_channels == 1) {
    map_pixels<3, 1, IO>(result, image, plan, color::grayscale_px<1>{});
  } else {
    map_pixels<3, 3, IO>(result, image, plan, color::grayscale_px<3>{});
  }
}

template <typename scalar_t>
void rgb_to_hsv_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using A = acc<scalar_t>;
  map_pixels<3, 3, image_io<scalar_t>>(result, image, plan,
                                       color::rgb_to_hsv_px<A>{static_cast<A>(plan.factor)});
}

template <typename scalar_t>
void hsv_to_rgb_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  map_pixels<3, 3, image_io<scalar_t>>(result, image, plan, color::hsv_to_rgb_px{});
}

template <typename scalar_t>
void rgb_to_xyz_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  map_pixels<3, 3, image_io<scalar_t>>(result, image, plan, color::xyz_px{});
}

// Elementwise: the layout does not matter.
template <typename scalar_t>
void adjust_brightness_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using A = acc<scalar_t>;
  const A factor = static_cast<A>(plan.factor);
  elementwise(result, plan.images * plan.channels * plan.pixels, [=](int64_t i) {
    return math::cast_to<scalar_t>(color::brightness(math::cast_to<A>(image[i]), factor, bound_of<scalar_t>()));
  });
}

template <typename scalar_t>
void adjust_contrast_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using A = acc<scalar_t>;
  const std::vector<A> means = contrast_means(image, plan);
  const A ratio = static_cast<A>(plan.factor);
  const A alpha = static_cast<A>(1.0 - plan.factor);
  const int64_t per_image = plan.channels * plan.pixels;  // an image is one block in either layout
  // Image by image, so the mean is a constant of the inner loop (it vectorizes).
  at::parallel_for(0, plan.images * per_image, k_grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e;) {
      const int64_t n = i / per_image;
      const int64_t stop = std::min(e, (n + 1) * per_image);
      const A m = means[n];
      for (; i < stop; ++i) {
        result[i] = math::cast_to<scalar_t>(
            color::blend(math::cast_to<A>(image[i]), m, ratio, alpha, bound_of<scalar_t>()));
      }
    }
  });
}

template <typename scalar_t>
void adjust_saturation_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using A = acc<scalar_t>;
  if (plan.channels == 1) {
    copy(result, image, plan.images * plan.pixels);
    return;
  }
  const color::saturation_px<A, std::is_integral_v<scalar_t>> px{
      static_cast<A>(plan.factor), static_cast<A>(1.0 - plan.factor), bound_of<scalar_t>()};
  map_pixels<3, 3, image_io<scalar_t>>(result, image, plan, px);
}

template <typename scalar_t>
void adjust_hue_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using A = acc<scalar_t>;
  if (plan.channels == 1) {
    copy(result, image, plan.images * plan.pixels);
    return;
  }
  map_pixels<3, 3, image_io<scalar_t, std::is_integral_v<scalar_t>>>(result, image, plan,
                                                                      color::hue_px<A>{static_cast<A>(plan.factor)});
}

template <typename scalar_t>
void normalize_cpu(scalar_t* result, const scalar_t* image, const color_plan& plan) {
  using A = acc<scalar_t>;
  const int64_t channels = plan.channels, pixels = plan.pixels;
  std::vector<A> mean(static_cast<size_t>(channels)), stdev(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<A>(plan.mean[plan.mean_size == 1 ? 0 : c]);
    stdev[c] = static_cast<A>(plan.std[plan.std_size == 1 ? 0 : c]);
  }
  with_layout(plan.channels_last, [&](auto layout) {
    constexpr bool CL = decltype(layout)::value;
    pixel_runs(plan.images, pixels, [&](int64_t n, int64_t p0, int64_t p1) {
      scalar_t* __restrict dst = result;
      const scalar_t* __restrict src = image;
      const int64_t C = channels, P = pixels;
      for (int64_t c = 0; c < C; ++c) {
        const A m = mean[c], s = stdev[c];
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t i = color::at<CL>(n, c, p, C, P);
          dst[i] = math::cast_to<scalar_t>((math::cast_to<A>(src[i]) - m) / s);
        }
      }
    });
  });
}

template <typename scalar_t>
void color_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* image,
                        const color_plan& plan) {
  using A = acc<scalar_t>;
  using J1 = color::jet<A, 1>;
  using J2 = color::jet<A, 2>;
  const A factor = static_cast<A>(plan.factor);
  const int64_t numel = plan.images * plan.channels * plan.pixels;
  switch (plan.mode) {
    case color_mode::grayscale:
      if (plan.out_channels == 1) {
        grad_pixels<1>(result, grad_output, image, plan, color::grayscale_px<1>{});
      } else {
        grad_pixels<3>(result, grad_output, image, plan, color::grayscale_px<3>{});
      }
      return;
    case color_mode::rgb_to_hsv:
      grad_pixels<3>(result, grad_output, image, plan, color::rgb_to_hsv_px<A>{factor});
      return;
    case color_mode::hsv_to_rgb:
      grad_pixels<3>(result, grad_output, image, plan, color::hsv_to_rgb_px{});
      return;
    case color_mode::rgb_to_xyz:
      grad_pixels<3>(result, grad_output, image, plan, color::xyz_px{});
      return;
    case color_mode::brightness:
      elementwise(result, numel, [=](int64_t i) {
        const J1 y = color::brightness(J1::variable(math::cast_to<A>(image[i]), 0), factor, A(1));
        return math::cast_to<scalar_t>(math::cast_to<A>(grad_output[i]) * y.d[0]);
      });
      return;
    case color_mode::saturation:
      if (plan.channels == 1) {
        copy(result, grad_output, numel);
      } else {
        grad_pixels<3>(result, grad_output, image, plan,
                       color::saturation_px<A, false>{factor, static_cast<A>(1.0 - plan.factor), A(1)});
      }
      return;
    case color_mode::hue:
      if (plan.channels == 1) {
        copy(result, grad_output, numel);
      } else {
        grad_pixels<3>(result, grad_output, image, plan, color::hue_px<A>{factor});
      }
      return;
    case color_mode::contrast: {
      // out = clamp(ratio x + alpha mean): d/dx and d/dmean of each element from one
      // evaluation on jets, then the mean's share: w_c / (H W) times the image's sum.
      const std::vector<A> means = contrast_means(image, plan);
      const A alpha = static_cast<A>(1.0 - plan.factor);
      const int64_t per_image = plan.channels * plan.pixels;
      const auto partials = [&](int64_t i) {
        const J2 y = color::blend(J2::variable(math::cast_to<A>(image[i]), 0), J2::variable(means[i / per_image], 1),
                                  factor, alpha, A(1));
        return y;
      };
      const std::vector<double> sums = image_sums(plan.images, per_image, [&](int64_t n, int64_t j) {
        const int64_t i = n * per_image + j;
        return static_cast<double>(math::cast_to<A>(grad_output[i]) * partials(i).d[1]);
      });
      // The grayscale's weights, from the grayscale's own arithmetic.
      using J3 = color::jet<A, 3>;
      const J3 w = color::gray(J3::variable(A(0), 0), J3::variable(A(0), 1), J3::variable(A(0), 2));
      const int64_t channels = plan.channels, pixels = plan.pixels;
      with_layout(plan.channels_last, [&](auto layout) {
        constexpr bool CL = decltype(layout)::value;
        pixel_runs(plan.images, pixels, [&](int64_t n, int64_t p0, int64_t p1) {
          const A share = static_cast<A>(sums[n] / static_cast<double>(pixels));
          for (int64_t c = 0; c < channels; ++c) {
            const A wc = channels == 1 ? A(1) : w.d[c];
            for (int64_t p = p0; p < p1; ++p) {
              const int64_t i = color::at<CL>(n, c, p, channels, pixels);
              result[i] = math::cast_to<scalar_t>(math::cast_to<A>(grad_output[i]) * partials(i).d[0] + wc * share);
            }
          }
        });
      });
      return;
    }
    case color_mode::normalize:
      break;  // (normalize's gradient is normalize itself; the meta function never sets this mode)
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
