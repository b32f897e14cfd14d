# ctest fixtures for the real peers, and the C++ helpers tests use to reach
# them. Included once, by tests/CMakeLists.txt before it adds the
# integration directories, which inherit its variables; in them:
#
#   ferry_add_gtest(rpc_faults_integration_test SOURCES faults_test.cc
#                   LIBS ferry_testing_peers LABELS integration)
#   ferry_require_peers(rpc_faults_integration_test peer_ganesha peer_toxiproxy)
#
# Fixtures (ctest FIXTURES_SETUP / FIXTURES_CLEANUP):
#   peer_ganesha    rpcbind (if no portmapper answers) + nfs-ganesha serving
#                   FERRY_PEER_EXPORT_DIR as nfs://127.0.0.1/export
#                   (NFS 2049, MOUNT 20048, portmapper 111)
#   peer_toxiproxy  toxiproxy-server, HTTP API on 127.0.0.1:18474
#   peer_versitygw  versitygw S3 server on 127.0.0.1:7070 (AKIDLOCAL /
#                   SECRETLOCAL), buckets are folders of its state dir;
#                   its access log (a request a line) is
#                   FERRY_PEERS_STATE_DIR/versitygw/access.log
#   peer_irods      ferry's iRODS test peer on 127.0.0.1:1247 (zone tempZone,
#                   rods/rods, alice/apass, bob/bpass); its log is
#                   FERRY_PEERS_STATE_DIR/irods/irods.log
#   peer_s3proxy    s3proxy 4.1.0 S3 server (filesystem backend) on
#                   127.0.0.1:8080, same keys; ~1.6 s to start, 1-2 GB RSS
#   peer_redis      redis-server 7.0 on 127.0.0.1:16379 (REDIS_PORT), in
#                   memory only; tests may kill and restart it through
#                   tests/peers/redis with FERRY_PEERS_STATE_DIR/redis
# A test that lists a fixture finds its peer started by a setup test before
# it runs; a cleanup test stops the peer, by PID, after the last such test of
# the ctest run. The ports are fixed, so each fixture is also a
# RESOURCE_LOCK of the same name (ferry_require_peers adds it to the tests):
# tests sharing a peer never run at once, and build trees (release, asan)
# must run their integration tests one after another.

include_guard(GLOBAL)

set(FERRY_PEERS_SCRIPTS ${CMAKE_SOURCE_DIR}/tests/peers)
set(FERRY_PEERS_STATE_DIR ${CMAKE_BINARY_DIR}/tests/peers)
set(FERRY_PEER_EXPORT_DIR ${FERRY_PEERS_STATE_DIR}/export)

# A small export tree, made at configure time: a few files and a subdirectory,
# enough for MOUNT and a listing; tests that need more create it themselves.
file(MAKE_DIRECTORY ${FERRY_PEER_EXPORT_DIR}/dir)
file(WRITE ${FERRY_PEER_EXPORT_DIR}/hello.txt "hello from ferry\n")
foreach(i RANGE 1 10)
  file(WRITE ${FERRY_PEER_EXPORT_DIR}/dir/file${i}.txt "file ${i}\n")
endforeach()

# ferry_peer_fixture(NAME START_COMMAND STOP_COMMAND): setup and cleanup
# tests for fixture peer_NAME, holding RESOURCE_LOCK peer_NAME.
function(ferry_peer_fixture name start_cmd stop_cmd)
  add_test(NAME peer_${name}_start COMMAND ${start_cmd})
  add_test(NAME peer_${name}_stop COMMAND ${stop_cmd})
  set_tests_properties(peer_${name}_start PROPERTIES
    FIXTURES_SETUP peer_${name} RESOURCE_LOCK peer_${name} LABELS integration TIMEOUT 60)
  set_tests_properties(peer_${name}_stop PROPERTIES
    FIXTURES_CLEANUP peer_${name} RESOURCE_LOCK peer_${name} LABELS integration TIMEOUT 60)
endfunction()

ferry_peer_fixture(ganesha
  "${FERRY_PEERS_SCRIPTS}/ganesha;start;${FERRY_PEER_EXPORT_DIR};${FERRY_PEERS_STATE_DIR}/ganesha"
  "${FERRY_PEERS_SCRIPTS}/ganesha;stop;${FERRY_PEERS_STATE_DIR}/ganesha")
ferry_peer_fixture(toxiproxy
  "${FERRY_PEERS_SCRIPTS}/toxiproxy;start;${FERRY_PEERS_STATE_DIR}/toxiproxy"
  "${FERRY_PEERS_SCRIPTS}/toxiproxy;stop;${FERRY_PEERS_STATE_DIR}/toxiproxy")
ferry_peer_fixture(versitygw
  "env;VERSITYGW_ACCESS_LOG=1;${FERRY_PEERS_SCRIPTS}/versitygw;start;${FERRY_PEERS_STATE_DIR}/versitygw"
  "${FERRY_PEERS_SCRIPTS}/versitygw;stop;${FERRY_PEERS_STATE_DIR}/versitygw")
ferry_peer_fixture(irods
  "${FERRY_PEERS_SCRIPTS}/irods;start;${FERRY_PEERS_STATE_DIR}/irods"
  "${FERRY_PEERS_SCRIPTS}/irods;stop;${FERRY_PEERS_STATE_DIR}/irods")
ferry_peer_fixture(s3proxy
  "${FERRY_PEERS_SCRIPTS}/s3proxy;start;${FERRY_PEERS_STATE_DIR}/s3proxy"
  "${FERRY_PEERS_SCRIPTS}/s3proxy;stop;${FERRY_PEERS_STATE_DIR}/s3proxy")
ferry_peer_fixture(redis
  "${FERRY_PEERS_SCRIPTS}/redis;start;${FERRY_PEERS_STATE_DIR}/redis"
  "${FERRY_PEERS_SCRIPTS}/redis;stop;${FERRY_PEERS_STATE_DIR}/redis")

# ferry_require_peers(TARGET FIXTURE...): every test gtest_discover_tests
# finds in TARGET requires FIXTURE... and holds their RESOURCE_LOCKs.
# (ferry_add_gtest's own FIXTURES argument takes only one fixture:
# gtest_discover_tests flattens list-valued PROPERTIES. The discovered tests
# are named only when ctest runs, so the properties are set by a script
# ctest includes after the one that declares them.)
function(ferry_require_peers target)
  set(fixtures "${ARGN}")
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}_peers.cmake)
  file(WRITE ${script}
    "if(${target}_TESTS)\n"
    "  set_tests_properties(\${${target}_TESTS} PROPERTIES\n"
    "    FIXTURES_REQUIRED \"${fixtures}\" RESOURCE_LOCK \"${fixtures}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()

# Helpers for tests: the peers' fixed addresses, a toxiproxy API client.
find_package(CURL REQUIRED)
add_library(ferry_testing_peers STATIC ${CMAKE_SOURCE_DIR}/tests/testing/peers.cc)
target_include_directories(ferry_testing_peers PUBLIC ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(ferry_testing_peers
  PUBLIC ferry::core absl::status absl::statusor absl::strings
  PRIVATE CURL::libcurl ferry_compile_options ferry_test_options)
target_compile_definitions(ferry_testing_peers
  PRIVATE FERRY_PEERS_STATE_DIR="${FERRY_PEERS_STATE_DIR}")

# Helpers for tests against the S3 peers (tests/testing/s3_peer.h): their
# config, per-test buckets, random payloads, blocking twins of async calls.
add_library(ferry_testing_s3 STATIC ${CMAKE_SOURCE_DIR}/tests/testing/s3_peer.cc)
target_include_directories(ferry_testing_s3 PUBLIC ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(ferry_testing_s3
  PUBLIC ferry::s3 absl::status absl::statusor absl::strings absl::time
  PRIVATE GTest::gtest ferry_compile_options ferry_test_options)
