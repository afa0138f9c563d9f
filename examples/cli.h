// examples/cli.h: the one command-line flag parser of the examples, the benchmarks (bench/common.h) and
// tools/gpu_probe. `--flag value` and `--flag=value` for int, int64_t, double and string flags, `--flag`
// alone for bools; `--help`/`-h` prints every flag with its default and exits 0; an unknown flag, a
// missing, malformed or out-of-range value prints an error naming the flag and exits 2.
// Header-only and not installed: the library reads no command line (target tensorgrad_cli, CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace cli {

/// Which numbers a numeric flag accepts.
enum class Range { any, positive, non_negative };

/// What parsing a command line came to: go on, print help (text: the usage), or stop (text: the error).
struct Result {
  enum Kind { ok, help, error } kind = ok;
  std::string text;
};

class Parser {
 public:
  /// program: the name shown in the usage line; about: what the program does, printed by --help.
  Parser(std::string program, std::string about) : program_(std::move(program)), about_(std::move(about)) {}

  // Each add() binds a flag to a variable whose current value is the default shown by --help; the
  // metavar names the value in the usage (`--epochs N`). A flag given twice keeps its last value.
  void add(const std::string& name, int& value, const std::string& metavar, const std::string& help,
           Range range = Range::any) {
    add_integer(name, metavar, help, range, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                std::to_string(value), [&value](long long v) { value = static_cast<int>(v); });
  }
  void add(const std::string& name, std::int64_t& value, const std::string& metavar, const std::string& help,
           Range range = Range::any) {
    add_integer(name, metavar, help, range, std::numeric_limits<std::int64_t>::min(),
                std::numeric_limits<std::int64_t>::max(), std::to_string(value),
                [&value](long long v) { value = static_cast<std::int64_t>(v); });
  }
  void add(const std::string& name, double& value, const std::string& metavar, const std::string& help,
           Range range = Range::any) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", value);
    flags_.push_back({name, metavar, help, shown, false, [&value, range](const std::string& text) -> std::string {
                        const std::string expected = article(range) + "number";
                        if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return expected;
                        errno = 0;
                        char* end = nullptr;
                        const double v = std::strtod(text.c_str(), &end);
                        if (errno != 0 || *end != '\0' || !std::isfinite(v) || !in_range(v, range)) return expected;
                        value = v;
                        return "";
                      }});
  }
  void add(const std::string& name, std::string& value, const std::string& metavar, const std::string& help) {
    flags_.push_back({name, metavar, help, value, false, [&value](const std::string& text) -> std::string {
                        if (text.empty()) return "a non-empty value";
                        value = text;
                        return "";
                      }});
  }
  /// A switch: `--smoke` sets it, `--smoke=true|false|1|0` says which.
  void add(const std::string& name, bool& value, const std::string& help) {
    flags_.push_back({name, "", help, value ? "on" : "", true, [&value](const std::string& text) -> std::string {
                        if (text == "true" || text == "1") value = true;
                        else if (text == "false" || text == "0") value = false;
                        else return "true or false";
                        return "";
                      }});
  }

  /// Sets the bound variables from argv[1..argc-1] and says what to do next; never prints, never exits.
  Result try_parse(int argc, const char* const* argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") return {Result::help, usage()};
      if (arg.rfind("--", 0) != 0 || arg.size() == 2) return {Result::error, "unexpected argument '" + arg + "'"};
      const std::size_t eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      const Flag* flag = find(name);
      if (flag == nullptr) return {Result::error, "unknown flag " + name};
      std::string text;
      if (eq != std::string::npos) text = arg.substr(eq + 1);
      else if (flag->is_bool) text = "true";
      // The next argument is this flag's value unless it is itself a flag (`--data --epochs 3`).
      else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) text = argv[++i];
      else return {Result::error, name + " needs a value (" + name + " " + flag->metavar + ")"};
      const std::string expected = flag->set(text);
      if (!expected.empty()) return {Result::error, name + " expects " + expected + ", got '" + text + "'"};
    }
    return {};
  }

  /// try_parse for main(): prints the help to stdout and exits 0, or the error to stderr and exits 2.
  void parse(int argc, const char* const* argv) const {
    const Result r = try_parse(argc, argv);
    if (r.kind == Result::help) {
      std::fputs(r.text.c_str(), stdout);
      std::exit(0);
    }
    if (r.kind == Result::error) fail(r.text);
  }

  /// For checks the parser cannot make (a device name, a folder): reports `message` as a bad flag and exits 2.
  [[noreturn]] void fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\n%s(%s --help describes each flag)\n", program_.c_str(), message.c_str(),
                 usage_line().c_str(), program_.c_str());
    std::exit(2);
  }

  /// "usage: program [--flag V] ...\n"
  std::string usage_line() const {
    std::string line = "usage: " + program_;
    for (const Flag& f : flags_) line += " [" + f.name + (f.is_bool ? "" : " " + f.metavar) + "]";
    return line + "\n";
  }

  /// What --help prints: the usage line, the about text, then one line per flag with its default.
  std::string usage() const {
    std::vector<std::string> left;
    std::size_t width = 10;   // "-h, --help"
    for (const Flag& f : flags_) {
      left.push_back(f.name + (f.is_bool ? "" : " " + f.metavar));
      width = std::max(width, left.back().size());
    }
    std::string out = usage_line() + about_ + "\n\nflags (--flag value or --flag=value):\n";
    auto line = [&](const std::string& l, const std::string& r) {
      out += "  " + l + std::string(width - l.size() + 2, ' ') + r + "\n";
    };
    for (std::size_t i = 0; i < flags_.size(); ++i)
      line(left[i], flags_[i].help + (flags_[i].shown.empty() ? "" : " (default " + flags_[i].shown + ")"));
    line("-h, --help", "print this help and exit");
    return out;
  }

 private:
  struct Flag {
    std::string name, metavar, help;
    std::string shown;   // the default as --help prints it; empty: not printed (a switch that is off)
    bool is_bool;
    std::function<std::string(const std::string&)> set;   // "" once the variable is set, else what was expected
  };

  static std::string article(Range range) {
    return range == Range::positive ? "a positive " : range == Range::non_negative ? "a non-negative " : "a ";
  }
  static bool in_range(double v, Range range) {
    return range == Range::positive ? v > 0 : range == Range::non_negative ? v >= 0 : true;
  }

  void add_integer(const std::string& name, const std::string& metavar, const std::string& help, Range range,
                   long long lo, long long hi, std::string shown, std::function<void(long long)> store) {
    flags_.push_back({name, metavar, help, std::move(shown), false,
                      [range, lo, hi, store](const std::string& text) -> std::string {
                        const std::string expected = article(range) + "integer";
                        if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return expected;
                        errno = 0;
                        char* end = nullptr;
                        const long long v = std::strtoll(text.c_str(), &end, 10);
                        if (*end != '\0' || !in_range(static_cast<double>(v), range)) return expected;
                        if (v > hi || (errno == ERANGE && v > 0)) return expected + " of at most " + std::to_string(hi);
                        if (v < lo || errno == ERANGE) return expected + " of at least " + std::to_string(lo);
                        store(v);
                        return "";
                      }});
  }

  const Flag* find(const std::string& name) const {
    for (const Flag& f : flags_)
      if (f.name == name) return &f;
    return nullptr;
  }

  std::string program_, about_;
  std::vector<Flag> flags_;
};

}  // namespace cli
