// horovodrun's YAML config file -> tuning settings (config_file.h).
#include "launcher/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>

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
    for (const auto& entry : root) {
      const auto section = entry.first.as<std::string>();
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

  bool boolean(const YAML::Node& node, const std::string& key) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      fail(node,
           key + " " + quoted(node.IsScalar() ? node.Scalar() : "") + ": expected true or false");
    }
    return value;
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
    for (const auto& entry : body) {
      const auto key = entry.first.as<std::string>();
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
    for (const auto& entry : body) {
      settings_of_key(section, entry.first.as<std::string>(), entry.first, entry.second);
    }
    // horovodrun: a stall_check section without `enabled` means enabled (it writes 0).
    if (section == "stall_check" && !body["enabled"]) {
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
