// Flags of the example training job (train.cpp, train_gpu.cpp) and its learning-rate
// schedule, shared by the CPU and GPU paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace example {

struct Options {
  int epochs = 5;
  std::size_t batch_size = 64;
  float lr = 0.05f;
  int warmup_epochs = 1;
  std::size_t samples = 32768;
  std::size_t features = 32;
  std::size_t hidden = 64;
  std::size_t classes = 4;
  std::string checkpoint_dir;
  std::uint64_t seed = 42;
  bool gpu = false;  // --gpu: model, gradients and SGD on the GPU, NCCL allreduce
};

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--gpu") {
      o.gpu = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train: flag %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (flag == "--epochs")
      o.epochs = std::stoi(value);
    else if (flag == "--batch-size")
      o.batch_size = std::stoul(value);
    else if (flag == "--lr")
      o.lr = std::stof(value);
    else if (flag == "--warmup-epochs")
      o.warmup_epochs = std::stoi(value);
    else if (flag == "--samples")
      o.samples = std::stoul(value);
    else if (flag == "--checkpoint-dir")
      o.checkpoint_dir = value;
    else if (flag == "--seed")
      o.seed = std::stoull(value);
    else {
      std::fprintf(stderr, "train: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.batch_size == 0 || o.epochs < 1 || o.samples == 0) {
    std::fprintf(stderr, "train: --batch-size, --epochs and --samples must be positive\n");
    std::exit(2);
  }
  return o;
}

// Warm-up: from the one-rank rate to the size-scaled rate over the first epochs (3).
inline float learning_rate(const Options& o, std::size_t world, double epoch_progress) {
  const float peak = o.lr * static_cast<float>(world);
  if (o.warmup_epochs <= 0 || epoch_progress >= o.warmup_epochs) return peak;
  const auto ramp = static_cast<float>(epoch_progress / o.warmup_epochs);
  return o.lr + (peak - o.lr) * ramp;
}

}  // namespace example
