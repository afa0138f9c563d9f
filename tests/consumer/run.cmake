# Consumer tests, run by CTest (tests/CMakeLists.txt). MODE selects one:
#   install       installs BUILD_DIR into a scratch prefix, then builds tests/consumer against it with
#                 find_package(tensorgrad) and with pkg-config, and runs both binaries;
#   subproject    builds tests/consumer/subproject, which vendors the source tree with add_subdirectory.
# Any failing step fails the test.
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/step.cmake)   # step(): a command that must succeed
# The consumer uses the library's compiler: a sanitized libtensorgrad.a needs that compiler's runtimes.
set(compiler_arg)
if(CXX_COMPILER)
  set(compiler_arg -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()

if(MODE STREQUAL "install")
  step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
       -DCMAKE_BUILD_TYPE=Release ${compiler_arg})
  step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  step(${WORK_DIR}/build/consumer)
  # pkg-config: the same program from one command line, as a Makefile user would build it.
  find_program(PKG_CONFIG pkg-config REQUIRED)
  file(GLOB pc_dirs ${WORK_DIR}/prefix/lib*/pkgconfig ${WORK_DIR}/prefix/lib/*/pkgconfig)   # lib or lib/<multiarch>
  set(ENV{PKG_CONFIG_PATH} "${pc_dirs}")
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs tensorgrad OUTPUT_VARIABLE pc_flags RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs tensorgrad failed (PKG_CONFIG_PATH=${pc_dirs})")
  endif()
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  if(NOT CXX_COMPILER)
    set(CXX_COMPILER c++)
  endif()
  step(${CXX_COMPILER} -std=c++17 -O1 -I${SOURCE_DIR}/shadow ${SOURCE_DIR}/main.cpp -o ${WORK_DIR}/consumer_pc ${pc_flags})
  step(${WORK_DIR}/consumer_pc)
elseif(MODE STREQUAL "subproject")
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/subproject -B ${WORK_DIR}/build -DTENSORGRAD_SOURCE_DIR=${TENSORGRAD_SOURCE_DIR}
       -DCMAKE_DISABLE_FIND_PACKAGE_doctest=TRUE ${compiler_arg})
  step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --parallel 2)
  step(${WORK_DIR}/build/consumer)
else()
  message(FATAL_ERROR "run.cmake: MODE must be install or subproject, got '${MODE}'")
endif()
