// examples/fortunes.h: the text of the language-model examples (10_train_char_transformer.cpp and
// 18_word_language_model.cpp): Debian's `fortunes` package (fortune-mod's data files, BSD licence,
// /usr/share/games/fortunes; `make test` installs it), or any text file given with --data.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

/// The text of a file, or of the fortune files of a folder (cookies separated by a blank line instead
/// of fortune's "%" lines). Exits 1 with the reason, naming `program`, when there is none.
inline std::string read_fortunes(const std::string& path, const char* program) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    // The prose of the package: its other files are ASCII art, riddles in fixed layouts or other tongues.
    for (const char* name : {"fortunes", "literature", "wisdom", "people", "science", "songs-poems", "humorists"})
      if (fs::is_regular_file(fs::path(path) / name, ec)) files.push_back(fs::path(path) / name);
  } else if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "%s: no text at %s (install Debian's fortunes package: apt-get install fortunes, or pass "
                 "--data FILE)\n",
                 program, path.c_str());
    std::exit(1);
  }
  std::string text;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string line;
    while (std::getline(in, line)) text += line == "%" ? "\n" : line + "\n";
  }
  return text;
}
