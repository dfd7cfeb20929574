// Random generators: RandomNormal, RandomUniform (1), RandomNormalLike, RandomUniformLike (1),
// Bernoulli (15), Multinomial (7).
//
// Seeding (as ONNX Runtime): each kernel instance owns one generator, started once when the
// kernel is created, from the node's float 'seed' attribute (static_cast<int64_t>(seed)) when it
// has one, else from the process-wide seed (process_seed(): OAT_RANDOM_SEED when set, else drawn
// from std::random_device at the first use) mixed with the node's name and first output, so each
// executor's instance of one node starts the same stream. The generator then advances: each run
// draws new numbers (a VAE's noise, a noise layer differ step to step), and a seeded model's
// sequence of runs is reproducible from process to process. The numbers are not ONNX Runtime's (its
// engine and distributions are std::default_random_engine's, implementation-defined), only their
// distribution is.
//
// Unseeded RandomNormal / RandomUniform (+Like) draw Philox4x32-10 (philox.h, random_philox.h):
// element i of the kernel's d-th draw from counter (i / 4, d) under a key mixed from the process
// seed and the node (the same node draws the same stream in the CPU and the CUDA executor, which
// computes it on the device, so a training step with one can be captured as a CUDA graph):
//   uniform = low + (high - low) · u, u = word_i · 2^-32;  normal = mean + scale · z with z the
//   Box-Muller value of philox.h; computed in float (double for F64), rounded once.
//
// Seeded nodes, Bernoulli and Multinomial draw std::mt19937_64, in row-major order:
//   u       = (w >> 11) · 2^-53 with w the next 64-bit word: uniform on [0, 1)
//   uniform = low + (high - low) · u                          (RandomUniform, RandomUniformLike)
//   normal  = mean + scale · z, z from Box-Muller on a pair of uniforms (u1, u2):
//             r = sqrt(-2 ln(1 - u1)), z0 = r cos(2π u2), z1 = r sin(2π u2), both used
//   Bernoulli: y = (u < p) ? 1 : 0 with p the input element (p outside [0, 1] or NaN fails)
//   Multinomial: per batch row, p_j = exp(x_j - max x) / Σ_k exp(x_k - max x) (the input holds
//             unnormalised log-probabilities); each of sample_size draws is the first class j
//             with u < Σ_{k<=j} p_k (the last class whose p_j > 0 when rounding leaves u above
//             the sum).
// F32, F16 and BF16 draw and compute in float and round once to the output type; F64 in double.
// A uniform value that rounding would carry to `high` (or past it) becomes the largest value of
// the output type below `high`, so every output lies in [low, high).
//
// The 'dtype' attribute is a TensorProto code: 1 float, 10 float16, 11 double, 16 bfloat16 for
// the four float generators (the *Like ops default to the input's dtype, which must be a float
// type then); Bernoulli's output may also be int8/uint8/int32/int64/bool (default: the input's);
// Multinomial's is int32 (6, the default) or int64 (7).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/philox.h"
#include "runtime/cpu/kernels/random_philox.h"
#include "runtime/cpu/register.h"
#include "runtime/onnx_type_code.h"

namespace oat::cpu {

namespace {

// The process-wide seed: OAT_RANDOM_SEED when set, else one std::random_device draw.
uint64_t process_seed() {
  static const uint64_t seed = [] {
    if (const char* s = std::getenv("OAT_RANDOM_SEED"); s && *s)
      return static_cast<uint64_t>(std::strtoull(s, nullptr, 10));
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

// splitmix64: spreads (process seed + counter) into well-separated generator seeds.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t random_philox_key(const Node& n) {
  const std::string id = n.name + '\n' + (n.outputs.empty() ? std::string() : n.outputs[0]);
  return splitmix64(process_seed() ^ splitmix64(std::hash<std::string>{}(id)));
}

namespace {

// Unseeded: keyed by the process seed and the node, as Philox is, so every executor of the process
// (`check`'s two paths and its per-node reference; the CPU and a CUDA executor's host placement)
// starts the same node on the same stream, and another node on another one.
std::mt19937_64 node_generator(const Node& n) {
  if (n.has_attr("seed"))
    return std::mt19937_64(static_cast<uint64_t>(static_cast<int64_t>(n.attr_float("seed", 0))));
  return std::mt19937_64(random_philox_key(n));
}

// u in [0, 1) with 53 random bits.
inline double uniform01(std::mt19937_64& g) {
  return static_cast<double>(g() >> 11) * (1.0 / 9007199254740992.0);
}

// TensorProto code -> DType for the float generators (and Bernoulli's wider set).
DType dtype_code(const Node& n, int64_t code, bool allow_non_float) {
  const std::optional<DType> t = dtype_of_onnx_code(code);
  if (t && ((allow_non_float && is_numeric(*t)) || is_floating(*t))) return *t;
  throw Unsupported(cat(n.describe(), ": output dtype code ", code, " is not supported"),
                    cat(n.op_type, "(dtype=", code, ")"));
}

template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The output dtype of a generator: the 'dtype' attribute, else `def` (Undefined: float32).
DType output_dtype(const KernelContext& ctx, DType def, bool allow_non_float) {
  const Node& n = ctx.node();
  if (n.has_attr("dtype")) return dtype_code(n, n.attr_int("dtype", 1), allow_non_float);
  if (def == DType::Undefined) return DType::F32;
  if (!allow_non_float && !is_floating(def))
    ctx.fail(cat("input dtype ", dtype_name(def),
                 " is not a float type and no 'dtype' attribute names the output's"));
  return def;
}

// The largest T strictly below `high` (a float/double attribute value).
template <class T>
T largest_below(double high) {
  if constexpr (std::is_floating_point_v<T>) {
    T t = static_cast<T>(high);
    while (static_cast<double>(t) >= high) t = std::nextafter(t, -std::numeric_limits<T>::infinity());
    return t;
  } else {  // Eigen::half / Eigen::bfloat16: step the 16-bit pattern towards -inf
    T t = static_cast<T>(static_cast<float>(high));
    while (static_cast<double>(static_cast<float>(t)) >= high) {
      uint16_t b = Eigen::numext::bit_cast<uint16_t>(t);
      if (b == 0x0000 || b == 0x8000) b = 0x8001;  // ±0 -> the smallest negative subnormal
      else if (b & 0x8000) ++b;                    // negative: larger magnitude
      else --b;                                    // positive: smaller magnitude
      t = Eigen::numext::bit_cast<T>(b);
    }
    return t;
  }
}

// low + (high - low)·u in C, rounded once to T; `top` where that lands on high or above.
template <class T, class C = Compute<T>>
T uniform_value(double low, double high, C u, T top) {
  const T v = static_cast<T>(static_cast<C>(low) + (static_cast<C>(high) - static_cast<C>(low)) * u);
  return static_cast<double>(static_cast<C>(v)) >= high ? top : v;
}

// Calls f(T{}) for the generators' output types (F32, F64, F16, BF16); fails on any other.
template <class F>
void dispatch_generated(DType dt, F&& f) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>)
      f(tag);
    else
      throw Error("random generators write float tensors only");
  });
}

// Fills y (dtype `dt`, any float type) with uniforms on [low, high) or normals (mean, scale).
void fill_random(std::mt19937_64& g, Tensor& y, bool normal, double a, double b) {
  dispatch_generated(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    T* d = y.data<T>();
    const int64_t n = y.numel();
    if (normal) {
      const double two_pi = 6.283185307179586476925286766559;
      for (int64_t i = 0; i < n; i += 2) {
        const double u1 = uniform01(g), u2 = uniform01(g);
        const C r = static_cast<C>(std::sqrt(-2.0 * std::log1p(-u1)));
        const C th = static_cast<C>(two_pi * u2);
        d[i] = static_cast<T>(static_cast<C>(a) + static_cast<C>(b) * r * std::cos(th));
        if (i + 1 < n)
          d[i + 1] = static_cast<T>(static_cast<C>(a) + static_cast<C>(b) * r * std::sin(th));
      }
    } else {
      const T top = largest_below<T>(b);
      for (int64_t i = 0; i < n; ++i) d[i] = uniform_value(a, b, static_cast<C>(uniform01(g)), top);
    }
  });
}

// The same from the Philox stream: draw `draw` of the node keyed `key`.
void fill_philox(uint64_t key, uint64_t draw, Tensor& y, bool normal, double a, double b) {
  dispatch_generated(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    T* d = y.data<T>();
    const int64_t n = y.numel();
    const T top = normal ? T(0) : largest_below<T>(b);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t e = static_cast<uint64_t>(i);
      if (normal) {
        const C z = static_cast<C>(philox_normal(key, draw, e));
        d[i] = static_cast<T>(static_cast<C>(a) + static_cast<C>(b) * z);
      } else {
        d[i] = uniform_value(a, b, static_cast<C>(philox_uniform01(key, draw, e)), top);
      }
    }
  });
}

}  // namespace

RandomFloatParams random_float_params(const Node& n) {
  RandomFloatParams p;
  p.normal = n.op == OpId::RandomNormal || n.op == OpId::RandomNormalLike;
  p.like = n.op == OpId::RandomNormalLike || n.op == OpId::RandomUniformLike;
  p.a = p.normal ? n.attr_float("mean", 0.0f) : n.attr_float("low", 0.0f);
  p.b = p.normal ? n.attr_float("scale", 1.0f) : n.attr_float("high", 1.0f);
  if (!p.like) {
    if (!n.has_attr("shape")) throw Error(cat(n.describe(), ": missing attribute 'shape'"));
    p.shape = n.attr_ints("shape");
    for (int64_t d : p.shape)
      if (d < 0)
        throw Error(cat(n.describe(), ": shape ", shape_str(p.shape), " has a negative dimension"));
  }
  return p;
}

std::pair<DType, Shape> random_float_output(const KernelContext& ctx,
                                            const RandomFloatParams& p) {
  if (!p.normal && !(p.a < p.b)) ctx.fail(cat("low ", p.a, " is not below high ", p.b));
  if (p.like) {
    const Tensor& x = ctx.input(0);
    return {output_dtype(ctx, x.dtype(), false), x.shape()};
  }
  return {output_dtype(ctx, DType::Undefined, false), p.shape};
}

DType random_float_dtype(const Node& n, DType like) {
  if (n.has_attr("dtype")) return dtype_code(n, n.attr_int("dtype", 1), false);
  return like == DType::Undefined ? DType::F32 : like;
}

double random_uniform_top(DType dt, double high) {
  double top = 0;
  dispatch_generated(dt, [&](auto tag) {
    using T = decltype(tag);
    top = static_cast<double>(static_cast<Compute<T>>(largest_below<T>(high)));
  });
  return top;
}

namespace {

// RandomNormal / RandomUniform (no input: 'shape') and their *Like forms (the input's shape;
// its values are not read).
class RandomFloatKernel : public OpKernel {
 public:
  explicit RandomFloatKernel(const Node& n)
      : p_(random_float_params(n)),
        philox_(random_uses_philox(n)),
        key_(philox_ ? random_philox_key(n) : 0),
        gen_(philox_ ? std::mt19937_64() : node_generator(n)) {}

  void compute(KernelContext& ctx) override {
    const auto [dt, shape] = random_float_output(ctx, p_);
    Tensor& y = ctx.allocate_output(0, dt, shape);
    if (!philox_) fill_random(gen_, y, p_.normal, p_.a, p_.b);
    else if (y.numel() > 0) fill_philox(key_, draws_++, y, p_.normal, p_.a, p_.b);
  }

 private:
  RandomFloatParams p_;
  bool philox_;
  uint64_t key_;
  uint64_t draws_ = 0;  // Philox draws so far (the counter's high half)
  std::mt19937_64 gen_;
};

// Bernoulli: y = (u < p) ? 1 : 0 elementwise, in the 'dtype' attribute's type (default: p's).
class BernoulliKernel : public OpKernel {
 public:
  explicit BernoulliKernel(const Node& n) : gen_(node_generator(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& p = ctx.input(0);
    if (!is_floating(p.dtype()))
      ctx.fail(cat("input dtype ", dtype_name(p.dtype()), " is not a float type"));
    const DType dt = output_dtype(ctx, p.dtype(), true);
    Tensor& y = ctx.allocate_output(0, dt, p.shape());
    const int64_t n = p.numel();
    std::vector<uint8_t> bits(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double pi = p.item_as_double(i);
      if (!(pi >= 0 && pi <= 1))
        ctx.fail(cat("probability ", pi, " at element ", i, " is outside [0, 1]"));
      bits[static_cast<size_t>(i)] = uniform01(gen_) < pi;
    }
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      T* d = y.data<T>();
      for (int64_t i = 0; i < n; ++i) d[i] = bits[static_cast<size_t>(i)] ? T(1) : T(0);
    });
  }

 private:
  std::mt19937_64 gen_;
};

// Multinomial: input [batch, classes] of unnormalised log-probabilities, output
// [batch, sample_size] class indices (int32 by default, or int64).
class MultinomialKernel : public OpKernel {
 public:
  explicit MultinomialKernel(const Node& n)
      : gen_(node_generator(n)), samples_(n.attr_int("sample_size", 1)) {
    const int64_t code = n.attr_int("dtype", 6);
    if (code == 6) out_ = DType::I32;
    else if (code == 7) out_ = DType::I64;
    else
      throw Error(cat(n.describe(), ": dtype ", code, " must be int32 (6) or int64 (7)"));
    if (samples_ < 0) throw Error(cat(n.describe(), ": sample_size ", samples_, " is negative"));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (!is_floating(x.dtype()))
      ctx.fail(cat("input dtype ", dtype_name(x.dtype()), " is not a float type"));
    if (x.shape().size() != 2)
      ctx.fail(cat("input shape ", shape_str(x.shape()), " is not [batch_size, class_size]"));
    const int64_t batch = x.shape()[0], classes = x.shape()[1];
    if (classes == 0 && batch > 0 && samples_ > 0) ctx.fail("class_size is 0");
    Tensor& y = ctx.allocate_output(0, out_, {batch, samples_});
    std::vector<double> cdf(static_cast<size_t>(classes));
    std::vector<int64_t> idx(static_cast<size_t>(batch * samples_));
    for (int64_t b = 0; b < batch; ++b) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < classes; ++j) mx = std::max(mx, x.item_as_double(b * classes + j));
      if (!std::isfinite(mx))
        ctx.fail(cat("row ", b, " has no finite log-probability (max ", mx, ")"));
      double s = 0;
      int64_t last = 0;
      for (int64_t j = 0; j < classes; ++j) {
        const double e = std::exp(x.item_as_double(b * classes + j) - mx);
        if (e > 0) last = j;
        s += e;
        cdf[static_cast<size_t>(j)] = s;
      }
      for (int64_t k = 0; k < samples_; ++k) {
        const double u = uniform01(gen_) * s;
        int64_t j = static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
        if (j > last) j = last;
        idx[static_cast<size_t>(b * samples_ + k)] = j;
      }
    }
    if (out_ == DType::I32) {
      int32_t* d = y.data<int32_t>();
      for (size_t i = 0; i < idx.size(); ++i) d[i] = static_cast<int32_t>(idx[i]);
    } else {
      std::copy(idx.begin(), idx.end(), y.data<int64_t>());
    }
  }

 private:
  std::mt19937_64 gen_;
  int64_t samples_;
  DType out_ = DType::I32;
};

}  // namespace

void register_random(KernelRegistry& r) {
  const Device cpu = Device::CPU;
  // Every dtype: the generators read no values (the *Like ops only the input's shape), Bernoulli
  // and Multinomial check their input's dtype and widen each element to double.
  r.add(OpId::RandomNormal, cpu, kAnyDType, kernel_factory<RandomFloatKernel>());
  r.add(OpId::RandomUniform, cpu, kAnyDType, kernel_factory<RandomFloatKernel>());
  r.add(OpId::RandomNormalLike, cpu, kAnyDType, kernel_factory<RandomFloatKernel>());
  r.add(OpId::RandomUniformLike, cpu, kAnyDType, kernel_factory<RandomFloatKernel>());
  r.add(OpId::Bernoulli, cpu, kAnyDType, kernel_factory<BernoulliKernel>());
  r.add(OpId::Multinomial, cpu, kAnyDType, kernel_factory<MultinomialKernel>());
}

}  // namespace oat::cpu
