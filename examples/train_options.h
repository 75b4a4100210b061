// Flags of the example training job (train.cpp, train_gpu.cpp) and its learning-rate
// schedule, shared by the CPU and GPU paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <type_traits>

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

inline constexpr const char* kUsage =
    "usage: train [--epochs N] [--batch-size N] [--lr F] [--warmup-epochs N] [--samples N]\n"
    "             [--checkpoint-dir DIR] [--seed N] [--gpu]\n";

// A number given for `flag`, or a one-line error and exit status 2.
template <class T>
T parse_number(const std::string& flag, const std::string& value) {
  try {
    std::size_t used = 0;
    T result{};
    if constexpr (std::is_same_v<T, float>)
      result = std::stof(value, &used);
    else if constexpr (std::is_same_v<T, int>)
      result = std::stoi(value, &used);
    else
      result = static_cast<T>(std::stoull(value, &used));
    if (used == value.size() && (value.empty() || value[0] != '-' || std::is_signed_v<T>))
      return result;
  } catch (const std::exception&) {
  }
  std::fprintf(stderr, "train: %s '%s' is not a valid number\n%s", flag.c_str(), value.c_str(),
               kUsage);
  std::exit(2);
}

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    }
    if (flag == "--gpu") {
      o.gpu = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train: flag %s needs a value\n%s", flag.c_str(), kUsage);
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (flag == "--epochs")
      o.epochs = parse_number<int>(flag, value);
    else if (flag == "--batch-size")
      o.batch_size = parse_number<std::size_t>(flag, value);
    else if (flag == "--lr")
      o.lr = parse_number<float>(flag, value);
    else if (flag == "--warmup-epochs")
      o.warmup_epochs = parse_number<int>(flag, value);
    else if (flag == "--samples")
      o.samples = parse_number<std::size_t>(flag, value);
    else if (flag == "--checkpoint-dir")
      o.checkpoint_dir = value;
    else if (flag == "--seed")
      o.seed = parse_number<std::uint64_t>(flag, value);
    else {
      std::fprintf(stderr, "train: unknown flag %s\n%s", flag.c_str(), kUsage);
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
