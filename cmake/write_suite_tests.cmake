# Script mode (cmake -P), run after each build of a test program that
# qccl_add_gtest_suites (cmake/test_suites.cmake) registers: lists the program's
# GoogleTest suites and writes one ctest test per suite to OUTPUT.
#
#   cmake -DPROGRAM=<test program> -DOUTPUT=<file> -DTIMEOUT=<s> -P write_suite_tests.cmake
foreach(variable PROGRAM OUTPUT TIMEOUT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "write_suite_tests.cmake needs -D${variable}=...")
  endif()
endforeach()

execute_process(COMMAND "${PROGRAM}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result
                TIMEOUT 120)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${result}): ${errors}")
endif()

# `--gtest_list_tests` prints each suite at the start of a line, ending in
# '.' (a typed suite adds "  # TypeParam = ..."), and its cases indented.
# Suite names are C++ identifiers with an optional "Prefix/": no ';', '[' or
# ']', so the list split and the bracket arguments below are safe. A filter
# that selected nothing would pass silently: such a run fails instead.
string(REGEX MATCHALL "(^|\n)[^ \n][^ \n]*\\." suite_lines "${listing}")
list(LENGTH suite_lines count)
if(count EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} lists no test suite")
endif()
set(tests "")
foreach(line IN LISTS suite_lines)
  string(STRIP "${line}" suite)
  string(REGEX REPLACE "\\.$" "" suite "${suite}")
  string(APPEND tests
         "add_test([=[${suite}.*]=] [=[${PROGRAM}]=] [=[--gtest_filter=${suite}.*]=])\n"
         "set_tests_properties([=[${suite}.*]=] PROPERTIES TIMEOUT ${TIMEOUT}"
         " FAIL_REGULAR_EXPRESSION [=[Running 0 tests from]=])\n")
endforeach()
file(WRITE "${OUTPUT}" "${tests}")
