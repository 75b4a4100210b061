// Data-parallel SGD on a synthetic classification set with libhvdrun: the Horovod
// tutorial's steps in C++. Run it with `hvdrun -np 4 build/examples/train`.
//   1. hvdrun::init()                      6. checkpoints written by rank 0 only
//   2. one shard of the data per rank      7. resume epoch broadcast from rank 0
//   3. learning rate scaled by size()      8. validation metrics averaged over ranks
//   4. gradients averaged by allreduce     9. verbose output on rank 0 only
//   5. initial weights broadcast (rank 0) 10. final weights checked identical on all ranks
// Flags: --epochs N --batch-size N (per rank) --lr F (per rank) --warmup-epochs N
//        --samples N --checkpoint-dir DIR --seed N --gpu (train_gpu.cpp: CUDA + NCCL)
#include <hvdrun/hvdrun.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp.h"
#include "train_gpu.h"
#include "train_options.h"

namespace {

using example::learning_rate;
using example::Options;
using example::parse;

// Checkpoint file: epoch (int32) then the parameters (float32), replaced atomically.
std::filesystem::path checkpoint_path(const Options& o) {
  return std::filesystem::path(o.checkpoint_dir) / "checkpoint.bin";
}

// The epoch to resume at (0 without a checkpoint); a checkpoint of the wrong size is an error
// and leaves `params` untouched.
std::int32_t load_checkpoint(const Options& o, std::span<float> params) {
  const auto path = checkpoint_path(o);
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  const auto expected = sizeof(std::int32_t) + params.size_bytes();
  const auto size = std::filesystem::file_size(path);
  if (size != expected) {
    throw std::runtime_error("checkpoint " + path.string() + " has " + std::to_string(size) +
                             " bytes, expected " + std::to_string(expected) + " for this model");
  }
  std::int32_t epoch = 0;
  std::vector<float> saved(params.size());
  in.read(reinterpret_cast<char*>(&epoch), sizeof epoch);
  in.read(reinterpret_cast<char*>(saved.data()), static_cast<std::streamsize>(params.size_bytes()));
  if (!in || epoch < 0) throw std::runtime_error("cannot read checkpoint " + path.string());
  std::copy(saved.begin(), saved.end(), params.begin());
  return epoch;
}

void save_checkpoint(const Options& o, std::int32_t epoch, std::span<const float> params) {
  std::filesystem::create_directories(o.checkpoint_dir);
  const auto tmp = checkpoint_path(o).string() + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&epoch), sizeof epoch);
  out.write(reinterpret_cast<const char*>(params.data()),
            static_cast<std::streamsize>(params.size_bytes()));
  out.close();
  if (!out) throw std::runtime_error("cannot write checkpoint " + tmp);
  std::filesystem::rename(tmp, checkpoint_path(o));
}

std::uint64_t fnv1a(std::span<const float> values) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte b : std::as_bytes(values))
    h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
  return h;
}

struct Metrics {
  double loss = 0.0;
  double accuracy = 0.0;
};

// Loss and accuracy over this rank's shard of `data`, summed over all ranks.
Metrics evaluate(const example::Mlp& model, const example::Dataset& data) {
  std::vector<std::size_t> rows;
  for (std::size_t i = static_cast<std::size_t>(hvdrun::rank()); i < data.size();
       i += static_cast<std::size_t>(hvdrun::size())) {
    rows.push_back(i);
  }
  std::size_t correct = 0;
  double sums[3] = {model.accumulate(data, rows, {}, correct), static_cast<double>(correct),
                    static_cast<double>(rows.size())};
  hvdrun::allreduce(std::span<double>(sums), hvdrun::ReduceOp::kSum);
  return {sums[0] / sums[2], sums[1] / sums[2]};
}

// One pass over the training set; returns the summed loss of this rank's samples.
double train_epoch(const Options& opt, int epoch, const example::Dataset& train,
                   example::Mlp& model) {
  const auto world = static_cast<std::size_t>(hvdrun::size());
  const auto rank = static_cast<std::size_t>(hvdrun::rank());
  const std::size_t global_batch = world * opt.batch_size;
  const std::size_t steps = (train.size() + global_batch - 1) / global_batch;
  std::vector<std::size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(),
               std::mt19937_64(opt.seed + static_cast<std::uint64_t>(epoch)));
  // One extra slot carries the number of samples behind the gradient sum.
  std::vector<float> grad(model.count() + 1);
  double loss = 0.0;
  for (std::size_t step = 0; step < steps; ++step) {
    const float lr =
        learning_rate(opt, world, epoch + static_cast<double>(step) / static_cast<double>(steps));
    // 2: the global batch is order[step*world*B, (step+1)*world*B); this rank takes every
    // world-th row.
    std::vector<std::size_t> rows;
    const std::size_t last = std::min(order.size(), (step + 1) * global_batch);
    for (std::size_t i = step * global_batch + rank; i < last; i += world) rows.push_back(order[i]);
    std::fill(grad.begin(), grad.end(), 0.0f);
    std::size_t correct = 0;
    loss += model.accumulate(train, rows, std::span<float>(grad).first(model.count()), correct);
    grad.back() = static_cast<float>(rows.size());
    hvdrun::allreduce(std::span<float>(grad), hvdrun::ReduceOp::kSum);  // 4
    const float samples_in_batch = grad.back();
    for (float& g : grad) g /= samples_in_batch;
    model.sgd_step(grad, lr);
  }
  return loss;
}

// 10: every rank's weights must be bitwise identical. Returns the common hash or nothing.
std::optional<std::uint64_t> weights_agree(const example::Mlp& model) {
  const std::int64_t hash = static_cast<std::int64_t>(fnv1a(model.params()));
  const auto hashes = hvdrun::allgather(std::span<const std::int64_t>(&hash, 1));
  const bool agree =
      std::all_of(hashes.begin(), hashes.end(), [&](std::int64_t h) { return h == hashes[0]; });
  if (!agree) return std::nullopt;
  return static_cast<std::uint64_t>(hashes[0]);
}

int train_on_cpu(const Options& opt) {
  hvdrun::InitGuard hvd;  // 1
  const int rank = hvdrun::rank();
  const auto world = static_cast<std::size_t>(hvdrun::size());
  const bool verbose = rank == 0;  // 9

  const auto train = example::make_dataset(opt.samples, opt.features, opt.classes, opt.seed);
  const auto valid = example::make_dataset(opt.samples / 8, opt.features, opt.classes, opt.seed);
  example::Mlp model(opt.features, opt.hidden, opt.classes,
                     opt.seed + static_cast<std::uint64_t>(rank));

  std::int32_t start_epoch = 0;
  if (rank == 0 && !opt.checkpoint_dir.empty())
    start_epoch = load_checkpoint(opt, model.params());  // 7
  hvdrun::broadcast(std::span<std::int32_t>(&start_epoch, 1), 0);
  hvdrun::broadcast(model.params(), 0);  // 5
  if (verbose) {
    std::printf(
        "training on %zu ranks: %zu samples, %zu parameters, batch %zu per rank%s\n", world,
        train.size(), model.count(), opt.batch_size,
        start_epoch > 0 ? (", resuming at epoch " + std::to_string(start_epoch + 1)).c_str() : "");
  }
  for (int epoch = start_epoch; epoch < opt.epochs; ++epoch) {
    const auto begin = std::chrono::steady_clock::now();
    double train_loss = train_epoch(opt, epoch, train, model);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const Metrics m = evaluate(model, valid);  // 8
    hvdrun::allreduce(std::span<double>(&train_loss, 1), hvdrun::ReduceOp::kSum);
    if (verbose) {
      std::printf(
          "epoch %d/%d: train loss %.4f  val loss %.4f  val accuracy %.4f  %.0f samples/sec\n",
          epoch + 1, opt.epochs, train_loss / static_cast<double>(train.size()), m.loss, m.accuracy,
          static_cast<double>(train.size()) / seconds);
      if (!opt.checkpoint_dir.empty()) save_checkpoint(opt, epoch + 1, model.params());  // 6
    }
  }

  const auto hash = weights_agree(model);
  const Metrics final_metrics = evaluate(model, valid);
  if (verbose) {
    std::printf("final: val loss %.4f  val accuracy %.4f\n", final_metrics.loss,
                final_metrics.accuracy);
    if (hash) {
      std::printf("all %zu ranks agree: weights hash %016llx\n", world,
                  static_cast<unsigned long long>(*hash));
    }
  }
  if (!hash) {
    std::fprintf(stderr, "rank %d: final weights differ between ranks\n", rank);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  try {
    return opt.gpu ? example::train_on_gpu(opt) : train_on_cpu(opt);
  } catch (const hvdrun::Error& e) {
    // A failed peer, a timeout, a bad setting: one line, and a non-zero exit for hvdrun.
    std::fprintf(stderr, "train: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train: error: %s\n", e.what());
  }
  return 1;
}
