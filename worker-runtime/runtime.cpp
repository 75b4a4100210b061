// The free functions of hvdrun.h. Process state: the one function-local static Context
// below (the rendezvous client and the Communicator of this process), which the free-function
// API needs exactly once per process; everything else lives in classes (Communicator, Ring)
// that tests create per thread. Reads the HVDRUN_* environment at init() (options.h).
#include <memory>
#include <string>

#include "communicator.h"
#include "hvdrun/hvdrun.h"
#include "job.h"
#include "logging.h"
#include "options.h"

namespace hvdrun {
namespace {

// Between init() and shutdown(): the connection to the job. Thread rules: as hvdrun.h.
struct Context {
  std::unique_ptr<rdzv::Client> client;  // declared first: destroyed after the ring
  std::unique_ptr<Communicator> communicator;
};

Context& context() {
  static Context instance;
  return instance;
}

Communicator& communicator(const char* function) {
  Context& ctx = context();
  if (!ctx.communicator) {
    throw UsageError(std::string("hvdrun::") + function + " called before hvdrun::init()");
  }
  return *ctx.communicator;
}

}  // namespace

void init() {
  Context& ctx = context();
  if (ctx.communicator) return;  // already initialised: like Horovod, a second init() is a no-op
  JobConnection job = join_job(options_from_environment());
  ctx.client = std::move(job.client);
  ctx.communicator = std::move(job.communicator);
}

void shutdown() {
  Context& ctx = context();
  if (ctx.communicator) runtime_log().debug("shutdown");
  ctx.communicator.reset();
  ctx.client.reset();
}

bool is_initialized() noexcept {
  return context().communicator != nullptr;
}

int rank() {
  return communicator("rank").topology().rank;
}
int size() {
  return communicator("size").topology().size;
}
int local_rank() {
  return communicator("local_rank").topology().local_rank;
}
int local_size() {
  return communicator("local_size").topology().local_size;
}
int cross_rank() {
  return communicator("cross_rank").topology().cross_rank;
}
int cross_size() {
  return communicator("cross_size").topology().cross_size;
}

void allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op) {
  communicator("allreduce").allreduce(send, recv, count, dtype, op);
}

void broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  communicator("broadcast").broadcast(buffer, count, dtype, root);
}

std::vector<std::size_t> allgather(const void* send, std::size_t count, DataType dtype,
                                   std::vector<std::byte>& out) {
  return communicator("allgather").allgather(send, count, dtype, out);
}

void barrier() {
  communicator("barrier").barrier();
}

}  // namespace hvdrun
