// Elastic data-parallel training on libhvdrun: the example MLP, whose weights, epoch and
// position in the epoch are elastic state committed every --commit-every steps. Run with
//   hvdrun -np 4 --min-np 2 ./train_elastic
// and kill a worker: the others roll back to their last commit, re-form, and go on; a
// replacement joins when its host's cooldown is over and receives the state from rank 0.
// Each step consumes (size x --batch-size) samples of the epoch's shuffled order from the
// committed position, so a change of size neither skips nor repeats a sample: at the end the
// job has applied exactly epochs x samples of them, which rank 0 prints.
#include <hvdrun/elastic.h>
#include <hvdrun/hvdrun.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mlp.h"
#include "train_options.h"

namespace {

struct Settings {
  example::Options model;
  int commit_every = 10;
  int step_delay_ms = 0;  // a pause per step, to make a short run last (tests, demos)
};

Settings parse_settings(int argc, char** argv) {
  Settings s;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if ((flag == "--commit-every" || flag == "--step-delay-ms") && i + 1 < argc) {
      const int value = example::parse_number<int>(flag, argv[++i]);
      (flag == "--commit-every" ? s.commit_every : s.step_delay_ms) = value;
    } else {
      rest.push_back(argv[i]);
    }
  }
  s.model = example::parse(static_cast<int>(rest.size()), rest.data());
  s.commit_every = std::max(1, s.commit_every);
  return s;
}

std::uint64_t fnv1a(std::span<const float> values) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte b : std::as_bytes(values))
    h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
  return h;
}

}  // namespace

// The training, once this worker is a member of the job.
int train_elastic(const Settings& settings) {
  const example::Options& opt = settings.model;
  std::printf("pid %d starts as rank %d/%d\n", static_cast<int>(::getpid()), hvdrun::rank(),
              hvdrun::size());
  const auto train = example::make_dataset(opt.samples, opt.features, opt.classes, opt.seed);
  example::Mlp model(opt.features, opt.hidden, opt.classes, opt.seed);

  std::int32_t epoch = 0;
  std::uint64_t offset = 0;   // samples of this epoch's order already applied
  std::uint64_t applied = 0;  // samples applied over the whole run
  hvdrun::elastic::State state;
  state.add(
      "weights",
      [&] {
        return std::string(reinterpret_cast<const char*>(model.params().data()),
                           model.params().size_bytes());
      },
      [&](const std::string& bytes) {
        hvdrun::elastic::State::check_size("weights", bytes.size(), sizeof(float), model.count());
        std::memcpy(model.params().data(), bytes.data(), bytes.size());
      });
  state.add("epoch", epoch);
  state.add("offset", offset);
  state.add("applied", applied);
  state.on_reset([&] {
    if (hvdrun::rank() == 0) {
      std::printf("re-formed: %d ranks, resuming at epoch %d, sample %llu\n", hvdrun::size(),
                  epoch + 1, static_cast<unsigned long long>(offset));
    }
  });

  hvdrun::elastic::run(state, [&] {
    std::vector<float> grad(model.count() + 1);
    int steps = 0;
    for (; epoch < opt.epochs; ++epoch, offset = 0) {
      std::vector<std::size_t> order(train.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(),
                   std::mt19937_64(opt.seed + static_cast<std::uint64_t>(epoch)));
      while (offset < order.size()) {
        const auto world = static_cast<std::size_t>(hvdrun::size());
        const auto rank = static_cast<std::size_t>(hvdrun::rank());
        const std::size_t end =
            std::min<std::size_t>(order.size(), offset + world * opt.batch_size);
        std::vector<std::size_t> rows;
        for (std::size_t i = offset + rank; i < end; i += world) rows.push_back(order[i]);
        std::fill(grad.begin(), grad.end(), 0.0f);
        std::size_t correct = 0;
        model.accumulate(train, rows, std::span<float>(grad).first(model.count()), correct);
        grad.back() = static_cast<float>(rows.size());
        hvdrun::allreduce(std::span<float>(grad), hvdrun::ReduceOp::kSum);
        for (float& g : grad) g /= grad.back();
        model.sgd_step(grad, opt.lr * static_cast<float>(world));
        applied += end - offset;
        offset = end;
        if (settings.step_delay_ms > 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(settings.step_delay_ms));
        }
        if (++steps % settings.commit_every == 0) state.commit();
      }
      if (hvdrun::rank() == 0)
        std::printf("epoch %d done on %d ranks\n", epoch + 1, hvdrun::size());
    }
  });

  const std::int64_t hash = static_cast<std::int64_t>(fnv1a(model.params()));
  const auto hashes = hvdrun::allgather(std::span<const std::int64_t>(&hash, 1));
  const bool agree =
      std::all_of(hashes.begin(), hashes.end(), [&](auto h) { return h == hashes[0]; });
  std::printf("pid %d done as rank %d/%d after %d resets: weights %016llx\n",
              static_cast<int>(::getpid()), hvdrun::rank(), hvdrun::size(), state.resets(),
              static_cast<unsigned long long>(hash));
  if (hvdrun::rank() == 0) {
    std::printf(
        "applied %llu samples of %llu; %s\n", static_cast<unsigned long long>(applied),
        static_cast<unsigned long long>(opt.samples) * static_cast<unsigned long long>(opt.epochs),
        agree ? "all ranks agree" : "RANKS DISAGREE");
  }
  return agree ? 0 : 1;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach hvdrun as they are printed
  const Settings settings = parse_settings(argc, argv);
  try {
    hvdrun::InitGuard hvd;  // may already find this worker's slot gone
    return train_elastic(settings);
  } catch (const hvdrun::NotMemberError& e) {  // this worker's slot left the job
    std::printf("pid %d left the job: %s\n", static_cast<int>(::getpid()), e.what());
    return 0;
  }
}
