# tests/cmake/check_test_names.cmake: every doctest case name must survive CTest. doctest_discover_tests
# makes one CTest entry per case from its name, and CTest cuts a name at ';' (a list separator): the
# entry then selects no case, runs nothing and passes. Run as
#   cmake -DTESTS=<tensorgrad_tests binary> -P check_test_names.cmake
# It fails when the binary lists no cases, or when a name holds a ';'.
execute_process(COMMAND ${TESTS} --list-test-cases --no-version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TESTS} --list-test-cases failed (${rc})")
endif()
string(REGEX MATCH "passing the current filters: ([0-9]+)" m "${out}")
if(NOT CMAKE_MATCH_1 OR CMAKE_MATCH_1 EQUAL 0)
  message(FATAL_ERROR "${TESTS} listed no test cases")
endif()
string(FIND "${out}" ";" semicolon)
if(NOT semicolon EQUAL -1)
  string(REGEX MATCHALL "[^\n]*;[^\n]*" bad "${out}")
  message(FATAL_ERROR "test case names with ';' (CTest would run nothing for them): ${bad}")
endif()
message(STATUS "${CMAKE_MATCH_1} test case names, none with ';'")
