// A small multi-layer perceptron (features -> hidden ReLU -> classes, softmax
// cross-entropy) with hand-written forward and backward passes, and the synthetic
// classification data set the example trains on. Header-only so a user can copy it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace example {

// Gaussian clusters, one per class: the same data on every rank for the same seed.
struct Dataset {
  std::size_t features = 0;
  std::vector<float> x;  // samples x features, row-major
  std::vector<std::int32_t> y;

  std::size_t size() const { return y.size(); }
  const float* row(std::size_t i) const { return x.data() + i * features; }
};

inline Dataset make_dataset(std::size_t samples, std::size_t features, std::size_t classes,
                            std::uint64_t seed) {
  std::mt19937_64 centers_rng(seed);  // same centres for the train and validation sets
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> centers(classes * features);
  for (float& c : centers) c = 0.6f * unit(centers_rng);
  std::mt19937_64 rng(seed * 7919 + samples);
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(classes) - 1);
  Dataset data;
  data.features = features;
  data.x.resize(samples * features);
  data.y.resize(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    const std::int32_t label = pick(rng);
    data.y[i] = label;
    for (std::size_t f = 0; f < features; ++f) {
      data.x[i * features + f] =
          centers[static_cast<std::size_t>(label) * features + f] + 1.8f * unit(rng);
    }
  }
  return data;
}

// Parameters live in one flat vector so that one allreduce or broadcast moves them all.
class Mlp {
 public:
  Mlp(std::size_t features, std::size_t hidden, std::size_t classes, std::uint64_t seed)
      : in_(features), hidden_(hidden), out_(classes), params_(count()) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> init(0.0f, 1.0f);
    const float s1 = std::sqrt(2.0f / static_cast<float>(in_));
    const float s2 = std::sqrt(2.0f / static_cast<float>(hidden_));
    for (std::size_t i = 0; i < in_ * hidden_; ++i) params_[i] = s1 * init(rng);
    for (std::size_t i = 0; i < hidden_ * out_; ++i) params_[w2() + i] = s2 * init(rng);
  }

  std::size_t count() const { return in_ * hidden_ + hidden_ + hidden_ * out_ + out_; }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }

  // Adds the gradient of the summed loss over `rows` to `grad`; returns the summed loss and
  // counts correct predictions into `correct`.
  double accumulate(const Dataset& data, std::span<const std::size_t> rows, std::span<float> grad,
                    std::size_t& correct) const {
    std::vector<float> h(hidden_), p(out_), dh(hidden_);
    double loss = 0.0;
    for (std::size_t r : rows) {
      const float* x = data.row(r);
      forward(x, h, p);
      const auto label = static_cast<std::size_t>(data.y[r]);
      loss -= std::log(std::max(p[label], 1e-12f));
      if (std::max_element(p.begin(), p.end()) - p.begin() == static_cast<std::ptrdiff_t>(label))
        ++correct;
      if (grad.empty()) continue;
      p[label] -= 1.0f;  // dL/dlogits
      std::fill(dh.begin(), dh.end(), 0.0f);
      for (std::size_t j = 0; j < hidden_; ++j) {
        for (std::size_t k = 0; k < out_; ++k) {
          grad[w2() + j * out_ + k] += h[j] * p[k];
          dh[j] += params_[w2() + j * out_ + k] * p[k];
        }
      }
      for (std::size_t k = 0; k < out_; ++k) grad[b2() + k] += p[k];
      for (std::size_t j = 0; j < hidden_; ++j) {
        if (h[j] <= 0.0f) continue;
        for (std::size_t i = 0; i < in_; ++i) grad[i * hidden_ + j] += x[i] * dh[j];
        grad[b1() + j] += dh[j];
      }
    }
    return loss;
  }

  void sgd_step(std::span<const float> grad, float lr) {
    for (std::size_t i = 0; i < params_.size(); ++i) params_[i] -= lr * grad[i];
  }

 private:
  std::size_t b1() const { return in_ * hidden_; }
  std::size_t w2() const { return b1() + hidden_; }
  std::size_t b2() const { return w2() + hidden_ * out_; }

  void forward(const float* x, std::vector<float>& h, std::vector<float>& p) const {
    for (std::size_t j = 0; j < hidden_; ++j) h[j] = params_[b1() + j];
    for (std::size_t i = 0; i < in_; ++i) {
      const float xi = x[i];
      for (std::size_t j = 0; j < hidden_; ++j) h[j] += xi * params_[i * hidden_ + j];
    }
    for (float& v : h) v = std::max(v, 0.0f);
    float top = -INFINITY;
    for (std::size_t k = 0; k < out_; ++k) {
      float z = params_[b2() + k];
      for (std::size_t j = 0; j < hidden_; ++j) z += h[j] * params_[w2() + j * out_ + k];
      p[k] = z;
      top = std::max(top, z);
    }
    float total = 0.0f;
    for (float& v : p) total += (v = std::exp(v - top));
    for (float& v : p) v /= total;
  }

  std::size_t in_, hidden_, out_;
  std::vector<float> params_;
};

}  // namespace example
