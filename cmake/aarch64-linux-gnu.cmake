# CMake toolchain file: fxctl (and the lab tools) for arm64, cross-built with
# Debian's aarch64-linux-gnu-gcc against the extracted arm64 Debian 12 tree
# that `make deps` keeps (scripts/fetch-arm64-lab.sh) as the sysroot:
#
#   cmake -S . -B build/arm64/ctl -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DFXBLK_TESTS=OFF          (make fxctl-arm64 does this)
#
# FXBLK_ARM64_SYSROOT overrides the tree (default $FXBLK_CACHE/arm64/sysroot,
# FXBLK_CACHE defaulting to /var/cache/fxblk). The fxctl binary cannot run on
# the build host, so ctl/CMakeLists.txt does not generate the bash completion
# when CMAKE_CROSSCOMPILING (install a native build's completion instead).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT FXBLK_ARM64_SYSROOT)
  if(DEFINED ENV{FXBLK_ARM64_SYSROOT})
    set(FXBLK_ARM64_SYSROOT $ENV{FXBLK_ARM64_SYSROOT})
  elseif(DEFINED ENV{FXBLK_CACHE})
    set(FXBLK_ARM64_SYSROOT $ENV{FXBLK_CACHE}/arm64/sysroot)
  else()
    set(FXBLK_ARM64_SYSROOT /var/cache/fxblk/arm64/sysroot)
  endif()
endif()
if(NOT EXISTS ${FXBLK_ARM64_SYSROOT}/usr/include/libnl3)
  message(FATAL_ERROR "no arm64 sysroot in ${FXBLK_ARM64_SYSROOT}: run 'make deps' (scripts/fetch-arm64-lab.sh)")
endif()
# try_compile projects get the same sysroot
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FXBLK_ARM64_SYSROOT)
set(CMAKE_SYSROOT ${FXBLK_ARM64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH ${FXBLK_ARM64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# the .pc files of the arm64 tree only, with its paths prefixed
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${FXBLK_ARM64_SYSROOT})
set(ENV{PKG_CONFIG_LIBDIR}
  "${FXBLK_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${FXBLK_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
