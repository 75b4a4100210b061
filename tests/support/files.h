// The whole text of a file, for tests: empty if it cannot be opened.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hvdrun::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace hvdrun::test
