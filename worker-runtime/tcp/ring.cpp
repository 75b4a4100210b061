// The TCP ring collectives (see ring.h): each collective becomes a transfer Plan (which
// pieces go to the next rank and which come from the previous one, in order) run by
// run_plan() in transfer.cpp.
#include "worker-runtime/tcp/ring.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "hvdrun/error.h"
#include "worker-runtime/error_context.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/reduce.h"
#include "worker-runtime/tcp/blame.h"
#include "worker-runtime/tcp/handshake.h"

namespace hvdrun::tcp {
namespace {

// Reduction chunk: received bytes are reduced (and forwarded) at least this often.
constexpr std::size_t kChunkBytes = 256 << 10;
// Allreduce of at most this many bytes in total (count * element * ranks) gathers every
// rank's input and reduces locally: P-1 latency hops instead of 2(P-1).
constexpr std::size_t kSmallAllreduceBytes = 64 << 10;
// Longest wait for a stalled neighbour's failure report (HVDRUN_TIMEOUT when shorter).
constexpr std::chrono::milliseconds kMaxReportWait{1000};
// Largest allgather result accepted from the announced counts (bounds a hostile count).
constexpr std::size_t kMaxGatherBytes = std::size_t{1} << 46;

int wrap(int i, int size) {
  return ((i % size) + size) % size;
}

struct Segment {
  std::size_t offset = 0;  // bytes
  std::size_t size = 0;    // bytes
};

// Segment i of `count` elements split into `parts` nearly equal runs.
Segment segment(int i, int parts, std::size_t count, std::size_t element) {
  const auto index = static_cast<std::size_t>(i);
  const std::size_t base = count / static_cast<std::size_t>(parts);
  const std::size_t extra = count % static_cast<std::size_t>(parts);
  return {(index * base + std::min(index, extra)) * element, (base + (index < extra)) * element};
}

std::size_t checked_element_size(DataType dtype, std::string_view what) {
  const std::size_t element = element_size(dtype);
  if (element == 0) {
    throw UsageError(std::string(what) + ": unknown data type " +
                     std::to_string(static_cast<int>(dtype)));
  }
  return element;
}

// Reduce-scatter (steps 0..P-2) then all-gather (steps P-1..2P-3). The segment received in
// step s is the one sent in step s+1, so the Plan's byte-for-byte gating pipelines them.
Plan allreduce_plan(int rank, int size, const std::byte* in, std::byte* out, std::size_t count,
                    DataType dtype, ReduceOp op) {
  const std::size_t element = element_size(dtype);
  Plan plan;
  plan.dtype = dtype;
  plan.op = op;
  plan.send_ready = segment(rank, size, count, element).size;
  for (int s = 0; s < 2 * size - 2; ++s) {
    const bool scatter = s < size - 1;
    const int t = s - (size - 1);
    const Segment sent =
        segment(scatter ? wrap(rank - s, size) : wrap(rank + 1 - t, size), size, count, element);
    plan.send.push_back({(s == 0 ? in : out) + sent.offset, sent.size});
    const Segment got =
        segment(scatter ? wrap(rank - s - 1, size) : wrap(rank - t, size), size, count, element);
    plan.recv.push_back({out + got.offset, got.size, scatter ? in + got.offset : nullptr});
  }
  return plan;
}

void put_u64(std::byte* out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(value >> (8 * i));
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

std::uint64_t get_u64(const std::byte* in) {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= std::to_integer<std::uint64_t>(in[i]) << (8 * i);
  return value;
}

}  // namespace

Ring::Ring(int rank, int size, RingAddresses addresses, Listener listener, std::string secret,
           std::uint32_t generation, std::chrono::milliseconds timeout, const AbortSignal* abort)
    : rank_(rank), size_(size), addresses_(std::move(addresses)), staging_(kChunkBytes) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw UsageError("ring: rank " + std::to_string(rank) + " is outside a world of size " +
                     std::to_string(size));
  }
  links_.generation = generation;
  links_.timeout = timeout;
  links_.abort = abort;
  if (size == 1) return;
  const auto start = Clock::now();
  RingLinks links = connect_ring(RingIdentity{rank, size, generation, std::move(secret), abort},
                                 addresses_, listener, start + timeout);
  listener.close();
  next_ = std::move(links.next);
  prev_ = std::move(links.prev);
  links_.next_rank = (rank + 1) % size;
  links_.prev_rank = (rank - 1 + size) % size;
  const auto text = [](const rdzv::PeerAddr& a) { return a.addr + ":" + std::to_string(a.port); };
  links_.next_addr = text(addresses_.next);
  links_.prev_addr = text(addresses_.prev);
  links_.next_fd = next_.get();
  links_.prev_fd = prev_.get();
  runtime_log().debug(
      "ring: rank {}/{} linked to rank {} ({}) and rank {} ({}) in {} ms", rank, size,
      links_.next_rank, links_.next_addr, links_.prev_rank, links_.prev_addr,
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

Ring::~Ring() = default;

void Ring::abort() noexcept {
  if (!failure_) {
    failure_ = std::make_exception_ptr(BackendError("the ring was aborted"));
  }
  next_.reset();
  prev_.reset();
  links_.next_fd = links_.prev_fd = -1;
}

template <class Fn>
void Ring::guarded(std::string_view what, Fn&& fn) {
  if (failure_) {
    rethrow_with_prefix(failure_, std::string(what) + ": ring unusable after an earlier error: ");
  }
  try {
    fn();
  } catch (const UsageError&) {
    throw;  // a bad argument leaves the links intact
  } catch (const AbortedError&) {
    failure_ = std::current_exception();  // interrupted from outside: no peer to blame
    abort();
    throw;
  } catch (const std::exception& e) {
    // Anything else (e.g. bad_alloc part-way) leaves the streams out of step as well; the
    // caller sees it as it was, later calls a BackendError.
    const bool ours = dynamic_cast<const Error*>(&e) != nullptr;
    std::exception_ptr error =
        ours ? std::current_exception()
             : std::make_exception_ptr(BackendError(std::string(what) + ": " + e.what()));
    if (board_ && size_ > 1) {
      const RingPlace place{rank_,
                            size_,
                            links_.generation,
                            addresses_.self.addr + ":" + std::to_string(addresses_.self.port),
                            links_.prev_rank,
                            links_.next_rank,
                            links_.prev_addr,
                            links_.next_addr,
                            std::min(links_.timeout, kMaxReportWait)};
      error = attribute_failure(*board_, place, what, error);  // before the links close
    }
    failure_ = error;
    runtime_log().error("{}", message_of(error));
    abort();
    if (!ours) throw;
    std::rethrow_exception(error);
  }
}

Descriptor Ring::next_call(CollectiveKind kind, DataType dtype, ReduceOp op, std::size_t count,
                           int root) {
  return Descriptor{kind, dtype, op, root, count, ++calls_};
}

void Ring::check_with(Plan& plan, const Descriptor& mine, std::string_view what) {
  header_out_ = encode(mine);
  plan.header_out = header_out_.data();
  plan.header_in = header_in_.data();
  plan.header_size = kDescriptorBytes;
  plan.check_header = [this, &mine, what] {
    const int prev = links_.prev_rank;
    const std::optional<Descriptor> theirs = decode(header_in_);
    if (!theirs) {
      throw ProtocolError(std::string(what) + " #" + std::to_string(mine.sequence) + ": rank " +
                          std::to_string(prev) +
                          " sent no collective descriptor (the ranks' streams are out of step)");
    }
    if (std::string text = mismatch(mine, rank_, *theirs, prev); !text.empty()) {
      throw MismatchError(text);
    }
  };
}

void Ring::allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op) {
  guarded("allreduce", [&] {
    const std::size_t element = checked_element_size(dtype, "allreduce");
    if (size_ == 1) {
      if (send != recv && count > 0) std::memmove(recv, send, count * element);
      return;
    }
    const Descriptor call = next_call(CollectiveKind::kAllreduce, dtype, op, count, 0);
    if (count == 0) return exchange_descriptor(call, "allreduce");  // it still takes a number
    if (count <= kSmallAllreduceBytes / element / static_cast<std::size_t>(size_)) {
      small_allreduce(send, recv, count, dtype, op, call);
    } else {
      Plan plan = allreduce_plan(rank_, size_, static_cast<const std::byte*>(send),
                                 static_cast<std::byte*>(recv), count, dtype, op);
      check_with(plan, call, "allreduce");
      run_plan(links_, plan, staging_, "allreduce");
    }
    if (op == ReduceOp::kAverage) divide(recv, count, dtype, size_);
  });
}

// Every rank gathers all inputs and reduces them in rank order, so all ranks compute
// bit-identical results.
void Ring::small_allreduce(const void* send, void* recv, std::size_t count, DataType dtype,
                           ReduceOp op, const Descriptor& call) {
  const std::size_t bytes = count * element_size(dtype);
  std::vector<std::byte> gathered(bytes * static_cast<std::size_t>(size_));
  std::vector<std::byte*> blocks(size_);
  for (int i = 0; i < size_; ++i) blocks[i] = gathered.data() + bytes * static_cast<std::size_t>(i);
  std::memcpy(blocks[rank_], send, bytes);
  ring_allgather(blocks, std::vector<std::size_t>(size_, bytes), "allreduce", &call);
  combine(recv, blocks[0], blocks[1], count, dtype, op);
  for (int i = 2; i < size_; ++i) reduce_into(recv, blocks[i], count, dtype, op);
}

void Ring::barrier() {
  guarded("barrier", [&] {
    if (size_ == 1) return;
    // A one-byte allgather: a rank finishes only after every other rank's byte, sent when
    // that rank entered, reached it.
    std::vector<std::byte> tokens(size_, std::byte{1});
    std::vector<std::byte*> blocks(size_);
    for (int i = 0; i < size_; ++i) blocks[i] = &tokens[i];
    const Descriptor call =
        next_call(CollectiveKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0);
    ring_allgather(blocks, std::vector<std::size_t>(size_, 1), "barrier", &call);
  });
}

void Ring::check_call(CollectiveKind kind, DataType dtype, ReduceOp op, std::size_t count,
                      int root) {
  const std::string_view what = kind_name(kind);
  guarded(what, [&] {
    if (size_ == 1) return;
    exchange_descriptor(next_call(kind, dtype, op, count, root), what);
  });
}

void Ring::exchange_descriptor(const Descriptor& call, std::string_view what) {
  Plan plan;
  check_with(plan, call, what);
  run_plan(links_, plan, staging_, what);
}

void Ring::broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  guarded("broadcast", [&] {
    const std::size_t element = checked_element_size(dtype, "broadcast");
    if (root < 0 || root >= size_) {
      throw UsageError("broadcast: root " + std::to_string(root) + " is outside a world of size " +
                       std::to_string(size_));
    }
    if (size_ == 1) return;
    if (count == 0) {  // it still takes a number
      return exchange_descriptor(
          next_call(CollectiveKind::kBroadcast, dtype, ReduceOp::kSum, 0, root), "broadcast");
    }
    // Chain root -> root+1 -> ... -> root-1; every rank forwards chunks as they arrive.
    const int position = wrap(rank_ - root, size_);
    const std::size_t bytes = count * element;
    auto* data = static_cast<std::byte*>(buffer);
    Plan plan;
    if (position != size_ - 1) plan.send.push_back({data, bytes});
    if (position != 0) plan.recv.push_back({data, bytes, nullptr});
    plan.send_ready = position == 0 ? bytes : 0;
    const Descriptor call =
        next_call(CollectiveKind::kBroadcast, dtype, ReduceOp::kSum, count, root);
    check_with(plan, call, "broadcast");
    run_plan(links_, plan, staging_, "broadcast");
  });
}

void Ring::ring_allgather(std::vector<std::byte*> blocks, const std::vector<std::size_t>& sizes,
                          std::string_view what, const Descriptor* descriptor) {
  // Step t sends block rank-t (own block first, then the one received in step t-1).
  Plan plan;
  plan.send_ready = sizes[rank_];
  for (int t = 0; t < size_ - 1; ++t) {
    const int sent = wrap(rank_ - t, size_);
    const int got = wrap(rank_ - t - 1, size_);
    plan.send.push_back({blocks[sent], sizes[sent]});
    plan.recv.push_back({blocks[got], sizes[got], nullptr});
  }
  if (descriptor != nullptr) check_with(plan, *descriptor, what);
  run_plan(links_, plan, staging_, what);
}

std::vector<std::size_t> Ring::allgather(const void* send, std::size_t count, DataType dtype,
                                         std::vector<std::byte>& out) {
  std::vector<std::size_t> counts(size_, 0);
  guarded("allgather", [&] {
    const std::size_t element = checked_element_size(dtype, "allgather");
    counts[rank_] = count;
    if (size_ > 1) {
      std::vector<std::byte> wire(8 * size_);
      put_u64(&wire[8 * rank_], count);
      std::vector<std::byte*> blocks(size_);
      for (int i = 0; i < size_; ++i) blocks[i] = &wire[8 * i];
      const Descriptor call =
          next_call(CollectiveKind::kAllgather, dtype, ReduceOp::kSum, count, 0);
      ring_allgather(blocks, std::vector<std::size_t>(size_, 8), "allgather", &call);
      for (int i = 0; i < size_; ++i) counts[i] = get_u64(&wire[8 * i]);
    }
    std::vector<std::size_t> sizes(size_);
    std::size_t total = 0;
    for (int i = 0; i < size_; ++i) {
      if (counts[i] > kMaxGatherBytes / element || counts[i] * element > kMaxGatherBytes - total) {
        throw ProtocolError("allgather: rank " + std::to_string(i) + " announced " +
                            std::to_string(counts[i]) + " elements of " +
                            std::string(to_string(dtype)) + ", more than fit in memory");
      }
      sizes[i] = counts[i] * element;
      total += sizes[i];
    }
    out.resize(total);
    std::vector<std::byte*> blocks(size_);
    std::size_t offset = 0;
    for (int i = 0; i < size_; ++i) {
      blocks[i] = out.data() + offset;
      offset += sizes[i];
    }
    if (sizes[rank_] > 0) std::memcpy(blocks[rank_], send, sizes[rank_]);
    // Same condition on every rank (total is global), so all ranks run the ring or none.
    if (size_ > 1 && total > 0) ring_allgather(blocks, sizes, "allgather", nullptr);
  });
  return counts;
}

}  // namespace hvdrun::tcp
