# tests/cmake/step.cmake: step(COMMAND...), for the CMake scripts that tests run with cmake -P
# (tests/consumer/run.cmake, tests/api/doc_snippets.cmake): runs the command and stops the script with
# its exit status and command line when it fails.
function(step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}")
  endif()
endfunction()
