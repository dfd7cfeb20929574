// Build-time tool of the CUDA emulator: copies a .cu file to a C++ file with every kernel launch
//   NAME<TARGS> <<<CONFIG>>> (ARGS)
//     ->   ::oat_emu::Launch(CONFIG).named("FILE:LINE NAME<TARGS>")(NAME<TARGS>, ARGS)
// so g++ compiles it. NAME may be qualified; TARGS may nest angle brackets. A `#line 1 "FILE"`
// first line keeps compiler messages pointing at the .cu file.
//   usage: oat_emu_rewrite IN.cu OUT.cc
#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// Start of the kernel expression that ends just before position `end` (exclusive), or npos.
size_t kernel_start(const std::string& s, size_t end) {
  size_t i = end;
  while (i > 0 && std::isspace(static_cast<unsigned char>(s[i - 1]))) --i;
  if (i > 0 && s[i - 1] == '>') {  // template arguments: match brackets backwards
    int depth = 0;
    while (i > 0) {
      const char c = s[--i];
      if (c == '>') ++depth;
      if (c == '<' && --depth == 0) break;
    }
    if (depth != 0) return std::string::npos;
  }
  while (i > 0 && ident_char(s[i - 1])) --i;
  return i;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: oat_emu_rewrite IN.cu OUT.cc\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "oat_emu_rewrite: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string s = buf.str();
  std::string out = "#line 1 \"" + std::string(argv[1]) + "\"\n";
  std::string source = argv[1];  // named from runtime/ on, for messages
  if (const size_t r = source.find("runtime/"); r != std::string::npos) source = source.substr(r);
  size_t pos = 0;
  int launches = 0;
  for (;;) {
    const size_t open = s.find("<<<", pos);
    if (open == std::string::npos) break;
    const size_t close = s.find(">>>", open);
    const size_t start = kernel_start(s, open);
    size_t paren = close == std::string::npos ? close : close + 3;
    while (paren != std::string::npos && paren < s.size() && std::isspace(static_cast<unsigned char>(s[paren]))) ++paren;
    if (close == std::string::npos || start == std::string::npos || start < pos || start == open ||
        paren >= s.size() || s[paren] != '(') {
      const size_t line = 1 + std::count(s.begin(), s.begin() + static_cast<long>(open), '\n');
      std::cerr << argv[1] << ":" << line << ": oat_emu_rewrite: cannot parse this kernel launch\n";
      return 1;
    }
    size_t after = paren + 1;
    while (after < s.size() && std::isspace(static_cast<unsigned char>(s[after]))) ++after;
    const bool no_args = after < s.size() && s[after] == ')';
    // Keep the newlines inside the replaced span so line numbers stay right.
    const std::string config = s.substr(open + 3, close - open - 3);
    const std::string kernel = s.substr(start, open - start);
    out += s.substr(pos, start - pos);
    const size_t line = 1 + std::count(s.begin(), s.begin() + static_cast<long>(open), '\n');
    std::string flat;  // the kernel expression on one line, for its name
    for (char c : kernel)
      if (c != '\n' && c != '"') flat += c;
    while (!flat.empty() && std::isspace(static_cast<unsigned char>(flat.back()))) flat.pop_back();
    out += "::oat_emu::Launch(" + config + ").named(\"" + source + ":" + std::to_string(line) +
           " " + flat + "\")(" + kernel + (no_args ? "" : ", ");
    pos = paren + 1;
    ++launches;
  }
  out += s.substr(pos);
  std::ofstream o(argv[2]);
  o << out;
  if (!o) {
    std::cerr << "oat_emu_rewrite: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}
