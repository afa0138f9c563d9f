// tests/test_cli.cpp: the flag parser of the examples and benchmarks (examples/cli.h) through try_parse,
// which reports instead of exiting: both value spellings, switches, repeated flags, --help and its
// defaults, and every error naming its flag. The programs' exit statuses are checked by CTest entries in
// examples/CMakeLists.txt and bench/CMakeLists.txt.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli.h"

namespace {

struct Flags {
  int epochs = 12;
  std::int64_t batch = 64;
  int threads = 0;
  double lr = 0.05;
  double budget = 2.0;
  std::string data = "/data";
  bool smoke = false;
  cli::Parser parser{"prog", "Does a thing."};
  Flags() {
    parser.add("--epochs", epochs, "N", "passes", cli::Range::positive);
    parser.add("--batch-size", batch, "B", "batch", cli::Range::positive);
    parser.add("--threads", threads, "T", "threads", cli::Range::non_negative);
    parser.add("--lr", lr, "LR", "rate", cli::Range::positive);
    parser.add("--budget", budget, "S", "seconds", cli::Range::non_negative);
    parser.add("--data", data, "DIR", "folder");
    parser.add("--smoke", smoke, "tiny run");
  }
  cli::Result parse(std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    return parser.try_parse(static_cast<int>(args.size()), args.data());
  }
};

void check_error(std::vector<const char*> args, const std::string& message) {
  Flags f;
  const cli::Result r = f.parse(std::move(args));
  CHECK(r.kind == cli::Result::error);
  CHECK(r.text == message);
}

}  // namespace

TEST_CASE("cli: no flags keeps every default") {
  Flags f;
  CHECK(f.parse({}).kind == cli::Result::ok);
  CHECK(f.epochs == 12);
  CHECK(f.batch == 64);
  CHECK(f.lr == 0.05);
  CHECK(f.data == "/data");
  CHECK_FALSE(f.smoke);
}

TEST_CASE("cli: --flag value and --flag=value set the same variables") {
  Flags a, b;
  CHECK(a.parse({"--epochs", "3", "--lr", "0.1", "--data", "/x", "--batch-size", "8589934592"}).kind ==
        cli::Result::ok);
  CHECK(b.parse({"--epochs=3", "--lr=0.1", "--data=/x", "--batch-size=8589934592"}).kind == cli::Result::ok);
  for (const Flags* f : {&a, &b}) {
    CHECK(f->epochs == 3);
    CHECK(f->lr == 0.1);
    CHECK(f->data == "/x");
    CHECK(f->batch == 8589934592LL);   // int64_t flags take values past 2^31
  }
  Flags c;   // a value may contain '=' and start with a single '-'
  CHECK(c.parse({"--data=a=b", "--budget", "0", "--threads=0"}).kind == cli::Result::ok);
  CHECK(c.data == "a=b");
  CHECK(c.budget == 0.0);
}

TEST_CASE("cli: switches, and a repeated flag keeps its last value") {
  Flags f;
  CHECK(f.parse({"--smoke", "--epochs", "3", "--epochs=5"}).kind == cli::Result::ok);
  CHECK(f.smoke);
  CHECK(f.epochs == 5);
  Flags g;
  CHECK(g.parse({"--smoke", "--smoke=false"}).kind == cli::Result::ok);
  CHECK_FALSE(g.smoke);
  Flags h;   // a switch never takes the next argument as its value
  CHECK(h.parse({"--smoke", "--epochs", "2"}).kind == cli::Result::ok);
  CHECK(h.smoke);
  CHECK(h.epochs == 2);
}

TEST_CASE("cli: --help and -h return the usage with each flag's default") {
  for (const char* help : {"--help", "-h"}) {
    Flags f;
    const cli::Result r = f.parse({"--epochs", "3", help, "--bogus"});
    CHECK(r.kind == cli::Result::help);
    CHECK(r.text.rfind("usage: prog [--epochs N] [--batch-size B]", 0) == 0);
    CHECK(r.text.find("Does a thing.") != std::string::npos);
    CHECK(r.text.find("  --epochs N      passes (default 12)\n") != std::string::npos);
    CHECK(r.text.find("--lr LR         rate (default 0.05)") != std::string::npos);
    CHECK(r.text.find("--data DIR      folder (default /data)") != std::string::npos);
    CHECK(r.text.find("--smoke         tiny run\n") != std::string::npos);   // a switch that is off: no default
    CHECK(r.text.find("-h, --help") != std::string::npos);
  }
}

TEST_CASE("cli: bad values name the flag and what it expects") {
  check_error({"--epochs", "abc"}, "--epochs expects a positive integer, got 'abc'");
  check_error({"--epochs=abc"}, "--epochs expects a positive integer, got 'abc'");
  check_error({"--epochs", "-3"}, "--epochs expects a positive integer, got '-3'");
  check_error({"--epochs", "0"}, "--epochs expects a positive integer, got '0'");
  check_error({"--epochs", "2.5"}, "--epochs expects a positive integer, got '2.5'");
  check_error({"--epochs", " 3"}, "--epochs expects a positive integer, got ' 3'");
  check_error({"--epochs", "3000000000"}, "--epochs expects a positive integer of at most 2147483647, got '3000000000'");
  check_error({"--batch-size", "99999999999999999999"},
              "--batch-size expects a positive integer of at most 9223372036854775807, got '99999999999999999999'");
  check_error({"--threads", "-1"}, "--threads expects a non-negative integer, got '-1'");
  check_error({"--lr", "fast"}, "--lr expects a positive number, got 'fast'");
  check_error({"--lr", "0"}, "--lr expects a positive number, got '0'");
  check_error({"--lr", "nan"}, "--lr expects a positive number, got 'nan'");
  check_error({"--budget", "inf"}, "--budget expects a non-negative number, got 'inf'");
  check_error({"--budget", "1e999"}, "--budget expects a non-negative number, got '1e999'");
  check_error({"--lr="}, "--lr expects a positive number, got ''");
  check_error({"--data="}, "--data expects a non-empty value, got ''");
  check_error({"--smoke=yes"}, "--smoke expects true or false, got 'yes'");
}

TEST_CASE("cli: unknown flags, missing values and stray arguments") {
  check_error({"--epoch", "3"}, "unknown flag --epoch");
  check_error({"--epoch=3"}, "unknown flag --epoch");
  check_error({"--epochs"}, "--epochs needs a value (--epochs N)");
  check_error({"--data", "--epochs", "3"}, "--data needs a value (--data DIR)");
  check_error({"3"}, "unexpected argument '3'");
  check_error({"-e", "3"}, "unexpected argument '-e'");
  check_error({"--"}, "unexpected argument '--'");
}
