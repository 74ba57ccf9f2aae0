// CUDA kernels of the color ops (schemas/color.yaml; structured ops, Note [Structured
// ops]) over the per-pixel arithmetic of opforge/color/plan.h (Note [Color
// arithmetic]): one grid-stride index per pixel (per element for the elementwise
// ones), cuda::for_each_index. adjust_contrast's per-image sums are deterministic:
// blocks sum fixed chunks of an image (color::k_chunk items), then one thread per
// image adds its chunks in order; no atomics.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/color/plan.h>
#include <opforge/math/opmath.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace opforge {
namespace {

template <typename T>
using acc = color::acc_t<T>;

template <typename T>
C10_HOST_DEVICE constexpr acc<T> bound_of() {
  return std::is_same_v<T, uint8_t> ? acc<T>(255) : acc<T>(1);
}

// Image values to and from the compute type; Scaled: adjust_hue's uint8 path
// (torchvision's x * (1 / 255) in, x * 255.999 truncated out).
template <typename T, bool Scaled = false>
struct image_io {
  using A = acc<T>;
  __device__ static A load(T v) {
    if constexpr (Scaled) {
      return color::mul_rn(static_cast<A>(v), static_cast<A>(1.0 / 255));
    } else {
      return math::cast_to<A>(v);
    }
  }
  __device__ static T store(A v) {
    if constexpr (Scaled) {
      return static_cast<T>(v * static_cast<A>(256.0 - 1e-3));
    } else {
      return math::cast_to<T>(v);
    }
  }
};

// out = px(in) for pixel k (of image k / pixels).
template <bool CL, int In, int Out, typename IO, typename T, typename Px>
struct map_fn {
  T* out;
  const T* in;
  int64_t pixels;
  Px px;
  __device__ void operator()(int64_t k) const {
    using A = acc<T>;
    const int64_t n = k / pixels;
    const int64_t p = k - n * pixels;
    A x[In], y[Out];
    for (int c = 0; c < In; ++c) {
      x[c] = IO::load(in[color::at<CL>(n, c, p, In, pixels)]);
    }
    px(x, y);
    for (int c = 0; c < Out; ++c) {
      out[color::at<CL>(n, c, p, Out, pixels)] = IO::store(y[c]);
    }
  }
};

template <int In, int Out, typename IO, typename T, typename Px>
cudaError_t map_pixels(T* out, const T* in, const color_plan& plan, const Px& px, cudaStream_t stream) {
  const int64_t n = plan.images * plan.pixels;
  if (plan.channels_last) {
    return cuda::for_each_index(n, map_fn<true, In, Out, IO, T, Px>{out, in, plan.pixels, px}, stream);
  }
  return cuda::for_each_index(n, map_fn<false, In, Out, IO, T, Px>{out, in, plan.pixels, px}, stream);
}

// grad_image = J^T grad_output for pixel k (color::pixel_grad).
template <bool CL, int Out, typename T, typename Px>
struct grad_fn {
  T* grad_image;
  const T* grad_output;
  const T* image;
  int64_t pixels;
  Px px;
  __device__ void operator()(int64_t k) const {
    using A = acc<T>;
    const int64_t n = k / pixels;
    color::pixel_grad_at<CL, Out, A>(grad_image, grad_output, image, n, k - n * pixels, pixels, px);
  }
};

template <int Out, typename T, typename Px>
cudaError_t grad_pixels(T* grad_image, const T* grad_output, const T* image, const color_plan& plan, const Px& px,
                        cudaStream_t stream) {
  const int64_t n = plan.images * plan.pixels;
  if (plan.channels_last) {
    return cuda::for_each_index(n, grad_fn<true, Out, T, Px>{grad_image, grad_output, image, plan.pixels, px}, stream);
  }
  return cuda::for_each_index(n, grad_fn<false, Out, T, Px>{grad_image, grad_output, image, plan.pixels, px}, stream);
}

template <typename T>
struct copy_fn {
  T* out;
  const T* in;
  __device__ void operator()(int64_t i) const { out[i] = in[i]; }
};

template <typename T>
struct brightness_fn {
  T* out;
  const T* image;
  acc<T> factor;
  __device__ void operator()(int64_t i) const {
    out[i] = math::cast_to<T>(color::brightness(math::cast_to<acc<T>>(image[i]), factor, bound_of<T>()));
  }
};

template <typename T>
struct brightness_grad_fn {
  T* grad_image;
  const T* grad_output;
  const T* image;
  acc<T> factor;
  __device__ void operator()(int64_t i) const {
    using A = acc<T>;
    using J = color::jet<A, 1>;
    const J y = color::brightness(J::variable(math::cast_to<A>(image[i]), 0), factor, A(1));
    grad_image[i] = math::cast_to<T>(math::cast_to<A>(grad_output[i]) * y.d[0]);
  }
};

// adjust_contrast's grayscale (floored for uint8; the image itself for C = 1) at (n, p).
template <bool CL, typename T>
struct mean_term {
  const T* image;
  int64_t channels;
  int64_t pixels;
  __device__ double operator()(int64_t n, int64_t p) const {
    using A = acc<T>;
    if (channels == 1) {
      return static_cast<double>(math::cast_to<A>(image[n * pixels + p]));
    }
    A l = color::gray(math::cast_to<A>(image[color::at<CL>(n, 0, p, 3, pixels)]),
                      math::cast_to<A>(image[color::at<CL>(n, 1, p, 3, pixels)]),
                      math::cast_to<A>(image[color::at<CL>(n, 2, p, 3, pixels)]));
    if constexpr (std::is_integral_v<T>) {
      l = color::floor_(l);
    }
    return static_cast<double>(l);
  }
};

// The blend of element i of image n with its mean, on jets: d[0] = d/dx, d[1] = d/dmean.
template <typename T>
__device__ color::jet<acc<T>, 2> contrast_partials(const T* image, const double* means, int64_t i, int64_t per_image,
                                                   acc<T> ratio, acc<T> alpha) {
  using A = acc<T>;
  using J = color::jet<A, 2>;
  return color::blend(J::variable(math::cast_to<A>(image[i]), 0),
                      J::variable(static_cast<A>(means[i / per_image]), 1), ratio, alpha, A(1));
}

// grad_output times d(out)/d(mean), element j of image n.
template <typename T>
struct contrast_grad_term {
  const T* grad_output;
  const T* image;
  const double* means;
  int64_t per_image;
  acc<T> ratio;
  acc<T> alpha;
  __device__ double operator()(int64_t n, int64_t j) const {
    using A = acc<T>;
    const int64_t i = n * per_image + j;
    return static_cast<double>(math::cast_to<A>(grad_output[i]) *
                               contrast_partials(image, means, i, per_image, ratio, alpha).d[1]);
  }
};

// partial[b] = the sum of term(n, j) over chunk b % chunks of image n = b / chunks.
template <typename Term>
__global__ void __launch_bounds__(cuda::k_threads)
    partial_sums_kernel(double* partial, int64_t images, int64_t items, int64_t chunks, Term term) {
  __shared__ double shared[32];
  for (int64_t b = blockIdx.x; b < images * chunks; b += gridDim.x) {
    const int64_t n = b / chunks;
    const int64_t j0 = (b - n * chunks) * color::k_chunk;
    const int64_t j1 = j0 + color::k_chunk < items ? j0 + color::k_chunk : items;
    double s = 0;
    for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
      s += term(n, j);
    }
    s = cuda::block_reduce(s, cuda::sum_op{}, 0.0, shared);
    if (threadIdx.x == 0) {
      partial[b] = s;
    }
  }
}

// totals[n]: image n's chunks added in order; as_mean: their mean over `pixels`,
// rounded to the compute type A (torch's mean), else the sum.
template <typename A>
struct finish_fn {
  const double* partial;
  double* totals;
  int64_t chunks;
  int64_t pixels;
  bool as_mean;
  __device__ void operator()(int64_t n) const {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      s += partial[n * chunks + c];
    }
    totals[n] = as_mean ? static_cast<double>(static_cast<A>(s / static_cast<double>(pixels))) : s;
  }
};

// totals[0, images): the per-image sums (or means) of term over `items` items each.
template <typename A, typename Term>
cudaError_t image_sums(double* totals, double* partial, int64_t images, int64_t items, int64_t pixels, bool as_mean,
                       const Term& term, cudaStream_t stream) {
  const int64_t chunks = color::chunks(items);
  const auto blocks = static_cast<unsigned>(std::min(images * chunks, cuda::k_max_blocks));
  OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, partial_sums_kernel<Term>)(partial, images, items, chunks, term);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return err;
  }
  return cuda::for_each_index(images, finish_fn<A>{partial, totals, chunks, pixels, as_mean}, stream);
}

// Per-image means of adjust_contrast's grayscale, into `means` (workspace).
template <typename T>
cudaError_t contrast_means(double* means, double* partial, const T* image, const color_plan& plan,
                           cudaStream_t stream) {
  if (plan.channels_last) {
    return image_sums<acc<T>>(means, partial, plan.images, plan.pixels, plan.pixels, true,
                              mean_term<true, T>{image, plan.channels, plan.pixels}, stream);
  }
  return image_sums<acc<T>>(means, partial, plan.images, plan.pixels, plan.pixels, true,
                            mean_term<false, T>{image, plan.channels, plan.pixels}, stream);
}

template <typename T>
struct contrast_fn {
  T* out;
  const T* image;
  const double* means;
  int64_t per_image;
  acc<T> ratio;
  acc<T> alpha;
  __device__ void operator()(int64_t i) const {
    using A = acc<T>;
    out[i] = math::cast_to<T>(color::blend(math::cast_to<A>(image[i]), static_cast<A>(means[i / per_image]), ratio,
                                           alpha, bound_of<T>()));
  }
};

// adjust_contrast's gradient at element (n, c, p): the direct part, plus the mean's
// share w_c / (H W) times the image's sum.
template <bool CL, typename T>
struct contrast_grad_fn {
  T* grad_image;
  const T* grad_output;
  const T* image;
  const double* means;
  const double* sums;
  int64_t channels;
  int64_t pixels;
  acc<T> ratio;
  acc<T> alpha;
  acc<T> w0, w1, w2;  // the grayscale's weights (w0 = 1 for C = 1); fields, not an array:
                      // a dynamically indexed one would live in local memory
  __device__ void operator()(int64_t k) const {
    using A = acc<T>;
    const int64_t per_image = channels * pixels;
    const int64_t n = k / per_image;
    const int64_t r = k - n * per_image;
    const int64_t c = CL ? r % channels : r / pixels;
    const A weight = c == 0 ? w0 : (c == 1 ? w1 : w2);
    const A share = static_cast<A>(sums[n] / static_cast<double>(pixels));
    grad_image[k] = math::cast_to<T>(math::cast_to<A>(grad_output[k]) *
                                         contrast_partials(image, means, k, per_image, ratio, alpha).d[0] +
                                     weight * share);
  }
};

// normalize over a group of up to k_group channels [first, first + count), their
// values passed by value (graph-safe, any number of channels).
constexpr int k_group = 16;

template <bool CL, typename T>
struct normalize_fn {
  T* out;
  const T* image;
  int64_t channels;
  int64_t pixels;
  int64_t first;
  int64_t count;
  acc<T> mean[k_group];
  acc<T> stdev[k_group];
  __device__ void operator()(int64_t k) const {
    using A = acc<T>;
    const int64_t per_image = count * pixels;
    const int64_t n = k / per_image;
    const int64_t r = k - n * per_image;
    const int64_t c = CL ? r % count : r / pixels;
    const int64_t p = CL ? r / count : r - c * pixels;
    const int64_t i = color::at<CL>(n, first + c, p, channels, pixels);
    out[i] = math::cast_to<T>((math::cast_to<A>(image[i]) - mean[c]) / stdev[c]);
  }
};

template <bool CL, typename T>
cudaError_t normalize_groups(T* out, const T* image, const color_plan& plan, cudaStream_t stream) {
  using A = acc<T>;
  for (int64_t first = 0; first < plan.channels; first += k_group) {
    const int64_t count = std::min<int64_t>(k_group, plan.channels - first);
    normalize_fn<CL, T> f{out, image, plan.channels, plan.pixels, first, count, {}, {}};
    for (int64_t c = 0; c < f.count; ++c) {
      f.mean[c] = static_cast<A>(plan.mean[plan.mean_size == 1 ? 0 : first + c]);
      f.stdev[c] = static_cast<A>(plan.std[plan.std_size == 1 ? 0 : first + c]);
    }
    const cudaError_t err = cuda::for_each_index(plan.images * f.count * plan.pixels, f, stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  return cudaSuccess;
}

}  // namespace

template <typename scalar_t>
cudaError_t rgb_to_grayscale_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan,
                                  cudaStream_t stream) {
  using IO = image_io<scalar_t>;
  if (plan.out_channels == 1) {
    return map_pixels<3, 1, IO>(result, image, plan, color::grayscale_px<1>{}, stream);
  }
  return map_pixels<3, 3, IO>(result, image, plan, color::grayscale_px<3>{}, stream);
}

template <typename scalar_t>
cudaError_t rgb_to_hsv_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan, cudaStream_t stream) {
  using A = acc<scalar_t>;
  return map_pixels<3, 3, image_io<scalar_t>>(result, image, plan,
                                              color::rgb_to_hsv_px<A>{static_cast<A>(plan.factor)}, stream);
}

template <typename scalar_t>
cudaError_t hsv_to_rgb_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan, cudaStream_t stream) {
  return map_pixels<3, 3, image_io<scalar_t>>(result, image, plan, color::hsv_to_rgb_px{}, stream);
}

template <typename scalar_t>
cudaError_t rgb_to_xyz_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan, cudaStream_t stream) {
  return map_pixels<3, 3, image_io<scalar_t>>(result, image, plan, color::xyz_px{}, stream);
}

template <typename scalar_t>
cudaError_t adjust_brightness_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan,
                                   cudaStream_t stream) {
  using A = acc<scalar_t>;
  return cuda::for_each_index(plan.images * plan.channels * plan.pixels,
                              brightness_fn<scalar_t>{result, image, static_cast<A>(plan.factor)}, stream);
}

template <typename scalar_t>
cudaError_t adjust_contrast_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan,
                                 cudaStream_t stream) {
  using A = acc<scalar_t>;
  double* partial = static_cast<double*>(plan.workspace);
  double* means = partial + plan.images * color::chunks(plan.channels * plan.pixels);
  const cudaError_t err = contrast_means(means, partial, image, plan, stream);
  if (err != cudaSuccess) {
    return err;
  }
  return cuda::for_each_index(plan.images * plan.channels * plan.pixels,
                              contrast_fn<scalar_t>{result, image, means, plan.channels * plan.pixels,
                                                    static_cast<A>(plan.factor), static_cast<A>(1.0 - plan.factor)},
                              stream);
}

template <typename scalar_t>
cudaError_t adjust_saturation_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan,
                                   cudaStream_t stream) {
  using A = acc<scalar_t>;
  if (plan.channels == 1) {
    return cuda::for_each_index(plan.images * plan.pixels, copy_fn<scalar_t>{result, image}, stream);
  }
  const color::saturation_px<A, std::is_integral_v<scalar_t>> px{
      static_cast<A>(plan.factor), static_cast<A>(1.0 - plan.factor), bound_of<scalar_t>()};
  return map_pixels<3, 3, image_io<scalar_t>>(result, image, plan, px, stream);
}

template <typename scalar_t>
cudaError_t adjust_hue_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan, cudaStream_t stream) {
  using A = acc<scalar_t>;
  if (plan.channels == 1) {
    return cuda::for_each_index(plan.images * plan.pixels, copy_fn<scalar_t>{result, image}, stream);
  }
  return map_pixels<3, 3, image_io<scalar_t, std::is_integral_v<scalar_t>>>(
      result, image, plan, color::hue_px<A>{static_cast<A>(plan.factor)}, stream);
}

template <typename scalar_t>
cudaError_t normalize_cuda(scalar_t* result, const scalar_t* image, const color_plan& plan, cudaStream_t stream) {
  if (plan.channels_last) {
    return normalize_groups<true>(result, image, plan, stream);
  }
  return normalize_groups<false>(result, image, plan, stream);
}

template <typename scalar_t>
cudaError_t color_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* image,
                                const color_plan& plan, cudaStream_t stream) {
  using A = acc<scalar_t>;
  const A factor = static_cast<A>(plan.factor);
  const int64_t numel = plan.images * plan.channels * plan.pixels;
  switch (plan.mode) {
    case color_mode::grayscale:
      if (plan.out_channels == 1) {
        return grad_pixels<1>(result, grad_output, image, plan, color::grayscale_px<1>{}, stream);
      }
      return grad_pixels<3>(result, grad_output, image, plan, color::grayscale_px<3>{}, stream);
    case color_mode::rgb_to_hsv:
      return grad_pixels<3>(result, grad_output, image, plan, color::rgb_to_hsv_px<A>{factor}, stream);
    case color_mode::hsv_to_rgb:
      return grad_pixels<3>(result, grad_output, image, plan, color::hsv_to_rgb_px{}, stream);
    case color_mode::rgb_to_xyz:
      return grad_pixels<3>(result, grad_output, image, plan, color::xyz_px{}, stream);
    case color_mode::brightness:
      return cuda::for_each_index(numel, brightness_grad_fn<scalar_t>{result, grad_output, image, factor}, stream);
    case color_mode::saturation:
      if (plan.channels == 1) {
        return cuda::for_each_index(numel, copy_fn<scalar_t>{result, grad_output}, stream);
      }
      return grad_pixels<3>(result, grad_output, image, plan,
                            color::saturation_px<A, false>{factor, static_cast<A>(1.0 - plan.factor), A(1)}, stream);
    case color_mode::hue:
      if (plan.channels == 1) {
        return cuda::for_each_index(numel, copy_fn<scalar_t>{result, grad_output}, stream);
      }
      return grad_pixels<3>(result, grad_output, image, plan, color::hue_px<A>{factor}, stream);
    case color_mode::contrast: {
      const int64_t per_image = plan.channels * plan.pixels;
      double* partial = static_cast<double*>(plan.workspace);
      double* means = partial + plan.images * color::chunks(per_image);
      double* sums = means + plan.images;
      const A alpha = static_cast<A>(1.0 - plan.factor);
      cudaError_t err = contrast_means(means, partial, image, plan, stream);
      if (err != cudaSuccess) {
        return err;
      }
      err = image_sums<A>(sums, partial, plan.images, per_image, plan.pixels, false,
                          contrast_grad_term<scalar_t>{grad_output, image, means, per_image, factor, alpha}, stream);
      if (err != cudaSuccess) {
        return err;
      }
      // The grayscale's weights, from the grayscale's own arithmetic.
      using J3 = color::jet<A, 3>;
      const J3 w = color::gray(J3::variable(A(0), 0), J3::variable(A(0), 1), J3::variable(A(0), 2));
      const A w0 = plan.channels == 3 ? w.d[0] : A(1);
      const int64_t channels = plan.channels, pixels = plan.pixels;
      if (plan.channels_last) {
        return cuda::for_each_index(numel,
                                    contrast_grad_fn<true, scalar_t>{result, grad_output, image, means, sums, channels,
                                                                     pixels, factor, alpha, w0, w.d[1], w.d[2]},
                                    stream);
      }
      return cuda::for_each_index(numel,
                                  contrast_grad_fn<false, scalar_t>{result, grad_output, image, means, sums, channels,
                                                                    pixels, factor, alpha, w0, w.d[1], w.d[2]},
                                  stream);
    }
    case color_mode::normalize:
      break;  // (normalize's gradient is normalize itself; the meta function never sets this mode)
  }
  return cudaSuccess;
}

}  // namespace opforge
