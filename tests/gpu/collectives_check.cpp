// Device-memory collectives of libhvdrun checked on the host: allreduce (every data type and
// op, in and out of place), broadcast, allgather, reduce_scatter, barrier, allreduce_many
// (mixed types, empty and large tensors; the fusion mode and threshold come from the
// environment), and the usage error for host memory. Exit 0: all passed; 1: a check failed;
// 77: no CUDA device (skipped). Run it under hvdrun with any -np, or alone.
// usage: gpu_collectives_check [--probe]   (--probe: only the device check)
#include <cuda_runtime.h>
#include <hvdrun/hvdrun.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using hvdrun::DataType;
using hvdrun::ReduceOp;

constexpr DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                               DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                               DataType::kUInt8};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProduct};

int failures = 0, checks = 0;

void encode(DataType t, double v, void* out) {
  switch (t) {
    case DataType::kFloat32:
      *static_cast<float*>(out) = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      *static_cast<double*>(out) = v;
      break;
    case DataType::kFloat16:
      *static_cast<hvdrun::float16_t*>(out) = hvdrun::to_float16(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      *static_cast<hvdrun::bfloat16_t*>(out) = hvdrun::to_bfloat16(static_cast<float>(v));
      break;
    case DataType::kInt32:
      *static_cast<std::int32_t*>(out) = static_cast<std::int32_t>(v);
      break;
    case DataType::kInt64:
      *static_cast<std::int64_t*>(out) = static_cast<std::int64_t>(v);
      break;
    case DataType::kUInt8:
      *static_cast<std::uint8_t*>(out) = static_cast<std::uint8_t>(v);
      break;
  }
}

double decode(DataType t, const void* in) {
  switch (t) {
    case DataType::kFloat32:
      return *static_cast<const float*>(in);
    case DataType::kFloat64:
      return *static_cast<const double*>(in);
    case DataType::kFloat16:
      return hvdrun::to_float(*static_cast<const hvdrun::float16_t*>(in));
    case DataType::kBFloat16:
      return hvdrun::to_float(*static_cast<const hvdrun::bfloat16_t*>(in));
    case DataType::kInt32:
      return *static_cast<const std::int32_t*>(in);
    case DataType::kInt64:
      return static_cast<double>(*static_cast<const std::int64_t*>(in));
    case DataType::kUInt8:
      return *static_cast<const std::uint8_t*>(in);
  }
  return NAN;
}

bool is_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16;
}

// Rank r's element i: small positive integers (exact in every type; products stay powers of 2).
double input(int r, std::size_t i, ReduceOp op) {
  if (op == ReduceOp::kProduct)
    return 1.0 + static_cast<double>((static_cast<std::size_t>(r) + i) % 2);
  return 1.0 + static_cast<double>((static_cast<std::size_t>(r) * 3 + i) % 7);
}

double expected(DataType t, ReduceOp op, std::size_t i, int n) {
  double acc = input(0, i, op);
  for (int r = 1; r < n; ++r) {
    const double v = input(r, i, op);
    if (op == ReduceOp::kMin)
      acc = std::min(acc, v);
    else if (op == ReduceOp::kMax)
      acc = std::max(acc, v);
    else if (op == ReduceOp::kProduct)
      acc *= v;
    else
      acc += v;
  }
  if (op == ReduceOp::kAverage) acc = is_float(t) ? acc / n : std::trunc(acc / n);
  return acc;
}

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    if (failures <= 20) std::fprintf(stderr, "rank %d: FAIL %s\n", hvdrun::rank(), what.c_str());
  }
}

bool close(DataType t, double got, double want) {
  const double tol = t == DataType::kFloat16 || t == DataType::kBFloat16 ? 1e-2 : 1e-6;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

struct Buffer {
  void* p = nullptr;
  std::size_t bytes;
  explicit Buffer(std::size_t b) : bytes(b) { cudaMalloc(&p, b ? b : 1); }
  ~Buffer() { cudaFree(p); }
  void upload(const std::vector<unsigned char>& h) {
    cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice);
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> h(bytes);
    cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost);
    return h;
  }
};

std::vector<unsigned char> host_input(DataType t, ReduceOp op, std::size_t count, int rank) {
  const std::size_t es = hvdrun::element_size(t);
  std::vector<unsigned char> h(count * es);
  for (std::size_t i = 0; i < count; ++i) encode(t, input(rank, i, op), h.data() + i * es);
  return h;
}

std::string name(const char* coll, DataType t, ReduceOp op) {
  return std::string(coll) + " " + std::string(hvdrun::to_string(t)) + " " +
         std::string(hvdrun::to_string(op));
}

void check_allreduce(DataType t, ReduceOp op, std::size_t count, bool in_place, cudaStream_t s) {
  const int n = hvdrun::size(), rank = hvdrun::rank();
  const std::size_t es = hvdrun::element_size(t);
  Buffer send(count * es), recv(count * es);
  send.upload(host_input(t, op, count, rank));
  void* out = in_place ? send.p : recv.p;
  hvdrun::allreduce(send.p, out, count, t, op, s);
  const auto got = (in_place ? send : recv).download();
  bool ok = true;
  for (std::size_t i = 0; i < count && ok; ++i)
    ok = close(t, decode(t, got.data() + i * es), expected(t, op, i, n));
  expect(ok, name(in_place ? "allreduce(in place)" : "allreduce", t, op) + " count " +
                 std::to_string(count));
}

void check_reduce_scatter(DataType t, ReduceOp op, cudaStream_t s) {
  const int n = hvdrun::size(), rank = hvdrun::rank();
  const std::size_t es = hvdrun::element_size(t), block = 257;
  Buffer send(block * n * es), recv(block * es);
  send.upload(host_input(t, op, block * n, rank));
  hvdrun::reduce_scatter(send.p, recv.p, block, t, op, s);
  const auto got = recv.download();
  bool ok = true;
  for (std::size_t i = 0; i < block && ok; ++i) {
    ok = close(t, decode(t, got.data() + i * es),
               expected(t, op, static_cast<std::size_t>(rank) * block + i, n));
  }
  expect(ok, name("reduce_scatter", t, op));
}

void check_broadcast_allgather(DataType t, cudaStream_t s) {
  const int n = hvdrun::size(), rank = hvdrun::rank(), root = n - 1;
  const std::size_t es = hvdrun::element_size(t), count = 1031;
  Buffer buf(count * es), all(count * n * es);
  buf.upload(host_input(t, ReduceOp::kSum, count, rank));
  hvdrun::broadcast(buf.p, count, t, root, s);
  auto got = buf.download();
  bool ok = true;
  for (std::size_t i = 0; i < count && ok; ++i)
    ok = decode(t, got.data() + i * es) == input(root, i, ReduceOp::kSum);
  expect(ok, "broadcast " + std::string(hvdrun::to_string(t)));
  buf.upload(host_input(t, ReduceOp::kSum, count, rank));
  hvdrun::allgather(buf.p, all.p, count, t, s);
  got = all.download();
  ok = true;
  for (int r = 0; r < n && ok; ++r) {
    for (std::size_t i = 0; i < count && ok; ++i) {
      ok = decode(t, got.data() + (static_cast<std::size_t>(r) * count + i) * es) ==
           input(r, i, ReduceOp::kSum);
    }
  }
  expect(ok, "allgather " + std::string(hvdrun::to_string(t)));
}

// 300 tensors of mixed types and sizes (some empty, one of 8 MiB) reduced in one call.
void check_allreduce_many(ReduceOp op, cudaStream_t s) {
  const int n = hvdrun::size(), rank = hvdrun::rank();
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<hvdrun::DeviceTensor> tensors;
  for (std::size_t k = 0; k < 300; ++k) {
    const DataType t = kTypes[k % std::size(kTypes)];
    const std::size_t count =
        k == 150 ? (std::size_t{8} << 20) / hvdrun::element_size(t) : (k * 37) % 3000;
    buffers.push_back(std::make_unique<Buffer>(count * hvdrun::element_size(t)));
    buffers.back()->upload(host_input(t, op, count, rank));
    tensors.push_back({buffers.back()->p, count, t});
  }
  hvdrun::allreduce_many(tensors, op, s);
  bool ok = true;
  for (std::size_t k = 0; k < tensors.size() && ok; ++k) {
    const DataType t = tensors[k].dtype;
    const std::size_t es = hvdrun::element_size(t);
    const auto got = buffers[k]->download();
    for (std::size_t i = 0; i < tensors[k].count && ok; ++i) {
      ok = close(t, decode(t, got.data() + i * es), expected(t, op, i, n));
      if (!ok) std::fprintf(stderr, "allreduce_many: tensor %zu element %zu\n", k, i);
    }
  }
  expect(ok, std::string("allreduce_many ") + std::string(hvdrun::to_string(op)));
}

void check_errors(cudaStream_t s) {
  std::vector<float> host(16, 1.0f);
  bool usage = false;
  try {
    hvdrun::allreduce(host.data(), host.data(), host.size(), DataType::kFloat32, ReduceOp::kSum, s);
  } catch (const hvdrun::UsageError& e) {
    usage = std::strstr(e.what(), "host memory") != nullptr;
  }
  expect(usage, "host memory passed to the device allreduce is a UsageError");
  hvdrun::barrier(s);
  expect(true, "barrier(stream)");
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device visible (%s)\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--probe") == 0) return 0;
  ::setenv("HVDRUN_BACKEND", "nccl", 0);
  try {
    hvdrun::InitGuard hvd;
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (DataType t : kTypes) {
      for (ReduceOp op : kOps) {
        check_allreduce(t, op, 1031, false, stream);
        check_allreduce(t, op, 1, true, stream);
        check_reduce_scatter(t, op, stream);
      }
      check_broadcast_allgather(t, stream);
    }
    check_allreduce(DataType::kFloat32, ReduceOp::kSum, std::size_t{64} << 20, false, stream);
    for (ReduceOp op : kOps) check_allreduce_many(op, stream);
    check_errors(stream);
    cudaStreamDestroy(stream);
    std::printf("rank %d: %d/%d device collective checks passed on GPU %d\n", hvdrun::rank(),
                checks - failures, checks, hvdrun::gpu_device());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_collectives_check: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
