// horovodrun's YAML config file -> tuning settings (config_file.h).
#include "launcher/cli/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <utility>
#include <vector>

#include "common/ascii_case.h"
#include "hvdrun/error.h"
#include "launcher/cli/cli_values.h"
#include "launcher/spec/hosts.h"
#include "launcher/spec/user_file.h"

namespace hvdrun::launcher {
namespace {

// PyYAML's implicit YAML 1.1 integers and floats (its resolver's patterns).
const std::regex kYamlInt(
    "[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|"
    "[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+");
const std::regex kYamlFloat(
    "[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9_]+(?:[eE][-+][0-9]+)?|"
    "[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN)");

// Python's truth of a plain scalar (tag "?") or one tagged bool, int or float, as PyYAML
// reads it; nullopt for a string.
std::optional<bool> yaml11_truth(const std::string& text, const std::string& tag) {
  const std::string core = "tag:yaml.org,2002:";
  const bool plain = tag == "?";
  if (plain || tag == core + "bool") {
    for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
      if (text == yes) return true;
    }
    for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
      if (text == no) return false;
    }
  }
  const bool is_int = (plain || tag == core + "int") && std::regex_match(text, kYamlInt);
  const bool is_float = (plain || tag == core + "float") && std::regex_match(text, kYamlFloat);
  if (!is_int && !is_float) return std::nullopt;
  if (text.find_first_of("nNiI") != std::string::npos) return true;  // .nan, .inf
  // Zero unless a digit of the value (before any exponent; after a 0b or 0x prefix) is not.
  std::string digits = text.substr(0, is_float ? text.find_first_of("eE") : std::string::npos);
  const auto prefix = digits.find_first_of("bxX");
  if (prefix != std::string::npos) digits = digits.substr(prefix + 1);
  return digits.find_first_of("123456789abcdefABCDEF") != std::string::npos;
}

class Loader {
  static constexpr std::size_t kMostNotes = 20;

 public:
  Loader(std::string path, bool gloo_flag) : path_(std::move(path)), gloo_flag_(gloo_flag) {}

  ConfigFile load(const YAML::Node& root) {
    if (root.IsNull()) return std::move(out_);
    if (!root.IsMap()) fail(root, "expected a mapping of sections (params:, autotune:, ...)");
    for (const auto& entry : entries(root)) {
      const auto section = key_of(entry.first);
      const auto& body = entry.second;
      if (body.IsNull()) continue;  // `section:` with nothing under it, as horovodrun skips it
      if (section == "controller") {
        if (!gloo_flag_) controller(body);
      } else if (section == "logging") {
        logging(body);
      } else if (is_section(section)) {
        settings_of(section, body);
      } else {
        note(entry.first, "unknown section " + quoted(section) + " ignored");
      }
    }
    if (notes_left_out_ > 0) {
      out_.notes.push_back(path_ + ": " + std::to_string(notes_left_out_) +
                           " more unknown keys or sections ignored (only the first " +
                           std::to_string(kMostNotes) + " are named)");
    }
    return std::move(out_);
  }

 private:
  std::string where(const YAML::Node& node) const {
    return path_ + ":" + std::to_string(node.Mark().line + 1);
  }
  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    throw UsageError(where(node) + ": " + what);
  }
  // At most kMostNotes notes; the rest are counted in one last line.
  void note(const YAML::Node& node, const std::string& what) {
    if (out_.notes.size() < kMostNotes) {
      out_.notes.push_back(where(node) + ": " + what);
    } else {
      ++notes_left_out_;
    }
  }

  static bool is_section(const std::string& section) {
    for (const auto& param : tuning_params()) {
      if (param.yaml_section == section) return true;
    }
    return false;
  }

  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key + ": expected a single value");
    return node.Scalar();
  }

  static std::string key_of(const YAML::Node& key) {
    return key.IsScalar() ? key.Scalar() : std::string();
  }

  // The entries of a mapping with YAML's merge keys applied (`<<: *defaults`, or a list of
  // them), as PyYAML, horovodrun's reader, applies them: the mapping's own keys win over merged
  // ones. Keys must be plain values.
  std::vector<std::pair<YAML::Node, YAML::Node>> entries(const YAML::Node& map, int depth = 0) {
    if (depth > kMaxMergeDepth) fail(map, "merge keys (<<) nested too deep");
    std::vector<std::pair<YAML::Node, YAML::Node>> out;
    std::vector<YAML::Node> merges;
    std::set<std::string> own;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar()) fail(entry.first, "expected a plain key, not a list or mapping");
      if (entry.first.Scalar() == "<<" && entry.first.Tag() != "!") {
        merges.push_back(entry.second);
        continue;
      }
      own.insert(entry.first.Scalar());
      out.emplace_back(entry.first, entry.second);
    }
    // Of two `<<` keys the later wins; within one list of mappings, the earlier.
    for (auto merge_it = merges.rbegin(); merge_it != merges.rend(); ++merge_it) {
      const YAML::Node& merge = *merge_it;
      std::vector<YAML::Node> sources;
      if (merge.IsSequence()) {
        for (const auto& source : merge) sources.push_back(source);
      } else {
        sources.push_back(merge);
      }
      for (const auto& source : sources) {
        if (!source.IsMap()) fail(source, "<<: expected a mapping or a list of mappings to merge");
        if (++merged_ > kMaxMerged) fail(merge, "merge keys (<<) bring in too many entries");
        for (auto& entry : entries(source, depth + 1)) {
          if (++merged_ > kMaxMerged) fail(merge, "merge keys (<<) bring in too many entries");
          if (own.insert(entry.first.Scalar()).second) out.push_back(std::move(entry));
        }
      }
    }
    return out;
  }

  // A switch as horovodrun reads it, Python's truth of what PyYAML makes of the value: YAML
  // 1.1's booleans (true/false, yes/no, on/off), integers and floats (zero is false, .nan
  // and .inf are true). Anything else is a string, which horovodrun would take as true
  // whatever it says (a quoted "no", `!!str 0`): refused.
  bool boolean(const YAML::Node& node, const std::string& key) const {
    if (node.IsScalar()) {
      if (const auto truth = yaml11_truth(node.Scalar(), node.Tag())) return *truth;
    }
    fail(node, key + " " + quoted(node.IsScalar() ? node.Scalar() : "") +
                   ": expected true or false (or a number, 0 for false)");
  }

  void controller(const YAML::Node& node) {
    const auto value = ascii_lower(scalar(node, "controller"));
    if (value == "gloo") return;
    if (value == "mpi" || value == "jsrun") {
      fail(node, "controller: " + value + ": hvdrun runs Horovod in Gloo mode; use gloo");
    }
    fail(node, "controller " + quoted(value) + ": expected gloo");
  }

  void logging(const YAML::Node& body) {
    if (!body.IsMap()) fail(body, "logging: expected a mapping");
    for (const auto& entry : entries(body)) {
      const auto key = key_of(entry.first);
      if (key == "level") {
        out_.log_level = parse_log_level(where(entry.second) + ": logging.level",
                                         scalar(entry.second, "logging.level"));
      } else {
        settings_of_key("logging", key, entry.first, entry.second);
      }
    }
  }

  void settings_of(const std::string& section, const YAML::Node& body) {
    if (!body.IsMap()) fail(body, section + ": expected a mapping");
    bool enabled_given = false;
    for (const auto& entry : entries(body)) {
      const auto key = key_of(entry.first);
      enabled_given = enabled_given || key == "enabled";
      settings_of_key(section, key, entry.first, entry.second);
    }
    // horovodrun: a stall_check section without `enabled` means enabled (it writes 0).
    if (section == "stall_check" && !enabled_given) {
      out_.settings.push_back(
          {find_tuning_param("stall-check"), "", where(body) + ": stall_check", false});
    }
  }

  void settings_of_key(const std::string& section, const std::string& key,
                       const YAML::Node& key_node, const YAML::Node& value) {
    const std::string full = section + "." + key;
    const TuningParam* param = nullptr;
    for (const auto& candidate : tuning_params()) {
      if (candidate.yaml_section == section && candidate.yaml_key == key) param = &candidate;
    }
    if (param == nullptr) {
      note(key_node, "unknown key " + quoted(full) + " ignored");
      return;
    }
    if (value.IsNull()) {
      // `key:` with no value: not set, as in horovodrun, except stall_check's `enabled:`,
      // which horovodrun reads as not enabled.
      if (full == "stall_check.enabled")
        out_.settings.push_back({switch_sibling(*param), "", where(key_node) + ": " + full, false});
      return;
    }
    const std::string origin = where(value) + ": " + full;
    if (param->kind == TuningKind::kSwitch) {
      const auto* chosen = boolean(value, full) ? param : switch_sibling(*param);
      out_.settings.push_back({chosen, "", origin, false});
    } else {
      out_.settings.push_back({param, scalar(value, full), origin, false});
    }
  }

  // Bounds on merge keys, which aliases can make exponential (a list of the same anchor
  // merged into a mapping that is merged the same way, again and again).
  static constexpr int kMaxMergeDepth = 64;
  static constexpr std::size_t kMaxMerged = 1u << 16;  // mappings merged and entries taken

  std::size_t merged_ = 0;  // mappings and entries brought in by merge keys so far

  std::string path_;
  bool gloo_flag_ = false;
  ConfigFile out_;
  std::size_t notes_left_out_ = 0;
};

}  // namespace

ConfigFile load_config_file(const std::string& path, bool gloo_flag) {
  const std::string text = read_user_file(path, "--config-file " + quoted(path));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  try {
    return Loader(path, gloo_flag).load(root);
  } catch (const YAML::Exception& e) {
    throw UsageError(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

}  // namespace hvdrun::launcher
