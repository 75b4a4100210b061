// Worker for the stall tests: `stall_worker N R K S [every]` runs N allreduces of 1024 floats;
// rank R sleeps S seconds before its K-th (a rank stuck in its own code while the others wait
// in the collective), or with `every` before each from the K-th on (a straggler), then goes
// on; before its first sleep it prints "rank R sleeps before allreduce K". Exits 0 once all N
// agree.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hvdrun/hvdrun.h"

int main(int argc, char** argv) {
  if (argc != 5 && !(argc == 6 && std::string(argv[5]) == "every")) {
    std::fprintf(stderr, "usage: stall_worker N RANK K SECONDS [every]\n");
    return 64;
  }
  const bool every = argc == 6;
  const int count = std::atoi(argv[1]);
  const int slow_rank = std::atoi(argv[2]);
  const int slow_at = std::atoi(argv[3]);
  const double seconds = std::atof(argv[4]);
  try {
    hvdrun::init();
    std::vector<float> data(1024);
    for (int i = 1; i <= count; ++i) {
      if ((i == slow_at || (every && i > slow_at)) && hvdrun::rank() == slow_rank) {
        if (i == slow_at) {
          std::printf("rank %d sleeps before allreduce %d\n", slow_rank, slow_at);
          std::fflush(stdout);
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      }
      for (auto& v : data) v = 1.0f;
      hvdrun::allreduce(data.data(), data.data(), data.size(), hvdrun::DataType::kFloat32,
                        hvdrun::ReduceOp::kSum);
      if (data[0] != static_cast<float>(hvdrun::size())) return 3;
    }
    std::printf("rank %d done\n", hvdrun::rank());
    hvdrun::shutdown();
    return 0;
  } catch (const hvdrun::Error& e) {
    std::fprintf(stderr, "stall_worker: %s\n", e.what());
    return 2;
  }
}
