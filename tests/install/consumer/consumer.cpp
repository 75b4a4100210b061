// A user's program built against the installed hvdrun package: sums rank+1 over all ranks.
#include <hvdrun/hvdrun.h>

#include <cstdint>
#include <cstdio>

int main() {
  hvdrun::InitGuard guard;
  std::int64_t value = hvdrun::rank() + 1;
  hvdrun::allreduce(&value, &value, 1, hvdrun::DataType::kInt64, hvdrun::ReduceOp::kSum);
  std::printf("rank %d of %d: sum %lld\n", hvdrun::rank(), hvdrun::size(), static_cast<long long>(value));
  return 0;
}
