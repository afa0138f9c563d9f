# Installs the build tree into a scratch prefix, then configures, builds and runs tests/consumer
# against it with find_package(tensorgrad). Any failing step fails the test.
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# The consumer uses the library's compiler: a sanitized libtensorgrad.a needs that compiler's runtimes.
set(compiler_arg)
if(CXX_COMPILER)
  set(compiler_arg -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
     ${compiler_arg})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
