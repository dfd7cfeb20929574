// libonnx's shape inference in a fork()ed child (isolated_inference.h).
//
// Protocol on one pipe, child to parent: one status byte ('M': the inferred ModelProto follows,
// 'E': InferShapes' exception message follows), then the payload to EOF. The parent reads to EOF
// before waitpid (a payload larger than the pipe's buffer must not block the child), then:
// exit 0 with a payload: success or the exception; a signal or a missing status byte:
// InferenceCrashed. The child runs only InferShapes and protobuf (de)serialisation and leaves
// with _exit, so no destructor or atexit handler of the parent runs twice; glibc's fork keeps
// malloc usable in the child of a multithreaded parent (OpenMP's workers are idle in it).
#include "onnx_loader/isolated_inference.h"

#include <onnx/defs/schema.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include "runtime/error.h"

namespace oat::onnx_loader {

namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

[[noreturn]] void run_child(int fd, onnx::ModelProto& m, const onnx::ShapeInferenceOptions& opts) {
  std::string out;
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), opts);
    out = "M";
    if (!m.AppendToString(&out)) out = "Ecannot serialise the inferred model";
  } catch (const std::exception& e) {
    out = std::string("E") + e.what();
  } catch (...) {
    out = "Eunknown exception";
  }
  const bool ok = write_all(fd, out.data(), out.size());
  ::close(fd);
  ::_exit(ok ? 0 : 3);
}

}  // namespace

void infer_shapes_isolated(onnx::ModelProto& m, const onnx::ShapeInferenceOptions& opts) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw Error(cat("shape inference: cannot create a pipe (", std::strerror(errno), ")"));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(cat("shape inference: cannot fork (", std::strerror(errno), ")"));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], m, opts);
  }
  ::close(fds[1]);
  std::string in;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    in.append(buf, static_cast<size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw InferenceCrashed(cat("libonnx's shape inference crashed (signal ", WTERMSIG(status), ", ",
                               strsignal(WTERMSIG(status)), ") on a malformed node"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || in.empty())
    throw InferenceCrashed("libonnx's shape inference ended without a result");
  if (in[0] == 'E') throw std::runtime_error(in.substr(1));
  onnx::ModelProto inferred;
  if (in[0] != 'M' || !inferred.ParseFromArray(in.data() + 1, static_cast<int>(in.size() - 1)))
    throw InferenceCrashed("libonnx's shape inference returned an unreadable model");
  m = std::move(inferred);
}

}  // namespace oat::onnx_loader
