# The installed package (docs/ARCHITECTURE.md, "The installed package").
#   cmake --install build --prefix P [--strip]
# gives P/bin/tune, P/libexec/tune/tune-full (what bin/tune runs for every
# command but the store's queries), P/lib/libtune_bind.so (component Runtime) and the static
# libraries, the public headers of the fence under P/include/tune, the
# package config P/lib/cmake/tune (find_package(tune): tune::tune; with
# COMPONENTS torch, tune::torch) and P/lib/pkgconfig/tune.pc (component
# Development). `cpack` in the build directory makes the Debian packages
# tune (Runtime) and tune-dev (Development). scripts/package-test.sh tests it.
include(CMakePackageConfigHelpers)

set(TUNE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tune)
# The static libraries tune::tune links, users first (the order of tune.pc).
set(TUNE_INSTALLED_LIBRARIES tune_core tune_driver tune_report tune_query tune_exec tune_spec tune_storage tune_trainer tune_schedulers tune_search tune_base)
foreach(lib IN LISTS TUNE_INSTALLED_LIBRARIES)
  string(REPLACE "tune_" "" export_name ${lib})  # tune::core, tune::spec, ... tune::base
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
endforeach()

install(TARGETS tune_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
install(TARGETS tune_cli_full RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tune COMPONENT Runtime)
install(TARGETS tune_bind LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime)

install(TARGETS tune ${TUNE_INSTALLED_LIBRARIES} EXPORT tuneTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
install(EXPORT tuneTargets NAMESPACE tune:: DESTINATION ${TUNE_INSTALL_CMAKEDIR} COMPONENT Development)
set(tune_installed_headers ${TUNE_PUBLIC_HEADERS})
if(TUNE_WITH_TORCH)
  set_target_properties(tune_torch PROPERTIES EXPORT_NAME torch)
  install(TARGETS tune_torch EXPORT tuneTorchTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
  install(EXPORT tuneTorchTargets NAMESPACE tune:: DESTINATION ${TUNE_INSTALL_CMAKEDIR} COMPONENT Development)
  list(APPEND tune_installed_headers ${TUNE_TORCH_PUBLIC_HEADERS})
endif()
# Only the fence (the copies in build/include the libraries were built
# against): include/tune/tuner/tuner.h and so on.
foreach(header IN LISTS tune_installed_headers)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${TUNE_PUBLIC_INCLUDE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tune/${dir} COMPONENT Development)
endforeach()
# --strip (and cpack) strips the executable and the shim; the archives'
# debug info (~300 MB in RelWithDebInfo) goes too, as Debian's -dev do.
install(CODE "
  if(CMAKE_INSTALL_DO_STRIP)
    file(GLOB archives \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libtune_*.a\")
    execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug \${archives} COMMAND_ERROR_IS_FATAL ANY)
  endif()" COMPONENT Development)

configure_package_config_file(cmake/tuneConfig.cmake.in ${PROJECT_BINARY_DIR}/cmake/tuneConfig.cmake
                              INSTALL_DESTINATION ${TUNE_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/tuneConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tuneConfig.cmake ${PROJECT_BINARY_DIR}/cmake/tuneConfigVersion.cmake
        DESTINATION ${TUNE_INSTALL_CMAKEDIR} COMPONENT Development)

# pkg-config, relocatable (${pcfiledir}). The archives need their
# dependencies on every link, so they are in Requires and Libs, not .private.
file(RELATIVE_PATH TUNE_PC_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" TUNE_PC_PREFIX "${TUNE_PC_PREFIX}")
list(TRANSFORM TUNE_INSTALLED_LIBRARIES PREPEND -l OUTPUT_VARIABLE TUNE_PC_LIBS)
list(JOIN TUNE_PC_LIBS " " TUNE_PC_LIBS)
configure_file(cmake/tune.pc.in ${PROJECT_BINARY_DIR}/cmake/tune.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tune.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT Development)

# Debian packages: cpack (in the build directory) -> tune_<v>_<arch>.deb
# (the CLI, the shim) and tune-dev_<v>_<arch>.deb (libraries, headers,
# CMake and pkg-config files). Installed under /usr whatever the prefix.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tune)
set(CPACK_PACKAGE_CONTACT "tune developers <tune@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "hyperparameter tuning and experiment orchestration (C++, OpenMPI, libtorch)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "hyperparameter tuning and experiment orchestration: the tune command (C++, OpenMPI, libtorch)")
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
    "hyperparameter tuning and experiment orchestration: C++ libraries, headers, CMake and pkg-config files")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL Runtime Development)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME tune)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION science)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "openmpi-bin")  # worker groups run mpirun
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME tune-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
# What tuneConfig.cmake and tune.pc find (tune::torch's Torch and ZLIB: Suggests).
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
    "tune (= ${PROJECT_VERSION}), nlohmann-json3-dev, libopenmpi-dev, libsqlite3-dev, libsqlitecpp-dev, libyaml-cpp-dev, libfmt-dev, libnlopt-dev, libssl-dev, libxxhash-dev")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SUGGESTS "libtorch-dev, zlib1g-dev, cmake, pkg-config")
include(CPack)
