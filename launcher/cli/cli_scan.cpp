// The words before the program, scanned with argparse's rules (cli_scan.h).
#include "launcher/cli/cli_scan.h"

#include <charconv>
#include <optional>
#include <string_view>

#include "hvdrun/error.h"
#include "launcher/cli/cli_options.h"
#include "launcher/cli/cli_values.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {

std::string see_help(std::string message) {
  return message + " (see hvdrun --help)";
}

namespace {

[[noreturn]] void unrecognised(std::string_view word) {
  throw UsageError(see_help("unrecognised option " + quoted(word)));
}

struct Match {
  const OptionInfo* option = nullptr;
  std::string spelling;  // the canonical spelling of what the user meant ("--verbose", "-np")
  std::optional<std::string> inline_value;
};

// "--name", "--name=value", or an unambiguous prefix of a long name.
Match match_long(std::string_view word) {
  const auto eq = word.find('=');
  const auto name = word.substr(2, eq == std::string_view::npos ? eq : eq - 2);
  std::optional<std::string> inline_value;
  if (eq != std::string_view::npos) inline_value = std::string(word.substr(eq + 1));
  std::vector<const OptionInfo*> candidates;
  for (const auto& option : cli_options()) {
    if (!option.long_form || name.empty()) continue;
    if (option.name == name || (!option.other_name.empty() && option.other_name == name)) {
      return {&option, "--" + std::string(name), inline_value};
    }
    if (option.name.starts_with(name) ||
        (!option.other_name.empty() && option.other_name.starts_with(name))) {
      candidates.push_back(&option);
    }
  }
  if (candidates.size() == 1) {
    return {candidates[0], "--" + std::string(candidates[0]->name), inline_value};
  }
  if (candidates.empty()) unrecognised(word.substr(0, eq));
  std::string choices;
  for (const auto* option : candidates) {
    choices += (choices.empty() ? "--" : ", --") + std::string(option->name);
  }
  throw UsageError(
      see_help("ambiguous option " + quoted(word.substr(0, eq)) + " (could be " + choices + ")"));
}

// "-np", "-np=4", "-H host", "-Hhost", "-xNAME=VALUE".
Match match_single(std::string_view word) {
  const auto eq = word.find('=');
  const auto name = word.substr(0, eq);
  for (const auto& option : cli_options()) {
    if (option.alias.empty()) continue;
    if (option.alias == name) {
      std::optional<std::string> inline_value;
      if (eq != std::string_view::npos) inline_value = std::string(word.substr(eq + 1));
      return {&option, std::string(name), inline_value};
    }
  }
  for (const auto& option : cli_options()) {  // a one-letter option with its value attached
    if (option.alias.size() == 2 && !option.value_name.empty() && word.starts_with(option.alias)) {
      return {&option, std::string(option.alias), std::string(word.substr(2))};
    }
  }
  unrecognised(word);
}

bool is_negative_number(std::string_view word) {
  double value = 0;
  const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  return word.starts_with('-') && ec == std::errc{} && ptr == word.data() + word.size();
}

}  // namespace

Scanned scan(std::span<const std::string> args) {
  Scanned out;
  std::map<std::string, std::string> single_values;  // to name both values of a repeat
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string_view word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (word.size() < 2 || word.front() != '-') break;  // the program
    auto match = word.starts_with("--") ? match_long(word) : match_single(word);
    const auto& option = *match.option;
    if (!option.refusal.empty())
      throw UsageError(match.spelling + " " + std::string(option.refusal));
    const std::string name(option.name);
    out.spelling[name] = match.spelling;
    if (option.value_name.empty()) {
      if (match.inline_value) {
        throw UsageError(
            see_help("option " + match.spelling + " takes no value, got " + quoted(word)));
      }
      if (single_values.emplace(name, "").second) out.tokens.push_back("--" + name);
      continue;
    }
    if (!match.inline_value) {
      if (i + 1 >= args.size())
        throw UsageError(see_help("option " + match.spelling + " needs a value"));
      const std::string_view next = args[i + 1];
      if (next.size() > 1 && next.front() == '-' && !is_negative_number(next)) {
        throw UsageError(
            see_help("option " + match.spelling + " needs a value, got option " + quoted(next)));
      }
      match.inline_value = std::string(next);
      ++i;
      // A value name of two words ("MIN MAX") takes the next two arguments.
      if (option.value_name.find(' ') != std::string_view::npos) {
        if (i + 1 >= args.size()) {
          throw UsageError(see_help("option " + match.spelling + " needs two values (" +
                                    std::string(option.value_name) + ")"));
        }
        *match.inline_value += " " + args[++i];
      }
    }
    const auto& value = *match.inline_value;
    if (value.empty())
      throw UsageError(see_help("option " + match.spelling + " needs a non-empty value"));
    if (!option.repeatable) {
      const auto [it, fresh] = single_values.emplace(name, value);
      if (!fresh) {
        throw UsageError(match.spelling + " given twice (" + quoted(it->second) + " and " +
                         quoted(value) + "); give it once");
      }
    }
    out.tokens.push_back("--" + name + "=" + value);
  }
  out.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return out;
}

}  // namespace hvdrun::launcher
