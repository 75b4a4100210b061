// read_pickle: a bounded reader of the part of Python's pickle format (protocols 2 to 5) that
// holds plain data: None, booleans, integers, str, bytes, lists, tuples and dicts, with the memo
// (shared references). It never builds an object of a named class (no GLOBAL, REDUCE, BUILD):
// the input is from the network and untrusted. A value is a node of a PickleTree; a memoized
// container appears once and is referred to by index, so cycles and repeats cost nothing.
// Thread: pure functions; a PickleTree is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun::launcher::horovod {

struct PickleNode {
  enum class Kind { kNone, kBool, kInt, kText, kBytes, kList, kTuple, kDict };
  Kind kind = Kind::kNone;
  std::int64_t number = 0;         // kBool (0 or 1), kInt
  std::string text;                // kText (UTF-8 as pickled), kBytes
  std::vector<std::size_t> items;  // kList, kTuple: elements; kDict: key, value, key, value...
};

struct PickleTree {
  std::vector<PickleNode> nodes;
  std::size_t root = 0;
  const PickleNode& at(std::size_t index) const { return nodes.at(index); }
};

// At most this many nodes (each opcode makes at most one; the input bounds them anyway).
inline constexpr std::size_t kMaxPickleNodes = 1u << 16;

// The value `data` pickles, or nullopt with `error` saying what is wrong and at which offset
// ("unsupported pickle opcode 0x63 at offset 2", "truncated at offset 40").
std::optional<PickleTree> read_pickle(std::string_view data, std::string& error);

}  // namespace hvdrun::launcher::horovod
