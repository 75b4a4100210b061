// Worker of bench/elastic.sh: an elastic loop of 4-byte allreduces, one commit per step, that
// appends wall-clock stamps ("NAME key=K resets=R t=SECONDS") to a file:
//   T_FAIL      the victim (--kill-key) just before it SIGKILLs itself after --kill-after steps
//   T_ABORT     a survivor's pending collective failed (the generation broke)
//   T_RESET     a survivor re-formed (elastic::run's reset callback)
//   T_FIRST     a survivor's first completed allreduce after re-forming
//   T_NEW_FIRST a newcomer's (key >= --initial) first completed allreduce
//   T_FULL      with --full N: a worker's first completed allreduce in a generation of N
//               ranks after a re-formation (a newcomer's: its first at N ranks)
// Steps take --step-us; every worker stops after --steps in total.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

#include "hvdrun/elastic.h"
#include "hvdrun/hvdrun.h"

namespace {

struct Settings {
  std::string stamps;
  int kill_key = -1;
  long kill_after = 200;
  long steps = 2000;
  long step_us = 500;
  int initial = 4;
  int full = 0;
};

Settings parse(int argc, char** argv) {
  Settings s;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: elastic_bench STAMPS [--kill-key K] [--kill-after N] [--steps N] "
                 "[--step-us US] [--initial N] [--full N]\n");
    std::exit(2);
  }
  s.stamps = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--kill-key") {
      s.kill_key = static_cast<int>(value);
    } else if (flag == "--kill-after") {
      s.kill_after = value;
    } else if (flag == "--steps") {
      s.steps = value;
    } else if (flag == "--step-us") {
      s.step_us = value;
    } else if (flag == "--initial") {
      s.initial = static_cast<int>(value);
    } else if (flag == "--full") {
      s.full = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "elastic_bench: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return s;
}

class Stamps {
 public:
  Stamps(const std::string& path, int key) : key_(key) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
  }
  ~Stamps() { ::close(fd_); }
  Stamps(const Stamps&) = delete;
  Stamps& operator=(const Stamps&) = delete;
  // One write per line: O_APPEND keeps the workers' lines whole.
  void stamp(const char* name, int resets) const {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    char line[128];
    const int n = std::snprintf(line, sizeof line, "%s key=%d resets=%d t=%lld.%09ld\n", name, key_,
                                resets, static_cast<long long>(now.tv_sec), now.tv_nsec);
    if (::write(fd_, line, static_cast<std::size_t>(n)) != n) std::perror("elastic_bench: stamp");
  }

 private:
  int fd_ = -1;
  int key_;
};

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  const char* slot = std::getenv("HVDRUN_SLOT");
  const int key = slot ? std::atoi(slot) : 0;
  const Stamps stamps(settings.stamps, key);
  hvdrun::InitGuard hvd;
  std::uint64_t step = 0;
  hvdrun::elastic::State state;
  state.add("step", step);
  bool first_pending = key >= settings.initial;
  bool full_pending = key >= settings.initial;
  state.on_reset([&] {
    stamps.stamp("T_RESET", state.resets());
    first_pending = true;
    full_pending = true;
  });
  hvdrun::elastic::run(state, [&] {
    try {
      while (step < static_cast<std::uint64_t>(settings.steps)) {
        if (key == settings.kill_key && state.resets() == 0 &&
            step == static_cast<std::uint64_t>(settings.kill_after)) {
          stamps.stamp("T_FAIL", 0);
          ::raise(SIGKILL);
        }
        float value = 1.0f;
        hvdrun::allreduce(std::span<float>(&value, 1), hvdrun::ReduceOp::kSum);
        if (first_pending) {
          stamps.stamp(key >= settings.initial ? "T_NEW_FIRST" : "T_FIRST", state.resets());
          first_pending = false;
        }
        if (full_pending && hvdrun::size() == settings.full) {
          stamps.stamp("T_FULL", state.resets());
          full_pending = false;
        }
        ++step;
        std::this_thread::sleep_for(std::chrono::microseconds(settings.step_us));
        state.commit();
      }
    } catch (const hvdrun::elastic::HostsUpdated&) {
      throw;
    } catch (const hvdrun::Error&) {
      stamps.stamp("T_ABORT", state.resets());
      throw;
    }
  });
  return 0;
}
