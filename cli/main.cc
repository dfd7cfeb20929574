#include <unistd.h>

#include <cstdlib>

#include "cli/app.h"

int main(int argc, char** argv) {
  // libgomp's default lets idle OpenMP threads spin at every barrier. On a machine whose cores
  // are also busy with other work, a spinning thread steals the time slice its partner needs,
  // and a graph of many small parallel regions gets several times slower (bench/README.md).
  // Threads that sleep when idle cost little when the cores are free, so that is our default.
  // libgomp reads the policy once at start-up, hence the re-exec; a user's setting wins.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  }
  return oat::cli::run_main(argc, argv);
}
