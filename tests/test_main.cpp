// tests/test_main.cpp: the doctest entry point. Area suites are in tests/test_<area>.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
