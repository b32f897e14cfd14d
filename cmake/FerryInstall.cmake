# `cmake --install` puts headers, libraries, a package config and (from
# examples/) the tools in the prefix, so `find_package(ferry CONFIG)` +
# `target_link_libraries(x ferry::ferry)` works from another project
# (proved by tests/consumer, on README.md's own snippet).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(FERRY_INSTALL_TARGETS GLOBAL PROPERTY FERRY_INSTALL_TARGETS)
get_property(FERRY_INSTALL_INCLUDE_DIRS GLOBAL PROPERTY FERRY_INSTALL_INCLUDE_DIRS)
install(DIRECTORY ${FERRY_INSTALL_INCLUDE_DIRS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${FERRY_INSTALL_TARGETS} EXPORT ferryTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ferryTargets NAMESPACE ferry:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
configure_package_config_file(cmake/ferryConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ferryConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/ferryConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry)
