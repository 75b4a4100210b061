// read_pickle (pickle_reader.h): a stack machine over the plain-data opcodes of pickle
// protocols 2 to 5 (CPython's Lib/pickle.py names them).
#include "launcher/horovod/updates/pickle_reader.h"

#include <cstdio>
#include <unordered_map>

namespace hvdrun::launcher::horovod {
namespace {

using Kind = PickleNode::Kind;

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  std::optional<PickleTree> run(std::string& error) {
    while (error_.empty()) {
      op_at_ = pos_;
      if (pos_ >= data_.size()) {
        fail("no STOP opcode before the end");
        break;
      }
      const auto op = static_cast<unsigned char>(data_[pos_++]);
      if (op == '.') return stop(error);
      step(op);
    }
    error = error_;
    return std::nullopt;
  }

 private:
  std::optional<PickleTree> stop(std::string& error) {
    if (stack_.size() != 1 || !marks_.empty()) {
      error = "STOP at offset " + std::to_string(op_at_) + " with " +
              std::to_string(stack_.size()) + " values and " + std::to_string(marks_.size()) +
              " marks on the stack (1 value and no mark expected)";
      return std::nullopt;
    }
    tree_.root = stack_.back();
    return std::move(tree_);
  }

  void step(unsigned char op) {
    switch (op) {
      case 0x80:
        proto();
        break;  // PROTO
      case 0x95:
        skip(8);
        break;  // FRAME: its length is not needed
      case '(':
        mark();
        break;  // MARK
      case 'N':
        push(PickleNode{});
        break;  // NONE
      case 0x88:
        push(PickleNode{Kind::kBool, 1, {}, {}});
        break;  // NEWTRUE
      case 0x89:
        push(PickleNode{Kind::kBool, 0, {}, {}});
        break;  // NEWFALSE
      case 'J':
        push_int(static_cast<std::int32_t>(unsigned_le(4)));
        break;  // BININT
      case 'K':
        push_int(static_cast<std::int64_t>(unsigned_le(1)));
        break;  // BININT1
      case 'M':
        push_int(static_cast<std::int64_t>(unsigned_le(2)));
        break;  // BININT2
      case 0x8a:
        long_int(unsigned_le(1));
        break;  // LONG1
      case 0x8b:
        long_int(unsigned_le(4));
        break;  // LONG4
      case 0x8c:
        push_string(Kind::kText, unsigned_le(1));
        break;  // SHORT_BINUNICODE
      case 'X':
        push_string(Kind::kText, unsigned_le(4));
        break;  // BINUNICODE
      case 0x8d:
        push_string(Kind::kText, unsigned_le(8));
        break;  // BINUNICODE8
      case 'C':
        push_string(Kind::kBytes, unsigned_le(1));
        break;  // SHORT_BINBYTES
      case 'B':
        push_string(Kind::kBytes, unsigned_le(4));
        break;  // BINBYTES
      case 0x8e:
        push_string(Kind::kBytes, unsigned_le(8));
        break;  // BINBYTES8
      case ']':
        push(PickleNode{Kind::kList, 0, {}, {}});
        break;  // EMPTY_LIST
      case ')':
        push(PickleNode{Kind::kTuple, 0, {}, {}});
        break;  // EMPTY_TUPLE
      case '}':
        push(PickleNode{Kind::kDict, 0, {}, {}});
        break;  // EMPTY_DICT
      case 't':
        tuple_from_mark();
        break;  // TUPLE
      case 0x85:
        tuple_of(1);
        break;  // TUPLE1
      case 0x86:
        tuple_of(2);
        break;  // TUPLE2
      case 0x87:
        tuple_of(3);
        break;  // TUPLE3
      case 'a':
        add_to(Kind::kList, stack_.size() - 1, "APPEND");
        break;
      case 'e':
        add_to(Kind::kList, mark_start(), "APPENDS");
        break;
      case 's':
        add_to(Kind::kDict, stack_.size() - 2, "SETITEM");
        break;
      case 'u':
        add_to(Kind::kDict, mark_start(), "SETITEMS");
        break;
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'q':
        memo_put(unsigned_le(1));
        break;  // BINPUT
      case 'r':
        memo_put(unsigned_le(4));
        break;  // LONG_BINPUT
      case 'h':
        memo_get(unsigned_le(1));
        break;  // BINGET
      case 'j':
        memo_get(unsigned_le(4));
        break;  // LONG_BINGET
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail("unsupported pickle opcode " + std::string(hex));
      }
    }
  }

  // What is wrong with the opcode at op_at_.
  void fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at offset " + std::to_string(op_at_);
  }

  // The next n bytes as an unsigned little-endian number (n <= 8); 0 once failed.
  std::uint64_t unsigned_le(std::size_t n) {
    if (!error_.empty()) return 0;
    if (data_.size() - pos_ < n) {
      fail("truncated");
      return 0;
    }
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < n; ++i) {
      value |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    }
    pos_ += n;
    return value;
  }

  void skip(std::size_t n) { unsigned_le(n); }

  void proto() {
    const auto version = unsigned_le(1);
    if (error_.empty() && (version < 2 || version > 5)) fail("unsupported pickle protocol");
  }

  void push(PickleNode node) {
    if (!error_.empty()) return;
    if (tree_.nodes.size() >= kMaxPickleNodes) return fail("more than the allowed values");
    tree_.nodes.push_back(std::move(node));
    stack_.push_back(tree_.nodes.size() - 1);
  }

  void push_int(std::int64_t value) {
    if (error_.empty()) push(PickleNode{Kind::kInt, value, {}, {}});
  }

  // LONG1/LONG4: a two's complement little-endian integer of `length` bytes.
  void long_int(std::uint64_t length) {
    if (!error_.empty()) return;
    if (length > 8) return fail("an integer wider than 64 bits");
    const std::size_t width = static_cast<std::size_t>(length);
    std::uint64_t bits = unsigned_le(width);
    if (!error_.empty()) return;
    if (width > 0 && width < 8 && (bits >> (8 * width - 1)) != 0) {
      bits |= ~std::uint64_t{0} << (8 * width);  // sign-extend
    }
    push_int(static_cast<std::int64_t>(bits));
  }

  void push_string(Kind kind, std::uint64_t length) {
    if (!error_.empty()) return;
    if (data_.size() - pos_ < length) return fail("truncated");
    std::string text(data_.substr(pos_, static_cast<std::size_t>(length)));
    pos_ += static_cast<std::size_t>(length);
    push(PickleNode{kind, 0, std::move(text), {}});
  }

  void mark() {
    if (marks_.size() >= kMaxPickleNodes) return fail("more than the allowed marks");
    marks_.push_back(stack_.size());
  }

  // Where the values above the last mark begin (and the mark is gone); SIZE_MAX if none.
  std::size_t mark_start() {
    if (marks_.empty()) {
      fail("no MARK before");
      return SIZE_MAX;
    }
    const std::size_t start = marks_.back();
    marks_.pop_back();
    return start;
  }

  void make_tuple(std::size_t start) {
    if (!error_.empty()) return;
    PickleNode tuple{
        Kind::kTuple, 0, {}, {stack_.begin() + static_cast<std::ptrdiff_t>(start), stack_.end()}};
    stack_.resize(start);
    push(std::move(tuple));
  }

  void tuple_from_mark() { make_tuple(mark_start()); }

  void tuple_of(std::size_t n) {
    if (stack_.size() < n) return fail("a tuple of more values than the stack holds");
    if (!marks_.empty() && marks_.back() > stack_.size() - n) return fail("a tuple across a MARK");
    make_tuple(stack_.size() - n);
  }

  // APPEND(S) and SETITEM(S): the values from `start` on go into the container just below it.
  void add_to(Kind kind, std::size_t start, const char* name) {
    if (!error_.empty()) return;
    if (start == 0 || start > stack_.size() || (!marks_.empty() && marks_.back() >= start)) {
      return fail(std::string(name) + " without its container");
    }
    const std::size_t count = stack_.size() - start;
    if (kind == Kind::kDict && count % 2 != 0) return fail(std::string(name) + " of a key alone");
    auto& container = tree_.nodes[stack_[start - 1]];
    if (container.kind != kind) return fail(std::string(name) + " into the wrong kind of value");
    container.items.insert(container.items.end(),
                           stack_.begin() + static_cast<std::ptrdiff_t>(start), stack_.end());
    stack_.resize(start);
  }

  void memo_put(std::uint64_t index) {
    if (!error_.empty()) return;
    if (stack_.empty()) return fail("a memo entry of an empty stack");
    if (memo_.size() >= kMaxPickleNodes && !memo_.contains(index)) {
      return fail("more than the allowed memo entries");
    }
    memo_[index] = stack_.back();
  }

  void memo_get(std::uint64_t index) {
    if (!error_.empty()) return;
    const auto it = memo_.find(index);
    if (it == memo_.end()) return fail("a memo entry never stored");
    if (stack_.size() >= kMaxPickleNodes) return fail("more than the allowed values");
    stack_.push_back(it->second);
  }

  std::string_view data_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;  // where the opcode being read starts
  PickleTree tree_;
  std::vector<std::size_t> stack_;  // node indices
  std::vector<std::size_t> marks_;  // stack sizes at each MARK
  std::unordered_map<std::uint64_t, std::size_t> memo_;
  std::string error_;
};

}  // namespace

std::optional<PickleTree> read_pickle(std::string_view data, std::string& error) {
  return Reader(data).run(error);
}

}  // namespace hvdrun::launcher::horovod
