#include "cli/app.h"

int main(int argc, char** argv) { return oat::cli::run_main(argc, argv); }
