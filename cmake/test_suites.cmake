# qccl_add_gtest_suites(<target> TIMEOUT <seconds>)
#
# One ctest test per GoogleTest suite of <target> (named `<Suite>.*`, run as
# `--gtest_filter=<Suite>.*`), where gtest_discover_tests makes one per test
# case. For test programs whose start is costly: a program that links
# libtorch spends about 1.2 s of CPU in libtorch's static initialisers
# before main (measured on a 2-vCPU Xeon with an empty main linked to
# libtorch_cpu), so a process per case spent more on starting than on most
# cases. A suite is a unit of its own (its cases share fixtures and run in
# one process when the program is run by hand as well), and ctest still runs
# the suites in parallel.
#
# The suites are listed after each build of <target> or of the script that
# lists them (`--gtest_list_tests`, cmake/write_suite_tests.cmake), as
# gtest_discover_tests does, so that ctest sees a new suite without a
# configure step. A suite passes when all its cases pass, and fails when its
# filter selects none. A case that skips (GTEST_SKIP) says so in the suite's
# output only: ctest's skip-by-output would also hide a failure beside it.
# To run a single case: `<program> --gtest_filter=<Suite>.<Case>`.
set(QCCL_WRITE_SUITE_TESTS "${CMAKE_CURRENT_LIST_DIR}/write_suite_tests.cmake")

function(qccl_add_gtest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "TIMEOUT" "")
  if(NOT ARG_TIMEOUT)
    message(FATAL_ERROR "qccl_add_gtest_suites(${target}): give a TIMEOUT in seconds")
  endif()
  set(suites_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  add_custom_command(OUTPUT "${suites_file}"
    COMMAND "${CMAKE_COMMAND}" "-DPROGRAM=$<TARGET_FILE:${target}>" "-DOUTPUT=${suites_file}"
            "-DTIMEOUT=${ARG_TIMEOUT}" -P "${QCCL_WRITE_SUITE_TESTS}"
    DEPENDS ${target} "${QCCL_WRITE_SUITE_TESTS}"
    COMMENT "Listing the test suites of ${target}"
    VERBATIM)
  add_custom_target(${target}_suites ALL DEPENDS "${suites_file}")
  # Before the first build there is no list: say so in ctest rather than
  # silently running nothing of this program.
  file(WRITE "${include_file}"
       "if(EXISTS \"${suites_file}\")\n"
       "  include(\"${suites_file}\")\n"
       "else()\n"
       "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
