#include "qccl/tools/cli.h"

int main(int argc, char** argv) { return qccl::tools::run_cli(argc, argv); }
