// horovodrun's YAML config file -> tuning settings (config_file.h).
#include "launcher/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/cli_values.h"
#include "launcher/hosts.h"
#include "launcher/user_file.h"

namespace hvdrun::launcher {
namespace {

class Loader {
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
    return std::move(out_);
  }

 private:
  std::string where(const YAML::Node& node) const {
    return path_ + ":" + std::to_string(node.Mark().line + 1);
  }
  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    throw UsageError(where(node) + ": " + what);
  }
  void note(const YAML::Node& node, const std::string& what) {
    out_.notes.push_back(where(node) + ": " + what);
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
  // ones, and an earlier merged mapping over a later one. Keys must be plain values.
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
    for (const auto& merge : merges) {
      std::vector<YAML::Node> sources;
      if (merge.IsSequence()) {
        for (const auto& source : merge) sources.push_back(source);
      } else {
        sources.push_back(merge);
      }
      for (const auto& source : sources) {
        if (!source.IsMap()) fail(source, "<<: expected a mapping or a list of mappings to merge");
        for (auto& entry : entries(source, depth + 1)) {
          if (++merged_ > kMaxMerged) fail(merge, "merge keys (<<) bring in too many entries");
          if (own.insert(entry.first.Scalar()).second) out.push_back(std::move(entry));
        }
      }
    }
    return out;
  }

  // A switch as horovodrun reads it, Python's truth of what PyYAML makes of the value: YAML
  // 1.1's booleans (true/false, yes/no, on/off) and numbers (0 is false). Anything else, a
  // quoted "no" among them (a string, which horovodrun would take as true), is refused.
  bool boolean(const YAML::Node& node, const std::string& key) const {
    if (node.IsScalar() && node.Tag() != "!") {
      const std::string& text = node.Scalar();
      for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
        if (text == yes) return true;
      }
      for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
        if (text == no) return false;
      }
      char* end = nullptr;
      const double number = std::strtod(text.c_str(), &end);
      if (!text.empty() && !std::isspace(static_cast<unsigned char>(text[0])) &&
          end == text.c_str() + text.size()) {
        return number != 0;
      }
    }
    fail(node, key + " " + quoted(node.IsScalar() ? node.Scalar() : "") +
                   ": expected true or false (or a number, 0 for false)");
  }

  void controller(const YAML::Node& node) {
    auto value = scalar(node, "controller");
    for (auto& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
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
    if (value.IsNull()) return;  // `key:` with no value: not set, as in horovodrun
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
  static constexpr std::size_t kMaxMerged = 1u << 16;

  std::size_t merged_ = 0;  // entries brought in by merge keys so far

  std::string path_;
  bool gloo_flag_ = false;
  ConfigFile out_;
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
