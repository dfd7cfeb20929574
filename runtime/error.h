// Errors are exceptions that carry a complete one-line message: what was wrong and where (the file,
// the node, the op, the shape). The CLI prints `error: <message>` and exits non-zero.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace oat {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Something valid that this build does not implement (an op, a dtype for an op, an attribute
// mode). `key` is a short label for tallies, e.g. "Conv[float64]" or "Pad(mode=wrap)".
class Unsupported : public Error {
 public:
  Unsupported(const std::string& msg, std::string key) : Error(msg), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// Builds a message from streamable parts: throw Error(cat("node '", name, "': bad rank ", r)).
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

}  // namespace oat
