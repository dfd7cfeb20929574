#include "cli/app.h"
#include "runtime/threads.h"

int main(int argc, char** argv) {
  // Idle OpenMP threads spin briefly, then sleep, unless the user says otherwise
  // (runtime/threads.h says why; it re-runs the program with the setting).
  oat::use_default_openmp_waiting(argv);
  return oat::cli::run_main(argc, argv);
}
