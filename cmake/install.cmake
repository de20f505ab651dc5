# Installing qccl for other projects, and its Debian package.
#
#   cmake --install build --prefix P [--component core|engines|program|device]
#
# installs three components, and a fourth in a build with CUDA:
# - core:    libqccl_core.so, its headers, the CMake package (qccl::core)
#            and the pkg-config file qccl-core.pc;
# - engines: libqccl_engines.so and its headers (qccl::engines, libtorch);
# - program: the qccl command line;
# - device:  libqccl_device.so and its headers (qccl::device: codec steps on
#            CUDA device memory; docs/gpu.md).
# `cpack -G DEB` in the build directory packs them all into
# qccl_<version>_amd64.deb. docs/install.md says how to use them.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(QCCL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qccl)

install(TARGETS qccl_core_shared EXPORT qcclCoreTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT core
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT core)
install(TARGETS qccl_engines_shared EXPORT qcclEnginesTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT engines
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT engines)
install(TARGETS qccl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT program)
if(TARGET qccl_device_shared)
  install(TARGETS qccl_device_shared EXPORT qcclDeviceTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT device
          FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT device)
endif()

# The CMake package: one targets file per library, so that a project using
# only the core never looks for libtorch.
install(EXPORT qcclCoreTargets NAMESPACE qccl:: DESTINATION ${QCCL_CMAKE_DIR} COMPONENT core)
install(EXPORT qcclEnginesTargets NAMESPACE qccl:: DESTINATION ${QCCL_CMAKE_DIR}
        COMPONENT engines)
if(TARGET qccl_device_shared)
  install(EXPORT qcclDeviceTargets NAMESPACE qccl:: DESTINATION ${QCCL_CMAKE_DIR}
          COMPONENT device)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/qcclConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/qcclConfig.cmake
                              INSTALL_DESTINATION ${QCCL_CMAKE_DIR})
# Before 1.0 a minor release may change the interface: find_package(qccl 0.5)
# accepts 0.5.x only (the soname is libqccl_core.so.0.5 for the same reason).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qcclConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qcclConfig.cmake ${PROJECT_BINARY_DIR}/qcclConfigVersion.cmake
        DESTINATION ${QCCL_CMAKE_DIR} COMPONENT core)

# pkg-config, for the core (libtorch has no pkg-config file of its own). Its
# prefix is found from where the file lies, so the install moves freely.
file(RELATIVE_PATH QCCL_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" QCCL_PC_TO_PREFIX "${QCCL_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/qccl-core.pc.in ${PROJECT_BINARY_DIR}/qccl-core.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/qccl-core.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT core)

# The Debian package: everything above under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME qccl)
set(CPACK_PACKAGE_VENDOR qccl)
set(QCCL_PACKAGE_MAINTAINER "qccl maintainers" CACHE STRING
    "The Debian package's Maintainer field: Name <email>")
set(CPACK_PACKAGE_CONTACT "${QCCL_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "communication-efficient distributed training: compressed collectives over MPI")
set(CPACK_PACKAGE_DESCRIPTION
    "qccl's command line (bench, model, simulate, experiment, train), its core library \
(compressed allreduce, reduce-scatter, allgather and broadcast over MPI, with Global-QSGD, \
IntSGD and the usual baselines as codecs), its libtorch training engines and, where built \
with CUDA, its codec steps on GPU memory, with headers, a CMake package (find_package(qccl)) \
and a pkg-config file (qccl-core).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # qccl_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Depends: what the program and the libraries load (OpenMPI, libtorch, zlib,
# the C and C++ runtimes), read from their ELF files by dpkg-shlibdeps with
# the versions the installed packages declare.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Running under mpirun needs OpenMPI's launcher; building against qccl::engines
# needs libtorch's headers and CMake package, against qccl::device the CUDA
# toolkit's headers; the core needs no -dev package.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cmake, pkg-config, libtorch-dev")
if(TARGET qccl_device_shared)
  string(APPEND CPACK_DEBIAN_PACKAGE_SUGGESTS ", nvidia-cuda-toolkit")
endif()
include(CPack)
