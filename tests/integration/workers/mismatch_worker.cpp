// Worker for the mismatch test: each rank calls the collective ITEST_CALL_<rank> names
// ("f32" allreduce of 2000 float32, "f64" allreduce of 1000 float64: the same bytes;
// "root<r>" a broadcast of 16 int64 from root r), then a matching allreduce of one int32.
// Prints the results it got; on an hvdrun::Error, the error kind and message, and exits 5.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hvdrun/hvdrun.h"

namespace {

void call(const std::string& what) {
  if (what == "f32") {
    std::vector<float> v(2000, 1.0f);
    hvdrun::allreduce(v.data(), v.data(), v.size(), hvdrun::DataType::kFloat32,
                      hvdrun::ReduceOp::kSum);
    std::printf("f32 allreduce gave %g\n", static_cast<double>(v[0]));
  } else if (what == "f64") {
    std::vector<double> v(1000, 1.0);
    hvdrun::allreduce(v.data(), v.data(), v.size(), hvdrun::DataType::kFloat64,
                      hvdrun::ReduceOp::kSum);
    std::printf("f64 allreduce gave %g\n", v[0]);
  } else if (what.rfind("root", 0) == 0) {
    std::vector<std::int64_t> v(16, hvdrun::rank() + 100);
    hvdrun::broadcast(v.data(), v.size(), hvdrun::DataType::kInt64, std::stoi(what.substr(4)));
    std::printf("broadcast gave %lld\n", static_cast<long long>(v[0]));
  }
}

}  // namespace

int main() {
  try {
    hvdrun::init();
    const std::string name = "ITEST_CALL_" + std::to_string(hvdrun::rank());
    const char* what = std::getenv(name.c_str());
    call(what ? what : "");
    std::int32_t one = 1, sum = 0;
    hvdrun::allreduce(&one, &sum, 1, hvdrun::DataType::kInt32, hvdrun::ReduceOp::kSum);
    std::printf("then allreduce gave %d\n", sum);
    hvdrun::shutdown();
    return 0;
  } catch (const hvdrun::MismatchError& e) {
    std::fprintf(stderr, "MismatchError: %s\n", e.what());
  } catch (const hvdrun::Error& e) {
    std::fprintf(stderr, "Error: %s\n", e.what());
  }
  return 5;
}
