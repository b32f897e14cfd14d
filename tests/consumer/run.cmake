# Installs the ferry build tree into a scratch prefix, then configures,
# builds and runs tests/consumer/project against it with find_package:
# README.md's C++ program and CMake lines (extracted verbatim), the
# installed ferry-cp and ferry-walk.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: '${ARGN}' failed (${rc})")
  endif()
endfunction()
# The text of README.md's first ```LANG block (fence lines excluded).
function(readme_block lang out)
  file(READ ${SOURCE_DIR}/README.md text)
  string(FIND "${text}" "\n```${lang}\n" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "consumer: README.md has no ```${lang} block")
  endif()
  string(LENGTH "\n```${lang}\n" fence)
  math(EXPR start "${start} + ${fence}")
  string(SUBSTRING "${text}" ${start} -1 rest)
  string(FIND "${rest}" "\n```\n" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "consumer: README.md's ```${lang} block does not end")
  endif()
  math(EXPR end "${end} + 1")
  string(SUBSTRING "${rest}" 0 ${end} block)
  set(${out} "${block}" PARENT_SCOPE)
endfunction()
readme_block(cpp cpp)
readme_block(cmake cmake)
file(WRITE ${WORK_DIR}/snippet/app.cc "${cpp}")
file(WRITE ${WORK_DIR}/snippet/app.cmake "${cmake}")

run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/project -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    -DSNIPPET_DIR=${WORK_DIR}/snippet)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/ferry_consumer)

# The installed tools copy a tree; the README's program walks the copy.
file(WRITE ${WORK_DIR}/tree/a/b.txt "hello")
foreach(tool ferry-cp ferry-sync ferry-walk)
  execute_process(COMMAND ${WORK_DIR}/prefix/bin/${tool} --help RESULT_VARIABLE rc OUTPUT_VARIABLE help)
  if(NOT rc EQUAL 0 OR NOT help MATCHES "Usage: ${tool}")
    message(FATAL_ERROR "consumer: the installed ${tool} --help: exit ${rc}\n${help}")
  endif()
endforeach()
run(${WORK_DIR}/prefix/bin/ferry-cp -r ${WORK_DIR}/tree/ ${WORK_DIR}/copy/)
run(${WORK_DIR}/prefix/bin/ferry-walk ${WORK_DIR}/copy)
execute_process(COMMAND ${WORK_DIR}/build/app ${WORK_DIR}/copy
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES " 5 a/b.txt\n" OR NOT out MATCHES "\n2 entries\n")
  message(FATAL_ERROR "consumer: README's program on ${WORK_DIR}/copy: exit ${rc}\n${out}${err}")
endif()
message(STATUS "consumer: README's program walked the ferry-cp copy:\n${out}")
